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
// remembers the recent decisions. Alone it lives in this process (memory
// and SQLite stores); Share puts it in a store several gateways share, and
// it then also lists the others' confirmations.
type ApprovalQueue struct {
	bus *core.Bus
	now func() time.Time
	// shared and bcast, set by Share, keep the queue in a store several
	// gateways share; nil: this process only.
	shared core.SharedApprovals
	bcast  core.Broadcaster

	// expiring counts the expiries of other gateways' confirmations in
	// progress, for Shutdown to wait for.
	expiring sync.WaitGroup

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
	decided chan verdict // buffered 1: the first decision wins; nil for remote
	// remote: another gateway's call waits for it (a shared queue); expire
	// drops it at its deadline should that gateway not settle it.
	remote bool
	expire *time.Timer
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

// Share keeps the queue in a store that several gateways share (CF-5,
// CO-9): every confirmation waiting on any of them is listed by all, any
// can decide it, and the store decides which decision wins. b tells the
// others of each change; the caller feeds their events back through
// SharedChanged and SharedResync. Call it before the queue is used.
func (q *ApprovalQueue) Share(shared core.SharedApprovals, b core.Broadcaster) {
	q.shared, q.bcast = shared, b
}

const (
	// storeWait bounds a store operation made without a caller's context.
	storeWait = 10 * time.Second
	// remoteGrace is how long past its deadline another gateway's
	// confirmation stays in view before this one settles it.
	remoteGrace = 2 * time.Second
)

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
	if q.shared != nil {
		// In the store first: nothing waits that the other gateways
		// cannot see and decide.
		if err := q.shared.AddPending(ctx, p); err != nil {
			if errors.Is(err, core.ErrPendingExists) {
				return fmt.Errorf("%w: it is already waiting for an operator", ErrConfirmUsed)
			}
			return fmt.Errorf("record the confirmation for the operators: %w", err)
		}
	}
	dup, closed := false, false
	var early *DecidedError
	q.bus.Commit(func() []core.EventData {
		q.mu.Lock()
		defer q.mu.Unlock()
		if closed = q.closed; closed {
			return nil
		}
		if old, ok := q.pending[p.ID]; ok {
			if !old.remote {
				dup = true
				return nil
			}
			// Listed from the store before this call got here: the same
			// confirmation, waited for here after all.
			old.expire.Stop()
			q.pending[p.ID] = w
			return nil
		}
		if d := q.recentLocked(p.ID, q.now()); d != nil && q.shared != nil {
			// Decided from another gateway between the insert and now.
			early = d
			return nil
		}
		q.pending[p.ID] = w
		return []core.EventData{core.ConfirmationPending{Pending: p}}
	})
	if closed {
		if q.shared != nil {
			_, _ = q.shared.DecidePending(context.WithoutCancel(ctx), p.ID, core.PendingDecision{Decision: core.DecisionReject, By: shutdownBy, Reason: ErrShuttingDown.Error()}, q.now(), false)
		}
		return ErrShuttingDown
	}
	if dup {
		// The same token confirmed twice at once: one call waits, the
		// other is refused, as it would be once the first had run.
		return fmt.Errorf("%w: it is already waiting for an operator", ErrConfirmUsed)
	}
	if early != nil {
		return verdictErr(verdict{decision: early.Decision, by: early.By})
	}
	q.broadcast(ctx, core.SharedPending, p.ID)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case v := <-w.decided:
			return verdictErr(v)
		case <-timer.C:
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeWait)
			err := q.decide(dctx, p.ID, verdict{decision: core.DecisionTimeout})
			cancel()
			if err != nil {
				// Decided in the same instant: the decision stands.
				continue
			}
			return ErrApprovalTimeout
		case <-ctx.Done():
			// Decided in the same instant or not, the caller is gone and
			// nothing runs.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeWait)
			_ = q.decide(dctx, p.ID, verdict{decision: core.DecisionGone})
			cancel()
			return ctx.Err()
		case <-tick.C:
			if progress != nil {
				progress(time.Since(start), wait)
			}
		}
	}
}

