package upstreams

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/coretest"
	"github.com/toolgate/toolgate/core/eventbustest"
)

var refused = fmt.Errorf("dial tcp 127.0.0.1:1: %w", syscall.ECONNREFUSED)

// failConnects makes the next n connects of up fail as a closed port does.
func failConnects(up *coretest.FakeUpstream, n int) {
	for range n {
		up.FailConnect(refused)
	}
}

// IM-37: the wait before retry n doubles from the initial delay, is capped,
// and jitter only ever shortens it, by at most half.
func TestReconnectWaitIM37(t *testing.T) {
	r := Reconnect{}.withDefaults()
	if r.InitialDelay != time.Second || r.MaxDelay != 30*time.Second {
		t.Fatalf("defaults: %+v", r)
	}
	for _, n := range []int{0, 1, 2, 3, 4, 5, 6, 10, 64, 1 << 20} {
		d := 30 * time.Second
		if n < 5 {
			d = time.Second << n
		}
		for range 200 {
			if w := r.wait(n); w < d/2 || w > d {
				t.Fatalf("wait(%d) = %v, want within [%v, %v]", n, w, d/2, d)
			}
		}
	}
	if r := (Reconnect{InitialDelay: time.Minute, MaxDelay: time.Second}).withDefaults(); r.MaxDelay != time.Minute {
		t.Fatalf("a cap below the initial delay: %+v", r)
	}
}

// IM-37: an upstream down at start is retried in the background on the
// capped exponential schedule, each next attempt shown in its status, and
// its tools are imported at the attempt that answers, with no operator
// action.
func TestReconnectBackoffIM37(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := core.NewRegistry(nil)
		up := coretest.NewFakeUpstream("late", coretest.FakeTool("a", "A", ""))
		const failing = 5 // retries that fail before one answers
		failConnects(up, 3+failing)
		s := spec("late", up)
		s.Reconnect = Reconnect{InitialDelay: time.Second, MaxDelay: 8 * time.Second}
		im := newImporter(t, reg, s)
		_, sub := reg.Bus().Subscribe(0)
		defer sub.Close()
		coretest.Must(t, im.Start(context.Background()))
		if st := im.Statuses()[0]; st.State != core.StateFailed {
			t.Fatalf("after Start: %+v", st)
		}

		var at time.Time
		for n := range failing + 1 {
			eventbustest.Expect(t, sub, func(e core.UpstreamChanged) bool {
				at = e.Status.NextAttempt
				return !at.IsZero()
			})
			d := min(time.Second<<n, 8*time.Second)
			if wait := at.Sub(time.Now()); wait < d/2 || wait > d {
				t.Fatalf("retry %d scheduled in %v, want within [%v, %v]", n+1, wait, d/2, d)
			}
			if st := im.Statuses()[0]; st.State != core.StateFailed || !st.NextAttempt.Equal(at) || !strings.Contains(st.LastError, "refused") {
				t.Fatalf("while waiting for retry %d: %+v", n+1, st)
			}
		}
		eventbustest.Expect(t, sub, func(e core.ToolRegistered) bool { return e.Tool.Name == "late_a" })
		synctest.Wait() // the rest of the apply
		if now := time.Now(); !now.Equal(at) {
			t.Fatalf("imported at %v, want at the attempt scheduled for %v", now, at)
		}
		if got := up.ConnectAttempts(); got != 3+failing+1 {
			t.Fatalf("%d connect attempts, want %d", got, 3+failing+1)
		}
		if st := im.Statuses()[0]; st.State != core.StateConnected || st.Tools != 1 || !st.NextAttempt.IsZero() || st.LastError != "" {
			t.Fatalf("after the retry answered: %+v", st)
		}
	})
}

