// Package sqlite is toolgate's embedded store (OP-5): approvals, the
// confirm ledger and the audit log in one SQLite file, through the pure-Go
// modernc.org/sqlite driver so the binary needs no cgo.
//
// It lives apart from core so that only the packages that open a store pay
// for building the SQLite engine.
package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/auditchain"
	"github.com/toolgate/toolgate/core/auditqueue"
)

// applicationID marks a SQLite file as a toolgate store ("tgat"), so a
// database that belongs to something else is refused instead of migrated.
const applicationID = 0x74676174

// busyTimeout is how long a statement waits for another connection or
// process holding the write lock before failing with SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// maxReaders bounds the read pool. WAL lets readers run beside the single
// writer, so audit queries do not hold up the confirm ledger.
const maxReaders = 4

// The page caches' bounds, per connection (negative cache_size: KiB).
// SQLite's default is 2,000 KiB each, so five connections could hold 10 MB.
// The writer's pages are the ends of the audit table and its indexes and
// the pages random call ids land on; readers read the ledger, the audit
// and the quota rows once per query and gain little from a warm cache.
const (
	writerCacheKiB = 1024
	readerCacheKiB = 256
)

// Store is a core.Store in a single SQLite file.
//
// Writes go through one connection (SQLite allows one writer at a time; a
// single connection queues them in the process instead of in busy-waits),
// reads through a small pool of read-only connections. Several Stores, in
// one process or several, may share a file: SQLite's locking serialises
// their writes.
type Store struct {
	path string
	w    *sql.DB // one connection: all writes
	r    *sql.DB // read-only connections
	now  func() time.Time
	// id is the store's identity row; file is what the path named once the
	// connections had opened it, to tell when the path stops naming it.
	id   string
	file os.FileInfo

	closed    atomic.Bool
	firstUses atomic.Int64
	// quotaTakes counts counted quota calls, to prune old windows now
	// and then (PO-3).
	quotaTakes atomic.Int64
	// flowAdds counts flow label writes, to prune lapsed flows now and
	// then (IN-3).
	flowAdds atomic.Int64

	// audit is the queue the flusher goroutine writes the audit log from,
	// through aw, on w.
	audit *auditqueue.Queue
	aw    auditWriter
	chain *auditchain.Writer // used by the flusher only, but for its setters
}

var (
	_ core.Store         = (*Store)(nil)
	_ core.AuditQueuer   = (*Store)(nil)
	_ core.SecretChecker = (*Store)(nil)
	_ auditchain.Store   = (*Store)(nil)
)

// Open opens the store at path, creating it (and its directory, 0700) if it
// does not exist, and brings its schema up to date.
//
// A file that is not a toolgate store or is damaged fails with
// core.ErrStoreCorrupt; one written by a newer toolgate fails with
// core.ErrStoreTooNew. Neither is modified: there is no silent reset or
// downgrade.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("store: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	if err := prepareFile(abs); err != nil {
		return nil, err
	}
	s := &Store{path: abs, now: time.Now}
	if s.w, err = sql.Open("sqlite", dsn(abs, false)); err != nil {
		return nil, fmt.Errorf("store %s: %w", abs, err)
	}
	s.w.SetMaxOpenConns(1)
	if err := s.init(ctx); err != nil {
		_ = s.w.Close()
		return nil, err
	}
	if err := s.identify(ctx); err != nil {
		_ = s.w.Close()
		return nil, err
	}
	if s.r, err = sql.Open("sqlite", dsn(abs, true)); err != nil {
		_ = s.w.Close()
		return nil, fmt.Errorf("store %s: %w", abs, err)
	}
	s.r.SetMaxOpenConns(maxReaders)
	s.audit = auditqueue.New()
	s.chain = auditchain.NewWriter()
	go s.audit.Run(s.insertAudit)
	return s, nil
}

// identify reads the store's identity and the file's, through the write
// connection init has opened.
func (s *Store) identify(ctx context.Context) error {
	if err := s.w.QueryRowContext(ctx, "SELECT id FROM store_identity WHERE one = 1").Scan(&s.id); err != nil {
		return s.wrap("read identity", err)
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	s.file = fi
	return nil
}

// present reports whether the path still names the file this handle opened.
// A deleted file goes on taking writes through open handles, and a file
// moved over the path is another store: either way what this handle writes
// is lost to the next process, the confirm ledger included, so writes stop.
func (s *Store) present() error {
	fi, err := os.Stat(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s was deleted", core.ErrStoreLost, s.path)
	case err != nil:
		return fmt.Errorf("store %s: %w", s.path, err)
	case !os.SameFile(fi, s.file):
		return fmt.Errorf("%w: %s is another file now", core.ErrStoreLost, s.path)
	}
	return nil
}

// live is usable and present: every method but Close checks both. Reads
// check too: a connection the pool opens now would read whatever file is at
// the path, or create an empty one there.
func (s *Store) live() error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.present()
}

