package signals

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// waitFor bounds every wait on a signal's delivery; a delivery takes
// microseconds, the bound only keeps a broken build from hanging.
const waitFor = 30 * time.Second

// OP-12: SIGHUPs caught before any handler is set are owed once, however
// many arrived, and handed to the first handler set; later ones go
// straight to the handler.
func TestHangupOwedOnceOP12(t *testing.T) {
	r := &Router{stop: func() {}}
	for range 3 {
		r.deliver(syscall.SIGHUP)
	}
	calls := 0
	r.OnHangup(func() { calls++ })
	if calls != 1 {
		t.Fatalf("handler called %d times for the hangups before it was set, want 1", calls)
	}
	r.OnHangup(func() { calls++ }) // nothing owed any more
	if calls != 1 {
		t.Fatalf("a second handler was handed an owed hangup again (%d calls)", calls)
	}
	r.deliver(syscall.SIGHUP)
	if calls != 2 {
		t.Fatalf("a hangup with a handler set made %d calls, want 2", calls)
	}
	r.OnHangup(nil)
	r.deliver(syscall.SIGHUP)
	if calls != 2 {
		t.Fatal("a cleared handler was still called")
	}
	r.OnHangup(func() { calls += 10 })
	if calls != 12 {
		t.Fatalf("the hangup after the handler was cleared was not owed to the next (%d)", calls)
	}
}

// SIGINT and SIGTERM end the stop context; a SIGHUP never does. (OP-12)
func TestStopSignalsOP12(t *testing.T) {
	stopped := false
	r := &Router{stop: func() { stopped = true }}
	r.deliver(syscall.SIGHUP)
	if stopped {
		t.Fatal("SIGHUP stopped the process")
	}
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		stopped = false
		r.deliver(s)
		if !stopped {
			t.Errorf("%v did not stop", s)
		}
	}
}

// A nil Router (a command run from a test) accepts every call. (OP-12)
func TestNilRouter(t *testing.T) {
	var r *Router
	r.OnHangup(func() { t.Fatal("called") })
	r.Stop()
}

// The real thing: this test binary imports the package, so its init has
// caught SIGHUP and SIGTERM; both sent to the process itself are delivered
// through Start instead of ending it. (OP-12)
func TestRealSignalsOP12(t *testing.T) {
	ctx, r, release := Start(context.Background())
	defer release()
	got := make(chan struct{}, 1)
	r.OnHangup(func() { got <- struct{}{} })
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(waitFor):
		t.Fatal("SIGHUP never reached the handler")
	}
	if ctx.Err() != nil {
		t.Fatal("SIGHUP ended the stop context")
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(waitFor):
		t.Fatal("SIGTERM did not end the stop context")
	}
}
