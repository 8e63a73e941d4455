// Package auditqueue is the group-committing audit queue the persistent
// stores share, so that core.AuditQueuer means one thing whatever the
// store (OP-6).
//
// One flusher goroutine per queue writes batches from a bounded queue.
// AppendAudit queues its record and waits until the batch holding it is
// committed; QueueAudit only queues. Records that arrive while a batch is
// being written go into the next one, so concurrent calls share a
// transaction (group commit). A batch of queued records only lingers up to
// Linger for company; one that somebody waits on is written at once.
package auditqueue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/toolgate/toolgate/core"
)

const (
	// Max bounds the records queued and not yet taken by the flusher; past
	// it, Put waits (backpressure).
	Max = 4096
	// Linger is how long the flusher waits for more records before writing
	// a batch nobody waits for: it bounds what a crash can lose.
	Linger = 5 * time.Millisecond
)

// spareMax bounds the array kept from one batch for the next: a burst up to
// Max does not keep its megabyte.
const spareMax = 256

// Batch is the records committed together and what came of it.
type Batch struct {
	done   chan struct{} // closed once the batch is written or failed
	err    error
	queued int // records nobody waits for; guarded by Queue.mu
}

func newBatch() *Batch { return &Batch{done: make(chan struct{})} }

// Wait returns once the batch is written, with the write's error.
func (b *Batch) Wait() error {
	<-b.done
	return b.err
}

// Queue is one store handle's audit queue. Its methods are safe for
// concurrent use; Run is called once, in a goroutine of its own.
type Queue struct {
	mu      sync.Mutex
	recs    []core.AuditRecord // queued, not yet taken by the flusher
	spare   []core.AuditRecord // a written batch's array, emptied, for recs to reuse
	next    *Batch             // the batch recs will be written in
	writing *Batch             // the batch being written; nil when idle
	urgent  bool               // somebody waits for next: no lingering
	closed  bool               // no more records; the flusher drains and stops
	lost    int                // queued records whose write failed, not yet reported
	lostErr error
	taken   chan struct{} // closed and replaced whenever the flusher takes recs

	wake    chan struct{} // capacity 1: there is something for the flusher
	stopped chan struct{} // closed when the flusher has returned
}

// New returns an empty queue; start its flusher with Run.
func New() *Queue {
	return &Queue{
		next: newBatch(), taken: make(chan struct{}),
		wake: make(chan struct{}, 1), stopped: make(chan struct{}),
	}
}

func (q *Queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Put queues r, waiting while the queue is full. urgent says the caller
// will wait for the batch (AppendAudit), so it is written at once. It
// returns the batch r will be written in, and any earlier loss to report
// (wrapping core.ErrAuditLost); err is ctx's error, or core.ErrStoreClosed
// once Close has begun.
func (q *Queue) Put(ctx context.Context, r core.AuditRecord, urgent bool) (b *Batch, lost, err error) {
	q.mu.Lock()
	for len(q.recs) >= Max && !q.closed {
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
	// The flusher needs waking for the first record (it waits for one) and
	// for one somebody waits on (it stops lingering); for the others it
	// comes back by itself at the end of its linger or write.
	wake := len(q.recs) == 0 || urgent
	if q.recs == nil {
		q.recs, q.spare = q.spare, nil
	}
	q.recs = append(q.recs, r)
	b = q.next
	if urgent {
		q.urgent = true
	} else {
		b.queued++
	}
	if q.lost > 0 && !urgent {
		lost = fmt.Errorf("%w: %d record(s): %w", core.ErrAuditLost, q.lost, q.lostErr)
		q.lost, q.lostErr = 0, nil
	}
	q.mu.Unlock()
	if wake {
		q.signal()
	}
	return b, lost, nil
}

// Flush returns once every record queued before the call is written.
func (q *Queue) Flush() {
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

// Depth is how many records are queued and not yet taken by the flusher.
func (q *Queue) Depth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.recs)
}

// Writing reports whether the flusher is writing a batch now.
func (q *Queue) Writing() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.writing != nil
}

// Close stops taking records and waits until everything queued is written.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	close(q.taken) // writers waiting for room see closed
	q.taken = make(chan struct{})
	q.mu.Unlock()
	q.signal()
	<-q.stopped
}

// Run is the flusher: it writes batches with insert, one call per batch,
// until the queue is closed and empty. insert must not keep the slice: its
// array is reused for a later batch.
func (q *Queue) Run(insert func([]core.AuditRecord) error) {
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
			linger := time.NewTimer(Linger)
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
		q.recs, q.next, q.writing, q.urgent = nil, newBatch(), b, false
		close(q.taken)
		q.taken = make(chan struct{})
		q.mu.Unlock()

		b.err = insert(recs)

		clear(recs) // the strings are the records', kept by nobody now
		q.mu.Lock()
		if cap(recs) <= spareMax {
			q.spare = recs[:0]
		}
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