// StoreID implements core.Store.
func (s *Store) StoreID(ctx context.Context) (string, error) {
	if err := s.live(); err != nil {
		return "", err
	}
	return s.id, nil
}

// Path is the absolute path of the store file.
func (s *Store) Path() string { return s.path }

// dsn builds a file: URI, so any path (even one with '?' or '#') reaches
// SQLite intact. Only per-connection settings go here: journal_mode is a
// change to the file and waits until the file is known to be ours.
func dsn(path string, readOnly bool) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive path
	}
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	q.Set("_foreign_keys", "1")
	q.Set("_synchronous", "NORMAL")
	if readOnly {
		q.Set("_query_only", "1")
		q.Set("_pragma", fmt.Sprintf("cache_size(%d)", -readerCacheKiB))
	} else {
		q.Set("_pragma", fmt.Sprintf("cache_size(%d)", -writerCacheKiB))
		// Take the write lock at BEGIN: a transaction that read first and
		// then tried to write could fail with SQLITE_BUSY without waiting.
		q.Set("_txlock", "immediate")
	}
	u := url.URL{Scheme: "file", Path: p, RawQuery: q.Encode()}
	return u.String()
}

// sqliteMagic starts every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// prepareFile creates a missing store file with owner-only permissions (SQLite
// gives its -wal and -shm files the same), and refuses, before SQLite writes
// anything, a file that is plainly not a database.
func prepareFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("store %s: %w", path, err)
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return prepareFile(path) // another process created it first
		}
		if err != nil {
			return fmt.Errorf("store %s: %w", path, err)
		}
		return f.Close()
	}
	if err != nil {
		return fmt.Errorf("store %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("store %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", core.ErrStoreCorrupt, path)
	}
	if fi.Size() == 0 {
		return nil // an empty file is an empty database
	}
	head := make([]byte, len(sqliteMagic))
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, sqliteMagic) {
		return fmt.Errorf("%w: %s is not an SQLite database", core.ErrStoreCorrupt, path)
	}
	return nil
}

// init checks the file, then migrates it. Every check reads only, so a file
// refused here is left exactly as it was.
func (s *Store) init(ctx context.Context) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	var mode string
	// Switching a new file to WAL needs it to itself; while other handles
	// open it at the same moment SQLite can answer SQLITE_BUSY at once,
	// without waiting out the busy timeout, so wait here.
	for deadline := time.Now().Add(busyTimeout); ; {
		err := s.w.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		if err == nil {
			break
		}
		var se *sqlite.Error
		if !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return s.wrap("enable WAL", err)
		}
		select {
		case <-ctx.Done():
			return s.wrap("enable WAL", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("store %s: journal mode is %q, could not switch to WAL", s.path, mode)
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	if _, err := s.w.ExecContext(ctx, "DELETE FROM spent_tokens WHERE expires < ?", core.TokenPruneBefore(s.now())); err != nil {
		return s.wrap("prune spent tokens", err)
	}
	return nil
}

func (s *Store) check(ctx context.Context) error {
	rows, err := s.w.QueryContext(ctx, "PRAGMA quick_check")
	if err != nil {
		return s.wrap("check", err)
	}
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return s.wrap("check", err)
		}
		if line != "ok" && len(problems) < 3 {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return s.wrap("check", err)
	}
	rows.Close()
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s: %s", core.ErrStoreCorrupt, s.path, strings.Join(problems, "; "))
	}

	// One statement, so one read snapshot: read one by one, another
	// process's first migration could commit between the reads and make a
	// new store look like another application's.
	var appID, version, tables int
	if err := s.w.QueryRowContext(ctx, `SELECT
		(SELECT application_id FROM pragma_application_id()),
		(SELECT user_version FROM pragma_user_version()),
		(SELECT count(*) FROM sqlite_schema)`).Scan(&appID, &version, &tables); err != nil {
		return s.wrap("check", err)
	}
	fresh := appID == 0 && version == 0 && tables == 0
	if appID != applicationID && !fresh {
		return fmt.Errorf("%w: %s is an SQLite database of another application (application_id %#x)", core.ErrStoreCorrupt, s.path, appID)
	}
	if version > len(migrations) {
		return tooNew(s.path, version)
	}
	return nil
}

func tooNew(path string, version int) error {
	return fmt.Errorf("%w: %s has schema version %d, this toolgate knows versions up to %d; upgrade toolgate or use another store file",
		core.ErrStoreTooNew, path, version, len(migrations))
}

