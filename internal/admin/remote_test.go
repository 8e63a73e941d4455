package admin

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/eventbustest"
)

// fast reconnects, so the tests over real sockets take milliseconds.
var fastOpts = RemoteOptions{BackoffMin: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond}

func subscribe(t *testing.T, c *Client, o RemoteOptions) (core.Snapshot, core.Subscription) {
	t.Helper()
	rc := NewRemoteConsole(c, &o)
	snap, sub, err := rc.Subscribe(bg(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	return snap, sub
}

func streamOf(s core.Snapshot) string {
	if len(s.Upstreams) == 0 {
		return ""
	}
	return s.Upstreams[0].Name
}

// CO-9: subscribe returns the stream's first snapshot; C delivers the events after
// it, decoded, in order; Close closes C.
func TestRemoteSubscribeInOrder(t *testing.T) {
	f := newFakeAdmin(t)
	f.setSnapSeq(10)
	_, c := startFake(t, f, nil)
	rc := NewRemoteConsole(c, nil)
	snap, sub, err := rc.Subscribe(bg(t))
	if err != nil {
		t.Fatal(err)
	}
	if snap.Seq != 10 || streamOf(snap) != "stream-1" {
		t.Fatalf("first snapshot %+v", snap)
	}
	conn := f.nextConn(t)
	for i := uint64(11); i <= 60; i++ {
		conn.event(t, i, core.Warning{Message: "w"})
	}
	conn.event(t, 61, core.OperatorAction{Operator: "bob", Action: core.ActionApproveConfirmation, Target: "c1"})
	for i := uint64(11); i <= 60; i++ {
		if ev := recv(t, sub); ev.Seq != i {
			t.Fatalf("event %d arrived as %d (%T)", i, ev.Seq, ev.Data)
		}
	}
	eventbustest.ExpectExactly(t, sub, func(a core.OperatorAction) bool { return a.Operator == "bob" && a.Target == "c1" })
	sub.Close()
	for range sub.C() {
	}
	if _, err := sub.Resync(bg(t)); !errors.Is(err, ErrSubscriptionClosed) {
		t.Fatalf("Resync after Close: %v", err)
	}
	<-conn.gone // Close ended the stream on the server too
}

// CO-9: A resync frame becomes a core.Resync whose Resync returns the snapshot
// frame that follows; events after that snapshot follow in C, events
// between the two frames (covered by the snapshot) do not.
func TestRemoteServerResyncOrder(t *testing.T) {
	f := newFakeAdmin(t)
	_, c := startFake(t, f, nil)
	_, sub := subscribe(t, c, fastOpts)
	conn := f.nextConn(t)
	conn.event(t, 1, core.Warning{Message: "before"})
	conn.send("event: " + FrameResync)
	conn.event(t, 2, core.Warning{Message: "dropped by the gateway, in the snapshot"})
	conn.snapshot(t, core.Snapshot{Seq: 50, Upstreams: []core.UpstreamStatus{{Name: "resynced"}}})
	conn.event(t, 51, core.Warning{Message: "after"})
	eventbustest.ExpectExactly(t, sub,
		func(w core.Warning) bool { return w.Message == "before" },
		eventbustest.Type[core.Resync](),
	)
	snap, err := sub.Resync(bg(t))
	if err != nil || snap.Seq != 50 || streamOf(snap) != "resynced" {
		t.Fatalf("Resync: %+v %v", snap, err)
	}
	eventbustest.ExpectExactly(t, sub, func(w core.Warning) bool { return w.Message == "after" })
	if f.streams() != 1 {
		t.Fatalf("%d streams: a server resync needs no reconnect", f.streams())
	}
}

// CO-9: the server dies mid-stream and comes back on the same address: the
// subscription delivers ConnectionLost at once, then, reconnected, Resync,
// whose Resync returns the new server's snapshot; then its events.
func TestRemoteServerDiesMidStream(t *testing.T) {
	noLeaks(t)
	f := newFakeAdmin(t)
	srv := httptest.NewServer(f)
	addr := srv.Listener.Addr().String()
	c, err := NewClient(srv.URL, fakeKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, sub := subscribe(t, c, fastOpts)
	conn := f.nextConn(t)
	conn.event(t, 1, core.Warning{Message: "live"})
	eventbustest.ExpectExactly(t, sub, eventbustest.Type[core.Warning]())

	lostAt := time.Now()
	srv.CloseClientConnections()
	srv.Close()
	var lost core.ConnectionLost
	eventbustest.ExpectExactly(t, sub, func(l core.ConnectionLost) { lost = l })
	if took := time.Since(lostAt); took > 2*time.Second {
		t.Errorf("ConnectionLost came %v after the server died", took)
	}
	if lost.Error == "" || lost.Retry.Before(lostAt) || strings.Contains(lost.Error, fakeKey) {
		t.Errorf("ConnectionLost %+v", lost)
	}
	// While it is down, every failed attempt says when the next one is.
	var second core.ConnectionLost
	eventbustest.ExpectExactly(t, sub, func(l core.ConnectionLost) { second = l })
	if !second.Retry.After(lost.Retry) || !strings.Contains(second.Error, "connection refused") {
		t.Errorf("second ConnectionLost %+v after %+v", second, lost)
	}

	// Back on the same address, as a restarted gateway is.
	f2 := newFakeAdmin(t)
	f2.setSnapSeq(3)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv2 := httptest.NewUnstartedServer(f2)
	srv2.Listener = ln
	srv2.Start()
	defer srv2.Close()
	defer srv2.CloseClientConnections()
	eventbustest.Expect(t, sub, eventbustest.Type[core.Resync]())
	snap, err := sub.Resync(bg(t))
	if err != nil || snap.Seq != 3 {
		t.Fatalf("Resync after the restart: %+v %v", snap, err)
	}
	conn2 := f2.nextConn(t)
	conn2.event(t, 4, core.Warning{Message: "new life"})
	eventbustest.ExpectExactly(t, sub, func(w core.Warning) bool { return w.Message == "new life" })
}

// CO-9: A stream that goes silent (no heartbeat) is a lost link.
func TestRemoteIdleStreamIsLost(t *testing.T) {
	f := newFakeAdmin(t)
	_, c := startFake(t, f, nil)
	o := fastOpts
	o.Idle = 200 * time.Millisecond
	_, sub := subscribe(t, c, o)
	conn := f.nextConn(t)
	eventbustest.ExpectExactly(t, sub, func(l core.ConnectionLost) bool { return strings.Contains(l.Error, "not even a heartbeat") })
	<-conn.gone
	f.nextConn(t)
	eventbustest.Expect(t, sub, eventbustest.Type[core.Resync]())
	if snap, err := sub.Resync(bg(t)); err != nil || streamOf(snap) != "stream-2" {
		t.Fatalf("Resync: %+v %v", snap, err)
	}
}

// CO-9: A consumer that does not read is dropped, not waited for: the stream is
// closed once its buffer is full, a Resync marker sits in the kept slot,
// nothing reconnects until the consumer resyncs, and then a fresh stream's
// snapshot answers.
func TestRemoteConsumerFallsBehind(t *testing.T) {
	f := newFakeAdmin(t)
	_, c := startFake(t, f, nil)
	o := fastOpts
	o.Buffer = 4
	_, sub := subscribe(t, c, o)
	conn := f.nextConn(t)
	for i := uint64(1); i <= 20; i++ {
		conn.event(t, i, core.Warning{Message: "flood"})
	}
	select {
	case <-conn.gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream of a consumer that fell behind stayed open")
	}
	if n := f.streams(); n != 1 {
		t.Fatalf("%d streams before the consumer resynced", n)
	}
	for i := uint64(1); i <= 4; i++ {
		if ev := recv(t, sub); ev.Seq != i {
			t.Fatalf("event %d arrived as %d", i, ev.Seq)
		}
	}
	eventbustest.ExpectExactly(t, sub, eventbustest.Type[core.Resync]())
	eventbustest.ExpectExactly(t, sub) // nothing after the marker until Resync
	f.setSnapSeq(40)
	snap, err := sub.Resync(bg(t))
	if err != nil || snap.Seq != 40 || streamOf(snap) != "stream-2" {
		t.Fatalf("Resync: %+v %v", snap, err)
	}
	conn2 := f.nextConn(t)
	conn2.event(t, 41, core.Warning{Message: "caught up"})
	eventbustest.ExpectExactly(t, sub, func(w core.Warning) bool { return w.Message == "caught up" })
}

// CO-9: resync while the link is down fails with a DisconnectedError instead of
// waiting silently; the subscription carries on and delivers a Resync
// marker once it is back.
func TestRemoteResyncWhileDown(t *testing.T) {
	f := newFakeAdmin(t)
	_, c := startFake(t, f, nil)
	_, sub := subscribe(t, c, fastOpts)
	conn := f.nextConn(t)
	conn.send("event: " + FrameResync)
	eventbustest.ExpectExactly(t, sub, eventbustest.Type[core.Resync]())
	f.setRefuse(true)
	conn.drop()
	_, err := sub.Resync(bg(t))
	var de *DisconnectedError
	if !errors.As(err, &de) || de.Err == "" || de.Retry.IsZero() {
		t.Fatalf("Resync while down: %v", err)
	}
	eventbustest.Expect(t, sub, func(l core.ConnectionLost) bool { return strings.Contains(l.Error, "shutting down") })
	f.setRefuse(false)
	eventbustest.Expect(t, sub, eventbustest.Type[core.Resync]())
	snap, err := sub.Resync(bg(t))
	if err != nil || streamOf(snap) != "stream-2" {
		t.Fatalf("Resync once back: %+v %v", snap, err)
	}
}

// CO-9: close ends a subscription that is waiting to reconnect, and a Resync
// waiting on it; nothing is left running (noLeaks).
func TestRemoteCloseWhileReconnecting(t *testing.T) {
	f := newFakeAdmin(t)
	_, c := startFake(t, f, nil)
	o := RemoteOptions{BackoffMin: time.Hour, BackoffMax: time.Hour}
	rc := NewRemoteConsole(c, &o)
	_, sub, err := rc.Subscribe(bg(t))
	if err != nil {
		t.Fatal(err)
	}
	conn := f.nextConn(t)
	conn.send("event: " + FrameResync)
	eventbustest.ExpectExactly(t, sub, eventbustest.Type[core.Resync]())
	done := make(chan error, 1)
	go func() {
		_, err := sub.Resync(context.Background())
		done <- err
	}()
	conn.drop()
	if err := <-done; err == nil {
		t.Fatal("Resync answered a snapshot while down")
	}
	closed := make(chan struct{})
	go func() { sub.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for the hour-long backoff")
	}
	for range sub.C() {
	}
}

// CO-9: subscribe fails, with the cause, when the gateway refuses or is not there.
func TestRemoteSubscribeFails(t *testing.T) {
	f := newFakeAdmin(t)
	srv, _ := startFake(t, f, nil)
	bad, err := NewClient(srv.URL, "not-the-key-0123456789", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, _, err := NewRemoteConsole(bad, nil).Subscribe(bg(t)); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("wrong key: %v", err)
	}
	f.handle("GET /v1/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: event\ndata: {}\n\n"))
	})
	c, err := NewClient(srv.URL, fakeKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := NewRemoteConsole(c, nil).Subscribe(bg(t)); err == nil || !strings.Contains(err.Error(), "want \"snapshot\"") {
		t.Errorf("a stream that does not start with a snapshot: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := NewRemoteConsole(c, nil).Subscribe(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// CO-9.
func TestBackoffBounds(t *testing.T) {
	lo, hi := DefaultBackoffMin, DefaultBackoffMax
	for n := range 70 {
		nominal := hi
		if n < 5 {
			nominal = lo << n
		}
		for _, j := range []float64{0, 0.5, 0.999999} {
			d := backoff(n, lo, hi, func() float64 { return j })
			if d < nominal/2 || d > nominal || d > hi {
				t.Errorf("attempt %d, jitter %v: %v, want within [%v, %v]", n, j, d, nominal/2, nominal)
			}
		}
	}
	if a, b := backoff(3, lo, hi, func() float64 { return 0 }), backoff(3, lo, hi, func() float64 { return 0.99 }); a == b {
		t.Errorf("jitter changes nothing: %v", a)
	}
}

// CO-9: resync asked without a marker (a consumer that wants a fresh view) gets
// one from a new stream, and events carry on after it.
func TestRemoteResyncWithoutMarker(t *testing.T) {
	f := newFakeAdmin(t)
	_, c := startFake(t, f, nil)
	_, sub := subscribe(t, c, fastOpts)
	conn := f.nextConn(t)
	f.setSnapSeq(9)
	snap, err := sub.Resync(bg(t))
	if err != nil || snap.Seq != 9 || streamOf(snap) != "stream-2" {
		t.Fatalf("Resync without a marker: %+v %v", snap, err)
	}
	<-conn.gone
	conn2 := f.nextConn(t)
	conn2.event(t, 10, core.Warning{Message: "next"})
	eventbustest.ExpectExactly(t, sub, func(w core.Warning) bool { return w.Message == "next" })
}
