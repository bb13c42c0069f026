package deploy

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/sidecar-dev/sidecar/rawjson"
)

// UpdateMask is the updateMask query parameter of the patch request that
// applies body (a CreateRequest result) to an existing engine: every field
// the body sets, as snake_case FieldMask paths, sorted. The env and
// secretEnv lists and the labels are always in it, so variables and labels
// dropped from the request are removed from the engine: the request is the
// whole deployment.
func UpdateMask(body []byte) (string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return "", fmt.Errorf("update mask: %w", err)
	}
	paths := map[string]bool{
		"labels":                          true,
		"spec.deployment_spec.env":        true,
		"spec.deployment_spec.secret_env": true,
	}
	for k, v := range top {
		if k != "spec" {
			paths[rawjson.Snake(k)] = true
			continue
		}
		var sp map[string]json.RawMessage
		if err := json.Unmarshal(v, &sp); err != nil {
			return "", fmt.Errorf("update mask: spec: %w", err)
		}
		for sk, sv := range sp {
			if sk != "deploymentSpec" {
				paths["spec."+rawjson.Snake(sk)] = true
				continue
			}
			var dp map[string]json.RawMessage
			if err := json.Unmarshal(sv, &dp); err != nil {
				return "", fmt.Errorf("update mask: spec.deploymentSpec: %w", err)
			}
			for dk := range dp {
				paths["spec.deployment_spec."+rawjson.Snake(dk)] = true
			}
		}
	}
	out := make([]string, 0, len(paths))
	for p := range paths {
		out = append(out, p)
	}
	sort.Strings(out)
	return strings.Join(out, ","), nil
}
