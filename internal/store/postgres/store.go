// Package postgres is toolgate's shared store (OP-5): approvals, the confirm
// ledger and the audit log in PostgreSQL, for several gateway replicas that
// must keep one set of promises. The ledger's single-use rule is the
// database's primary key, never a replica's memory.
//
// The tables live in one schema (toolgate unless the DSN says ?schema=…),
// so the database can be shared. Open migrates it, once however many
// replicas start at the same moment. No error or message carries the DSN's
// password.
package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/auditchain"
	"github.com/toolgate/toolgate/core/auditqueue"
)

const (
	// opTimeout bounds one store operation, retry included, so a server
	// that accepts and then hangs cannot hold a call forever.
	opTimeout = 10 * time.Second
	// migrateTimeout bounds Open's migration, which may wait for another
	// replica's.
	migrateTimeout = time.Minute
)

// Store is a core.Store in a PostgreSQL database, through a pgx connection
// pool that reconnects by itself after the server restarts.
type Store struct {
	pool *pgxpool.Pool
	d    *dsn
	sql  queries
	now  func() time.Time
	id   string
	host string // this process's host name, recorded with the secret verifier

	closed    atomic.Bool
	firstUses atomic.Int64
	// quotaTakes counts counted quota calls, to prune old windows now
	// and then (PO-3).
	quotaTakes atomic.Int64
	// flowAdds counts flow label writes, to prune lapsed flows now and
	// then (IN-3).
	flowAdds atomic.Int64
	// lost is the latest finding that the database holds another store (or
	// none): set by the ledger, which checks on every spend, cleared when a
	// spend finds the store again.
	lost atomic.Pointer[error]

	audit *auditqueue.Queue
	chain *auditchain.Writer // used by the flusher only, but for its setters
	cq    chainQueries
	notes *notifier
	pq    pendingQueries
	sq    sessionQueries
	adds  atomic.Int64 // AddPending calls, for pruning
}

var (
	_ core.Store         = (*Store)(nil)
	_ core.AuditQueuer   = (*Store)(nil)
	_ core.SecretChecker = (*Store)(nil)
	_ auditchain.Store   = (*Store)(nil)
)

// queries are the statements with the schema filled in.
type queries struct {
	useToken, prune, putApproval, approvals, deleteApproval, audit, auditCall, insertAudit string
	identity, recordSecret, readSecret                                                     string
}

func newQueries(ident string) queries {
	q := func(s string) string { return strings.ReplaceAll(s, "{s}", ident) }
	return queries{
		// The insert happens only while the database holds the store this
		// handle opened, and the identity comes back with the verdict, in
		// one statement: a spend recorded in another store would be
		// forgotten by this one, and the token could run again.
		useToken: q(`WITH ins AS (
			INSERT INTO {s}.spent_tokens (id, expires)
			SELECT $1, $2 FROM {s}.store_identity WHERE one = 1 AND id = $3
			ON CONFLICT (id) DO NOTHING RETURNING 1)
		SELECT (SELECT id FROM {s}.store_identity WHERE one = 1), EXISTS (SELECT 1 FROM ins)`),
		prune: q(`DELETE FROM {s}.spent_tokens WHERE expires < $1`),
		putApproval: q(`INSERT INTO {s}.approvals (source, remote_name, fingerprint, decision, decided_by, decided_at)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (source, remote_name) DO UPDATE SET
				fingerprint = excluded.fingerprint, decision = excluded.decision,
				decided_by = excluded.decided_by, decided_at = excluded.decided_at`),
		approvals: q(`SELECT source, remote_name, fingerprint, decision, decided_by, decided_at
			FROM {s}.approvals ORDER BY source COLLATE "C", remote_name COLLATE "C"`),
		deleteApproval: q(`DELETE FROM {s}.approvals WHERE source = $1 AND remote_name = $2`),
		audit: q(`SELECT time, endpoint, actor_id, tenant, session, tool, source, remote_name,
				args_hash, outcome, latency, confirm_token_id, call_id, rule, connection, via, findings
			FROM {s}.audit WHERE time >= $1 ORDER BY time, seq LIMIT $2`),
		auditCall: q(`SELECT time, endpoint, actor_id, tenant, session, tool, source, remote_name,
				args_hash, outcome, latency, confirm_token_id, call_id, rule, connection, via, findings
			FROM {s}.audit WHERE call_id = $3 AND time >= $1 ORDER BY time, seq LIMIT $2`),
		// One statement per batch, rows in queue order: seq follows it.
		insertAudit: q(`INSERT INTO {s}.audit (time, endpoint, actor_id, tenant, session, tool, source, remote_name,
				args_hash, outcome, latency, confirm_token_id, call_id, rule, chain_id, chain_seq, chain_hash, connection, via, findings)
			SELECT t, e, a, te, se, to_, so, r, h, o, l, c, ca, ru, ci, cs, ch, co, vi, fi FROM unnest(
				$1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
				$8::text[], $9::text[], $10::text[], $11::bigint[], $12::text[], $13::text[], $14::text[],
				$15::text[], $16::bigint[], $17::text[], $18::text[], $19::text[], $20::text[])
				WITH ORDINALITY AS u(t, e, a, te, se, to_, so, r, h, o, l, c, ca, ru, ci, cs, ch, co, vi, fi, n)
			ORDER BY n`),
		identity:     q(`SELECT id FROM {s}.store_identity WHERE one = 1`),
		recordSecret: q(`INSERT INTO {s}.confirm_secret (one, verifier, recorded_by) VALUES (1, $1, $2) ON CONFLICT (one) DO NOTHING`),
		readSecret:   q(`SELECT verifier, recorded_at, recorded_by FROM {s}.confirm_secret WHERE one = 1`),
	}
}

