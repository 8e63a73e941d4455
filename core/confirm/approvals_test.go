package confirm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/coretest"
)

func operatorGate(t *testing.T, f *gateFixture, wait time.Duration) *ApprovalQueue {
	t.Helper()
	q := NewApprovalQueue(f.reg.Bus())
	g, err := NewGate(GateOptions{
		Secret: testSecret, Ledger: &mapLedger{used: map[string]bool{}}, Now: func() time.Time { return f.clock },
		Approvals: q, ApprovalWait: wait,
		NeedsOperator: func(tool core.Tool) bool { return tool.Source == "notes" },
	})
	coretest.Must(t, err)
	f.gate = g
	return q
}

// waitPending returns the first pending confirmation once every goroutine
// of the test's bubble is blocked, the waiting call among them.
func waitPending(t *testing.T, q *ApprovalQueue) core.PendingConfirmation {
	t.Helper()
	synctest.Wait()
	p := q.Pending()
	if len(p) == 0 {
		t.Fatal("no pending confirmation appeared")
	}
	return p[0]
}

type confirmOutcome struct {
	res core.Result
	err error
}

func confirmAsync(f *gateFixture, ctx context.Context, token string) chan confirmOutcome {
	out := make(chan confirmOutcome, 1)
	go func() {
		res, err := f.gate.Invoke(ctx, f.reg, alice, "notes_create", confirmArgs(`{"title":"x"}`, token))
		out <- confirmOutcome{res, err}
	}()
	return out
}

// CF-5: the confirming call waits; the operator approves; it runs once.
func TestOperatorApproves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGateFixture(t)
		q := operatorGate(t, f, time.Minute)
		_, sub := f.reg.Bus().Subscribe(0)
		defer sub.Close()
		p := f.preview(t, alice, `{"title":"x"}`)
		done := confirmAsync(f, context.Background(), p.ConfirmToken)
		pc := waitPending(t, q)
		if pc.Tool != "notes_create" || pc.Actor.ID != "alice" || string(pc.Arguments) != `{"title":"x"}` || pc.Source != "notes" || pc.Preview == "" {
			t.Fatalf("pending: %+v", pc)
		}
		if snap := f.reg.Bus().Snapshot(); len(snap.Pending) != 1 {
			t.Fatalf("snapshot pending: %+v", snap.Pending)
		}
		if f.runs.Load() != 0 {
			t.Fatal("ran before approval")
		}
		coretest.Must(t, q.Approve(pc.ID, "operator"))
		out := <-done
		if out.err != nil || f.runs.Load() != 1 {
			t.Fatalf("after approval: %v runs=%d", out.err, f.runs.Load())
		}
		var de *DecidedError
		if err := q.Approve(pc.ID, "other"); !errors.As(err, &de) || !errors.Is(err, ErrAlreadyDecided) || errors.Is(err, ErrUnknownConfirmation) ||
			de.Decision != core.DecisionApprove || de.By != "operator" || de.ID != pc.ID || de.At.IsZero() {
			t.Fatalf("approving twice: %v, want a DecidedError naming the first decision", err)
		}
		var names []string
		for len(sub.C()) > 0 {
			names = append(names, (<-sub.C()).Data.EventName())
		}
		if !strings.Contains(strings.Join(names, ","), "confirmation.pending,confirmation.decided") {
			t.Fatalf("events: %v", names)
		}
	})
}

// CF-5: rejected or timed out ⇒ isError with the reason; nothing runs; the
// token is spent, so sending it again cannot ask the operator twice.
func TestOperatorRejectsAndTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGateFixture(t)
		q := operatorGate(t, f, time.Minute)
		p := f.preview(t, alice, `{"title":"x"}`)
		done := confirmAsync(f, context.Background(), p.ConfirmToken)
		pc := waitPending(t, q)
		coretest.Must(t, q.Reject(pc.ID, "carol", "wrong note"))
		out := <-done
		var re *RefusedError
		if !errors.Is(out.err, ErrConfirmRejected) || !errors.As(out.err, &re) || !strings.Contains(re.Text, "wrong note") {
			t.Fatalf("rejected: %v", out.err)
		}
		if f.runs.Load() != 0 {
			t.Fatal("a rejected call ran")
		}
		if _, err := f.gate.Invoke(context.Background(), f.reg, alice, "notes_create", confirmArgs(`{"title":"x"}`, p.ConfirmToken)); !errors.Is(err, ErrConfirmUsed) || len(q.Pending()) != 0 {
			t.Fatalf("resending a rejected token: %v (pending %d)", err, len(q.Pending()))
		}

		q2 := operatorGate(t, f, 50*time.Millisecond)
		p2 := f.preview(t, alice, `{"title":"x"}`)
		_, err := f.gate.Invoke(context.Background(), f.reg, alice, "notes_create", confirmArgs(`{"title":"x"}`, p2.ConfirmToken))
		if !errors.Is(err, ErrApprovalTimeout) || f.runs.Load() != 0 || len(q2.Pending()) != 0 {
			t.Fatalf("timeout: %v runs=%d pending=%d", err, f.runs.Load(), len(q2.Pending()))
		}
	})
}

