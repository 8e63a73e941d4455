package confirm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate/core"
)

// waitOn adds a confirmation id to q the way the gate does, and returns
// the channel its caller's answer arrives on.
func waitOn(ctx context.Context, q *ApprovalQueue, id string, wait time.Duration) chan error {
	out := make(chan error, 1)
	go func() { out <- q.Wait(ctx, core.PendingConfirmation{ID: id, Tool: "notes_create"}, wait, nil) }()
	return out
}

// decidedErr asserts err is a *DecidedError for id with decision and by.
func decidedErr(t *testing.T, err error, id string, decision core.Decision, by string) *DecidedError {
	t.Helper()
	var de *DecidedError
	if !errors.As(err, &de) || !errors.Is(err, ErrAlreadyDecided) || errors.Is(err, ErrUnknownConfirmation) {
		t.Fatalf("%s: %v, want a DecidedError", id, err)
	}
	if de.ID != id || de.Decision != decision || de.By != by || de.At.IsZero() {
		t.Fatalf("%s: %+v, want %s by %q", id, de, decision, by)
	}
	return de
}

// CO-9: a second decision on a confirmation is told who
// settled it, when and how — an operator, the timeout, the caller leaving
// — while an id never seen stays unknown.
func TestSecondDecision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := NewApprovalQueue(core.NewBus())
		ctx := context.Background()

		rejected := waitOn(ctx, q, "c-rej", time.Minute)
		synctest.Wait()
		if err := q.Reject("c-rej", "carol", "no"); err != nil {
			t.Fatal(err)
		}
		if err := <-rejected; !errors.Is(err, ErrConfirmRejected) || !strings.Contains(err.Error(), "carol") {
			t.Fatalf("the caller of a rejected confirmation: %v", err)
		}
		de := decidedErr(t, q.Approve("c-rej", "dave"), "c-rej", core.DecisionReject, "carol")
		if msg := de.Error(); !strings.Contains(msg, "carol") || !strings.Contains(msg, "rejected") || !strings.Contains(msg, de.At.UTC().Format(time.RFC3339)) {
			t.Errorf("message %q names neither who, what nor when", msg)
		}
		decidedErr(t, q.Reject("c-rej", "dave", ""), "c-rej", core.DecisionReject, "carol")

		expired := waitOn(ctx, q, "c-exp", time.Second)
		synctest.Wait()
		time.Sleep(2 * time.Second)
		if err := <-expired; !errors.Is(err, ErrApprovalTimeout) {
			t.Fatalf("the caller of an expired confirmation: %v", err)
		}
		de = decidedErr(t, q.Approve("c-exp", "dave"), "c-exp", core.DecisionTimeout, "")
		if !strings.Contains(de.Error(), "expired") {
			t.Errorf("approving an expired confirmation: %q does not say it expired", de.Error())
		}

		cctx, cancel := context.WithCancel(ctx)
		gone := waitOn(cctx, q, "c-gone", time.Minute)
		synctest.Wait()
		cancel()
		<-gone
		de = decidedErr(t, q.Approve("c-gone", "dave"), "c-gone", core.DecisionGone, "")
		if !strings.Contains(de.Error(), "went away") {
			t.Errorf("approving an abandoned confirmation: %q", de.Error())
		}

		if err := q.Approve("never", "dave"); !errors.Is(err, ErrUnknownConfirmation) || errors.Is(err, ErrAlreadyDecided) {
			t.Errorf("an id never seen: %v, want ErrUnknownConfirmation", err)
		}
	})
}

// CF-5, CO-9: A confirmation whose wait is over is expired for the operator even when
// its timer has not fired yet: approving it does not run the call.
func TestApproveAfterDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := NewApprovalQueue(core.NewBus())
		var skew atomic.Int64
		q.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		done := waitOn(context.Background(), q, "c1", time.Minute)
		synctest.Wait()
		skew.Store(int64(2 * time.Minute))
		de := decidedErr(t, q.Approve("c1", "alice"), "c1", core.DecisionTimeout, "")
		if !strings.Contains(de.Error(), "expired") {
			t.Errorf("%q does not say it expired", de.Error())
		}
		if err := <-done; !errors.Is(err, ErrApprovalTimeout) {
			t.Fatalf("the caller: %v, want the timeout", err)
		}
		decidedErr(t, q.Approve("c1", "bob"), "c1", core.DecisionTimeout, "")
	})
}

// CF-5, CO-9: two operators approve at once: exactly one wins, the other is told the
// winner's decision (run with -race).
func TestConcurrentDecisions(t *testing.T) {
	q := NewApprovalQueue(core.NewBus())
	for i := range 50 {
		id := fmt.Sprintf("c%d", i)
		done := make(chan error, 1)
		go func() { done <- q.Wait(context.Background(), core.PendingConfirmation{ID: id}, time.Minute, nil) }()
		for len(q.Pending()) == 0 {
			time.Sleep(time.Millisecond)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		ops := []string{"alice", "bob"}
		for j := range 2 {
			wg.Go(func() {
				if j == 0 {
					errs[j] = q.Approve(id, ops[j])
				} else {
					errs[j] = q.Reject(id, ops[j], "mine")
				}
			})
		}
		wg.Wait()
		won := 0
		for j, err := range errs {
			if err == nil {
				won++
				continue
			}
			var de *DecidedError
			if !errors.As(err, &de) || de.By != ops[1-j] {
				t.Fatalf("the loser (%s) got %v, want the winner's decision", ops[j], err)
			}
		}
		if won != 1 {
			t.Fatalf("%d winners: %v", won, errs)
		}
		if err := <-done; (errs[0] == nil) != (err == nil) {
			t.Fatalf("the caller got %v; approve answered %v", err, errs[0])
		}
	}
}

// CF-5, CO-9: the remembered decisions are bounded: the last rememberDecisions, none
// older than rememberFor. Older ones are unknown again.
func TestDecisionsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := NewApprovalQueue(core.NewBus())
		for i := range rememberDecisions + 10 {
			id := fmt.Sprintf("c%d", i)
			done := waitOn(context.Background(), q, id, time.Minute)
			synctest.Wait()
			if err := q.Approve(id, "op"); err != nil {
				t.Fatal(err)
			}
			<-done
		}
		q.mu.Lock()
		n, order := len(q.decided), len(q.order)
		q.mu.Unlock()
		if n != rememberDecisions || order != rememberDecisions {
			t.Fatalf("%d decisions remembered (%d ordered), want %d", n, order, rememberDecisions)
		}
		if err := q.Approve("c0", "op"); !errors.Is(err, ErrUnknownConfirmation) {
			t.Errorf("the oldest decision beyond the bound: %v, want unknown", err)
		}
		last := fmt.Sprintf("c%d", rememberDecisions+9)
		decidedErr(t, q.Approve(last, "x"), last, core.DecisionApprove, "op")
		time.Sleep(rememberFor)
		if err := q.Approve(last, "x"); !errors.Is(err, ErrUnknownConfirmation) {
			t.Errorf("a decision older than %v: %v, want unknown", rememberFor, err)
		}
	})
}