// Open connects to the database spec names (postgres:// or postgresql://),
// migrates its schema and returns the store.
//
// A server that cannot be reached fails with an error wrapping
// core.ErrStoreUnavailable that names host and port; a schema written by a
// newer toolgate fails with core.ErrStoreTooNew, one that holds tables of
// something else with core.ErrStoreCorrupt. Neither is modified.
func Open(ctx context.Context, spec string) (*Store, error) {
	return open(ctx, spec, false)
}

// open is Open; existing opens only a schema that is there already and
// migrates nothing (nil, nil without one).
func open(ctx context.Context, spec string, existing bool) (*Store, error) {
	d, err := parseDSN(spec)
	if err != nil {
		return nil, err
	}
	s := &Store{d: d, sql: newQueries(pgx.Identifier{d.schema}.Sanitize()), now: time.Now}
	s.notes = newNotifier(s)
	s.pq = newPendingQueries(pgx.Identifier{d.schema}.Sanitize())
	s.sq = newSessionQueries(pgx.Identifier{d.schema}.Sanitize())
	s.host, _ = os.Hostname()
	if s.pool, err = pgxpool.NewWithConfig(ctx, d.pool); err != nil {
		return nil, s.wrap(ctx, "connect", err)
	}
	fail := func(err error) (*Store, error) {
		s.pool.Close()
		return nil, err
	}
	// First contact on its own, so a server that cannot be reached is
	// reported as that, naming host and port.
	if err := s.do(ctx, "connect", func(ctx context.Context) error { return s.pool.Ping(ctx) }); err != nil {
		return fail(err)
	}
	if existing {
		found, err := s.existingSchema(ctx)
		if err != nil || !found {
			return fail(err)
		}
	} else if err := s.migrate(ctx); err != nil {
		return fail(err)
	}
	err = s.do(ctx, "read identity", func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, s.sql.identity).Scan(&s.id)
	})
	if err != nil {
		return fail(err)
	}
	if err := s.do(ctx, "prune spent tokens", func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, s.sql.prune, core.TokenPruneBefore(s.now()))
		return err
	}); err != nil {
		return fail(err)
	}
	s.audit = auditqueue.New()
	s.chain = auditchain.NewWriter()
	s.cq = newChainQueries(pgx.Identifier{d.schema}.Sanitize())
	go s.audit.Run(s.insertAudit)
	return s, nil
}

