package live

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/coder/websocket"
)

// TestNDJSONLines: a response's lines are frames whatever their ending
// ("\n", "\r\n", none at the end), blank lines skipped, and its clean end
// the agent's 1000; a line over the read limit is a frame over the cap.
func TestNDJSONLines(t *testing.T) {
	tests := []struct {
		name, body string
		limit      int64
		want       []string
		end        error
	}{
		{"endings", "a\r\n\n  \n{\"b\":1}\nlast", -1, []string{"a", `{"b":1}`, "last"}, websocket.CloseError{Code: websocket.StatusNormalClosure}},
		{"over the cap", "12345\n123456\n", 5, []string{"12345"}, websocket.ErrMessageTooBig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.NewResponseController(w).EnableFullDuplex()
				w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c, err := DialNDJSON(context.Background(), srv.URL, srv.Client(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(websocket.StatusNormalClosure, "")
			c.SetReadLimit(tt.limit)
			var got []string
			for {
				_, b, err := c.Read(context.Background())
				if err != nil {
					var ce websocket.CloseError
					if errors.As(tt.end, &ce) {
						if !errors.As(err, &ce) || ce.Code != websocket.StatusNormalClosure {
							t.Errorf("Read at the end = %v, want close 1000", err)
						}
					} else if !errors.Is(err, tt.end) {
						t.Errorf("Read at the end = %v, want %v", err, tt.end)
					}
					break
				}
				got = append(got, string(b))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("frames %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("frame %d = %q, want %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}
