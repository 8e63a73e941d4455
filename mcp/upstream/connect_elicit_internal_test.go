package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp/downstream"
)

// UI-2: the URL elicitations waiting for an actor's connection: complete
// tells every one of that actor (its session first, then its call) and no
// one else's; one taken by id is gone; expired ones are dropped as new
// ones come, and an actor's count is bounded.
func TestConnectWaiters(t *testing.T) {
	var cw connectWaiters
	var order []string
	waiter := func(id string, ttl time.Duration) *connectWaiter {
		w := &connectWaiter{id: id, expires: time.Now().Add(ttl), done: make(chan struct{})}
		w.notify = func() {
			select {
			case <-w.done:
				order = append(order, id+": notified after its call went on")
			default:
				order = append(order, id)
			}
		}
		return w
	}
	a1, a2, b1 := waiter("a1", time.Hour), waiter("a2", time.Hour), waiter("b1", time.Hour)
	cw.add("alice", a1)
	cw.add("alice", a2)
	cw.add("bob", b1)
	if got := cw.take("alice", "a2"); len(got) != 1 || got[0] != a2 {
		t.Fatalf("take(a2) = %v", got)
	}
	if got := cw.take("alice", "a2"); len(got) != 0 {
		t.Fatalf("a2 taken twice: %v", got)
	}
	cw.complete("alice")
	if fmt.Sprint(order) != "[a1]" {
		t.Fatalf("complete(alice) told %v, want a1 alone", order)
	}
	select {
	case <-a1.done:
	default:
		t.Fatal("a1's call was not let go")
	}
	select {
	case <-b1.done:
		t.Fatal("bob's waiter was completed by alice's connection")
	default:
	}

	cw.add("carol", waiter("old", -time.Second))
	for i := range maxConnectWaiters + 2 {
		cw.add("carol", waiter(fmt.Sprint("c", i), time.Hour))
	}
	got := cw.take("carol", "")
	if len(got) != maxConnectWaiters || got[0].id != "c2" {
		t.Fatalf("carol keeps %d waiters from %s, want %d from c2 (the expired one and the oldest dropped)", len(got), got[0].id, maxConnectWaiters)
	}
}

// connectedTokens answers every actor connected, and says on called each
// time it was asked.
type connectedTokens struct{ called chan struct{} }

func (c connectedTokens) Token(context.Context, string, string) (string, string, error) {
	select {
	case c.called <- struct{}{}:
	default:
	}
	return "tok", "conn", nil
}
func (connectedTokens) CatalogActor(context.Context, string) (string, bool, error) {
	return "", false, nil
}
func (connectedTokens) Refused(context.Context, string, string, string) error { return nil }

// UI-2: a waiting call whose waiter is dropped from its actor's list (more
// than maxConnectWaiters calls of one actor wait) answers at once rather
// than waiting on a record nobody completes; ended calls' records go
// first. And a call whose poll sees the connection while its waiter was
// taken by someone else who never finishes it still ends with its context.
func TestConnectWaiterDroppedDoesNotHang(t *testing.T) {
	pt := connectedTokens{called: make(chan struct{}, 1)}
	u := &OAuthUpstream{name: "crm", opts: OAuthUpstreamOptions{Tokens: pt}}
	live := func(id string) *connectWaiter {
		return &connectWaiter{id: id, expires: time.Now().Add(time.Hour), live: true, done: make(chan struct{})}
	}
	first := live("first")
	u.waiters.add("alice", first)
	u.waiters.add("alice", &connectWaiter{id: "ended", expires: time.Now().Add(time.Hour), done: make(chan struct{})})
	for i := range maxConnectWaiters - 2 {
		u.waiters.add("alice", live(fmt.Sprint(i)))
	}
	// Full: the ended call's record goes, not a waiting call.
	u.waiters.add("alice", live("next"))
	select {
	case <-first.done:
		t.Fatal("a waiting call was dropped while an ended call's record was there")
	default:
	}
	// Full of waiting calls: the oldest answers.
	u.waiters.add("alice", live("last"))
	if u.waitConnected(context.Background(), "alice", first) {
		t.Fatal("the dropped call reported a connection")
	}

	// Taken by another who never finishes it: the poll sees the token,
	// and the call still ends with its context.
	w := live("taken")
	u.waiters.add("bob", w)
	u.waiters.take("bob", "taken")
	ctx, cancel := context.WithCancel(context.Background())
	ret := make(chan bool, 1)
	go func() { ret <- u.waitConnected(ctx, "bob", w) }()
	<-pt.called // the poll saw the connection
	cancel()
	if <-ret {
		t.Fatal("a call whose context ended reported a connection")
	}
	w.finish(true) // finishing twice is harmless
	w.finish(false)
}

