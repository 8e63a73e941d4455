package sqlite

// The audit log is written through an auditqueue.Queue: group commit, a
// bounded queue, queued records committed on Close (OP-6).

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/auditchain"
	"github.com/toolgate/toolgate/core/auditqueue"
)

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

// insertAudit writes one batch in one transaction, through the flusher's
// auditWriter on the write connection. The batch is chained here, in commit
// order, off the callers' path (OP-10); a checkpoint that is due goes into
// the same transaction.
func (s *Store) insertAudit(recs []core.AuditRecord) error {
	// Records written to a lost file would read as kept and be gone.
	if err := s.present(); err != nil {
		return err
	}
	links, cp, err := s.chain.Link(recs)
	if err != nil {
		s.chain.Failed()
		return err
	}
	ctx := context.Background()
	conn, err := s.w.Conn(ctx)
	if err != nil {
		s.chain.Failed()
		return s.wrap("append audit", err)
	}
	defer conn.Close()
	if err := conn.Raw(func(dc any) error { return s.aw.write(ctx, dc, recs, links, cp) }); err != nil {
		s.chain.Failed()
		return s.wrap("append audit", err)
	}
	s.chain.Committed(recs, cp)
	return nil
}

// AuditChain implements auditchain.Store: this handle's chain.
func (s *Store) AuditChain() *auditchain.Writer { return s.chain }

// insertCheckpointSQL stores a checkpoint of a chain's head.
const insertCheckpointSQL = `INSERT INTO audit_checkpoints (chain_id, seq, hash, time, writer, mac) VALUES (?, ?, ?, ?, ?, ?)`

func checkpointArgs(cp *auditchain.Checkpoint) []any {
	return []any{cp.Chain, cp.Seq, cp.Hash, cp.Time.UnixNano(), cp.Writer, cp.MAC}
}

// ScanAuditEntries implements auditchain.Store.
func (s *Store) ScanAuditEntries(ctx context.Context, fn func(auditchain.Entry) error) error {
	if err := s.live(); err != nil {
		return err
	}
	s.audit.Flush()
	return s.scanEntries(ctx, fn, `SELECT `+entryColumns+` FROM audit ORDER BY seq`)
}

// entryColumns are the columns scanEntries reads.
const entryColumns = `seq, time, endpoint, actor_id, tenant, session, tool, source, remote_name,
	args_hash, outcome, latency, confirm_token_id, call_id, rule, connection, via, findings, chain_id, chain_seq, chain_hash`

// What CheckCall reads, each through an index (migration 9, and the
// checkpoints' primary key): a call's records, the record of a chain
// before a row and those after it, a chain's checkpoints from a seq, each
// bounded by a LIMIT; and whether a chained record precedes a row, read
// back from it along the primary key (+chain_id keeps SQLite off the
// audit_chain index, which would read every chained record).
const (
	callEntriesSQL      = `SELECT ` + entryColumns + ` FROM audit WHERE call_id = ? ORDER BY seq`
	prevEntrySQL        = `SELECT ` + entryColumns + ` FROM audit WHERE chain_id = ? AND seq < ? ORDER BY seq DESC LIMIT 1`
	nextEntriesSQL      = `SELECT ` + entryColumns + ` FROM audit WHERE chain_id = ? AND seq > ? ORDER BY seq LIMIT ?`
	chainCheckpointsSQL = `SELECT chain_id, seq, hash, time, writer, mac FROM audit_checkpoints WHERE chain_id = ? AND seq >= ? ORDER BY seq LIMIT ?`
	chainedBeforeSQL    = `SELECT seq FROM audit WHERE seq < ? AND +chain_id <> '' ORDER BY seq DESC LIMIT 1`
)

