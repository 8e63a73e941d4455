package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/serve"
	"github.com/toolgate/toolgate/mcp/session"
)

// SV-2: an idle session is parked — its session object let go — and its
// next request makes it again from its sealed id: it keeps its id, owner,
// console row and place under the caps, is told once of the tool list
// change it missed, and ends by DELETE, by the operator and at shutdown as
// any session does, each end reported once.
func TestIdleSessionsParkAndWakeSV2(t *testing.T) {
	reg := core.NewRegistry(nil)
	sessions := core.NewSessions(reg.Bus())
	pong := func(context.Context, json.RawMessage) (core.Result, error) { return core.TextResult("pong"), nil }
	if err := reg.Register(core.Tool{Name: "ping", Kind: core.KindRead, Description: "Pings.", Handler: pong}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ended []string
	limits := session.NewLimits(0, 0)
	ep, err := serve.NewEndpoint(serve.EndpointOptions{Path: "/mcp", Registry: reg, Sessions: sessions, Actor: testActor,
		SessionKey: testSessionKey, SessionParkAfter: 20 * time.Millisecond, Limits: limits,
		SessionEnded: func(id string) { mu.Lock(); ended = append(ended, id); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(testAuth(ep))
	defer srv.Close()
	closed := false
	defer func() {
		if !closed {
			_ = ep.Close(context.Background())
		}
	}()
	endedOnce := func(id string) bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, x := range ended {
			if x == id {
				n++
			}
		}
		return n == 1
	}
	client := func() *mcptest.Client {
		c := testClient(srv.URL+"/mcp", "a", "MEMBER")
		initialize(t, c)
		return c
	}
	a, b, d := client(), client(), client()
	waittest.Eventually(t, time.Minute, "three sessions are parked", func() bool { return ep.ParkedSessionsForTest() == 3 })
	if got := limits.Open(); got != 3 {
		t.Errorf("places held under the caps while parked: %d, want 3", got)
	}
	if s, ok := sessions.Get(a.Session()); !ok || s.ClientName != "raw-test" {
		t.Errorf("console row of a parked session: %+v (%v)", s, ok)
	}
	if other := testClient(srv.URL+"/mcp", "b", "MEMBER"); true {
		other.SetSession(a.Session(), "2025-06-18")
		if resp := post(t, other, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); resp.Status != http.StatusNotFound {
			t.Errorf("another actor on a parked session answered %d, want 404", resp.Status)
		}
	}

	// A change while a is parked: a fresh session sees it listed, so the
	// endpoint has applied it.
	if err := reg.Register(core.Tool{Name: "pong", Kind: core.KindRead, Description: "Pongs.", Handler: pong}); err != nil {
		t.Fatal(err)
	}
	probe := client()
	if names, _ := listNames(t, probe); !slices.Contains(names, "pong") {
		t.Fatalf("probe lists %v", names)
	}
	if _, err := probe.Delete(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	stream, err := a.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	msgs := stream.Messages(16)
	select {
	case m := <-msgs:
		if m.Method != "notifications/tools/list_changed" {
			t.Fatalf("first on the woken session's stream: %+v", m)
		}
	case <-ctx.Done():
		t.Fatal("the woken session was not told of the change it missed")
	}
	select {
	case m := <-msgs:
		t.Fatalf("more on the stream: %+v", m)
	case <-time.After(100 * time.Millisecond):
	}
	res, rpcErr, err := a.CallTool(t.Context(), "pong", map[string]any{})
	if err != nil || rpcErr != nil || res.IsError {
		t.Fatalf("tools/call on the woken session: %+v %v %v", res, rpcErr, err)
	}
	_ = stream.Close()
	cancel()

	waittest.Eventually(t, time.Minute, "a is parked again", func() bool { return ep.ParkedSessionsForTest() == 3 })
	if resp, err := a.Delete(t.Context()); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("DELETE of a parked session: %v %v", resp.Status, err)
	}
	if resp := post(t, a, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); resp.Status != http.StatusNotFound {
		t.Errorf("a deleted session answered %d, want 404", resp.Status)
	}
	if err := ep.EndSession(b.Session()); err != nil {
		t.Fatal(err)
	}
	if resp := post(t, b, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); resp.Status != http.StatusNotFound {
		t.Errorf("a session the operator ended answered %d, want 404", resp.Status)
	}
	if err := ep.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	closed = true
	for _, c := range []*mcptest.Client{a, b, d} {
		if !endedOnce(c.Session()) {
			t.Errorf("session %.12s… not reported ended exactly once: %d reports in all", c.Session(), len(ended))
		}
		if _, ok := sessions.Get(c.Session()); ok {
			t.Errorf("session %.12s… still listed", c.Session())
		}
	}
	if got := limits.Open(); got != 0 {
		t.Errorf("places still held: %d", got)
	}
	if n := ep.KnownSessionsForTest(); n != 0 {
		t.Errorf("the endpoint keeps %d entries of ended sessions", n)
	}
}

// SV-2: a parked session woken by a POST is told of the change
// it missed on that POST's answer, ahead of the result.
func TestParkedSessionWokenByAPostIsToldOnItSV2(t *testing.T) {
	reg := core.NewRegistry(nil)
	pong := func(context.Context, json.RawMessage) (core.Result, error) { return core.TextResult("pong"), nil }
	ep, err := serve.NewEndpoint(serve.EndpointOptions{Path: "/mcp", Registry: reg, Actor: testActor,
		SessionKey: testSessionKey, SessionParkAfter: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close(context.Background())
	srv := httptest.NewServer(testAuth(ep))
	defer srv.Close()
	c := testClient(srv.URL+"/mcp", "a", "MEMBER")
	initialize(t, c)
	// A probe session listing a new tool shows the endpoint has applied
	// the change before c wakes (SV-1). It is parked too, by the time c
	// is: both are waited for.
	probe := testClient(srv.URL+"/mcp", "a", "MEMBER")
	initialize(t, probe)
	// The first answer is the gateway's own, the second mcp-go's.
	for i, body := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pong0","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"ping"}`,
	} {
		waittest.Eventually(t, time.Minute, "both sessions are parked", func() bool { return ep.ParkedSessionsForTest() == 2 })
		name := "pong" + strconv.Itoa(i)
		if err := reg.Register(core.Tool{Name: name, Kind: core.KindRead, Description: "Pongs.", Handler: pong}); err != nil {
			t.Fatal(err)
		}
		if names, _ := listNames(t, probe); !slices.Contains(names, name) {
			t.Fatalf("probe lists %v", names)
		}
		resp := post(t, c, body)
		msgs, err := resp.Messages()
		if err != nil || len(msgs) != 2 || msgs[0].Method != "notifications/tools/list_changed" || !msgs[1].IsResponse() || msgs[1].Error != nil {
			t.Fatalf("%s answered %d %s: %+v %v", body, resp.Status, resp.ContentType(), msgs, err)
		}
	}
}
