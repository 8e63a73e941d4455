package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/auditqueue"
)

// The audit log is written through an auditqueue.Queue, as in the embedded
// store: group commit, a bounded queue, queued records committed on Close
// (OP-6). A batch is one INSERT, so it is committed whole or not at all.

// AppendAudit implements core.Store: it returns once the record is
// committed.
func (s *Store) AppendAudit(ctx context.Context, r core.AuditRecord) error {
	b, err := s.queueAudit(ctx, r, true)
	if err != nil {
		return err
	}
	return b.Wait()
}

// QueueAudit implements core.AuditQueuer: it returns once the record is
// queued; the flusher commits it within auditqueue.Linger plus the write.
func (s *Store) QueueAudit(ctx context.Context, r core.AuditRecord) error {
	_, err := s.queueAudit(ctx, r, false)
	return err
}

// AuditQueueDepth is how many audit records wait in the queue, not yet
// taken by the writer (OP-7).
func (s *Store) AuditQueueDepth() int { return s.audit.Depth() }

func (s *Store) queueAudit(ctx context.Context, r core.AuditRecord, wait bool) (*auditqueue.Batch, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if r.Time.IsZero() {
		r.Time = s.now()
	}
	if _, ok := unixNano(r.Time); !ok {
		return nil, fmt.Errorf("append audit: time %v is outside the years 1678-2262", r.Time)
	}
	b, lost, err := s.audit.Put(ctx, r, wait)
	switch {
	case err == core.ErrStoreClosed:
		return nil, fmt.Errorf("store %s: %w", s.d.label, err)
	case err != nil:
		return nil, fmt.Errorf("append audit: %w", err)
	case lost != nil:
		return b, fmt.Errorf("store %s: %w", s.d.label, lost)
	}
	return b, nil
}

// text makes a value storable in a PostgreSQL text column, which takes
// neither NUL nor invalid UTF-8: a record that other stores keep must not
// fail its whole batch here.
func text(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// insertAudit writes one batch in one statement. It is not retried: the
// statement may have committed before its answer was lost.
func (s *Store) insertAudit(recs []core.AuditRecord) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	n := len(recs)
	times, lat := make([]int64, n), make([]int64, n)
	cols := make([][]string, 12)
	for i := range cols {
		cols[i] = make([]string, n)
	}
	for i, r := range recs {
		times[i], _ = unixNano(r.Time)
		lat[i] = int64(r.Latency)
		for j, v := range []string{r.Endpoint, r.ActorID, r.Tenant, r.Session, r.Tool, r.Source, r.RemoteName,
			r.ArgsHash, r.Outcome, r.ConfirmTokenID, r.CallID, r.Rule} {
			cols[j][i] = text(v)
		}
	}
	_, err := s.pool.Exec(ctx, s.sql.insertAudit, times, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6],
		cols[7], cols[8], lat, cols[9], cols[10], cols[11])
	if err != nil {
		return s.wrap(context.Background(), "append audit", err)
	}
	return nil
}
