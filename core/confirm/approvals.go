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
	at := e.At.UTC().Format(time.RFC3339)
	switch e.Decision {
	case core.DecisionTimeout:
		return fmt.Sprintf("confirmation %q expired at %s: no operator decided in time, and the call was refused", e.ID, at)
	case core.DecisionGone:
		return fmt.Sprintf("confirmation %q was abandoned at %s: the caller went away before a decision", e.ID, at)
	}
	by := e.By
	if by == "" {
		by = "nobody"
	}
	return fmt.Sprintf("confirmation %q already decided (%s) by %s at %s", e.ID, e.Decision, by, at)
}

func (e *DecidedError) Is(target error) bool { return target == ErrAlreadyDecided }

// shutdownBy is who a confirmation rejected at shutdown was decided by.
const shutdownBy = "gateway"

// Bounds of the decisions an ApprovalQueue remembers, so a second decision
// on a confirmation is told who settled it (CO-9: several operators): the
// last rememberDecisions, none older than rememberFor.
const (
	rememberDecisions = 1024
	rememberFor       = time.Hour
)

// ApprovalQueue holds the confirmations waiting for an operator, and
// remembers the recent decisions.
type ApprovalQueue struct {
	bus *core.Bus
	now func() time.Time

	mu      sync.Mutex
	pending map[string]*waiting
	// decided holds the recent decisions by id; order is their ids, oldest
	// first, for evicting.
	decided map[string]*DecidedError
	order   []string
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
	q := &ApprovalQueue{bus: bus, now: time.Now, pending: map[string]*waiting{}, decided: map[string]*DecidedError{}}
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
			switch {
			case v.decision == core.DecisionApprove:
				return nil
			case v.shutdown:
				return ErrShuttingDown
			case v.decision == core.DecisionTimeout:
				// An operator's decision found the wait over before the
				// timer did.
				return ErrApprovalTimeout
			}
			if v.reason != "" {
				return fmt.Errorf("%w by %s: %s", ErrConfirmRejected, v.by, v.reason)
			}
			return fmt.Errorf("%w by %s", ErrConfirmRejected, v.by)
		case <-timer.C:
			if q.decide(p.ID, verdict{decision: core.DecisionTimeout}) != nil {
				// Decided in the same instant: the decision stands.
				continue
			}
			return ErrApprovalTimeout
		case <-ctx.Done():
			// Decided in the same instant or not, the caller is gone and
			// nothing runs.
			_ = q.decide(p.ID, verdict{decision: core.DecisionGone})
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
		if q.decide(id, verdict{decision: core.DecisionReject, by: shutdownBy, reason: ErrShuttingDown.Error(), shutdown: true}) == nil {
			n++
		}
	}
	return n
}

// Approve lets a waiting confirmation run. A confirmation decided before
// (by an operator, its timeout, its caller leaving) answers a
// *DecidedError; one never seen, or decided too long ago to remember,
// ErrUnknownConfirmation.
func (q *ApprovalQueue) Approve(id, by string) error {
	return q.decide(id, verdict{decision: core.DecisionApprove, by: by})
}

// Reject refuses a waiting confirmation; nothing runs. Errors as Approve.
func (q *ApprovalQueue) Reject(id, by, reason string) error {
	return q.decide(id, verdict{decision: core.DecisionReject, by: by, reason: reason})
}

// decide removes id from the queue, hands the waiter v and remembers the
// decision; the first decision wins. A confirmation whose wait is over
// when an operator decides is settled as timed out, and the operator told
// so, even if its timer has not fired yet.
func (q *ApprovalQueue) decide(id string, v verdict) error {
	var err error
	q.bus.Commit(func() []core.EventData {
		q.mu.Lock()
		defer q.mu.Unlock()
		now := q.now()
		w, ok := q.pending[id]
		if !ok {
			if d := q.recentLocked(id, now); d != nil {
				err = d
			} else {
				err = fmt.Errorf("%w: %q", ErrUnknownConfirmation, id)
			}
			return nil
		}
		operator := v.decision == core.DecisionApprove || (v.decision == core.DecisionReject && !v.shutdown)
		if operator && !w.info.Deadline.IsZero() && !now.Before(w.info.Deadline) {
			v = verdict{decision: core.DecisionTimeout}
			err = &DecidedError{ID: id, Decision: core.DecisionTimeout, At: w.info.Deadline}
		}
		delete(q.pending, id)
		w.decided <- v
		q.rememberLocked(&DecidedError{ID: id, Decision: v.decision, By: v.by, At: now}, now)
		return []core.EventData{core.ConfirmationDecided{ID: id, Decision: v.decision, By: v.by, Reason: v.reason}}
	})
	return err
}

// rememberLocked records a decision, forgetting the oldest beyond the
// bounds.
func (q *ApprovalQueue) rememberLocked(d *DecidedError, now time.Time) {
	if _, ok := q.decided[d.ID]; !ok {
		q.order = append(q.order, d.ID)
	}
	q.decided[d.ID] = d
	drop := 0
	for drop < len(q.order) {
		old := q.decided[q.order[drop]]
		if len(q.order)-drop <= rememberDecisions && now.Sub(old.At) < rememberFor {
			break
		}
		delete(q.decided, q.order[drop])
		drop++
	}
	if drop > 0 {
		// Copy down rather than reslice, so the array does not grow forever.
		q.order = append(q.order[:0], q.order[drop:]...)
	}
}

// recentLocked is id's remembered decision, nil if there is none young
// enough.
func (q *ApprovalQueue) recentLocked(id string, now time.Time) *DecidedError {
	d, ok := q.decided[id]
	if !ok || now.Sub(d.At) >= rememberFor {
		return nil
	}
	c := *d
	return &c
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