// A caller that goes away leaves nothing pending; a tool that needs no
// operator never waits.
func TestOperatorCallerGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGateFixture(t)
		q := operatorGate(t, f, time.Minute)
		p := f.preview(t, alice, `{"title":"x"}`)
		ctx, cancel := context.WithCancel(context.Background())
		done := confirmAsync(f, ctx, p.ConfirmToken)
		waitPending(t, q)
		cancel()
		if out := <-done; !errors.Is(out.err, context.Canceled) || len(q.Pending()) != 0 || f.runs.Load() != 0 {
			t.Fatalf("cancelled: %v pending=%d", out.err, len(q.Pending()))
		}

		coretest.Must(t, f.reg.Register(core.Tool{Name: "local_action", Kind: core.KindAction, Handler: coretest.EchoHandler(nil)}))
		res, err := f.gate.Invoke(context.Background(), f.reg, alice, "local_action", nil)
		coretest.Must(t, err)
		var body struct{ StructuredContent Preview }
		coretest.Must(t, json.Unmarshal(res.JSON, &body))
		if _, err := f.gate.Invoke(context.Background(), f.reg, alice, "local_action", confirmArgs(`{}`, body.StructuredContent.ConfirmToken)); err != nil {
			t.Fatalf("a tool without operator approval waited or failed: %v", err)
		}
	})
}

// CF-5: progress reports reach the caller while it waits.
func TestOperatorProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGateFixture(t)
		q := operatorGate(t, f, time.Minute)
		p := f.preview(t, alice, `{"title":"x"}`)
		var ticks atomic.Int64
		ctx := WithProgress(context.Background(), func(waited, total time.Duration) {
			if total == time.Minute && waited > 0 {
				ticks.Add(1)
			}
		})
		done := confirmAsync(f, ctx, p.ConfirmToken)
		pc := waitPending(t, q)
		// The waiting call reports about every second of the bubble's clock.
		time.Sleep(time.Second)
		synctest.Wait()
		coretest.Must(t, q.Approve(pc.ID, "op"))
		<-done
		if ticks.Load() == 0 {
			t.Fatal("no progress while waiting")
		}
	})
}

// SV-9: at shutdown every waiting confirmation is rejected at once — no
// time passes in the bubble — with a text saying the gateway is shutting
// down; nothing runs, and a confirmation that would wait afterwards is
// refused the same way instead of waiting.
func TestShutdownRejectsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newGateFixture(t)
		q := operatorGate(t, f, time.Minute)
		p := f.preview(t, alice, `{"title":"x"}`)
		done := confirmAsync(f, context.Background(), p.ConfirmToken)
		waitPending(t, q)
		start := time.Now()
		if n := q.Shutdown(); n != 1 {
			t.Fatalf("Shutdown rejected %d, want 1", n)
		}
		out := <-done
		var re *RefusedError
		if !errors.Is(out.err, ErrShuttingDown) || !errors.As(out.err, &re) || !strings.Contains(re.Text, "the gateway is shutting down") {
			t.Fatalf("at shutdown: %v", out.err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("the call waited %v after Shutdown", waited)
		}
		if f.runs.Load() != 0 || len(q.Pending()) != 0 {
			t.Fatalf("runs=%d pending=%d", f.runs.Load(), len(q.Pending()))
		}
		p2 := f.preview(t, alice, `{"title":"x"}`)
		if _, err := f.gate.Invoke(context.Background(), f.reg, alice, "notes_create", confirmArgs(`{"title":"x"}`, p2.ConfirmToken)); !errors.Is(err, ErrShuttingDown) {
			t.Fatalf("after shutdown: %v", err)
		}
	})
}