// IM-37: an upstream that never answers is retried for as long as the
// gateway runs, at the capped pace (default cap 30 s): never a hot loop,
// never given up.
func TestReconnectNeverHotIM37(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := core.NewRegistry(nil)
		up := coretest.NewFakeUpstream("gone")
		failConnects(up, 1000)
		im := newImporter(t, reg, spec("gone", up))
		coretest.Must(t, im.Start(context.Background()))
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		// Waits of 1, 2, 4, 8, 16 s and then 30 s, each up to half shorter:
		// in 600 s at least 5 + (600-31)/30 and at most 5 + (600-15.5)/15.
		if got := up.ConnectAttempts() - 3; got < 23 || got > 43 {
			t.Fatalf("%d retries in 10 minutes, want 23..43", got)
		}
		st := im.Statuses()[0]
		if wait := st.NextAttempt.Sub(time.Now()); st.State != core.StateFailed || wait <= 0 || wait > 30*time.Second {
			t.Fatalf("status after 10 minutes: %+v (next attempt in %v)", st, wait)
		}
	})
}

// stallingUpstream is a fake whose next stalls pings hang until their
// deadline, as a server that is up but no longer answers.
type stallingUpstream struct {
	*coretest.FakeUpstream
	stalls atomic.Int32
	pings  atomic.Int32
}

func (s *stallingUpstream) Ping(ctx context.Context) error {
	s.pings.Add(1)
	if s.stalls.Add(-1) >= 0 {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.FakeUpstream.Ping(ctx)
}

func stallingSpec(name string, up *stallingUpstream) UpstreamSpec {
	s := spec(name, up)
	s.Health = HealthCheck{Interval: 5 * time.Second, Timeout: time.Second}
	s.Reconnect = Reconnect{InitialDelay: time.Second, MaxDelay: 4 * time.Second}
	return s
}

// IM-37: a connected upstream whose health checks stop answering is marked
// failed after two timed-out pings in a row; it keeps its tools meanwhile
// (IM-23), and the retry that follows imports its current list.
func TestHealthCheckMarksFailedIM37(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := core.NewRegistry(nil)
		up := &stallingUpstream{FakeUpstream: coretest.NewFakeUpstream("n", coretest.FakeTool("a", "A", ""))}
		im := newImporter(t, reg, stallingSpec("n", up))
		_, sub := reg.Bus().Subscribe(0)
		defer sub.Close()
		coretest.Must(t, im.Start(context.Background()))
		start := time.Now()
		up.SetTools(coretest.FakeTool("a", "A", ""), coretest.FakeTool("b", "B", ""))
		up.stalls.Store(2)

		eventbustest.Expect(t, sub, func(e core.UpstreamChanged) bool {
			return e.Status.State == core.StateFailed && strings.Contains(e.Status.LastError, "health check")
		})
		// interval, the ping's timeout, the second opinion a retry delay
		// later, and its timeout.
		if got, want := time.Since(start), 5*time.Second+time.Second+time.Second+time.Second; got != want {
			t.Fatalf("marked failed after %v, want %v", got, want)
		}
		if !strings.Contains(im.Statuses()[0].LastError, context.DeadlineExceeded.Error()) {
			t.Fatalf("status: %+v", im.Statuses()[0])
		}
		if _, ok := reg.Get("n_a"); !ok {
			t.Fatal("a failed health check pruned the upstream's tools")
		}
		failed := time.Now()
		eventbustest.Expect(t, sub, func(e core.ToolRegistered) bool { return e.Tool.Name == "n_b" })
		synctest.Wait() // the rest of the apply
		if got := time.Since(failed); got > time.Second {
			t.Fatalf("re-imported %v after it was marked failed, want within the first retry's 1s", got)
		}
		if st := im.Statuses()[0]; st.State != core.StateConnected || st.Tools != 2 || st.LastError != "" {
			t.Fatalf("after the retry: %+v", st)
		}
	})
}

