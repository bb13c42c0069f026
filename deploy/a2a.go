package deploy

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"

	"github.com/sidecar-dev/sidecar/config"
)

// What Google's A2A template (python-aiplatform's
// agent_engines/templates/a2a.py, A2aAgent) declares when it is deployed,
// written for a sidecar whose A2A door is mounted on the platform's port:
// spec.agentCard, the card as a JSON object, and one classMethods entry
// per operation of its register_operations, each of api_mode
// "a2a_extension" and carrying the card as a JSON string in
// a2a_agent_card (what the SDK's _generate_class_methods_spec_or_raise
// writes, and what its _wrap_a2a_operation reads back to build its
// client). Whether the platform's managed A2A path then reaches a custom
// container is not known: see docs/a2a.md.

// ModeA2A is the api_mode of the template's A2A operations.
const ModeA2A config.Mode = "a2a_extension"

// a2aMethods are the operations the template always registers; with
// capabilities.streaming it adds a2aStreamMethods, with
// capabilities.extendedAgentCard a2aExtendedCardMethod.
var (
	a2aMethods = []string{
		"on_message_send", "on_get_task", "on_list_tasks", "on_cancel_task",
		"on_create_task_push_notification_config", "on_get_task_push_notification_config",
		"on_list_task_push_notification_configs", "on_delete_task_push_notification_config",
	}
	a2aStreamMethods      = []string{"on_message_send_stream", "on_subscribe_to_task"}
	a2aExtendedCardMethod = "on_get_extended_agent_card"
)

// a2aCard is what the request needs of an agent card.
type a2aCard struct {
	SupportedInterfaces []struct {
		URL             string `json:"url"`
		ProtocolBinding string `json:"protocolBinding"`
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"supportedInterfaces"`
	Capabilities struct {
		Streaming         bool `json:"streaming"`
		ExtendedAgentCard bool `json:"extendedAgentCard"`
	} `json:"capabilities"`
}

// restFirst reports whether an interface is the one the template and
// Google's SDK want first: HTTP+JSON, A2A 1.0.
func (c *a2aCard) restFirst(i int) bool {
	in := c.SupportedInterfaces[i]
	return in.ProtocolBinding == "HTTP+JSON" && in.ProtocolVersion == "1.0"
}

// a2aSpec is spec.agentCard and the classMethods entries for card (the
// A2A door's, RequestOptions.A2ACard). The card's supportedInterfaces
// are reordered, HTTP+JSON 1.0 first: the template refuses a card whose
// first interface is not HTTP+JSON, and Google's SDK calls the engine
// with the first one's binding; the door's own card lists JSON-RPC first
// for @a2a-js/sdk's sake. Nothing else of the card changes.
func a2aSpec(card json.RawMessage) (json.RawMessage, []ClassMethod, error) {
	var fields map[string]json.RawMessage
	var c a2aCard
	if err := json.Unmarshal(card, &fields); err != nil {
		return nil, nil, fmt.Errorf("reading the a2a card: %w", err)
	}
	if err := json.Unmarshal(card, &c); err != nil {
		return nil, nil, fmt.Errorf("reading the a2a card: %w", err)
	}
	var ifaces []json.RawMessage
	if err := json.Unmarshal(fields["supportedInterfaces"], &ifaces); err != nil || len(ifaces) != len(c.SupportedInterfaces) {
		return nil, nil, fmt.Errorf("a2a card: supportedInterfaces is not a list of interfaces")
	}
	first := -1
	for i := range ifaces {
		if c.restFirst(i) {
			first = i
			break
		}
	}
	if first < 0 {
		return nil, nil, fmt.Errorf("a2a card: no HTTP+JSON 1.0 interface in supportedInterfaces, the one Agent Platform's A2A calls")
	}
	if u, err := url.Parse(c.SupportedInterfaces[first].URL); err != nil || !u.IsAbs() || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, nil, fmt.Errorf("a2a card: url %q is not an http or https URL", c.SupportedInterfaces[first].URL)
	}
	ordered := append([]json.RawMessage{ifaces[first]}, slices.Delete(slices.Clone(ifaces), first, first+1)...)
	b, err := json.Marshal(ordered)
	if err != nil {
		return nil, nil, err
	}
	fields["supportedInterfaces"] = b
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, nil, err
	}

	names := slices.Clone(a2aMethods)
	if c.Capabilities.Streaming {
		names = append(names, a2aStreamMethods...)
	}
	if c.Capabilities.ExtendedAgentCard {
		names = append(names, a2aExtendedCardMethod)
	}
	methods := make([]ClassMethod, 0, len(names))
	for _, n := range names {
		methods = append(methods, ClassMethod{Name: n, APIMode: ModeA2A, A2AAgentCard: string(out)})
	}
	return out, methods, nil
}
