package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/session"
)

// endKey seals the session ids of these tests' endpoints, shared by the
// ones that stand for replicas.
var endKey = []byte("0123456789abcdef0123456789abcdef")

// pingBody is a ping, the least request of a session.
var pingBody = []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)

// openSession initializes a session for c on its endpoint.
func openTestSession(t *testing.T, c *mcptest.Client) string {
	t.Helper()
	if _, err := c.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	return c.Session()
}

// pingStatus is the HTTP status a ping on c's session is answered with.
func pingStatus(t *testing.T, c *mcptest.Client) int {
	t.Helper()
	resp, err := c.Post(t.Context(), pingBody, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Status
}

// SV-2, OP-5: ending a session tells the other replicas of it
// (SessionTerminated, in the gateway a broadcast over the shared store)
// without holding the lock every wake and adoption takes: while one
// client's DELETE is still telling them, another client's parked session
// wakes and answers.
func TestSessionEndHoldsUpNoWakeSV2(t *testing.T) {
	telling := make(chan string, 1)
	release := make(chan struct{})
	e, url := legacyEndpoint(t, EndpointOptions{SessionKey: endKey, SessionParkAfter: time.Hour,
		SessionTerminated: func(id string) { telling <- id; <-release }})
	var freed sync.Once
	free := func() { freed.Do(func() { close(release) }) }
	// Runs before the endpoint closes (cleanups run last first).
	t.Cleanup(free)
	a, b := mcptest.New(url, nil), mcptest.New(url, nil)
	aID, bID := openTestSession(t, a), openTestSession(t, b)
	if !e.ids.Park(bID, time.Now().Add(2*time.Hour)) {
		t.Fatal("b's session was not parked")
	}
	deleted := make(chan error, 1)
	go func() {
		resp, err := a.Delete(context.Background())
		if err == nil && resp.Status != http.StatusOK {
			err = fmt.Errorf("HTTP %d", resp.Status)
		}
		deleted <- err
	}()
	if id := waittest.Recv(t, 10*time.Second, "a's DELETE telling the other replicas", telling); id != aID {
		t.Fatalf("SessionTerminated told of %q, want a's session", id)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	_, rpcErr, err := b.Call(ctx, "ping", nil)
	cancel()
	if err != nil || rpcErr != nil {
		t.Fatalf("a ping of b's parked session while a's end told the other replicas: %v %v (the wake waited for that end)", rpcErr, err)
	}
	if e.ids.Lookup(bID).Phase.State == session.Parked || !e.ids.Lookup(bID).Phase.Serves() {
		t.Error("b's session did not wake")
	}
	free()
	if err := waittest.Recv(t, 10*time.Second, "a's DELETE", deleted); err != nil {
		t.Fatalf("DELETE: %v", err)
	}
	if e.ids.Lookup(aID).Phase.State != session.Absent {
		t.Error("a's session still has a record after its DELETE was answered")
	}
}

// SV-2: an operator's end racing the sweep that parks the session ends it
// all the same. Whether the session is parked is decided where its end is,
// at once: EndSession never reports an end while the session lives on,
// parked, for its next request to wake. The park comes just before the end
// takes the lock (the generated-order test explores the other orders).
func TestEndRacingParkEndsTheSessionSV2(t *testing.T) {
	limits := session.NewLimits(0, 0)
	e, url := legacyEndpoint(t, EndpointOptions{SessionKey: endKey, SessionParkAfter: time.Hour, Limits: limits})
	c := mcptest.New(url, nil)
	id := openTestSession(t, c)
	if !e.ids.Park(id, time.Now().Add(2*time.Hour)) {
		t.Error("the session was not parked")
	}
	if err := e.EndSession(id); err != nil {
		t.Fatal(err)
	}
	if e.ids.Lookup(id).Phase.Serves() || e.ids.Lookup(id).Phase.State != session.Absent {
		t.Fatalf("EndSession reported the end, yet the session has a record (parked: %v)", e.ids.Lookup(id).Phase.State == session.Parked)
	}
	if st := pingStatus(t, c); st != http.StatusNotFound {
		t.Errorf("a ping on the ended session: HTTP %d, want 404", st)
	}
	if open := limits.Open(); open != 0 {
		t.Errorf("places held under the caps after the only session ended: %d", open)
	}
}

// SV-2: a request of a session the idle sweep took, before its end let go
// of it, is refused (404) rather than adopting the session again from its
// sealed id; the session's place under the caps is released once its end
// completes, and nothing of it is left.
func TestRequestRacingIdleEndLeaksNoPlaceSV2(t *testing.T) {
	limits := session.NewLimits(0, 0)
	e, url := legacyEndpoint(t, EndpointOptions{SessionKey: endKey, Limits: limits,
		SessionIdleTimeout: time.Hour, SessionParkAfter: -1})
	c := mcptest.New(url, nil)
	id := openTestSession(t, c)
	// What the sweeper does (sweep), with a request between its steps.
	if idle := e.ids.TakeIdle(time.Now().Add(2*time.Hour), time.Hour); len(idle) != 1 || idle[0] != id {
		t.Fatalf("takeIdle: %v", idle)
	}
	if st := pingStatus(t, c); st != http.StatusNotFound {
		t.Errorf("a ping racing the session's idle end: HTTP %d, want 404", st)
	}
	e.ids.End(id, session.Idle)
	if n := e.KnownSessionsForTest(); n != 0 {
		t.Errorf("records left: %d", n)
	}
	if open := limits.Open(); open != 0 {
		t.Fatalf("places held under the caps after the only session ended: %d, want 0", open)
	}
	if st := pingStatus(t, c); st != http.StatusNotFound {
		t.Errorf("a ping on the expired session: HTTP %d, want 404", st)
	}
}

// SV-2: an initialize that carries the id of a parked session which missed
// a list change opens a new session and hands out its id on a plain JSON
// answer. What the parked session missed is its own: told on its GET
// stream, not on the new session's answer (where it would go first, as a
// stream, before the new id could be set).
func TestInitializeOnParkedSessionHandsOutItsIDSV2(t *testing.T) {
	e, url := legacyEndpoint(t, EndpointOptions{SessionKey: endKey, SessionParkAfter: time.Hour})
	old := openTestSession(t, mcptest.New(url, nil))
	if !e.ids.Park(old, time.Now().Add(2*time.Hour)) {
		t.Fatal("the session was not parked")
	}
	e.ToolsChanged()
	c := mcptest.New(url, nil)
	c.SetSession(old, "2025-06-18")
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	resp, err := c.Post(t.Context(), []byte(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(resp.Body), `"protocolVersion"`) {
		t.Fatalf("initialize did not succeed: HTTP %d %s", resp.Status, resp.Body)
	}
	if resp.IsStream() {
		t.Errorf("initialize answered as a stream: %s", resp.Body)
	}
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" || id == old {
		t.Fatalf("a successful initialize answered with Mcp-Session-Id %q, want a new id", id)
	}
	fresh := mcptest.New(url, nil)
	fresh.SetSession(id, "2025-06-18")
	if st := pingStatus(t, fresh); st != http.StatusOK {
		t.Errorf("a ping on the new session: HTTP %d", st)
	}
	// The parked session was woken; what it missed waits for its stream.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	parked := mcptest.New(url, nil)
	parked.SetSession(old, "2025-06-18")
	st, err := parked.Listen(ctx)
	if err != nil || st.Status != http.StatusOK {
		t.Fatalf("the old session's GET stream: %v %+v", err, st)
	}
	defer st.Close()
	m, err := st.Next()
	if err != nil || m.Method != mcpgo.MethodNotificationToolsListChanged {
		t.Fatalf("the old session's stream told %+v (%v), want %s", m, err, mcpgo.MethodNotificationToolsListChanged)
	}
}

// SV-2, OP-5: an adoption racing another replica's word that the session
// ended (EndedElsewhere) is refused: the end is checked under the lock the
// adoption opens the session under, so the word arriving before the
// adoption takes it refuses it, and the session is not continued here.
func TestAdoptionRacingEndedElsewhereRefusedOP5(t *testing.T) {
	_, url1 := legacyEndpoint(t, EndpointOptions{SessionKey: endKey, SessionParkAfter: -1})
	limits := session.NewLimits(0, 0)
	e2, url2 := legacyEndpoint(t, EndpointOptions{SessionKey: endKey, SessionParkAfter: -1, Limits: limits})
	id := openTestSession(t, mcptest.New(url1, nil))
	// The broadcast of the first replica's DELETE arrives.
	e2.EndedElsewhere(id)
	moved := mcptest.New(url2, nil)
	moved.SetSession(id, "2025-06-18")
	if st := pingStatus(t, moved); st != http.StatusNotFound {
		t.Errorf("a request of a session ended elsewhere as it was adopted: HTTP %d, want 404", st)
	}
	if e2.ids.Lookup(id).Phase.State != session.Absent || limits.Open() != 0 {
		t.Fatalf("the session ended elsewhere is kept here: live %v, places held %d", e2.ids.Lookup(id).Phase.Serves(), limits.Open())
	}
}

// SV-2, SV-9, OP-5: a session its client deletes while the endpoint shuts
// down is ended for good all the same (a tombstone, SessionTerminated
// told), so another replica does not continue it; the sessions the
// shutdown itself ends are left for other replicas to continue.
func TestDeleteDuringShutdownEndsForGoodSV2(t *testing.T) {
	var mu sync.Mutex
	var terminated []string
	var x, y *mcptest.Client
	var deleting atomic.Bool
	deleted := make(chan string, 1)
	e2, url2 := legacyEndpoint(t, EndpointOptions{SessionKey: endKey, SessionParkAfter: -1})
	e1, url1 := legacyEndpoint(t, EndpointOptions{SessionKey: endKey, SessionParkAfter: -1,
		// What the gateway does over the shared store.
		SessionTerminated: func(id string) {
			mu.Lock()
			terminated = append(terminated, id)
			mu.Unlock()
			e2.EndedElsewhere(id)
		},
		SessionEnded: func(id string) {
			// The shutdown ended one session; the other's client deletes
			// its own before the shutdown reaches it.
			if !deleting.CompareAndSwap(false, true) {
				return
			}
			other := y
			if id == y.Session() {
				other = x
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, err := other.Delete(ctx)
			if err != nil || resp.Status != http.StatusOK {
				t.Errorf("DELETE during the shutdown: %v %+v", err, resp)
			}
			deleted <- other.Session()
		}})
	x, y = mcptest.New(url1, nil), mcptest.New(url1, nil)
	openTestSession(t, x)
	openTestSession(t, y)
	if err := e1.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	gone := waittest.Recv(t, time.Second, "the DELETE made during the shutdown", deleted)
	dropped := x.Session()
	if gone == dropped {
		dropped = y.Session()
	}
	mu.Lock()
	told := append([]string(nil), terminated...)
	mu.Unlock()
	if len(told) != 1 || told[0] != gone {
		t.Errorf("SessionTerminated told of %d sessions (deleted one told: %v), want only the deleted one", len(told), len(told) > 0 && told[0] == gone)
	}
	other := mcptest.New(url2, nil)
	other.SetSession(gone, "2025-06-18")
	if st := pingStatus(t, other); st != http.StatusNotFound {
		t.Errorf("the session deleted during the shutdown, on another replica: HTTP %d, want 404", st)
	}
	other.SetSession(dropped, "2025-06-18")
	if st := pingStatus(t, other); st != http.StatusOK {
		t.Errorf("the session the shutdown ended, on another replica: HTTP %d, want it continued", st)
	}
}

// SV-2, OP-5: a client's DELETE, or an operator's end, of a session that a
// shutdown (session.Dropped) or the idle sweep (session.Idle) is already ending
// makes that end one for good: it is answered 200 (EndSession returns
// nil), the end is recorded and told to the other replicas once, and
// another replica does not continue the session.
func TestEndDuringAnEndNotForGoodMakesItForGoodSV2(t *testing.T) {
	for _, tc := range []struct {
		name     string
		operator bool
		idle     bool
	}{
		{name: "DELETE during shutdown"},
		{name: "EndSession during shutdown", operator: true},
		{name: "DELETE during idle end", idle: true},
		{name: "EndSession during idle end", operator: true, idle: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var told atomic.Int32
			var x *mcptest.Client
			var e1 *Endpoint
			var once atomic.Bool
			answered := make(chan error, 1)
			e2, url2 := legacyEndpoint(t, EndpointOptions{SessionKey: endKey, SessionParkAfter: -1})
			e1, url1 := legacyEndpoint(t, EndpointOptions{SessionKey: endKey, SessionParkAfter: -1,
				SessionTerminated: func(id string) { told.Add(1); e2.EndedElsewhere(id) },
				// Runs after the end was claimed, before its record is
				// dropped: the end not for good is under way.
				SessionEnded: func(id string) {
					if !once.CompareAndSwap(false, true) {
						return
					}
					if tc.operator {
						answered <- e1.EndSession(id)
						return
					}
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					resp, err := x.Delete(ctx)
					if err == nil && resp.Status != http.StatusOK {
						err = fmt.Errorf("HTTP %d", resp.Status)
					}
					answered <- err
				}})
			x = mcptest.New(url1, nil)
			id := openTestSession(t, x)
			if tc.idle {
				for _, taken := range e1.ids.TakeIdle(time.Now().Add(time.Hour), time.Minute) {
					e1.ids.End(taken, session.Idle)
				}
			} else if err := e1.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := waittest.Recv(t, 10*time.Second, "the end made during the other end", answered); err != nil {
				t.Fatalf("the end made while the session was being ended: %v (want it answered as done)", err)
			}
			if n := told.Load(); n != 1 {
				t.Errorf("SessionTerminated told %d times, want once", n)
			}
			if !e1.ids.Ended(id) {
				t.Error("the end for good was not recorded")
			}
			other := mcptest.New(url2, nil)
			other.SetSession(id, "2025-06-18")
			if st := pingStatus(t, other); st != http.StatusNotFound {
				t.Errorf("the session, on another replica: HTTP %d, want 404", st)
			}
		})
	}
}

// SV-2, SV-9, OP-5: an adoption that takes the lock after the endpoint
// began to close opens nothing: it is answered as a call cut at shutdown,
// holds no place under the caps, and no session outlives Close.
func TestAdoptRacingCloseOpensNothingSV2(t *testing.T) {
	_, url1 := legacyEndpoint(t, EndpointOptions{SessionKey: endKey, SessionParkAfter: -1})
	var started atomic.Int32
	limits := session.NewLimits(0, 0)
	e2, url2 := legacyEndpoint(t, EndpointOptions{SessionKey: endKey, SessionParkAfter: -1, Limits: limits,
		SessionStarted: func(context.Context, string) { started.Add(1) }})
	id := openTestSession(t, mcptest.New(url1, nil))
	if err := e2.Close(context.Background()); err != nil {
		t.Error(err)
	}
	moved := mcptest.New(url2, nil)
	moved.SetSession(id, "2025-06-18")
	resp, err := moved.Post(t.Context(), pingBody, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, rpcErr, err := resp.Result()
	if err != nil || rpcErr == nil || rpcErr.Code != codeShutdown {
		t.Errorf("the request adopting during Close: HTTP %d, %v %v, want the shutdown's JSON-RPC error", resp.Status, rpcErr, err)
	}
	if e2.ids.Lookup(id).Phase.State != session.Absent || limits.Open() != 0 || started.Load() != 0 {
		t.Errorf("after Close: session known %v, places held %d, sessions started %d (want none)", e2.ids.Lookup(id).Phase.State != session.Absent, limits.Open(), started.Load())
	}
}

// SV-2, SV-9: an initialize answered once the endpoint began to close opens
// no session: it gets the shutdown's JSON-RPC error, no id, no place under
// the caps, and SessionStarted is not told.
func TestInitializeAfterCloseOpensNothingSV2(t *testing.T) {
	var started atomic.Int32
	limits := session.NewLimits(0, 0)
	e, url := legacyEndpoint(t, EndpointOptions{SessionKey: endKey, SessionParkAfter: -1, Limits: limits,
		SessionStarted: func(context.Context, string) { started.Add(1) }})
	if err := e.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	c := mcptest.New(url, nil)
	_, err := c.Initialize(t.Context())
	var rpcErr *mcptest.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != codeShutdown {
		t.Errorf("initialize after Close: %v, want the shutdown's JSON-RPC error", err)
	}
	if c.Session() != "" || e.KnownSessionsForTest() != 0 || limits.Open() != 0 || started.Load() != 0 {
		t.Errorf("after Close: id %q, records %d, places held %d, sessions started %d (want none)", c.Session(), e.KnownSessionsForTest(), limits.Open(), started.Load())
	}
}

// subscriptionRouter counts the upstream subscriptions asked and let go of.
type subscriptionRouter struct{ sub, unsub atomic.Int32 }

func (r *subscriptionRouter) SubscribeResource(context.Context, string) error {
	r.sub.Add(1)
	return nil
}

func (r *subscriptionRouter) UnsubscribeResource(context.Context, string) error {
	r.unsub.Add(1)
	return nil
}

func (r *subscriptionRouter) Complete(context.Context, json.RawMessage) (json.RawMessage, error) {
	return nil, nil
}

// SV-2: a resources/subscribe admitted before its session's end, whose
// handler runs after the end let go of the session's subscriptions, leaves
// nothing: no subscription of the ended session in the hub, and every
// upstream subscription asked is let go of.
func TestSubscribeRacingEndLeavesNoSubscriptionSV2(t *testing.T) {
	e, url := legacyEndpoint(t, EndpointOptions{SessionKey: endKey, SessionParkAfter: -1, Hub: NewHub()})
	r := &subscriptionRouter{}
	e.router = r
	id := openTestSession(t, mcptest.New(url, nil))
	s := e.ids.Lookup(id).Conn
	ctx := e.mcp.WithContext(t.Context(), s)
	// The client's DELETE ends the session first...
	if end, _ := e.ids.End(id, session.ByClient); !end {
		t.Fatal("the session did not end")
	}
	// ...then the handler of the subscribe admitted before it runs.
	req := &mcpgo.SubscribeRequest{}
	req.Params.URI = "file:///x"
	e.subscribe(ctx, nil, req)
	e.opts.Hub.mu.Lock()
	left := len(e.opts.Hub.subs["file:///x"])
	e.opts.Hub.mu.Unlock()
	if left != 0 || r.sub.Load() != r.unsub.Load() {
		t.Errorf("after the session ended: %d subscriptions in the hub, upstream subscribed %d times, let go of %d", left, r.sub.Load(), r.unsub.Load())
	}
	// A live session still subscribes.
	live := openTestSession(t, mcptest.New(url, nil))
	e.subscribe(e.mcp.WithContext(t.Context(), e.ids.Lookup(live).Conn), nil, req)
	if r.sub.Load() != 1 {
		t.Errorf("a live session's subscribe: upstream subscribed %d times, want once", r.sub.Load())
	}
}