// scanEntries calls fn with each entry query (selecting entryColumns) reads.
func (s *Store) scanEntries(ctx context.Context, fn func(auditchain.Entry) error, query string, args ...any) error {
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return s.wrap("read audit", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e auditchain.Entry
		r := &e.Record
		var at, latency int64
		if err := rows.Scan(&e.Row, &at, &r.Endpoint, &r.ActorID, &r.Tenant, &r.Session, &r.Tool, &r.Source, &r.RemoteName,
			&r.ArgsHash, &r.Outcome, &latency, &r.ConfirmTokenID, &r.CallID, &r.Rule, &r.Connection, &r.Via, &r.Findings, &e.Chain, &e.Seq, &e.Hash); err != nil {
			return s.wrap("read audit", err)
		}
		r.Time = time.Unix(0, at).UTC()
		r.Latency = time.Duration(latency)
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.wrap("read audit", err)
	}
	return nil
}

// CallEntries implements auditchain.Store, through the audit_call index.
func (s *Store) CallEntries(ctx context.Context, callID string) ([]auditchain.Entry, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	s.audit.Flush()
	out := []auditchain.Entry{}
	err := s.scanEntries(ctx, func(e auditchain.Entry) error { out = append(out, e); return nil },
		callEntriesSQL, callID)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ChainEntryBefore implements auditchain.Store, through the audit_chain
// index.
func (s *Store) ChainEntryBefore(ctx context.Context, chain string, row int64) (*auditchain.Entry, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	s.audit.Flush()
	var prev *auditchain.Entry
	err := s.scanEntries(ctx, func(e auditchain.Entry) error { prev = &e; return nil },
		prevEntrySQL, chain, row)
	if err != nil {
		return nil, err
	}
	return prev, nil
}

// ScanChainAfter implements auditchain.Store, through the audit_chain
// index.
func (s *Store) ScanChainAfter(ctx context.Context, chain string, row int64, limit int, fn func(auditchain.Entry) error) error {
	if err := s.live(); err != nil {
		return err
	}
	s.audit.Flush()
	return s.scanEntries(ctx, fn, nextEntriesSQL, chain, row, limit)
}

// ChainedBefore implements auditchain.Store, through the primary key.
func (s *Store) ChainedBefore(ctx context.Context, row int64) (bool, error) {
	if err := s.live(); err != nil {
		return false, err
	}
	s.audit.Flush()
	var at int64
	switch err := s.r.QueryRowContext(ctx, chainedBeforeSQL, row).Scan(&at); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, s.wrap("read audit", err)
	}
	return true, nil
}

// ScanChainCheckpoints implements auditchain.Store, through the
// checkpoints' primary key.
func (s *Store) ScanChainCheckpoints(ctx context.Context, chain string, from int64, limit int, fn func(auditchain.Checkpoint) error) error {
	if err := s.live(); err != nil {
		return err
	}
	s.audit.Flush()
	rows, err := s.r.QueryContext(ctx, chainCheckpointsSQL, chain, from, limit)
	if err != nil {
		return s.wrap("read audit checkpoints", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c auditchain.Checkpoint
		var at int64
		if err := rows.Scan(&c.Chain, &c.Seq, &c.Hash, &at, &c.Writer, &c.MAC); err != nil {
			return s.wrap("read audit checkpoints", err)
		}
		c.Time = time.Unix(0, at).UTC()
		if err := fn(c); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.wrap("read audit checkpoints", err)
	}
	return nil
}

// AuditCheckpoints implements auditchain.Store.
func (s *Store) AuditCheckpoints(ctx context.Context) ([]auditchain.Checkpoint, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	s.audit.Flush()
	rows, err := s.r.QueryContext(ctx, `SELECT chain_id, seq, hash, time, writer, mac FROM audit_checkpoints ORDER BY chain_id, seq`)
	if err != nil {
		return nil, s.wrap("read audit checkpoints", err)
	}
	defer rows.Close()
	out := []auditchain.Checkpoint{}
	for rows.Next() {
		var c auditchain.Checkpoint
		var at int64
		if err := rows.Scan(&c.Chain, &c.Seq, &c.Hash, &at, &c.Writer, &c.MAC); err != nil {
			return nil, s.wrap("read audit checkpoints", err)
		}
		c.Time = time.Unix(0, at).UTC()
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("read audit checkpoints", err)
	}
	return out, nil
}

// closeChain signs the chain's head on Close, once the flusher has stopped.
func (s *Store) closeChain() error {
	cp := s.chain.Final()
	if cp == nil {
		return nil
	}
	if _, err := s.w.ExecContext(context.Background(), insertCheckpointSQL, checkpointArgs(cp)...); err != nil {
		return s.wrap("sign the audit chain", err)
	}
	s.chain.CheckpointWritten(cp)
	return nil
}

// auditRows are the row counts of the inserts the writer prepares, largest
// first: a batch is written as a few multi-row statements (45 records:
// 32+8+4+1; at most 8 for any batch under 256), not one per record. The
// rows go in in the batch's order, so seq keeps the append order.
var auditRows = [...]int{128, 64, 32, 16, 8, 4, 2, 1}

// auditColumns is the number of parameters per row of insertAuditSQL.
const auditColumns = 20

// insertAuditSQL is the insert of rows records. OR FAIL, not the default
// ABORT: a statement that may abort part way must first copy every page it
// changes into a statement journal, so that it can undo itself, and with
// the audit_call index's entries landing on a page each that copying was a
// fifth of the writer's CPU. Undoing only the statement is of no use here:
// a batch whose insert fails is rolled back whole by write.
func insertAuditSQL(rows int) string {
	var b strings.Builder
	b.WriteString(`INSERT OR FAIL INTO audit (time, endpoint, actor_id, tenant, session, tool, source, remote_name,
		args_hash, outcome, latency, confirm_token_id, call_id, rule, connection, via, findings, chain_id, chain_seq, chain_hash) VALUES `)
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
	}
	return b.String()
}

