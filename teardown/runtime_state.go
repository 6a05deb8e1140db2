package teardown

import (
	"bytes"
	"encoding/json"
	"strings"
)

// parseRuntimeState reads the state a runtime's inspect command printed:
// `podman/docker container inspect` print a list of objects with
// "State": {"Status", "ExitCode"}; `runc/crun state` an object with
// "status". It returns "" when the output holds neither.
func parseRuntimeState(out []byte) (status string, exitCode *int) {
	out = bytes.TrimSpace(out)
	var one map[string]json.RawMessage
	if bytes.HasPrefix(out, []byte("[")) {
		var list []map[string]json.RawMessage
		if json.Unmarshal(out, &list) != nil || len(list) == 0 {
			return "", nil
		}
		one = list[0]
	} else if json.Unmarshal(out, &one) != nil {
		return "", nil
	}
	if raw, ok := one["State"]; ok {
		var st struct {
			Status   string
			ExitCode *int
		}
		if json.Unmarshal(raw, &st) == nil && st.Status != "" {
			return strings.ToLower(st.Status), st.ExitCode
		}
	}
	var s string
	if json.Unmarshal(one["status"], &s) == nil {
		return strings.ToLower(s), nil
	}
	return "", nil
}