// UI-2: once a call stops waiting, nothing of it is kept: a sessionless
// call's waiter is gone, and a session's gives way to a record that only
// tells the session when the connection completes.
func TestConnectWaiterEndedKeepsNothingOfTheCall(t *testing.T) {
	var cw connectWaiters
	told := make(chan string, 2)
	callNotified := false
	withSession := &connectWaiter{id: "s", expires: time.Now().Add(time.Hour), live: true, done: make(chan struct{}),
		notify: func() { callNotified = true }, later: func() { told <- "s" }}
	sessionless := &connectWaiter{id: "m", expires: time.Now().Add(time.Hour), live: true, done: make(chan struct{})}
	cw.add("alice", withSession)
	cw.add("alice", sessionless)
	cw.ended("alice", sessionless)
	cw.ended("alice", withSession)
	cw.mu.Lock()
	left := cw.m["alice"]
	cw.mu.Unlock()
	if len(left) != 1 || left[0] == withSession || left[0].id != "s" || left[0].live {
		t.Fatalf("after both calls ended the list holds %+v, want only a record for the session's elicitation", left)
	}
	cw.complete("alice")
	if got := <-told; got != "s" || callNotified {
		t.Fatalf("the connection told %q (through the ended call: %v), want the session alone", got, callNotified)
	}
	cw.ended("bob", sessionless) // nothing there: nothing happens
	if len(cw.m) != 0 {
		t.Fatalf("waiters left: %v", cw.m)
	}
}

// fakeURLSession is the downstream of a 2025-11-25 session that declared
// URL-mode elicitation; each elicitation/create goes to asked and is
// answered with answer.
type fakeURLSession struct {
	asked  chan mcpgo.ElicitationRequest
	answer mcpgo.ElicitationResponseAction
}

var _ downstream.Downstream = (*fakeURLSession)(nil)

func (*fakeURLSession) ProgressToken() any                           { return nil }
func (*fakeURLSession) LogLevel() (mcpgo.LoggingLevel, bool)         { return "", false }
func (*fakeURLSession) Notify(string, map[string]any)                {}
func (*fakeURLSession) Streamed() bool                               { return false }
func (*fakeURLSession) Session() any                                 { return "sess-1" }
func (*fakeURLSession) CanElicitURL() bool                           { return true }
func (*fakeURLSession) NotifyCallStream(string, map[string]any) bool { return false }
func (*fakeURLSession) SessionNotifier() func(string, map[string]any) {
	return func(string, map[string]any) {}
}

func (f *fakeURLSession) Request(_ context.Context, method string, params json.RawMessage) (any, error) {
	r := mcpgo.ElicitationRequest{Request: mcpgo.Request{Method: method}}
	if err := json.Unmarshal(params, &r.Params); err != nil {
		return nil, err
	}
	f.asked <- r
	return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: f.answer}}, nil
}

// linkErr is the manager's not-connected error with its link.
type linkErr struct {
	url     string
	expires time.Time
}

func (e linkErr) Error() string                    { return "not connected: open " + e.url }
func (e linkErr) Unwrap() error                    { return core.ErrNotConnected }
func (e linkErr) ConnectLink() (string, time.Time) { return e.url, e.expires }

// askingCtx is a call of alice on a session that can open URLs.
func askingCtx(t *testing.T, sess *fakeURLSession) context.Context {
	t.Helper()
	ctx := core.WithCall(context.Background(), core.Call{Actor: core.Actor{ID: "alice"}, Session: "sess-1"})
	return downstream.With(ctx, sess)
}