// auditWriter is the flusher's own use of the write connection: the
// transaction's statements and the inserts, prepared once on the driver
// connection and run on it directly. A database/sql transaction would cost
// a goroutine watching its context, and the driver a watcher per BEGIN and
// COMMIT and a statement prepared for each; the statements run with a
// context that never ends, so the driver starts none.
//
// Only the flusher uses it, inside sql.Conn.Raw on the write connection (so
// no other query runs on the connection while the transaction is open),
// and Close once the flusher has stopped.
type auditWriter struct {
	conn                    driver.Conn // the statements belong to it
	begin, commit, rollback driver.Stmt
	checkpoint              driver.Stmt
	insert                  [len(auditRows)]driver.Stmt
	args                    []driver.NamedValue // one statement's, reused
	last                    [textColumns]boxed  // each text column's last value
}

// write commits recs, linked by links, and cp if not nil, in one transaction
// on dc. It leaves dc outside any transaction, or fails with
// driver.ErrBadConn so database/sql closes it.
func (w *auditWriter) write(ctx context.Context, dc any, recs []core.AuditRecord, links []auditchain.Link, cp *auditchain.Checkpoint) (err error) {
	c, ok := dc.(driver.Conn)
	if !ok {
		return fmt.Errorf("driver connection %T: %w", dc, driver.ErrBadConn)
	}
	if c != w.conn {
		// database/sql closes a connection only after it reported itself
		// bad; its statements went with it.
		*w = auditWriter{conn: c, args: w.args}
	}
	if err := w.exec(ctx, &w.begin, "BEGIN IMMEDIATE", nil); err != nil {
		return err // SQLite leaves no transaction open when BEGIN fails
	}
	defer func() {
		if err == nil {
			return
		}
		// A COMMIT that failed may have ended the transaction itself; a
		// ROLLBACK that fails leaves it unknown, and the connection must
		// not serve the next query like that.
		if rerr := w.exec(ctx, &w.rollback, "ROLLBACK", nil); rerr != nil {
			w.close()
			err = fmt.Errorf("%w; rollback: %v (%w)", err, rerr, driver.ErrBadConn)
		}
	}()
	for len(recs) > 0 {
		i := 0
		for auditRows[i] > len(recs) {
			i++
		}
		n := auditRows[i]
		w.args = slices.Grow(w.args[:0], n*auditColumns)
		for j := range recs[:n] {
			r := &recs[j]
			at, _ := unixNano(r.Time)
			w.arg(at)
			w.text(colEndpoint, r.Endpoint)
			w.text(colActorID, r.ActorID)
			w.text(colTenant, r.Tenant)
			w.text(colSession, r.Session)
			w.text(colTool, r.Tool)
			w.text(colSource, r.Source)
			w.text(colRemoteName, r.RemoteName)
			w.text(colArgsHash, r.ArgsHash)
			w.text(colOutcome, r.Outcome)
			w.arg(int64(r.Latency))
			w.text(colConfirmTokenID, r.ConfirmTokenID)
			w.text(colCallID, r.CallID)
			w.text(colRule, r.Rule)
			w.text(colConnection, r.Connection)
			w.text(colVia, r.Via)
			w.text(colFindings, r.Findings)
			w.text(colChainID, links[j].Chain)
			w.arg(links[j].Seq)
			w.arg(links[j].Hash)
		}
		if w.insert[i] == nil {
			if err := w.prepare(ctx, &w.insert[i], insertAuditSQL(n)); err != nil {
				return err
			}
		}
		err := w.exec(ctx, &w.insert[i], "", w.args)
		clear(w.args) // the strings are the records'
		if err != nil {
			return err
		}
		recs, links = recs[n:], links[n:]
	}
	if cp != nil {
		w.args = w.args[:0]
		for _, v := range checkpointArgs(cp) {
			w.arg(v)
		}
		err := w.exec(ctx, &w.checkpoint, insertCheckpointSQL, w.args)
		clear(w.args)
		if err != nil {
			return err
		}
	}
	return w.exec(ctx, &w.commit, "COMMIT", nil)
}

