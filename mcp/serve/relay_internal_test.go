package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/mcptest"
	ds "github.com/toolgate/toolgate/mcp/downstream"
)

type attributionActorKey struct{}

// sessionsSeen serves an endpoint whose tool "who" records the Session()
// the upstream side would see for each call, under the label the caller
// gave in its arguments; the actor is the request's X-Test-Actor header.
func sessionsSeen(t *testing.T, stateless bool) (url string, seen func(label string) any) {
	t.Helper()
	reg := core.NewRegistry(nil)
	var mu sync.Mutex
	got := map[string]any{}
	if err := reg.Register(core.Tool{Name: "who", Kind: core.KindRead, Description: "who",
		Handler: func(ctx context.Context, args json.RawMessage) (core.Result, error) {
			var a struct{ Label string }
			_ = json.Unmarshal(args, &a)
			mu.Lock()
			defer mu.Unlock()
			got[a.Label] = ds.From(ctx).Session()
			return core.TextResult("ok"), nil
		}}); err != nil {
		t.Fatal(err)
	}
	e, err := NewEndpoint(EndpointOptions{Path: "/mcp", Registry: reg, Stateless: stateless,
		Actor: func(ctx context.Context) (core.Actor, bool) {
			a, _ := ctx.Value(attributionActorKey{}).(string)
			return core.Actor{ID: a}, a != ""
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), attributionActorKey{}, r.Header.Get("X-Test-Actor"))))
	}))
	t.Cleanup(func() {
		_ = e.Close(context.Background())
		srv.Close()
	})
	return srv.URL + "/mcp", func(label string) any {
		mu.Lock()
		defer mu.Unlock()
		s, ok := got[label]
		if !ok {
			t.Fatalf("no call labelled %q was seen", label)
		}
		return s
	}
}

func actorClient(url, actor string) *mcptest.Client {
	return mcptest.New(url, &mcptest.Options{Header: http.Header{"X-Test-Actor": {actor}}})
}

func callWho(t *testing.T, c *mcptest.Client, label string) {
	t.Helper()
	if res, rpcErr, err := c.CallTool(t.Context(), "who", map[string]any{"label": label}); err != nil || rpcErr != nil || res.IsError {
		t.Fatalf("%s: %v %v %+v", label, rpcErr, err, res)
	}
}

// callWhoModern makes a 2026-07-28 call of who, which has no session.
func callWhoModern(t *testing.T, c *mcptest.Client, label string) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"who","arguments":{"label":%q},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`, label)
	resp, err := c.Post(t.Context(), []byte(body), http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"who"}})
	if err != nil || resp.Status != http.StatusOK {
		t.Fatalf("%s: %v HTTP %d %s", label, err, resp.Status, resp.Body)
	}
}

// SV-1: the upstream side takes two calls for one client only when they
// came on one legacy session. Calls without one — on a stateless endpoint,
// whatever Mcp-Session-Id the clients sent, and of revision 2026-07-28 —
// are each a client of their own, whether of two actors or of one, so
// what an upstream sends naming no call is passed on only while a single
// such call is in flight, to its own client.
func TestCallsWithoutSessionAreEachTheirOwnClient(t *testing.T) {
	t.Run("stateless", func(t *testing.T) {
		url, seen := sessionsSeen(t, true)
		alice, bob := actorClient(url, "alice"), actorClient(url, "bob")
		callWho(t, alice, "alice")
		callWho(t, bob, "bob")
		callWho(t, alice, "alice again")
		// An id on a stateless endpoint is the client's own choice.
		alice.SetSession("chosen", "")
		bob.SetSession("chosen", "")
		callWho(t, alice, "alice chosen")
		callWho(t, bob, "bob chosen")
		for _, pair := range [][2]string{{"alice", "bob"}, {"alice", "alice again"}, {"alice chosen", "bob chosen"}} {
			if seen(pair[0]) == seen(pair[1]) {
				t.Errorf("the calls %q and %q are taken for one client (%v)", pair[0], pair[1], seen(pair[0]))
			}
		}
	})
	t.Run("2026-07-28", func(t *testing.T) {
		url, seen := sessionsSeen(t, false)
		alice, bob := actorClient(url, "alice"), actorClient(url, "bob")
		callWhoModern(t, alice, "alice")
		callWhoModern(t, bob, "bob")
		callWhoModern(t, alice, "alice again")
		for _, pair := range [][2]string{{"alice", "bob"}, {"alice", "alice again"}} {
			if seen(pair[0]) == seen(pair[1]) {
				t.Errorf("the calls %q and %q are taken for one client (%v)", pair[0], pair[1], seen(pair[0]))
			}
		}
	})
	t.Run("legacy sessions", func(t *testing.T) {
		url, seen := sessionsSeen(t, false)
		one, other := actorClient(url, "alice"), actorClient(url, "alice")
		for _, c := range []*mcptest.Client{one, other} {
			if _, err := c.Initialize(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		callWho(t, one, "first")
		callWho(t, one, "second")
		callWho(t, other, "other")
		if seen("first") != seen("second") {
			t.Errorf("two calls of one session are taken for two clients (%v, %v)", seen("first"), seen("second"))
		}
		if seen("first") == seen("other") {
			t.Errorf("calls of two sessions are taken for one client (%v)", seen("first"))
		}
	})
}
