package confirm

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate/core"
)

// fakeShared is a store shared by several queues, in memory: the rules of
// core.SharedApprovals, and broadcasts handed straight to the other queues.
type fakeShared struct {
	mu    sync.Mutex
	rows  map[string]*fakeRow
	down  bool
	peers []*ApprovalQueue
}

type fakeRow struct {
	p core.PendingConfirmation
	d core.PendingDecision
}

var errDown = errors.New("store down")

// handle is one queue's view of the fake.
type handle struct {
	f    *fakeShared
	self *ApprovalQueue
}

func (f *fakeShared) queue() *ApprovalQueue {
	q := NewApprovalQueue(core.NewBus())
	q.Share(handle{f, q}, handle{f, q})
	f.mu.Lock()
	f.peers = append(f.peers, q)
	f.mu.Unlock()
	return q
}

func (f *fakeShared) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

func (h handle) AddPending(_ context.Context, p core.PendingConfirmation) error {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if h.f.down {
		return errDown
	}
	if _, ok := h.f.rows[p.ID]; ok {
		return core.ErrPendingExists
	}
	h.f.rows[p.ID] = &fakeRow{p: p}
	return nil
}

func (h handle) DecidePending(_ context.Context, id string, d core.PendingDecision, now time.Time, expire bool) (core.PendingDecision, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if h.f.down {
		return core.PendingDecision{}, errDown
	}
	r, ok := h.f.rows[id]
	switch {
	case !ok:
		return core.PendingDecision{}, nil
	case r.d.Decision != "":
		return r.d, nil
	}
	d.At = now
	if expire && !r.p.Deadline.After(now) {
		d = core.PendingDecision{Decision: core.DecisionTimeout, At: r.p.Deadline}
	}
	r.d = d
	d.Won = true
	return d, nil
}

func (h handle) LookupPending(_ context.Context, id string) (core.PendingRecord, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if h.f.down {
		return core.PendingRecord{}, errDown
	}
	r, ok := h.f.rows[id]
	switch {
	case !ok:
		return core.PendingRecord{}, nil
	case r.d.Decision != "":
		return core.PendingRecord{Decision: r.d}, nil
	}
	p := r.p
	return core.PendingRecord{Pending: &p}, nil
}

func (h handle) OpenPending(_ context.Context, now time.Time) ([]core.PendingConfirmation, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if h.f.down {
		return nil, errDown
	}
	var out []core.PendingConfirmation
	for _, r := range h.f.rows {
		if r.d.Decision == "" && r.p.Deadline.After(now) {
			out = append(out, r.p)
		}
	}
	return out, nil
}

func (h handle) Broadcast(ctx context.Context, e core.SharedEvent) error {
	h.f.mu.Lock()
	peers := append([]*ApprovalQueue(nil), h.f.peers...)
	down := h.f.down
	h.f.mu.Unlock()
	if down {
		return errDown
	}
	for _, q := range peers {
		if q != h.self {
			_ = q.SharedChanged(ctx, e.ID)
		}
	}
	return nil
}

func (h handle) SubscribeShared(context.Context) core.SharedSubscription { return nil }

func newFakeShared() *fakeShared { return &fakeShared{rows: map[string]*fakeRow{}} }

func pendingFor(id string) core.PendingConfirmation {
	return core.PendingConfirmation{ID: id, Tool: "notes_create", Source: "notes", Actor: alice}
}

// CF-5, CO-9: a confirmation waiting in one queue is listed by another
// sharing the store and decided there; the waiting call gets the decision
// and a second decision is told who made the first.
func TestSharedQueueDecidedElsewhereCF5(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeShared()
		a, b := f.queue(), f.queue()
		done := make(chan error, 1)
		go func() { done <- a.Wait(t.Context(), pendingFor("c1"), time.Minute, nil) }()
		synctest.Wait()
		if p := b.Pending(); len(p) != 1 || p[0].ID != "c1" {
			t.Fatalf("b lists %+v, want c1", p)
		}
		if err := b.Reject("c1", "bob", "no"); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, ErrConfirmRejected) {
			t.Errorf("the waiting call = %v, want rejected", err)
		}
		var de *DecidedError
		if err := a.Approve("c1", "alice-op"); !errors.As(err, &de) || de.By != "bob" || de.Decision != core.DecisionReject {
			t.Errorf("a second decision = %v, want already rejected by bob", err)
		}
		if len(a.Pending())+len(b.Pending()) != 0 {
			t.Errorf("still listed: a %+v, b %+v", a.Pending(), b.Pending())
		}
	})
}

// CF-5, CF-3: a store that cannot be reached when the call would wait
// refuses it (nothing waits unseen by the other gateways); one lost while
// it waits still ends the wait at its timeout, and the call is refused.
func TestSharedQueueStoreDownCF5(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeShared()
		a := f.queue()
		f.setDown(true)
		if err := a.Wait(t.Context(), pendingFor("c1"), time.Minute, nil); err == nil || !errors.Is(err, errDown) {
			t.Errorf("Wait with the store down = %v, want its error", err)
		}
		if p := a.Pending(); len(p) != 0 {
			t.Errorf("listed: %+v", p)
		}
		f.setDown(false)
		done := make(chan error, 1)
		go func() { done <- a.Wait(t.Context(), pendingFor("c2"), time.Minute, nil) }()
		synctest.Wait()
		f.setDown(true)
		if err := <-done; !errors.Is(err, ErrApprovalTimeout) {
			t.Errorf("Wait with the store lost meanwhile = %v, want a timeout", err)
		}
		if p := a.Pending(); len(p) != 0 {
			t.Errorf("still listed after its timeout: %+v", p)
		}
	})
}

// CF-5: a confirmation whose gateway died is listed until its deadline,
// then settled as timed out by a gateway that saw it.
func TestSharedQueueDeadOwnerExpiresCF5(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeShared()
		b := f.queue()
		p := pendingFor("orphan")
		p.Created, p.Deadline = time.Now(), time.Now().Add(time.Minute)
		f.rows[p.ID] = &fakeRow{p: p}
		if err := b.SharedResync(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := b.Pending(); len(got) != 1 {
			t.Fatalf("b lists %+v, want the orphan", got)
		}
		time.Sleep(time.Minute + remoteGrace)
		synctest.Wait()
		if got := b.Pending(); len(got) != 0 {
			t.Errorf("still listed past its deadline: %+v", got)
		}
		if d := f.rows[p.ID].d; d.Decision != core.DecisionTimeout {
			t.Errorf("the row is settled as %+v, want timed out", d)
		}
		b.Shutdown()
	})
}