// migrateLockKey is the advisory lock that serialises migrations of one
// schema: replicas starting at once migrate it once, one after another.
func migrateLockKey(schema string) int64 {
	sum := sha256.Sum256([]byte("toolgate migrate\x00" + schema))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// migrate brings the schema up to date in one transaction, holding the
// schema's advisory lock until it commits.
func (s *Store) migrate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, migrateTimeout)
	defer cancel()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.wrap(ctx, "migrate", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	ident := pgx.Identifier{s.d.schema}.Sanitize()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrateLockKey(s.d.schema)); err != nil {
		return s.wrap(ctx, "migrate", err)
	}
	// Looked up before CREATE SCHEMA, which needs the privilege to create
	// even when the schema exists: a DBA may have made it for a role that
	// has no such privilege.
	var exists, versioned bool
	var tables int
	if err := tx.QueryRow(ctx, `SELECT
		EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1),
		to_regclass($2) IS NOT NULL,
		(SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f'))`,
		s.d.schema, ident+".schema_version").Scan(&exists, &versioned, &tables); err != nil {
		return s.wrap(ctx, "migrate", err)
	}
	switch {
	case !exists:
		if _, err := tx.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
			return s.wrap(ctx, "create schema", err)
		}
	case !versioned && tables > 0:
		return fmt.Errorf("%w: %s: the schema holds %d table(s) of something else; name another with ?schema=NAME", core.ErrStoreCorrupt, s.d.label, tables)
	}
	if !versioned {
		if _, err := tx.Exec(ctx, strings.ReplaceAll(`CREATE TABLE {s}.schema_version (
			one     int PRIMARY KEY CHECK (one = 1),
			version int NOT NULL);
			INSERT INTO {s}.schema_version VALUES (1, 0)`, "{s}", ident)); err != nil {
			return s.wrap(ctx, "migrate", err)
		}
	}
	var version int
	if err := tx.QueryRow(ctx, "SELECT version FROM "+ident+".schema_version WHERE one = 1").Scan(&version); err != nil {
		return s.wrap(ctx, "migrate", err)
	}
	if version > len(migrations) {
		return fmt.Errorf("%w: %s has schema version %d, this toolgate knows versions up to %d; upgrade toolgate or use another schema",
			core.ErrStoreTooNew, s.d.label, version, len(migrations))
	}
	if version == len(migrations) {
		return nil // the deferred rollback ends the transaction, and the lock
	}
	for v := version; v < len(migrations); v++ {
		if _, err := tx.Exec(ctx, strings.ReplaceAll(migrations[v], "{s}", ident)); err != nil {
			return s.wrap(ctx, fmt.Sprintf("migrate to version %d", v+1), err)
		}
	}
	if _, err := tx.Exec(ctx, "UPDATE "+ident+".schema_version SET version = $1 WHERE one = 1", len(migrations)); err != nil {
		return s.wrap(ctx, "migrate", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return s.wrap(ctx, "migrate", err)
	}
	return nil
}

// String names the store without its password.
func (s *Store) String() string { return s.d.label }

// usable fails once the store is closed.
func (s *Store) usable() error {
	if s.closed.Load() {
		return fmt.Errorf("store %s: %w", s.d.label, core.ErrStoreClosed)
	}
	return nil
}

// do runs f within opTimeout, once more if it failed on the connection
// (the pool hands out a new one). Only for operations that may run twice:
// reads, idempotent writes, and the spend of a token, whose second attempt
// after an unseen first one answers "already used" and runs nothing.
func (s *Store) do(ctx context.Context, op string, f func(ctx context.Context) error) error {
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	err := f(octx)
	// A timeout is not retried: a server that does not answer in time
	// would only take as long again.
	if err != nil && connectionTrouble(err) && !pgconn.Timeout(err) && !errors.Is(err, context.DeadlineExceeded) && octx.Err() == nil {
		// After a server restart every idle connection is dead, and one
		// idle under a second is handed out unpinged: the retry would meet
		// the next dead one. Dropping them makes it dial.
		if !tooManyConnections(err) {
			s.pool.Reset()
		}
		err = f(octx)
	}
	if err != nil {
		return s.wrap(ctx, op, err)
	}
	return nil
}

func tooManyConnections(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "53300"
}

// connectionTrouble: the error is about reaching the server, not about the
// statement.
func connectionTrouble(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// 08: connection exception; 57P: the server shutting down or
		// starting; 53300: too many connections.
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P") || pe.Code == "53300"
	}
	var c *corrupt
	var scan pgx.ScanArgError
	return !errors.Is(err, pgx.ErrNoRows) && !errors.Is(err, context.Canceled) && !errors.As(err, &c) && !errors.As(err, &scan)
}

