package agentcore

import (
	"context"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/sidecar-dev/sidecar/proxy"
)

// idleConversations is the number of conversations the idle benchmarks
// hold open at once.
const idleConversations = 1000

// BenchmarkIdleConversation is what an open conversation that carries no
// frame costs: 1,000 of them opened through /ws over loopback to an
// in-process echo agent, their memory taken once all are open, per
// conversation. Like proxy's BenchmarkIdleStream it counts the whole
// process, the callers' and the agent's ends too: BenchmarkIdleWebSocket
// is those ends alone.
func BenchmarkIdleConversation(b *testing.B) {
	agent := newWSAgent(b)
	url, s, _ := wsSidecar(b, agent, "limits: {live: {connections: 2000}}\n", "converse", func(s *proxy.Server) {
		enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
		s.Logger = zap.New(zapcore.NewCore(enc, zapcore.AddSync(io.Discard), zap.InfoLevel))
	})
	benchIdle(b, wsURL(url), func() bool { return s.InFlight() == 0 && agent.opened() == 0 })
}

// BenchmarkIdleWebSocket is BenchmarkIdleConversation's callers dialling
// the echo agent directly: what its count holds besides the sidecar.
func BenchmarkIdleWebSocket(b *testing.B) {
	agent := newWSAgent(b)
	benchIdle(b, "ws"+strings.TrimPrefix(agent.URL, "http")+"/live", func() bool { return agent.opened() == 0 })
}

// benchIdle opens idleConversations WebSockets to url each round, has
// each echo one frame (so every one is open end to end), and reports the
// stacks and heap in use then, per connection, against the round's
// start; between rounds it waits until ended says the last round's are
// gone.
func benchIdle(b *testing.B, url string, ended func() bool) {
	usage := func() (stack, heap uint64) {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.StackInuse, m.HeapInuse
	}
	ctx := context.Background()
	var stack, heap float64
	for b.Loop() {
		s0, h0 := usage()
		open := make([]*websocket.Conn, 0, idleConversations)
		for range idleConversations {
			c, _, err := websocket.Dial(ctx, url, nil)
			if err != nil {
				b.Fatal(err)
			}
			open = append(open, c)
		}
		for _, c := range open {
			c.Write(ctx, websocket.MessageText, []byte("hi"))
			if _, _, err := c.Read(ctx); err != nil {
				b.Fatal(err)
			}
		}
		s1, h1 := usage()
		stack += (float64(s1) - float64(s0)) / idleConversations
		heap += (float64(h1) - float64(h0)) / idleConversations
		for _, c := range open {
			c.CloseNow()
		}
		for !ended() {
			time.Sleep(time.Millisecond)
		}
	}
	b.ReportMetric(stack/float64(b.N), "stack-B/conn")
	b.ReportMetric(heap/float64(b.N), "heap-B/conn")
}
