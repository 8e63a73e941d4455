package serve_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate/mcp/serve"
	"github.com/toolgate/toolgate/mcp/session"
)

// lockedBuffer is a log sink safe for the endpoint's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records are the JSON log lines written so far.
func (b *lockedBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for line := range strings.Lines(b.buf.String()) {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// (OP-7 logs): a client posting responses to requests the
// gateway never made gets them refused, and the log gets at most one WARN
// per session per minute and a bounded number in all — not one ERROR line
// each, as before. The endpoint counts every one.
func TestUnsolicitedResponsesLogBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs lockedBuffer
		ep, _, client := bubbleEndpoint(t, serve.EndpointOptions{
			Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			Limits: session.NewLimits(100, 100),
		})
		defer ep.Close(t.Context())
		c := client("a")
		initialize(t, c)
		const n = 1000
		for i := range n {
			resp := post(t, c, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}`, 900000+i))
			if resp.Status == 202 {
				t.Fatalf("an unsolicited response was accepted")
			}
		}
		// Many sessions at once are bounded in all, too.
		for i := range 40 {
			o := client(fmt.Sprintf("b%d", i))
			initialize(t, o)
			post(t, o, `{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}`)
		}
		warns := func() (warn, other int) {
			for _, r := range logs.records(t) {
				switch {
				case r["msg"] == "ignored a response to a request the gateway never made" && r["level"] == "WARN":
					warn++
				case r["level"] == "ERROR" || strings.Contains(fmt.Sprint(r["msg"]), "sampling response"):
					other++
				}
			}
			return warn, other
		}
		warn, other := warns()
		if warn < 1 || warn > 20 || other != 0 {
			t.Fatalf("%d unsolicited responses wrote %d WARN lines and %d others, want 1–20 WARN and nothing else\n%s", n+40, warn, other, logs.buf.String())
		}
		if got := ep.UnsolicitedResponses(); got != n+40 {
			t.Fatalf("counted %d unsolicited responses, want %d", got, n+40)
		}
		// A minute later the session may log again, saying how many went
		// unlogged.
		time.Sleep(time.Minute)
		post(t, c, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		post(t, c, `{"jsonrpc":"2.0","id":2,"result":{"x":1}}`)
		recs := logs.records(t)
		last := recs[len(recs)-1]
		if last["msg"] != "ignored a response to a request the gateway never made" || last["unloggedSinceLast"] != float64(n-1) {
			t.Fatalf("the next line after a minute: %v", last)
		}
	})
}
