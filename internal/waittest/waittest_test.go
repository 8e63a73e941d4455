package waittest

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, as the real one does.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder in its own goroutine and returns the failure
// message, empty if f did not fail.
func run(f func(tb testing.TB)) string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.failed
}

// A condition that comes true is waited for; one that never does fails the
// test, naming what was waited for, once the bound has passed.
func TestEventually(t *testing.T) {
	var n atomic.Int32
	if msg := run(func(tb testing.TB) {
		Eventually(tb, time.Minute, "the third poll", func() bool { return n.Add(1) >= 3 })
	}); msg != "" {
		t.Errorf("a condition that came true failed: %s", msg)
	}
	if n.Load() != 3 {
		t.Errorf("polled %d times, want 3", n.Load())
	}
	start := time.Now()
	msg := run(func(tb testing.TB) {
		Eventually(tb, 30*time.Millisecond, "pigs to fly", func() bool { return false })
	})
	if !strings.Contains(msg, "pigs to fly") || !strings.Contains(msg, "30ms") {
		t.Errorf("failure %q does not name what was waited for and the bound", msg)
	}
	if waited := time.Since(start); waited < 30*time.Millisecond {
		t.Errorf("gave up after %v, before the bound", waited)
	}
}

// Succeeds reports the condition's last error.
func TestSucceeds(t *testing.T) {
	var n atomic.Int32
	msg := run(func(tb testing.TB) {
		Succeeds(tb, 20*time.Millisecond, "the count to settle", func() error {
			return fmt.Errorf("count %d", n.Add(1))
		})
	})
	if want := fmt.Sprintf("count %d", n.Load()); !strings.Contains(msg, "the count to settle") || !strings.HasSuffix(msg, want) {
		t.Errorf("failure %q, want it to name the wait and end with the last error %q", msg, want)
	}
	if msg := run(func(tb testing.TB) {
		Succeeds(tb, time.Minute, "nothing", func() error { return nil })
	}); msg != "" {
		t.Errorf("a condition that held failed: %s", msg)
	}
}

// Poll checks the condition once more at the deadline and reports false
// only then.
func TestPoll(t *testing.T) {
	if !Poll(0, func() bool { return true }) {
		t.Error("a condition true at once was not seen with no time to wait")
	}
	if Poll(10*time.Millisecond, func() bool { return false }) {
		t.Error("a condition never true reported as held")
	}
}

// Recv returns the value sent and fails on a timeout or a closed channel.
func TestRecv(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	var got int
	if msg := run(func(tb testing.TB) { got = Recv(tb, time.Minute, "seven", ch) }); msg != "" || got != 7 {
		t.Errorf("Recv = %d, failure %q", got, msg)
	}
	if msg := run(func(tb testing.TB) { Recv(tb, 10*time.Millisecond, "a value never sent", ch) }); !strings.Contains(msg, "a value never sent") {
		t.Errorf("timeout failure %q", msg)
	}
	close(ch)
	if msg := run(func(tb testing.TB) { Recv(tb, time.Minute, "a value", ch) }); !strings.Contains(msg, "closed") {
		t.Errorf("closed failure %q", msg)
	}
}
