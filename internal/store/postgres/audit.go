package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/auditchain"
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
// statement may have committed before its answer was lost, so a failed
// batch ends the handle's chain and the next starts a new one (OP-10).
// The records are chained here, in commit order, off the callers' path, as
// they are stored (text made storable first); a checkpoint that is due is
// written once the batch is in.
func (s *Store) insertAudit(recs []core.AuditRecord) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	n := len(recs)
	for i := range recs {
		storable(&recs[i])
	}
	links, cp, err := s.chain.Link(recs)
	if err != nil {
		s.chain.Failed()
		return err
	}
	times, lat, seqs := make([]int64, n), make([]int64, n), make([]int64, n)
	cols := make([][]string, 17)
	for i := range cols {
		cols[i] = make([]string, n)
	}
	for i, r := range recs {
		times[i], _ = unixNano(r.Time)
		lat[i] = int64(r.Latency)
		seqs[i] = links[i].Seq
		for j, v := range []string{r.Endpoint, r.ActorID, r.Tenant, r.Session, r.Tool, r.Source, r.RemoteName,
			r.ArgsHash, r.Outcome, r.ConfirmTokenID, r.CallID, r.Rule, links[i].Chain, links[i].Hash, r.Connection, r.Via, r.Findings} {
			cols[j][i] = v
		}
	}
	_, err = s.pool.Exec(ctx, s.sql.insertAudit, times, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6],
		cols[7], cols[8], lat, cols[9], cols[10], cols[11], cols[12], seqs, cols[13], cols[14], cols[15], cols[16])
	if err != nil {
		s.chain.Failed()
		return s.wrap(context.Background(), "append audit", err)
	}
	if cp != nil {
		// Apart from the batch: a checkpoint that fails is only late, the
		// next batch or Close signs the head.
		if _, err := s.pool.Exec(ctx, s.cq.insertCheckpoint, checkpointArgs(cp)...); err != nil {
			cp = nil
		}
	}
	s.chain.Committed(recs, cp)
	return nil
}

// storable makes r's text storable in place (text), so the chain hashes what
// is stored.
func storable(r *core.AuditRecord) {
	for _, p := range []*string{&r.Endpoint, &r.ActorID, &r.Tenant, &r.Session, &r.Tool, &r.Source, &r.RemoteName,
		&r.ArgsHash, &r.Outcome, &r.ConfirmTokenID, &r.CallID, &r.Rule, &r.Connection, &r.Via, &r.Findings} {
		*p = text(*p)
	}
}

// chainQueries are the audit chain's statements (OP-10), with the schema
// filled in.
type chainQueries struct {
	entries, checkpoints, insertCheckpoint string
	// What CheckCall reads through indexes: a call's records, the records
	// of a chain before and after one, a chain's checkpoints from a seq.
	// Each bounded by a LIMIT: pgx reads a result to its end on Close.
	callEntries, prevEntry, nextEntries, chainCheckpoints string
	// Whether a chained record precedes a row: read back from it along
	// the primary key.
	chainedBefore string
}

func newChainQueries(ident string) chainQueries {
	q := func(s string) string {
		s = strings.ReplaceAll(s, "{cols}", `seq, time, endpoint, actor_id, tenant, session, tool, source, remote_name,
				args_hash, outcome, latency, confirm_token_id, call_id, rule, connection, via, findings, chain_id, chain_seq, chain_hash`)
		return strings.ReplaceAll(s, "{s}", ident)
	}
	return chainQueries{
		entries:       q(`SELECT {cols} FROM {s}.audit ORDER BY seq`),
		callEntries:   q(`SELECT {cols} FROM {s}.audit WHERE call_id = $1 ORDER BY seq`),
		prevEntry:     q(`SELECT {cols} FROM {s}.audit WHERE chain_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT 1`),
		nextEntries:   q(`SELECT {cols} FROM {s}.audit WHERE chain_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`),
		chainedBefore: q(`SELECT seq FROM {s}.audit WHERE seq < $1 AND chain_id <> '' ORDER BY seq DESC LIMIT 1`),
		checkpoints:   q(`SELECT chain_id, seq, hash, time, writer, mac FROM {s}.audit_checkpoints ORDER BY chain_id, seq`),
		chainCheckpoints: q(`SELECT chain_id, seq, hash, time, writer, mac FROM {s}.audit_checkpoints
			WHERE chain_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3`),
		insertCheckpoint: q(`INSERT INTO {s}.audit_checkpoints (chain_id, seq, hash, time, writer, mac) VALUES ($1, $2, $3, $4, $5, $6)`),
	}
}

func checkpointArgs(cp *auditchain.Checkpoint) []any {
	return []any{cp.Chain, cp.Seq, cp.Hash, cp.Time.UnixNano(), cp.Writer, cp.MAC}
}

// AuditChain implements auditchain.Store: this handle's chain.
func (s *Store) AuditChain() *auditchain.Writer { return s.chain }

// ScanAuditEntries implements auditchain.Store. The scan is not retried
// (fn has seen part of it): a connection lost on the way fails it.
func (s *Store) ScanAuditEntries(ctx context.Context, fn func(auditchain.Entry) error) error {
	if err := s.usable(); err != nil {
		return err
	}
	s.audit.Flush()
	if err := scanEntries(ctx, s.pool, fn, s.cq.entries); err != nil {
		if se, ok := err.(scanError); ok {
			return s.wrap(ctx, "read audit", se.error)
		}
		return err
	}
	return nil
}

// scanError is an error of scanEntries' own, not its fn's.
type scanError struct{ error }