func (w *auditWriter) arg(v driver.Value) {
	w.args = append(w.args, driver.NamedValue{Ordinal: len(w.args) + 1, Value: v})
}

// The text columns whose values text keeps the last boxed form of.
const (
	colEndpoint = iota
	colActorID
	colTenant
	colSession
	colTool
	colSource
	colRemoteName
	colArgsHash
	colOutcome
	colConfirmTokenID
	colCallID
	colRule
	colConnection
	colVia
	colFindings
	colChainID
	textColumns
)

// text adds v as the value of column col. Making a driver.Value of a
// string copies it to the heap, and most columns repeat from one record to
// the next (the endpoint, actor, tool, outcome, chain, and a session's
// calls): the value boxed last for the column is used again when v is the
// same. That took 18 of the writer's 24 allocations per record to about 8.
func (w *auditWriter) text(col int, v string) {
	if v == "" {
		w.arg("") // boxing "" allocates nothing
		return
	}
	if w.last[col].s != v {
		w.last[col] = boxed{v, v}
	}
	w.arg(w.last[col].v)
}

// boxed is a string and its driver.Value.
type boxed struct {
	s string
	v driver.Value
}

// prepare prepares query as *st.
func (w *auditWriter) prepare(ctx context.Context, st *driver.Stmt, query string) error {
	p, ok := w.conn.(driver.ConnPrepareContext)
	if !ok {
		return fmt.Errorf("driver connection %T prepares no statements with a context", w.conn)
	}
	prepared, err := p.PrepareContext(ctx, query)
	if err != nil {
		return err
	}
	*st = prepared
	return nil
}

// exec runs *st, preparing query as *st first if it is nil.
func (w *auditWriter) exec(ctx context.Context, st *driver.Stmt, query string, args []driver.NamedValue) error {
	if *st == nil {
		if err := w.prepare(ctx, st, query); err != nil {
			return err
		}
	}
	e, ok := (*st).(driver.StmtExecContext)
	if !ok {
		return fmt.Errorf("driver statement %T executes nothing with a context", *st)
	}
	_, err := e.ExecContext(ctx, args)
	return err
}

// close closes the prepared statements; the connection stays open.
func (w *auditWriter) close() error {
	var errs []error
	for _, st := range append([]driver.Stmt{w.begin, w.commit, w.rollback, w.checkpoint}, w.insert[:]...) {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	*w = auditWriter{args: w.args}
	return errors.Join(errs...)
}

// closeAuditWriter closes the writer's statements, on Close once the
// flusher has stopped, before the connection closes.
func (s *Store) closeAuditWriter() error {
	ctx := context.Background()
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		if dc != s.aw.conn {
			return nil // the statements' connection is gone
		}
		return s.aw.close()
	})
}
