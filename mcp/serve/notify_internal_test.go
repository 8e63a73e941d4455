package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/coretest"
	"github.com/toolgate/toolgate/internal/mcptest"
)

// SV-1: streamable HTTP: a client's notification POST is answered 202 Accepted
// with no body, even while notifications are queued for its session; those
// (a tools/list_changed here) go out on the session's GET stream instead of
// the notification's answer.
func TestNotificationAccepted202(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg := core.NewRegistry(nil)
	ep, err := NewEndpoint(EndpointOptions{Path: "/mcp", Registry: reg, Actor: func(context.Context) (core.Actor, bool) {
		return core.Actor{ID: "client"}, true
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ep.Close(context.Background()) })
	srv := httptest.NewServer(ep)
	t.Cleanup(srv.Close)
	c := mcptest.New(srv.URL+"/mcp", nil)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	// Tools appear while the session has no GET stream open: each
	// list_changed waits, queued on the session, while the client sends a
	// notification. Nothing but the GET stream takes from the queue: not
	// the notification's answer (a 200 with the list_changed in it), and
	// no forwarder that takes one and drops it.
	const rounds = 20
	for i := range rounds {
		coretest.Must(t, reg.Register(core.Tool{Name: fmt.Sprintf("late%d", i), Kind: core.KindRead, Description: "d",
			Handler: func(context.Context, json.RawMessage) (core.Result, error) { return core.Result{}, nil }}))
		ep.applied.wait(ctx, reg.Bus().Seq())
		resp, err := c.Post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != http.StatusAccepted || len(bytes.TrimSpace(resp.Body)) != 0 {
			t.Fatalf("notification %d answered %d %q, want 202 and no body", i, resp.Status, resp.Body)
		}
	}
	st, err := c.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := ep.mcp.SendNotificationToSpecificClient(c.Session(), "notifications/test/barrier", nil); err != nil {
		t.Fatal(err)
	}
	got := 0
	for {
		m, err := st.Next()
		if err != nil {
			t.Fatalf("the GET stream: %v after %d list_changed", err, got)
		}
		if m.Method == "notifications/test/barrier" {
			break
		}
		if m.Method == "notifications/tools/list_changed" {
			got++
		}
	}
	if got != rounds {
		t.Errorf("%d tools/list_changed on the GET stream, want %d: the others were taken by notifications' answers", got, rounds)
	}

	// A protocol version there is none of is refused.
	c.SetSession(c.Session(), "1999-01-01")
	resp, err := c.Post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nil)
	if err != nil || resp.Status != http.StatusBadRequest || len(resp.Body) == 0 {
		t.Errorf("a notification with an unsupported protocol version: %d %q %v, want 400", resp.Status, resp.Body, err)
	}
}
