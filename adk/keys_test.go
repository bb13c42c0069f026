package adk

import "testing"

func TestSnakeKeys(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"invocationId":"e-1","longRunningToolIds":[],"timestamp":1795980797318}`,
			`{"invocation_id":"e-1","long_running_tool_ids":[],"timestamp":1795980797318}`},
		{`{"content":{"parts":[{"functionCall":{"id":"adk-1","name":"get_weather","args":{"cityName":"Paris"}}}]}}`,
			`{"content":{"parts":[{"function_call":{"args":{"cityName":"Paris"},"id":"adk-1","name":"get_weather"}}]}}`},
		{`{"actions":{"stateDelta":{"userPrefs":{"darkMode":true}},"requestedAuthConfigs":{"Tt2pttjP":{}}}}`,
			`{"actions":{"requested_auth_configs":{"Tt2pttjP":{}},"state_delta":{"userPrefs":{"darkMode":true}}}}`},
		{`{"appName":"weather","userId":"u1","state":{"lastCity":"Oslo"},"lastUpdateTime":1.5e9,"n":12345678901234567890123}`,
			`{"app_name":"weather","last_update_time":1.5e9,"n":12345678901234567890123,"state":{"lastCity":"Oslo"},"user_id":"u1"}`},
		{`{"already_snake":1}`, `{"already_snake":1}`},
	}
	for _, tt := range tests {
		got, err := snakeKeys([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("snakeKeys(%s) = %s, %v\nwant %s", tt.in, got, err, tt.want)
		}
	}
	if _, err := snakeKeys([]byte(`{`)); err == nil {
		t.Errorf("snakeKeys of invalid JSON succeeded")
	}
}