// migrate applies the missing migrations, one transaction each. The version
// is read again inside each transaction, so two processes opening a new file
// at once do not both apply a step.
func (s *Store) migrate(ctx context.Context) error {
	for {
		done, err := s.migrateOne(ctx)
		if err != nil || done {
			return err
		}
	}
}

func (s *Store) migrateOne(ctx context.Context) (done bool, err error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return false, s.wrap("migrate", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return false, s.wrap("migrate", err)
	}
	switch {
	case version > len(migrations):
		return false, tooNew(s.path, version)
	case version == len(migrations):
		return true, tx.Commit()
	}
	if _, err := tx.ExecContext(ctx, migrations[version]); err != nil {
		return false, s.wrap(fmt.Sprintf("migrate to version %d", version+1), err)
	}
	// PRAGMA takes no parameters; both values are integers we control.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d; PRAGMA application_id = %d", version+1, applicationID)); err != nil {
		return false, s.wrap("migrate", err)
	}
	if err := tx.Commit(); err != nil {
		return false, s.wrap("migrate", err)
	}
	return false, nil
}

// wrap adds the path, and maps SQLite's "damaged" and "not a database"
// results to core.ErrStoreCorrupt.
func (s *Store) wrap(op string, err error) error {
	if s.closed.Load() { // Close raced with the call
		return fmt.Errorf("store %s: %s: %w", s.path, op, core.ErrStoreClosed)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("%w: %s: %s: %v", core.ErrStoreCorrupt, s.path, op, err)
		}
	}
	return fmt.Errorf("store %s: %s: %w", s.path, op, err)
}

func (s *Store) usable() error {
	if s.closed.Load() {
		return fmt.Errorf("store %s: %w", s.path, core.ErrStoreClosed)
	}
	return nil
}

// PutApproval implements core.Store.
func (s *Store) PutApproval(ctx context.Context, a core.Approval) error {
	if err := a.Validate(); err != nil {
		return err
	}
	if err := s.live(); err != nil {
		return err
	}
	_, err := s.w.ExecContext(ctx, `
		INSERT INTO approvals (source, remote_name, fingerprint, decision, decided_by, decided_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (source, remote_name) DO UPDATE SET
			fingerprint = excluded.fingerprint, decision = excluded.decision,
			decided_by = excluded.decided_by, decided_at = excluded.decided_at`,
		a.Source, a.RemoteName, a.Fingerprint, string(a.Decision), a.By, a.At.UTC().Format(time.RFC3339Nano))
	if err != nil {
		return s.wrap("put approval", err)
	}
	return nil
}