// storeError is a driver error with the password taken out of its text.
// It unwraps to the core error it stands for and to the server's
// *pgconn.PgError if there is one, never to the driver's connection
// errors, which hold the parsed config, password included.
type storeError struct {
	msg  string
	errs []error
}

func (e *storeError) Error() string   { return e.msg }
func (e *storeError) Unwrap() []error { return e.errs }

// wrap names the store and the operation, takes the password out, and
// marks what the caller can act on: core.ErrStoreClosed after Close,
// core.ErrStoreLost when the store's tables are gone, and
// core.ErrStoreUnavailable when the server cannot be reached.
func (s *Store) wrap(ctx context.Context, op string, err error) error {
	if s.closed.Load() {
		return fmt.Errorf("store %s: %s: %w", s.d.label, op, core.ErrStoreClosed)
	}
	text := s.d.redact(err.Error())
	e := &storeError{}
	var pe *pgconn.PgError
	switch {
	case ctx.Err() != nil: // the caller gave up: not the store's fault
		e.errs = append(e.errs, ctx.Err())
	case errors.As(err, &pe):
		e.errs = append(e.errs, pe)
		switch {
		case s.id != "" && (pe.Code == "42P01" || pe.Code == "3F000" || pe.Code == "3D000"):
			// Undefined table, schema or database once the store was
			// open: dropped under us. Before, it is a wrong DSN.
			e.errs = append(e.errs, core.ErrStoreLost)
			text = "the store's tables are gone (" + text + ")"
		case connectionTrouble(err):
			e.errs = append(e.errs, core.ErrStoreUnavailable)
		}
	case connectionTrouble(err):
		e.errs = append(e.errs, core.ErrStoreUnavailable)
		text = "cannot reach the server: " + text
	}
	e.msg = fmt.Sprintf("store %s: %s: %s", s.d.label, op, text)
	return e
}

// StoreID implements core.Store. It costs no round trip: the identity was
// read at Open, and the ledger checks it against the database on every
// spend.
func (s *Store) StoreID(ctx context.Context) (string, error) {
	if err := s.usable(); err != nil {
		return "", err
	}
	if lost := s.lost.Load(); lost != nil {
		return "", *lost
	}
	return s.id, nil
}

// UseToken implements core.Store. The primary key makes the insert the
// decision: whichever connection, in whichever replica, inserts the id
// first gets a row; every later insert gets none. The insert only happens
// while the database holds the store this handle opened
// (core.ErrStoreLost otherwise).
func (s *Store) UseToken(ctx context.Context, tokenID string, expires time.Time) (bool, error) {
	if tokenID == "" {
		return false, errors.New("use token: empty token id")
	}
	if err := s.usable(); err != nil {
		return false, err
	}
	var (
		found *string
		first bool
	)
	err := s.do(ctx, "use token", func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, s.sql.useToken, tokenID, core.TokenExpiryKey(expires), s.id).Scan(&found, &first)
	})
	if err != nil {
		if errors.Is(err, core.ErrStoreLost) {
			s.lost.Store(&err)
		}
		return false, err
	}
	if found == nil || *found != s.id {
		now := "no store"
		if found != nil {
			now = "store " + *found
		}
		err := fmt.Errorf("store %s: %w: the database holds %s now, this gateway opened store %s", s.d.label, core.ErrStoreLost, now, s.id)
		s.lost.Store(&err)
		return false, err
	}
	s.lost.Store(nil)
	if first && s.firstUses.Add(1)%core.PruneEvery == 0 {
		// A failed pruning loses nothing: the next one takes the ids.
		_ = s.do(ctx, "prune spent tokens", func(ctx context.Context) error {
			_, err := s.pool.Exec(ctx, s.sql.prune, core.TokenPruneBefore(s.now()))
			return err
		})
	}
	return first, nil
}

// PutApproval implements core.Store.
func (s *Store) PutApproval(ctx context.Context, a core.Approval) error {
	if err := a.Validate(); err != nil {
		return err
	}
	if err := s.usable(); err != nil {
		return err
	}
	return s.do(ctx, "put approval", func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, s.sql.putApproval, a.Source, a.RemoteName, a.Fingerprint, string(a.Decision), a.By, a.At.UTC().Format(time.RFC3339Nano))
		return err
	})
}