// IM-37: one unanswered ping is a blip: checked again a retry delay later,
// and if that answers the upstream was never failed. Checks then go on at
// the configured interval.
func TestHealthCheckBlipIM37(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := core.NewRegistry(nil)
		up := &stallingUpstream{FakeUpstream: coretest.NewFakeUpstream("n", coretest.FakeTool("a", "A", ""))}
		im := newImporter(t, reg, stallingSpec("n", up))
		_, sub := reg.Bus().Subscribe(0)
		defer sub.Close()
		coretest.Must(t, im.Start(context.Background()))
		up.stalls.Store(1)
		time.Sleep(30 * time.Second)
		synctest.Wait()
		for len(sub.C()) > 0 {
			if e, ok := (<-sub.C()).Data.(core.UpstreamChanged); ok && e.Status.State == core.StateFailed {
				t.Fatalf("a single lost ping marked the upstream failed: %+v", e.Status)
			}
		}
		// Pings at 5 s (lost), 7 s (the second opinion), 12, 17, 22, 27 s.
		if got := up.pings.Load(); got != 6 {
			t.Fatalf("%d pings in 30 s, want 6", got)
		}
		if st := im.Statuses()[0]; st.State != core.StateConnected {
			t.Fatalf("status: %+v", st)
		}
	})
}

// IM-37: a refresh that brings a failed upstream back ends its retries:
// the background loop sees the import and does not list it again.
func TestRefreshDuringReconnectIM37(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := core.NewRegistry(nil)
		up := coretest.NewFakeUpstream("n", coretest.FakeTool("a", "A", ""))
		failConnects(up, 3)
		im := newImporter(t, reg, spec("n", up))
		coretest.Must(t, im.Start(context.Background()))
		synctest.Wait()
		if st := im.Statuses()[0]; st.NextAttempt.IsZero() {
			t.Fatalf("no retry scheduled: %+v", st)
		}
		if _, err := im.Refresh(context.Background(), "n"); err != nil {
			t.Fatal(err)
		}
		if st := im.Statuses()[0]; st.State != core.StateConnected || !st.NextAttempt.IsZero() || st.Tools != 1 {
			t.Fatalf("after the refresh: %+v", st)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if up.Lists() != 1 || up.ConnectAttempts() != 4 {
			t.Fatalf("lists=%d connects=%d after the refresh, want 1 and 4", up.Lists(), up.ConnectAttempts())
		}
	})
}

// IM-37: a manual ping that reaches a failed upstream connects it, and the
// scheduled retry still imports its tools: answering a ping is not having
// them.
func TestPingDuringReconnectIM37(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := core.NewRegistry(nil)
		up := coretest.NewFakeUpstream("n", coretest.FakeTool("a", "A", ""))
		failConnects(up, 3)
		im := newImporter(t, reg, spec("n", up))
		_, sub := reg.Bus().Subscribe(0)
		defer sub.Close()
		coretest.Must(t, im.Start(context.Background()))
		start := time.Now()
		if _, err := im.Ping(context.Background(), "n"); err != nil {
			t.Fatal(err)
		}
		eventbustest.Expect(t, sub, func(e core.ToolRegistered) bool { return e.Tool.Name == "n_a" })
		if got := time.Since(start); got > time.Second {
			t.Fatalf("imported %v after Start, want within the first retry's 1s", got)
		}
	})
}

// IM-37: NoBackground (check, tools) retries nothing after Start.
func TestNoBackgroundIM37(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := core.NewRegistry(nil)
		up := coretest.NewFakeUpstream("n", coretest.FakeTool("a", "A", ""))
		failConnects(up, 3)
		im := NewImporter(reg, []UpstreamSpec{spec("n", up)}, &ImporterOptions{Backoff: noBackoff, NoBackground: true})
		defer im.Close()
		coretest.Must(t, im.Start(context.Background()))
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := up.ConnectAttempts(); got != 3 {
			t.Fatalf("%d connect attempts, want Start's 3", got)
		}
		if st := im.Statuses()[0]; !st.NextAttempt.IsZero() {
			t.Fatalf("a next attempt is shown with nothing to make it: %+v", st)
		}
	})
}