// verdictErr is what a waiting call returns for v.
func verdictErr(v verdict) error {
	switch {
	case v.decision == core.DecisionApprove:
		return nil
	case v.shutdown:
		return ErrShuttingDown
	case v.decision == core.DecisionTimeout:
		// An operator's decision found the wait over before the timer did.
		return ErrApprovalTimeout
	}
	by := v.by
	if by == "" {
		by = "nobody"
	}
	return &RejectedError{By: by, Reason: v.reason}
}

// Shutdown rejects every waiting confirmation at once, telling each caller
// the gateway is shutting down, and refuses any that would wait later
// (SV-9). It returns how many it rejected.
func (q *ApprovalQueue) Shutdown() int {
	q.mu.Lock()
	q.closed = true
	ids := make([]string, 0, len(q.pending))
	for id, w := range q.pending {
		if w.remote {
			// Another gateway's: it stays waiting there.
			w.expire.Stop()
			continue
		}
		ids = append(ids, id)
	}
	q.mu.Unlock()
	q.expiring.Wait()
	// One bound for all: a store that cannot be reached must not hold the
	// shutdown; the rows expire by their deadlines.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	n := 0
	for _, id := range ids {
		if q.decide(ctx, id, verdict{decision: core.DecisionReject, by: shutdownBy, reason: ErrShuttingDown.Error(), shutdown: true}) == nil {
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
	ctx, cancel := context.WithTimeout(context.Background(), storeWait)
	defer cancel()
	return q.ApproveContext(ctx, id, by)
}

// Reject refuses a waiting confirmation; nothing runs. Errors as Approve.
func (q *ApprovalQueue) Reject(id, by, reason string) error {
	ctx, cancel := context.WithTimeout(context.Background(), storeWait)
	defer cancel()
	return q.RejectContext(ctx, id, by, reason)
}

// ApproveContext is Approve bounded by ctx, which a shared queue's store
// operation needs.
func (q *ApprovalQueue) ApproveContext(ctx context.Context, id, by string) error {
	return q.decide(ctx, id, verdict{decision: core.DecisionApprove, by: by})
}

// RejectContext is Reject bounded by ctx.
func (q *ApprovalQueue) RejectContext(ctx context.Context, id, by, reason string) error {
	return q.decide(ctx, id, verdict{decision: core.DecisionReject, by: by, reason: reason})
}

func (q *ApprovalQueue) decide(ctx context.Context, id string, v verdict) error {
	if q.shared == nil {
		return q.decideLocal(id, v)
	}
	return q.decideShared(ctx, id, v)
}

// decideShared lets the store decide which decision wins, then settles the
// confirmation here and tells the other gateways. A timeout, a caller
// leaving or a shutdown is this gateway's own call's end: settled here even
// when the store cannot be reached (the row then expires by its deadline).
func (q *ApprovalQueue) decideShared(ctx context.Context, id string, v verdict) error {
	operator := v.decision == core.DecisionApprove || (v.decision == core.DecisionReject && !v.shutdown)
	res, err := q.shared.DecidePending(ctx, id, core.PendingDecision{Decision: v.decision, By: v.by, Reason: v.reason}, q.now(), operator)
	if err == nil && res.Decision == "" {
		err = fmt.Errorf("%w: %q", ErrUnknownConfirmation, id)
	}
	if err != nil {
		if !operator {
			q.settle(id, v, q.now())
		}
		return err
	}
	q.settle(id, verdict{decision: res.Decision, by: res.By, reason: res.Reason, shutdown: v.shutdown && res.Won}, res.At)
	if res.Won {
		q.broadcast(ctx, core.SharedDecided, id)
	}
	if !res.Won || (operator && res.Decision == core.DecisionTimeout) {
		return &DecidedError{ID: id, Decision: res.Decision, By: res.By, At: res.At}
	}
	return nil
}

// settle removes id from the view, hands a local waiter v and publishes
// the decision; a decision on an id not in view is remembered all the
// same, for a Wait about to add it.
func (q *ApprovalQueue) settle(id string, v verdict, at time.Time) {
	q.bus.Commit(func() []core.EventData {
		q.mu.Lock()
		defer q.mu.Unlock()
		q.rememberLocked(&DecidedError{ID: id, Decision: v.decision, By: v.by, At: at}, q.now())
		w, ok := q.pending[id]
		if !ok {
			return nil
		}
		delete(q.pending, id)
		if w.expire != nil {
			w.expire.Stop()
		}
		if w.decided != nil {
			w.decided <- v
		}
		return []core.EventData{core.ConfirmationDecided{ID: id, Decision: v.decision, By: v.by, Reason: v.reason}}
	})
}

// broadcast tells the other gateways; one that misses it reads the store
// again at its next resync.
func (q *ApprovalQueue) broadcast(ctx context.Context, kind, id string) {
	if q.bcast == nil {
		return
	}
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeWait)
	defer cancel()
	_ = q.bcast.Broadcast(bctx, core.SharedEvent{Kind: kind, ID: id})
}

// SharedChanged reads confirmation id from the shared store after another
// gateway said it changed: one waiting there joins the view, one decided
// leaves it, and a call waiting here for it gets the decision.
func (q *ApprovalQueue) SharedChanged(ctx context.Context, id string) error {
	if q.shared == nil {
		return nil
	}
	rec, err := q.shared.LookupPending(ctx, id)
	if err != nil {
		return err
	}
	switch {
	case rec.Decision.Decision != "":
		d := rec.Decision
		q.settle(id, verdict{decision: d.Decision, by: d.By, reason: d.Reason}, d.At)
	case rec.Pending != nil:
		q.addRemote(*rec.Pending)
	}
	return nil
}

// SharedResync reads every waiting confirmation from the shared store
// again, for when events may have been missed (at start, after the link to
// the store broke).
func (q *ApprovalQueue) SharedResync(ctx context.Context) error {
	if q.shared == nil {
		return nil
	}
	open, err := q.shared.OpenPending(ctx, q.now())
	if err != nil {
		return err
	}
	listed := make(map[string]bool, len(open))
	for _, p := range open {
		listed[p.ID] = true
		q.addRemote(p)
	}
	q.mu.Lock()
	var gone []string
	for id := range q.pending {
		if !listed[id] {
			gone = append(gone, id)
		}
	}
	q.mu.Unlock()
	for _, id := range gone {
		if err := q.SharedChanged(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// addRemote shows another gateway's waiting confirmation, until a decision
// arrives or its deadline passes (that gateway may have died).
func (q *ApprovalQueue) addRemote(p core.PendingConfirmation) {
	q.bus.Commit(func() []core.EventData {
		q.mu.Lock()
		defer q.mu.Unlock()
		now := q.now()
		if _, ok := q.pending[p.ID]; ok || q.closed || q.recentLocked(p.ID, now) != nil || !now.Before(p.Deadline) {
			return nil
		}
		id := p.ID
		// A moment after the deadline: a gateway still alive settles its
		// own, and its caller hears its own timeout rather than ours.
		q.pending[id] = &waiting{info: p, remote: true, expire: time.AfterFunc(p.Deadline.Sub(now)+remoteGrace, func() { q.expireRemote(id) })}
		return []core.EventData{core.ConfirmationPending{Pending: p}}
	})
}

// expireRemote settles another gateway's confirmation at its deadline, as
// that gateway would have, had it lived.
func (q *ApprovalQueue) expireRemote(id string) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.expiring.Add(1)
	q.mu.Unlock()
	defer q.expiring.Done()
	ctx, cancel := context.WithTimeout(context.Background(), storeWait)
	defer cancel()
	_ = q.decideShared(ctx, id, verdict{decision: core.DecisionTimeout})
}

// decideLocal removes id from the queue, hands the waiter v and remembers the
// decision; the first decision wins. A confirmation whose wait is over
// when an operator decides is settled as timed out, and the operator told
// so, even if its timer has not fired yet.
func (q *ApprovalQueue) decideLocal(id string, v verdict) error {
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