// Approvals implements core.Store. Sorted bytewise, as the other stores
// sort, whatever the database's collation.
func (s *Store) Approvals(ctx context.Context) ([]core.Approval, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	var out []core.Approval
	err := s.do(ctx, "list approvals", func(ctx context.Context) error {
		out = []core.Approval{}
		rows, err := s.pool.Query(ctx, s.sql.approvals)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var a core.Approval
			var decision, at string
			if err := rows.Scan(&a.Source, &a.RemoteName, &a.Fingerprint, &decision, &a.By, &at); err != nil {
				return err
			}
			a.Decision = core.ReviewDecision(decision)
			if a.At, err = time.Parse(time.RFC3339Nano, at); err != nil {
				return &corrupt{fmt.Sprintf("approval %s/%s: time %q: %v", a.Source, a.RemoteName, at, err)}
			}
			out = append(out, a)
		}
		return rows.Err()
	})
	var c *corrupt
	if errors.As(err, &c) {
		return nil, fmt.Errorf("%w: %s: %s", core.ErrStoreCorrupt, s.d.label, c.msg)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// corrupt is a row that does not read back; it is not retried.
type corrupt struct{ msg string }

func (c *corrupt) Error() string { return c.msg }

// DeleteApproval implements core.Store.
func (s *Store) DeleteApproval(ctx context.Context, source, remoteName string) error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.do(ctx, "delete approval", func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, s.sql.deleteApproval, source, remoteName)
		return err
	})
}

// CheckConfirmSecret implements core.SecretChecker: the first gateway to
// start records its verifier; every later one must bring the same.
func (s *Store) CheckConfirmSecret(ctx context.Context, verifier string) error {
	if err := s.usable(); err != nil {
		return err
	}
	var (
		stored, by string
		at         time.Time
	)
	// Two statements: the read sees a verifier another replica committed
	// while the insert waited for it.
	err := s.do(ctx, "check the confirm secret", func(ctx context.Context) error {
		if _, err := s.pool.Exec(ctx, s.sql.recordSecret, verifier, s.host); err != nil {
			return err
		}
		return s.pool.QueryRow(ctx, s.sql.readSecret).Scan(&stored, &at, &by)
	})
	if err != nil {
		return err
	}
	if stored != verifier {
		return fmt.Errorf("%w (store %s; recorded by %s at %s): tokens this gateway issued would be refused by the others. Give every replica the same secret; to change it, stop them all and reset it (README, PostgreSQL store)",
			core.ErrConfirmSecretMismatch, s.d.label, by, at.UTC().Format(time.RFC3339))
	}
	return nil
}

// Audit implements core.Store.
func (s *Store) Audit(ctx context.Context, q core.AuditQuery) ([]core.AuditRecord, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	s.audit.Flush() // the records this handle queued before the query are in
	since := int64(math.MinInt64)
	if !q.Since.IsZero() {
		since, _ = unixNano(q.Since) // clamped: out of range still orders right
	}
	var limit *int64 // NULL: no limit
	if q.Limit > 0 {
		l := int64(q.Limit)
		limit = &l
	}
	var out []core.AuditRecord
	err := s.do(ctx, "read audit", func(ctx context.Context) error {
		out = []core.AuditRecord{}
		query, args := s.sql.audit, []any{since, limit}
		if q.CallID != "" {
			query, args = s.sql.auditCall, append(args, text(q.CallID))
		}
		rows, err := s.pool.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r core.AuditRecord
			var at, latency int64
			if err := rows.Scan(&at, &r.Endpoint, &r.ActorID, &r.Tenant, &r.Session, &r.Tool, &r.Source, &r.RemoteName,
				&r.ArgsHash, &r.Outcome, &latency, &r.ConfirmTokenID, &r.CallID, &r.Rule, &r.Connection, &r.Via, &r.Findings); err != nil {
				return err
			}
			r.Time = time.Unix(0, at).UTC()
			r.Latency = time.Duration(latency)
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

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
// committed first (if the server can be reached).
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.notes.close()
	s.audit.Close()
	err := s.closeChain()
	s.pool.Close()
	return err
}
