package sqlitestore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/toolgate/toolgate/core"
)

// The audit log is written by one flusher goroutine per Store from a bounded
// queue. AppendAudit queues its record and waits until the batch holding it
// is committed; QueueAudit only queues. Records that arrive while a batch is
// being written go into the next one, so concurrent calls share a
// transaction (group commit). A batch of queued records only lingers up to
// auditLinger for company; one that somebody waits on is written at once.

const (
	// auditQueueMax bounds the records queued and not yet taken by the
	// flusher; past it, QueueAudit and AppendAudit wait (backpressure).
	auditQueueMax = 4096
	// auditLinger is how long the flusher waits for more records before
	// writing a batch nobody waits for: it bounds what a crash can lose.
	auditLinger = 5 * time.Millisecond
)

const insertAuditSQL = `
	INSERT INTO audit (time, endpoint, actor_id, tenant, session, tool, source, remote_name,
		args_hash, outcome, latency, confirm_token_id, call_id)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// auditBatch is the records committed together and what came of it.
type auditBatch struct {
	done   chan struct{} // closed once the batch is written or failed
	err    error
	queued int // records nobody waits for; guarded by auditQueue.mu
}

func newAuditBatch() *auditBatch { return &auditBatch{done: make(chan struct{})} }

type auditQueue struct {
	mu      sync.Mutex
	recs    []core.AuditRecord // queued, not yet taken by the flusher
	next    *auditBatch        // the batch recs will be written in
	writing *auditBatch        // the batch being written; nil when idle
	urgent  bool               // somebody waits for next: no lingering
	closed  bool               // no more records; the flusher drains and stops
	lost    int                // queued records whose write failed, not yet reported
	lostErr error
	taken   chan struct{} // closed and replaced whenever the flusher takes recs

	wake    chan struct{} // capacity 1: there is something for the flusher
	stopped chan struct{} // closed when the flusher has returned
}

func newAuditQueue() *auditQueue {
	return &auditQueue{
		next: newAuditBatch(), taken: make(chan struct{}),
		wake: make(chan struct{}, 1), stopped: make(chan struct{}),
	}
}

func (q *auditQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// put queues r, waiting while the queue is full. It returns the batch r
// will be written in, and any earlier loss to report.
func (q *auditQueue) put(ctx context.Context, r core.AuditRecord, urgent bool) (*auditBatch, error, error) {
	q.mu.Lock()
	for len(q.recs) >= auditQueueMax && !q.closed {
		taken := q.taken
		q.urgent = true // a full queue is written at once
		q.mu.Unlock()
		q.signal()
		select {
		case <-taken:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		q.mu.Lock()
	}
	if q.closed {
		q.mu.Unlock()
		return nil, nil, core.ErrStoreClosed
	}
	q.recs = append(q.recs, r)
	b := q.next
	if urgent {
		q.urgent = true
	} else {
		b.queued++
	}
	var lost error
	if q.lost > 0 && !urgent {
		lost = fmt.Errorf("%w: %d record(s): %w", core.ErrAuditLost, q.lost, q.lostErr)
		q.lost, q.lostErr = 0, nil
	}
	q.mu.Unlock()
	q.signal()
	return b, lost, nil
}

// flush returns once every record queued before the call is written.
func (q *auditQueue) flush() {
	q.mu.Lock()
	b := q.writing
	if len(q.recs) > 0 {
		b = q.next
		q.urgent = true
	}
	q.mu.Unlock()
	if b != nil {
		q.signal()
		<-b.done
	}
}

// depth is how many records are queued and not yet taken by the flusher.
func (q *auditQueue) depth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.recs)
}

// close stops taking records and waits until everything queued is written.
func (q *auditQueue) close() {
	q.mu.Lock()
	q.closed = true
	close(q.taken) // writers waiting for room see closed
	q.taken = make(chan struct{})
	q.mu.Unlock()
	q.signal()
	<-q.stopped
}

// run is the flusher: it writes batches with insert until the queue is
// closed and empty.
func (q *auditQueue) run(insert func([]core.AuditRecord) error) {
	defer close(q.stopped)
	for {
		q.mu.Lock()
		for len(q.recs) == 0 && !q.closed {
			q.mu.Unlock()
			<-q.wake
			q.mu.Lock()
		}
		if len(q.recs) == 0 { // closed and drained
			q.mu.Unlock()
			return
		}
		if !q.urgent && !q.closed {
			q.mu.Unlock()
			linger := time.NewTimer(auditLinger)
		wait:
			for {
				select {
				case <-linger.C:
					break wait
				case <-q.wake:
					q.mu.Lock()
					now := q.urgent || q.closed
					q.mu.Unlock()
					if now {
						break wait
					}
				}
			}
			linger.Stop()
			q.mu.Lock()
		}
		recs, b := q.recs, q.next
		q.recs, q.next, q.writing, q.urgent = nil, newAuditBatch(), b, false
		close(q.taken)
		q.taken = make(chan struct{})
		q.mu.Unlock()

		b.err = insert(recs)

		q.mu.Lock()
		q.writing = nil
		if b.err != nil && b.queued > 0 {
			// Callers that wait get the error themselves; nobody waits
			// for queued records, so the next queuer hears of them.
			q.lost += b.queued
			q.lostErr = b.err
		}
		q.mu.Unlock()
		close(b.done)
	}
}

// AppendAudit implements core.Store: it returns once the record is
// committed.
func (s *Store) AppendAudit(ctx context.Context, r core.AuditRecord) error {
	b, err := s.queueAudit(ctx, r, true)
	if err != nil {
		return err
	}
	<-b.done
	return b.err
}

// AuditQueueDepth is how many audit records wait in the queue, not yet
// taken by the writer (OP-7): it stays near 0 unless the disk falls behind,
// and at the queue's bound (4096) callers wait.
func (s *Store) AuditQueueDepth() int { return s.audit.depth() }

// QueueAudit implements core.AuditQueuer: it returns once the record is
// queued; the flusher commits it within auditLinger plus the write.
func (s *Store) QueueAudit(ctx context.Context, r core.AuditRecord) error {
	_, err := s.queueAudit(ctx, r, false)
	return err
}

func (s *Store) queueAudit(ctx context.Context, r core.AuditRecord, wait bool) (*auditBatch, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if r.Time.IsZero() {
		r.Time = s.now()
	}
	if _, ok := unixNano(r.Time); !ok {
		return nil, fmt.Errorf("append audit: time %v is outside the years 1678-2262", r.Time)
	}
	b, lost, err := s.audit.put(ctx, r, wait)
	switch {
	case err == core.ErrStoreClosed:
		return nil, fmt.Errorf("store %s: %w", s.path, err)
	case err != nil:
		return nil, fmt.Errorf("append audit: %w", err)
	case lost != nil:
		return b, fmt.Errorf("store %s: %w", s.path, lost)
	}
	return b, nil
}

// insertAudit writes one batch in one transaction, through the insert
// statement prepared at Open.
func (s *Store) insertAudit(recs []core.AuditRecord) error {
	ctx := context.Background()
	// Records written to a lost file would read as kept and be gone.
	if err := s.present(); err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap("append audit", err)
	}
	defer tx.Rollback()
	stmt := tx.StmtContext(ctx, s.insert)
	defer stmt.Close()
	for _, r := range recs {
		at, _ := unixNano(r.Time)
		if _, err := stmt.ExecContext(ctx, at, r.Endpoint, r.ActorID, r.Tenant, r.Session, r.Tool, r.Source, r.RemoteName,
			r.ArgsHash, r.Outcome, int64(r.Latency), r.ConfirmTokenID, r.CallID); err != nil {
			return s.wrap("append audit", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.wrap("append audit", err)
	}
	return nil
}
