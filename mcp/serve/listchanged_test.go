package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/coretest"
	"github.com/toolgate/toolgate/core/upstreams"
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/mcp/serve"
)

// IM-25: one burst of registry changes is one notification per session. An
// upstream that adds one tool beside five is refreshed: the session's
// stream carries exactly one tools/list_changed, and no resources or
// prompts notification for lists that did not change. A later change to
// the upstream's resources is the barrier: whatever the first refresh sent
// arrives before it.
func TestListChangedOncePerBurstIM25(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools := func(n int) []core.RemoteTool {
		var out []core.RemoteTool
		for i := range n {
			out = append(out, coretest.FakeTool(fmt.Sprintf("t%d", i), "tool", ""))
		}
		return out
	}
	up := coretest.NewFakeUpstream("up", tools(5)...)
	up.SetCatalog([]json.RawMessage{json.RawMessage(`{"uri":"test://a","name":"a"}`)}, nil,
		[]json.RawMessage{json.RawMessage(`{"name":"p"}`)})
	reg := core.NewRegistry(nil)
	im := upstreams.NewImporter(reg, []upstreams.UpstreamSpec{{Name: "up", Prefix: "up", Transport: "fake", DefaultKind: core.KindRead, Upstream: up}}, nil)
	t.Cleanup(func() { _ = im.Close() })
	if err := im.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ep, err := serve.NewEndpoint(serve.EndpointOptions{Path: "/mcp", Registry: reg, Actor: testActor, Catalog: im})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ep.Close(context.Background()) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := core.Actor{ID: "watcher", Roles: []string{"MEMBER"}}
		ep.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), actorKey{}, a)))
	}))
	t.Cleanup(srv.Close)

	c := mcptest.New(srv.URL+"/mcp", nil)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	stream, err := c.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	msgs := stream.Messages(64)
	// The session is registered since initialize: what is sent to it now is
	// queued for this stream even before the stream attaches.
	up.SetTools(tools(6)...)
	if _, err := im.Refresh(ctx, "up"); err != nil {
		t.Fatal(err)
	}
	up.SetCatalog([]json.RawMessage{json.RawMessage(`{"uri":"test://a","name":"a"}`), json.RawMessage(`{"uri":"test://b","name":"b"}`)}, nil,
		[]json.RawMessage{json.RawMessage(`{"name":"p"}`)})
	if _, err := im.Refresh(ctx, "up"); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatalf("the stream ended; so far %v", counts)
			}
			if m.Method == "notifications/resources/list_changed" {
				if counts["notifications/tools/list_changed"] != 1 || counts["notifications/prompts/list_changed"] != 0 {
					t.Fatalf("before the resources change: %v, want one tools/list_changed and nothing else", counts)
				}
				return
			}
			counts[m.Method]++
		case <-ctx.Done():
			t.Fatalf("no resources/list_changed; got %v", counts)
		}
	}
}

// SV-1: an endpoint reads its own registry's writes: a tool registered
// just before a tools/list is in it, every time, on a session and on a
// stateless endpoint alike.
func TestListReadsYourWritesSV1(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reg := core.NewRegistry(nil)
	base := asActor(t, reg, "reader")
	session := mcptest.New(base+"/mcp", nil)
	if _, err := session.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	stateless := mcptest.New(base+"/stateless", nil)
	for i := range 100 {
		name := fmt.Sprintf("fresh_%d", i)
		if err := reg.Register(coretest.NativeTool(name)); err != nil {
			t.Fatal(err)
		}
		for label, c := range map[string]*mcptest.Client{"session": session, "stateless": stateless} {
			res, rpcErr, err := c.Call(ctx, "tools/list", map[string]any{})
			if err != nil || rpcErr != nil {
				t.Fatalf("%s: %v %v", label, err, rpcErr)
			}
			if !strings.Contains(string(res), `"name":"`+name+`"`) {
				t.Fatalf("%s: round %d: %s registered but not listed", label, i, name)
			}
		}
		// And called, on the path mcp-go dispatches from its own table.
		res, rpcErr, err := stateless.Call(ctx, "tools/call", map[string]any{"name": name, "arguments": map[string]any{}})
		if err != nil || rpcErr != nil || strings.Contains(string(res), `"isError":true`) {
			t.Fatalf("stateless call of %s: %s %v %v", name, res, rpcErr, err)
		}
	}
}

// SV-7: the handler's context carries the JSON-RPC id of the request, a
// string id's text or a number as written, whatever the session mode.
func TestCallRequestIDSV7(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg := core.NewRegistry(nil)
	calls := make(chan core.Call, 4)
	if err := reg.Register(core.Tool{Name: "probe", Kind: core.KindRead, Description: "Records its call.",
		Handler: func(ctx context.Context, _ json.RawMessage) (core.Result, error) {
			c, _ := core.CallFromContext(ctx)
			calls <- c
			return core.TextResult("ok"), nil
		}}); err != nil {
		t.Fatal(err)
	}
	base := asActor(t, reg, "caller")
	session := mcptest.New(base+"/mcp", nil)
	if _, err := session.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	stateless := mcptest.New(base+"/stateless", nil)
	for _, tc := range []struct {
		c    *mcptest.Client
		id   string
		want string
	}{{session, `"req-7"`, "req-7"}, {session, `42`, "42"}, {stateless, `"s-1"`, "s-1"}} {
		body := `{"jsonrpc":"2.0","id":` + tc.id + `,"method":"tools/call","params":{"name":"probe","arguments":{}}}`
		if _, err := tc.c.Post(ctx, []byte(body), nil); err != nil {
			t.Fatal(err)
		}
		select {
		case c := <-calls:
			if c.RequestID != tc.want || c.IdempotencyKey == "" || c.CallID == "" {
				t.Errorf("id %s: the handler saw request %q, key %q, call %q", tc.id, c.RequestID, c.IdempotencyKey, c.CallID)
			}
		case <-ctx.Done():
			t.Fatalf("id %s: the tool never ran", tc.id)
		}
	}
}