func newTestOAuthUpstream(t *testing.T, tokens OAuthTokens) *OAuthUpstream {
	t.Helper()
	u, err := NewOAuthUpstream(OAuthUpstreamOptions{Upstream: Options{Name: "crm", URL: "http://127.0.0.1:1/mcp"}, PerActor: true, Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = u.Close() })
	return u
}

// UI-2: a link that has already expired is answered at once, the client
// not asked to open it; a live one is asked (here declined).
func TestConnectExpiredLinkAnsweredAtOnce(t *testing.T) {
	u := newTestOAuthUpstream(t, connectedTokens{})
	sess := &fakeURLSession{asked: make(chan mcpgo.ElicitationRequest, 1), answer: mcpgo.ElicitationResponseActionDecline}
	ctx := askingCtx(t, sess)
	expired := linkErr{url: "http://127.0.0.1/upstream-oauth/connect?t=old", expires: time.Now().Add(-time.Second)}
	res, ok := u.askToConnect(ctx, "alice", expired)
	if ok || !res.IsError || len(sess.asked) != 0 || !strings.Contains(string(res.JSON), expired.url) || strings.Contains(string(res.JSON), "decline") {
		t.Fatalf("an expired link: ok %v, %d asked, %q; want the link answered without asking", ok, len(sess.asked), string(res.JSON))
	}
	fresh := linkErr{url: "http://127.0.0.1/upstream-oauth/connect?t=new", expires: time.Now().Add(time.Hour)}
	res, ok = u.askToConnect(ctx, "alice", fresh)
	if ok || len(sess.asked) != 1 || !strings.Contains(string(res.JSON), "(decline)") {
		t.Fatalf("a live link: ok %v, %d asked, %q; want asked and declined", ok, len(sess.asked), string(res.JSON))
	}
}

// UI-2: Shutdown ends a call waiting for its actor to connect at once with
// the isError answer naming the link, and a call after it is not asked.
func TestConnectWaitEndsAtShutdown(t *testing.T) {
	u := newTestOAuthUpstream(t, notConnected{})
	sess := &fakeURLSession{asked: make(chan mcpgo.ElicitationRequest, 2), answer: mcpgo.ElicitationResponseActionAccept}
	ctx := askingCtx(t, sess)
	link := linkErr{url: "http://127.0.0.1/upstream-oauth/connect?t=x", expires: time.Now().Add(time.Hour)}
	type answer struct {
		res core.Result
		ok  bool
	}
	done := make(chan answer, 1)
	go func() {
		res, ok := u.askToConnect(ctx, "alice", link)
		done <- answer{res, ok}
	}()
	<-sess.asked
	for u.waiting.Load() == 0 {
		select {
		case a := <-done:
			t.Fatalf("the call answered before waiting: %+v", a)
		default:
			runtime.Gosched()
		}
	}
	if n := u.Shutdown(); n != 1 {
		t.Fatalf("Shutdown counted %d waiting calls, want 1", n)
	}
	a := <-done
	if a.ok || !a.res.IsError || !strings.Contains(string(a.res.JSON), "shutting down") || !strings.Contains(string(a.res.JSON), link.url) {
		t.Fatalf("the waiting call at shutdown: ok %v %q", a.ok, string(a.res.JSON))
	}
	if res, ok := u.askToConnect(ctx, "alice", link); ok || len(sess.asked) != 0 || !strings.Contains(string(res.JSON), link.url) {
		t.Fatalf("a call after shutdown: ok %v, asked %d, %q", ok, len(sess.asked), string(res.JSON))
	}
	if len(u.waiters.m) != 0 {
		t.Fatalf("waiters left after shutdown: %v", u.waiters.m)
	}
}

// notConnected answers every actor not connected.
type notConnected struct{}

func (notConnected) Token(context.Context, string, string) (string, string, error) {
	return "", "", core.ErrNotConnected
}
func (notConnected) CatalogActor(context.Context, string) (string, bool, error) {
	return "", false, nil
}
func (notConnected) Refused(context.Context, string, string, string) error { return nil }
