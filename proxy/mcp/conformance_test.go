package mcp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
)

// conformanceMap is the method map the official suite's tools scenarios
// call, in front of testdata/mcpconf/agent.py: each tool the name a
// scenario asks for.
const conformanceMap = `
upstream: {url: AGENT}
methods:
  test_simple_text: {call: POST /simple_text, description: Returns a simple text.}
  test_error_handling: {call: POST /error, description: Fails on purpose.}
  test_image_content: {call: POST /image, description: Returns an image.}
  test_audio_content: {mode: stream, call: POST /audio, reply: ndjson, description: Returns audio.}
  test_embedded_resource: {call: POST /resource, description: Returns a resource.}
  test_multiple_content_types: {mode: stream, call: POST /mixed, reply: ndjson, description: "Returns text, an image and a resource."}
  test_tool_with_progress: {mode: stream, call: POST /progress, reply: sse, description: Reports progress.}
  test_elicitation:
    call: POST /ask/test_elicitation
    description: Asks the user for their information.
    parameters: {type: object, properties: {message: {type: string}}, required: [message]}
  test_elicitation_sep1034_defaults: {call: POST /ask/test_elicitation_sep1034_defaults, description: Asks with default values.}
  test_elicitation_sep1330_enums: {call: POST /ask/test_elicitation_sep1330_enums, description: Asks with enum choices.}
  test_input_required_result_elicitation: {call: POST /ask/test_input_required_result_elicitation, description: Asks a name.}
  test_input_required_result_request_state: {call: POST /ask/test_input_required_result_request_state, description: Asks a confirmation.}
  test_input_required_result_tampered_state: {call: POST /ask/test_input_required_result_tampered_state, description: Asks a confirmation.}
  test_input_required_result_capabilities: {call: POST /ask/test_input_required_result_capabilities, description: Asks a name.}
  test_input_required_result_multi_round: {mode: stream, call: POST /ask/test_input_required_result_multi_round, reply: ndjson, description: Asks twice.}
  json_schema_2020_12_tool:
    call: POST /echo
    description: Tool with JSON Schema 2020-12 features
    parameters:
      $schema: https://json-schema.org/draft/2020-12/schema
      type: object
      $defs:
        address:
          $anchor: addressDef
          type: object
          properties: {street: {type: string}, city: {type: string}}
      properties:
        name: {type: string}
        address: {$ref: "#/$defs/address"}
        contactMethod: {type: string, enum: [phone, email]}
        phone: {type: string}
        email: {type: string}
      allOf: [{anyOf: [{required: [phone]}, {required: [email]}]}]
      if: {properties: {contactMethod: {const: phone}}, required: [contactMethod]}
      then: {required: [phone]}
      else: {required: [email]}
      additionalProperties: false
`

// TestConformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, testdata/mcpconf) against the door,
// for each revision's requirement set (which runs the extension and
// pending scenarios too, json-schema-2020-12 among them). Every scenario a
// tools server can pass must pass; the others are listed, one line each
// with why, in testdata/mcpconf/expected-failures-<revision>.yaml, which
// the suite reads as its baseline: a failure not listed fails the test,
// and so does a listed one that passes (a stale baseline).
func TestConformance(t *testing.T) {
	cli := deps.NPM(t, "mcpconf")
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed: cannot run the conformance suite")
	}
	agent := doortest.StartPython(t, "testdata/mcpconf/agent.py")
	s := serveMap(t, conformanceMap, agent, Options{})
	for _, revision := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(revision, func(t *testing.T) {
			baseline := filepath.Join("..", "..", "testdata", "mcpconf", "expected-failures-"+revision+".yaml")
			args := []string{cli, "server", "--url", s.url, "--requirements", revision, "--expected-failures", baseline,
				"-o", t.TempDir(), "--timeout", "20000"}
			// The suite's scenarios take seconds; the bound only keeps a
			// hung one from reaching the package's timeout unnamed.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "node", args...)
			cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("conformance server --requirements %s: %v (context: %v)\n%s", revision, err, ctx.Err(), out)
			}
			t.Logf("conformance server --requirements %s:\n%s", revision, out)
		})
	}
}
