package upstream

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/mcp/downstream"
)

// askedClient is a calling client that records the requests it is asked.
type askedClient struct {
	name  string
	mu    sync.Mutex
	asked []string
}

func (*askedClient) ProgressToken() any                            { return nil }
func (*askedClient) LogLevel() (mcpgo.LoggingLevel, bool)          { return "", false }
func (*askedClient) Notify(string, map[string]any)                 {}
func (*askedClient) Streamed() bool                                { return false }
func (c *askedClient) Session() any                                { return c }
func (*askedClient) CanElicitURL() bool                            { return false }
func (*askedClient) NotifyCallStream(string, map[string]any) bool  { return false }
func (*askedClient) SessionNotifier() func(string, map[string]any) { return nil }

func (c *askedClient) Request(_ context.Context, method string, params json.RawMessage) (any, error) {
	c.mu.Lock()
	c.asked = append(c.asked, method+" "+string(params))
	c.mu.Unlock()
	return map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "from " + c.name}, "model": "m"}, nil
}

func (c *askedClient) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.asked...)
}

// SV-1: a connection opened during one client's call (a reconnect in the
// call's path) keeps nothing of that call: a sampling request the stdio
// upstream sends later, during another client's call, goes to that client
// alone, never to the one whose call happened to open the connection.
func TestConnectionKeepsNothingOfTheCallThatOpenedItStdio(t *testing.T) {
	u, err := New(stdioOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = u.Close() })
	opener, caller := &askedClient{name: "opener"}, &askedClient{name: "caller"}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := u.Connect(downstream.With(ctx, opener)); err != nil {
		t.Fatal(err)
	}
	res, err := u.CallTool(downstream.With(ctx, caller), "ask", json.RawMessage(`{"prompt":"the caller's secret"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := opener.requests(); len(got) != 0 {
		t.Errorf("the client whose call opened the connection was asked %q", got)
	}
	if got := caller.requests(); len(got) != 1 || !strings.Contains(got[0], "the caller's secret") {
		t.Errorf("the calling client was asked %q, want its own sampling request", got)
	}
	if raw, _ := json.Marshal(res); !strings.Contains(string(raw), "from caller") {
		t.Errorf("the call's result %s does not carry the caller's answer", raw)
	}
}
