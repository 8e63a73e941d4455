package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/pgtest"
)

// next is the first event on sub other than a resync, within a bound.
func next(t *testing.T, sub core.SharedSubscription) core.SharedEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-sub.C():
			if !ok {
				t.Fatal("subscription closed")
			}
			if e.Kind != core.SharedResync {
				return e
			}
		case <-timeout:
			t.Fatal("no event within 10s")
		}
	}
}

func subscribe(t *testing.T, s *Store) core.SharedSubscription {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub := s.SubscribeShared(ctx)
	t.Cleanup(sub.Close)
	// The listener's first resync, sent once it listens.
	select {
	case e := <-sub.C():
		if e.Kind != core.SharedResync {
			t.Fatalf("first event %+v, want a resync", e)
		}
	case <-ctx.Done():
		t.Fatal("no resync within 10s of subscribing")
	}
	return sub
}

// OP-5: an event broadcast through one handle reaches the others on the
// same schema, not the sender itself, and not a handle on another schema.
func TestBroadcastReachesOtherHandlesOP5(t *testing.T) {
	srv := pgtest.Shared(t)
	dsn := srv.NewDatabase(t)
	a, b := mustOpen(t, dsn), mustOpen(t, dsn)
	other := mustOpen(t, dsn+"&schema=other")
	subA, subB, subOther := subscribe(t, a), subscribe(t, b), subscribe(t, other)
	ctx := context.Background()
	if err := a.Broadcast(ctx, core.SharedEvent{Kind: core.SharedReview}); err != nil {
		t.Fatal(err)
	}
	if e := next(t, subB); e != (core.SharedEvent{Kind: core.SharedReview}) {
		t.Errorf("b got %+v, want the review event", e)
	}
	// a's own event is skipped: the first it hears is b's.
	if err := b.Broadcast(ctx, core.SharedEvent{Kind: core.SharedDecided, ID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if e := next(t, subA); e != (core.SharedEvent{Kind: core.SharedDecided, ID: "c1"}) {
		t.Errorf("a got %+v, want b's decided event (its own is not delivered to it)", e)
	}
	if err := other.Broadcast(ctx, core.SharedEvent{Kind: core.SharedRefresh, ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Broadcast(ctx, core.SharedEvent{Kind: core.SharedPending, ID: "c2"}); err != nil {
		t.Fatal(err)
	}
	if e := next(t, subA); e != (core.SharedEvent{Kind: core.SharedPending, ID: "c2"}) {
		t.Errorf("a got %+v, want b's pending event, not the other schema's", e)
	}
	_ = subOther
	if err := a.Broadcast(ctx, core.SharedEvent{Kind: core.SharedPending, ID: string(make([]byte, 8000))}); err == nil {
		t.Error("a payload over NOTIFY's limit was accepted")
	}
}

// OP-5: the listening connection comes back by itself after PostgreSQL
// restarts, tells its subscribers to resync, and hears events again.
func TestBroadcastSurvivesRestartOP5(t *testing.T) {
	srv := pgtest.Start(t, nil)
	dsn := srv.NewDatabase(t)
	a, b := mustOpen(t, dsn), mustOpen(t, dsn)
	sub := subscribe(t, b)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	resynced := false
	for !resynced {
		select {
		case e := <-sub.C():
			resynced = e.Kind == core.SharedResync
		case <-deadline:
			t.Fatal("no resync within 20s of the restart")
		}
	}
	if err := a.Broadcast(context.Background(), core.SharedEvent{Kind: core.SharedReview}); err != nil {
		t.Fatal(err)
	}
	if e := next(t, sub); e.Kind != core.SharedReview {
		t.Errorf("after the restart b got %+v, want the review event", e)
	}
	b.Close()
	if _, ok := <-sub.C(); ok {
		t.Error("the subscription delivered after Close")
	}
}

// CF-5, CO-9: a confirmation recorded through one handle is listed by
// another; of two handles deciding at once exactly one wins and the other
// is told the winner's decision; a settled row forgets its arguments; an
// operator deciding after the deadline settles it as timed out; a row
// left waiting past its deadline is no longer listed.
func TestSharedPendingCF5(t *testing.T) {
	srv := pgtest.Shared(t)
	dsn := srv.NewDatabase(t)
	a, b := mustOpen(t, dsn), mustOpen(t, dsn)
	ctx := context.Background()
	now := time.Now().UTC().Round(0)
	p := core.PendingConfirmation{
		ID: "tok1", Tool: "notes_create_note", Source: "notes", RemoteName: "create_note",
		Actor: core.Actor{ID: "alice"}, Arguments: json.RawMessage(`{"text":"x"}`), Preview: "create a note",
		Created: now, Deadline: now.Add(time.Minute),
	}
	if err := a.AddPending(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := b.AddPending(ctx, p); !errors.Is(err, core.ErrPendingExists) {
		t.Errorf("second AddPending = %v, want ErrPendingExists", err)
	}
	open, err := b.OpenPending(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[0].ID != "tok1" || string(open[0].Arguments) != `{"text":"x"}` || !open[0].Deadline.Equal(p.Deadline) {
		t.Fatalf("OpenPending on b = %+v, want tok1 as recorded", open)
	}

	var wg sync.WaitGroup
	res := make([]core.PendingDecision, 2)
	errs := make([]error, 2)
	for i, s := range []*Store{a, b} {
		d := core.PendingDecision{Decision: core.DecisionApprove, By: "op-a"}
		if i == 1 {
			d = core.PendingDecision{Decision: core.DecisionReject, By: "op-b", Reason: "no"}
		}
		wg.Go(func() { res[i], errs[i] = s.DecidePending(ctx, "tok1", d, now, true) })
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if res[0].Won == res[1].Won {
		t.Fatalf("both or neither won: %+v", res)
	}
	win, lose := res[0], res[1]
	if res[1].Won {
		win, lose = res[1], res[0]
	}
	if lose.Decision != win.Decision || lose.By != win.By || !lose.At.Equal(win.At) {
		t.Errorf("the loser was told %+v, want the winner's %+v", lose, win)
	}
	rec, err := a.LookupPending(ctx, "tok1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Pending != nil || rec.Decision.Decision != win.Decision {
		t.Errorf("LookupPending = %+v, want the decision and no arguments", rec)
	}
	if open, _ := a.OpenPending(ctx, now); len(open) != 0 {
		t.Errorf("OpenPending after the decision = %+v", open)
	}
	if d, err := a.DecidePending(ctx, "nope", core.PendingDecision{Decision: core.DecisionApprove}, now, true); err != nil || d.Decision != "" {
		t.Errorf("deciding an unknown id = %+v, %v; want a zero decision", d, err)
	}

	late := p
	late.ID, late.Deadline = "tok2", now.Add(time.Second)
	if err := a.AddPending(ctx, late); err != nil {
		t.Fatal(err)
	}
	if open, _ := b.OpenPending(ctx, now.Add(2*time.Second)); len(open) != 0 {
		t.Errorf("a row past its deadline is still listed: %+v", open)
	}
	d, err := b.DecidePending(ctx, "tok2", core.PendingDecision{Decision: core.DecisionApprove, By: "op"}, now.Add(2*time.Second), true)
	if err != nil || !d.Won || d.Decision != core.DecisionTimeout || !d.At.Equal(late.Deadline) {
		t.Errorf("an approval after the deadline = %+v, %v; want it settled as timed out at the deadline", d, err)
	}
}