func (e scanError) Unwrap() error { return e.error }

// scanEntries calls fn with each entry query (selecting {cols}) reads; its
// own errors are scanErrors, fn's come back as they are.
func scanEntries(ctx context.Context, pool *pgxpool.Pool, fn func(auditchain.Entry) error, query string, args ...any) error {
	rows, err := pool.Query(ctx, query, args...)
	if err != nil {
		return scanError{err}
	}
	defer rows.Close()
	for rows.Next() {
		var e auditchain.Entry
		r := &e.Record
		var at, latency int64
		if err := rows.Scan(&e.Row, &at, &r.Endpoint, &r.ActorID, &r.Tenant, &r.Session, &r.Tool, &r.Source, &r.RemoteName,
			&r.ArgsHash, &r.Outcome, &latency, &r.ConfirmTokenID, &r.CallID, &r.Rule, &r.Connection, &r.Via, &r.Findings, &e.Chain, &e.Seq, &e.Hash); err != nil {
			return scanError{err}
		}
		r.Time = time.Unix(0, at).UTC()
		r.Latency = time.Duration(latency)
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return scanError{err}
	}
	return nil
}

// CallEntries implements auditchain.Store, through the audit_call index.
func (s *Store) CallEntries(ctx context.Context, callID string) ([]auditchain.Entry, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	s.audit.Flush()
	var out []auditchain.Entry
	err := s.do(ctx, "read audit", func(ctx context.Context) error {
		out = []auditchain.Entry{}
		return scanEntries(ctx, s.pool, func(e auditchain.Entry) error { out = append(out, e); return nil }, s.cq.callEntries, text(callID))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ChainEntryBefore implements auditchain.Store, through the audit_chain
// index.
func (s *Store) ChainEntryBefore(ctx context.Context, chain string, row int64) (*auditchain.Entry, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	s.audit.Flush()
	var prev *auditchain.Entry
	err := s.do(ctx, "read audit", func(ctx context.Context) error {
		prev = nil
		return scanEntries(ctx, s.pool, func(e auditchain.Entry) error { prev = &e; return nil }, s.cq.prevEntry, chain, row)
	})
	if err != nil {
		return nil, err
	}
	return prev, nil
}

// ChainedBefore implements auditchain.Store, through the primary key.
func (s *Store) ChainedBefore(ctx context.Context, row int64) (bool, error) {
	if err := s.usable(); err != nil {
		return false, err
	}
	s.audit.Flush()
	found := false
	err := s.do(ctx, "read audit", func(ctx context.Context) error {
		var at int64
		switch err := s.pool.QueryRow(ctx, s.cq.chainedBefore, row).Scan(&at); {
		case errors.Is(err, pgx.ErrNoRows):
			found = false
			return nil
		case err != nil:
			return err
		}
		found = true
		return nil
	})
	return found, err
}

// ScanChainAfter implements auditchain.Store, through the audit_chain
// index. Like ScanAuditEntries it is not retried: fn may have seen part of
// it.
func (s *Store) ScanChainAfter(ctx context.Context, chain string, row int64, limit int, fn func(auditchain.Entry) error) error {
	if err := s.usable(); err != nil {
		return err
	}
	s.audit.Flush()
	if err := scanEntries(ctx, s.pool, fn, s.cq.nextEntries, chain, row, limit); err != nil {
		if se, ok := err.(scanError); ok {
			return s.wrap(ctx, "read audit", se.error)
		}
		return err
	}
	return nil
}

// ScanChainCheckpoints implements auditchain.Store, through the
// checkpoints' primary key. Like ScanAuditEntries it is not retried: fn
// may have seen part of it.
func (s *Store) ScanChainCheckpoints(ctx context.Context, chain string, from int64, limit int, fn func(auditchain.Checkpoint) error) error {
	if err := s.usable(); err != nil {
		return err
	}
	s.audit.Flush()
	rows, err := s.pool.Query(ctx, s.cq.chainCheckpoints, chain, from, limit)
	if err != nil {
		return s.wrap(ctx, "read audit checkpoints", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c auditchain.Checkpoint
		var at int64
		if err := rows.Scan(&c.Chain, &c.Seq, &c.Hash, &at, &c.Writer, &c.MAC); err != nil {
			return s.wrap(ctx, "read audit checkpoints", err)
		}
		c.Time = time.Unix(0, at).UTC()
		if err := fn(c); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.wrap(ctx, "read audit checkpoints", err)
	}
	return nil
}

// AuditCheckpoints implements auditchain.Store.
func (s *Store) AuditCheckpoints(ctx context.Context) ([]auditchain.Checkpoint, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	s.audit.Flush()
	var out []auditchain.Checkpoint
	err := s.do(ctx, "read audit checkpoints", func(ctx context.Context) error {
		out = []auditchain.Checkpoint{}
		rows, err := s.pool.Query(ctx, s.cq.checkpoints)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c auditchain.Checkpoint
			var at int64
			if err := rows.Scan(&c.Chain, &c.Seq, &c.Hash, &at, &c.Writer, &c.MAC); err != nil {
				return err
			}
			c.Time = time.Unix(0, at).UTC()
			out = append(out, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// closeChain signs the chain's head on Close, once the flusher has stopped.
func (s *Store) closeChain() error {
	cp := s.chain.Final()
	if cp == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := s.pool.Exec(ctx, s.cq.insertCheckpoint, checkpointArgs(cp)...); err != nil {
		return s.wrap(ctx, "sign the audit chain", err)
	}
	s.chain.CheckpointWritten(cp)
	return nil
}
