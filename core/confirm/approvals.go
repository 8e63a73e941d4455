package confirm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/toolgate/toolgate/core"
)

// DefaultApprovalWait bounds how long a confirming call waits (CF-5).
const DefaultApprovalWait = 2 * time.Minute

var (
	// ErrApprovalTimeout: nobody decided within the wait.
	ErrApprovalTimeout = errors.New("no operator decision in time")
	// ErrUnknownConfirmation: no pending confirmation has that id.
	ErrUnknownConfirmation = errors.New("unknown pending confirmation")
	// ErrShuttingDown: the gateway is shutting down, so no operator will
	// decide (SV-9).
	ErrShuttingDown = errors.New("the gateway is shutting down")
	// ErrAlreadyDecided: the confirmation was decided before; a
	// *DecidedError says by whom and when (CO-9: several operators).
	ErrAlreadyDecided = errors.New("confirmation already decided")
)

// DecidedError answers a decision on a confirmation that another decision
// (an operator's, a timeout, the caller leaving) already settled.
type DecidedError struct {
	ID       string
	Decision core.Decision
	By       string
	At       time.Time
}

func (e *DecidedError) Error() string {
	by := e.By
	if by == "" {
		by = "nobody"
	}
	return fmt.Sprintf("confirmation %q already decided (%s) by %s at %s", e.ID, e.Decision, by, e.At.UTC().Format(time.RFC3339))
}

func (e *DecidedError) Is(target error) bool { return target == ErrAlreadyDecided }

// shutdownBy is who a confirmation rejected at shutdown was decided by.
const shutdownBy = "gateway"

// ApprovalQueue holds the confirmations waiting for an operator.
type ApprovalQueue struct {
	bus *core.Bus
	now func() time.Time

	mu      sync.Mutex
	pending map[string]*waiting
	// closed: Shutdown ran; nothing waits any more.
	closed bool
}

type waiting struct {
	info    core.PendingConfirmation
	decided chan verdict // buffered 1: the first decision wins
}

type verdict struct {
	decision   core.Decision
	by, reason string
	// shutdown: rejected because the gateway is shutting down.
	shutdown bool
}

// NewApprovalQueue returns an empty queue publishing on bus.
func NewApprovalQueue(bus *core.Bus) *ApprovalQueue {
	q := &ApprovalQueue{bus: bus, now: time.Now, pending: map[string]*waiting{}}
	bus.AddSnapshotPart(q.fillSnapshot)
	return q
}

// Progress reports how long a call has waited; the transport sends it to
// the client as notifications/progress where the client asked for them.
type Progress func(waited, total time.Duration)

type progressKey struct{}

// WithProgress returns ctx carrying a progress reporter.
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

func progressFrom(ctx context.Context) Progress {
	p, _ := ctx.Value(progressKey{}).(Progress)
	return p
}

// Wait adds p to the queue and blocks until an operator decides, wait
// passes or ctx ends. progress, when not nil, is called about every second
// with the time waited so far, so a client that asked for progress sees the
// call is alive.
func (q *ApprovalQueue) Wait(ctx context.Context, p core.PendingConfirmation, wait time.Duration, progress func(waited, total time.Duration)) error {
	if wait <= 0 {
		wait = DefaultApprovalWait
	}
	p.Created = q.now()
	p.Deadline = p.Created.Add(wait)
	w := &waiting{info: p, decided: make(chan verdict, 1)}
	dup, closed := false, false
	q.bus.Commit(func() []core.EventData {
		q.mu.Lock()
		defer q.mu.Unlock()
		if closed = q.closed; closed {
			return nil
		}
		if _, dup = q.pending[p.ID]; dup {
			return nil
		}
		q.pending[p.ID] = w
		return []core.EventData{core.ConfirmationPending{Pending: p}}
	})
	if closed {
		return ErrShuttingDown
	}
	if dup {
		// The same token confirmed twice at once: one call waits, the
		// other is refused, as it would be once the first had run.
		return fmt.Errorf("%w: it is already waiting for an operator", ErrConfirmUsed)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case v := <-w.decided:
			if v.decision == core.DecisionApprove {
				return nil
			}
			if v.shutdown {
				return ErrShuttingDown
			}
			if v.reason != "" {
				return fmt.Errorf("%w by %s: %s", ErrConfirmRejected, v.by, v.reason)
			}
			return fmt.Errorf("%w by %s", ErrConfirmRejected, v.by)
		case <-timer.C:
			q.decide(p.ID, verdict{decision: core.DecisionTimeout})
			return ErrApprovalTimeout
		case <-ctx.Done():
			q.decide(p.ID, verdict{decision: core.DecisionGone})
			return ctx.Err()
		case <-tick.C:
			if progress != nil {
				progress(time.Since(start), wait)
			}
		}
	}
}

// Shutdown rejects every waiting confirmation at once, telling each caller
// the gateway is shutting down, and refuses any that would wait later
// (SV-9). It returns how many it rejected.
func (q *ApprovalQueue) Shutdown() int {
	q.mu.Lock()
	q.closed = true
	ids := make([]string, 0, len(q.pending))
	for id := range q.pending {
		ids = append(ids, id)
	}
	q.mu.Unlock()
	n := 0
	for _, id := range ids {
		if q.decide(id, verdict{decision: core.DecisionReject, by: shutdownBy, reason: ErrShuttingDown.Error(), shutdown: true}) {
			n++
		}
	}
	return n
}

// Approve lets a waiting confirmation run.
func (q *ApprovalQueue) Approve(id, by string) error {
	return q.decideErr(id, verdict{decision: core.DecisionApprove, by: by})
}

// Reject refuses a waiting confirmation; nothing runs.
func (q *ApprovalQueue) Reject(id, by, reason string) error {
	return q.decideErr(id, verdict{decision: core.DecisionReject, by: by, reason: reason})
}

func (q *ApprovalQueue) decideErr(id string, v verdict) error {
	if !q.decide(id, v) {
		return fmt.Errorf("%w: %q", ErrUnknownConfirmation, id)
	}
	return nil
}

// decide removes id from the queue and hands the waiter v; false if id was
// not pending (already decided, timed out, never existed).
func (q *ApprovalQueue) decide(id string, v verdict) bool {
	found := false
	q.bus.Commit(func() []core.EventData {
		q.mu.Lock()
		defer q.mu.Unlock()
		w, ok := q.pending[id]
		if !ok {
			return nil
		}
		found = true
		delete(q.pending, id)
		w.decided <- v
		return []core.EventData{core.ConfirmationDecided{ID: id, Decision: v.decision, By: v.by, Reason: v.reason}}
	})
	return found
}

// Pending lists the waiting confirmations, oldest first.
func (q *ApprovalQueue) Pending() []core.PendingConfirmation {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pendingLocked()
}

func (q *ApprovalQueue) pendingLocked() []core.PendingConfirmation {
	out := make([]core.PendingConfirmation, 0, len(q.pending))
	for _, w := range q.pending {
		out = append(out, w.info)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func (q *ApprovalQueue) fillSnapshot(s *core.Snapshot) {
	q.mu.Lock()
	defer q.mu.Unlock()
	s.Pending = slices.Clone(q.pendingLocked())
}
