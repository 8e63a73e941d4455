package sqlitestore

// The audit log is written through an auditqueue.Queue: group commit, a
// bounded queue, queued records committed on Close (OP-6).

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/auditqueue"
)

const insertAuditSQL = `
	INSERT INTO audit (time, endpoint, actor_id, tenant, session, tool, source, remote_name,
		args_hash, outcome, latency, confirm_token_id, call_id)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// AppendAudit implements core.Store: it returns once the record is
// committed.
func (s *Store) AppendAudit(ctx context.Context, r core.AuditRecord) error {
	b, err := s.queueAudit(ctx, r, true)
	if err != nil {
		return err
	}
	return b.Wait()
}

// AuditQueueDepth is how many audit records wait in the queue, not yet
// taken by the writer (OP-7): it stays near 0 unless the disk falls behind,
// and at the queue's bound (4096) callers wait.
func (s *Store) AuditQueueDepth() int { return s.audit.Depth() }

// QueueAudit implements core.AuditQueuer: it returns once the record is
// queued; the flusher commits it within auditqueue.Linger plus the write.
func (s *Store) QueueAudit(ctx context.Context, r core.AuditRecord) error {
	_, err := s.queueAudit(ctx, r, false)
	return err
}

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
