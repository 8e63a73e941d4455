package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/mcp/session"
)

// legacyEndpoint serves an endpoint for actor "a" on a test server.
func legacyEndpoint(t *testing.T, opts EndpointOptions) (*Endpoint, string) {
	t.Helper()
	if opts.Registry == nil {
		opts.Registry = core.NewRegistry(nil)
	}
	opts.Path = "/mcp"
	opts.Actor = func(context.Context) (core.Actor, bool) { return core.Actor{ID: "a"}, true }
	e, err := NewEndpoint(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	t.Cleanup(func() {
		_ = e.Close(context.Background())
		srv.Close()
	})
	return e, srv.URL + "/mcp"
}

// SV-2: a failed initialize hands out no session id and opens nothing — no
// record, no place under the caps, no SessionStarted — and its answer is
// mcp-go's as HandleMessage gave it, not edited after the fact.
func TestFailedInitializeOpensNothingSV2(t *testing.T) {
	var started atomic.Int32
	limits := session.NewLimits(0, 0)
	e, url := legacyEndpoint(t, EndpointOptions{Limits: limits, SessionStarted: func(context.Context, string) { started.Add(1) }})
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":"x"}`)
	resp, err := mcptest.New(url, nil).Post(t.Context(), body, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		t.Fatalf("a failed initialize handed out session %q", id)
	}
	want, _ := json.Marshal(e.mcp.HandleMessage(e.mcp.WithContext(context.Background(), newLegacySession("")), body))
	if !bytes.Equal(bytes.TrimSpace(resp.Body), want) || !bytes.Contains(want, []byte(`"error"`)) {
		t.Fatalf("failed initialize: HTTP %d %s, want mcp-go's own %s", resp.Status, resp.Body, want)
	}
	if n, open, told := e.KnownSessionsForTest(), limits.Open(), started.Load(); n != 0 || open != 0 || told != 0 {
		t.Fatalf("after a failed initialize: %d records, %d places held, SessionStarted told %d times", n, open, told)
	}
}

// SV-2: a notification queued for a session right after a POST of that
// session was served reaches its GET stream, every time and in order:
// nothing that served the POST takes it from the session's queue (mcp-go's
// transport left a goroutine behind each POST that could take one and
// drop it).
func TestQueuedAfterPostReachesStreamSV2(t *testing.T) {
	e, url := legacyEndpoint(t, EndpointOptions{})
	c := mcptest.New(url, nil)
	if _, err := c.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := c.Listen(ctx)
	if err != nil || st.Status != http.StatusOK {
		t.Fatalf("GET stream: %v %+v", err, st)
	}
	defer st.Close()
	const rounds = 200
	for i := range rounds {
		if _, rpcErr, err := c.Call(ctx, "ping", nil); err != nil || rpcErr != nil {
			t.Fatalf("ping %d: %v %v", i, rpcErr, err)
		}
		if err := e.mcp.SendNotificationToSpecificClient(c.Session(), "notifications/test/queued", map[string]any{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range rounds {
		m, err := st.Next()
		if err != nil {
			t.Fatalf("the GET stream after %d of %d notifications: %v", i, rounds, err)
		}
		var p struct {
			N int `json:"n"`
		}
		if m.Method != "notifications/test/queued" || json.Unmarshal(m.Params, &p) != nil || p.N != i {
			t.Fatalf("notification %d on the GET stream: %s %s", i, m.Method, m.Params)
		}
	}
}

// SV-2, OP-5: a session continued on another endpoint holding the same key
// is made from its sealed id — the client's info, capabilities and
// protocol as its initialize gave them — without an initialize of its own,
// and is registered with mcp-go there: a notification to it reaches its
// GET stream.
func TestAdoptedSessionFromItsSealSV2(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	_, first := legacyEndpoint(t, EndpointOptions{SessionKey: key})
	second, other := legacyEndpoint(t, EndpointOptions{SessionKey: key})
	c := mcptest.New(first, &mcptest.Options{ClientName: "sealed", ClientVersion: "1.2", Capabilities: json.RawMessage(`{"elicitation":{}}`)})
	if _, err := c.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	moved := mcptest.New(other, nil)
	moved.SetSession(c.Session(), "2025-06-18")
	if _, rpcErr, err := moved.Call(t.Context(), "ping", nil); err != nil || rpcErr != nil {
		t.Fatalf("ping on the other endpoint: %v %v", rpcErr, err)
	}
	s := second.ids.Lookup(c.Session()).Conn
	if s == nil {
		t.Fatal("the other endpoint holds no session")
	}
	if info := s.GetClientInfo(); info.Name != "sealed" || info.Version != "1.2" || s.GetClientCapabilities().Elicitation == nil || !s.Initialized() {
		t.Fatalf("adopted session: %+v, capabilities %+v", info, s.GetClientCapabilities())
	}
	if p := second.ids.Lookup(c.Session()).Protocol; p != "2025-06-18" {
		t.Fatalf("adopted session's protocol %q", p)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := moved.Listen(ctx)
	if err != nil || st.Status != http.StatusOK {
		t.Fatalf("GET stream: %v %+v", err, st)
	}
	defer st.Close()
	if err := second.mcp.SendNotificationToSpecificClient(c.Session(), "notifications/test/adopted", nil); err != nil {
		t.Fatal(err)
	}
	if m, err := st.Next(); err != nil || m.Method != "notifications/test/adopted" {
		t.Fatalf("the adopted session's stream: %+v %v", m, err)
	}
}