// Approvals implements core.Store.
func (s *Store) Approvals(ctx context.Context) ([]core.Approval, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `
		SELECT source, remote_name, fingerprint, decision, decided_by, decided_at
		FROM approvals ORDER BY source, remote_name`)
	if err != nil {
		return nil, s.wrap("list approvals", err)
	}
	defer rows.Close()
	out := []core.Approval{}
	for rows.Next() {
		var a core.Approval
		var decision, at string
		if err := rows.Scan(&a.Source, &a.RemoteName, &a.Fingerprint, &decision, &a.By, &at); err != nil {
			return nil, s.wrap("list approvals", err)
		}
		a.Decision = core.ReviewDecision(decision)
		if a.At, err = time.Parse(time.RFC3339Nano, at); err != nil {
			return nil, fmt.Errorf("%w: %s: approval %s/%s: time %q: %v", core.ErrStoreCorrupt, s.path, a.Source, a.RemoteName, at, err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("list approvals", err)
	}
	return out, nil
}

// DeleteApproval implements core.Store.
func (s *Store) DeleteApproval(ctx context.Context, source, remoteName string) error {
	if err := s.live(); err != nil {
		return err
	}
	if _, err := s.w.ExecContext(ctx, "DELETE FROM approvals WHERE source = ? AND remote_name = ?", source, remoteName); err != nil {
		return s.wrap("delete approval", err)
	}
	return nil
}

// UseToken implements core.Store. The primary key makes the insert the
// decision: whichever connection, in whichever process, inserts the id
// first gets one affected row; every later insert gets none. A store whose
// file was deleted or replaced records nothing (core.ErrStoreLost).
func (s *Store) UseToken(ctx context.Context, tokenID string, expires time.Time) (firstUse bool, err error) {
	if tokenID == "" {
		return false, errors.New("use token: empty token id")
	}
	if err := s.usable(); err != nil {
		return false, err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return false, s.wrap("use token", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	// Checked holding the write lock: a spend recorded in a lost file would
	// be forgotten, and the token could run again.
	if err := s.present(); err != nil {
		return false, err
	}
	res, err := tx.ExecContext(ctx, "INSERT INTO spent_tokens (id, expires) VALUES (?, ?) ON CONFLICT (id) DO NOTHING",
		tokenID, core.TokenExpiryKey(expires))
	if err != nil {
		return false, s.wrap("use token", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, s.wrap("use token", err)
	}
	if n == 1 && s.firstUses.Add(1)%core.PruneEvery == 0 {
		if _, err := tx.ExecContext(ctx, "DELETE FROM spent_tokens WHERE expires < ?", core.TokenPruneBefore(s.now())); err != nil {
			return false, s.wrap("prune spent tokens", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, s.wrap("use token", err)
	}
	return n == 1, nil
}

// CheckConfirmSecret implements core.SecretChecker: the first gateway to
// start on the file records its verifier; every later one, in this process
// or another, must bring the same.
func (s *Store) CheckConfirmSecret(ctx context.Context, verifier string) error {
	if err := s.live(); err != nil {
		return err
	}
	host, _ := os.Hostname()
	if _, err := s.w.ExecContext(ctx, "INSERT INTO confirm_secret (one, verifier, recorded_at, recorded_by) VALUES (1, ?, ?, ?) ON CONFLICT (one) DO NOTHING",
		verifier, s.now().UTC().Format(time.RFC3339), fmt.Sprintf("%s pid %d", host, os.Getpid())); err != nil {
		return s.wrap("check the confirm secret", err)
	}
	var stored, at, by string
	if err := s.w.QueryRowContext(ctx, "SELECT verifier, recorded_at, recorded_by FROM confirm_secret WHERE one = 1").Scan(&stored, &at, &by); err != nil {
		return s.wrap("check the confirm secret", err)
	}
	if stored != verifier {
		return fmt.Errorf("%w (store %s; recorded by %s at %s): tokens this gateway issued would be refused by the others. Give every gateway on the file the same secret; to change it, stop them all and reset it (README, PostgreSQL store)",
			core.ErrConfirmSecretMismatch, s.path, by, at)
	}
	return nil
}

// Audit implements core.Store.
func (s *Store) Audit(ctx context.Context, q core.AuditQuery) ([]core.AuditRecord, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	s.audit.Flush() // the records this handle queued before the query are in
	since := int64(math.MinInt64)
	if !q.Since.IsZero() {
		since, _ = unixNano(q.Since) // clamped: out of range still orders right
	}
	limit := -1 // SQLite: no limit
	if q.Limit > 0 {
		limit = q.Limit
	}
	query, args := auditSQL, []any{since, limit}
	if q.CallID != "" {
		query, args = auditCallSQL, []any{q.CallID, since, limit}
	}
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.wrap("read audit", err)
	}
	defer rows.Close()
	out := []core.AuditRecord{}
	for rows.Next() {
		var r core.AuditRecord
		var at, latency int64
		if err := rows.Scan(&at, &r.Endpoint, &r.ActorID, &r.Tenant, &r.Session, &r.Tool, &r.Source, &r.RemoteName,
			&r.ArgsHash, &r.Outcome, &latency, &r.ConfirmTokenID, &r.CallID, &r.Rule, &r.Connection, &r.Via, &r.Findings); err != nil {
			return nil, s.wrap("read audit", err)
		}
		r.Time = time.Unix(0, at).UTC()
		r.Latency = time.Duration(latency)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("read audit", err)
	}
	return out, nil
}

// auditSQL reads the audit log from a time; auditCallSQL one call's
// records, through the audit_call index.
const (
	auditSQL = `
		SELECT time, endpoint, actor_id, tenant, session, tool, source, remote_name,
			args_hash, outcome, latency, confirm_token_id, call_id, rule, connection, via, findings
		FROM audit WHERE time >= ? ORDER BY time, seq LIMIT ?`
	auditCallSQL = `
		SELECT time, endpoint, actor_id, tenant, session, tool, source, remote_name,
			args_hash, outcome, latency, confirm_token_id, call_id, rule, connection, via, findings
		FROM audit WHERE call_id = ? AND time >= ? ORDER BY time, seq LIMIT ?`
)

// unixNano is t in the form the audit log indexes, clamped to int64; ok is
// false if it had to clamp.
func unixNano(t time.Time) (n int64, ok bool) {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64, false
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64, false
	}
	return t.UnixNano(), true
}

// Close implements core.Store. Every audit record queued before it is
// committed first. The last connection to close checkpoints the WAL into the
// main file.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.audit.Close()
	return errors.Join(s.closeChain(), s.closeAuditWriter(), s.r.Close(), s.w.Close())
}
