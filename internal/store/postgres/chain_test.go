package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/core/auditchain"
	"github.com/toolgate/toolgate/core/auditchain/chaintest"
	"github.com/toolgate/toolgate/internal/pgtest"
)

// rawExec runs q on dsn's store schema over a connection of its own, as
// somebody with write access to the database would.
func rawExec(t *testing.T, dsn, q string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET search_path TO "+DefaultSchema); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// OP-10: the tamper suite on a real server; two writers are two handles on
// one database, as replicas are.
func TestAuditChainTamperOP10(t *testing.T) {
	srv := pgtest.Shared(t)
	chaintest.Run(t, chaintest.Harness{New: func(t *testing.T) (func() chaintest.Store, func(string, ...any)) {
		dsn := srv.NewDatabase(t)
		return func() chaintest.Store { return mustOpen(t, dsn) },
			func(q string, args ...any) { t.Helper(); rawExec(t, dsn, q, args...) }
	}})
}

// OP-10: records from before the chains (an empty chain_id, as migration 4
// leaves them) are reported as unchained, not altered.
func TestAuditChainOldRecordsOP10(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	s := mustOpen(t, dsn)
	rawExec(t, dsn, `INSERT INTO audit (time, endpoint, actor_id, tenant, session, tool, source, remote_name, args_hash, outcome,
		latency, confirm_token_id, call_id) VALUES (1, '/mcp', 'alice', '', '', 'old_a', '', '', '', 'ok', 0, '', ''),
		(2, '/mcp', 'bob', '', '', 'old_b', '', '', '', 'ok', 0, '', '')`)
	s.AuditChain().SetKey(chaintest.Key)
	ctx := context.Background()
	for i := range 3 {
		if err := s.AppendAudit(ctx, chaintest.Record(i)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := auditchain.VerifyStore(ctx, s, chaintest.Key)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Intact() || rep.Unchained != 2 || len(rep.Chains) != 1 || rep.Chains[0].Records != 3 {
		t.Fatalf("report = %+v; want 2 unchained records and one intact chain of 3", rep)
	}
}

// OP-10: what CheckCall reads, and a query of the log by call id (OP-6),
// is searched through an index: with sequential scans ruled out, the plan
// of each names one (without the index it would still be a Seq Scan).
func TestCallLookupsUseIndexes(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	s := mustOpen(t, dsn)
	ctx := context.Background()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = conn.Exec(ctx, "RESET enable_seqscan") }()
	for _, c := range []struct {
		query, index string
		args         []any
	}{
		{s.cq.callEntries, "audit_call", []any{"call-1"}},
		{s.sql.auditCall, "audit_call", []any{int64(0), nil, "call-1"}},
		{s.cq.prevEntry, "audit_chain", []any{"c", int64(5)}},
		{s.cq.nextEntries, "audit_chain", []any{"c", int64(5), 10}},
		{s.cq.chainCheckpoints, "audit_checkpoints_pkey", []any{"c", int64(5), 10}},
		{s.cq.chainedBefore, "audit_pkey", []any{int64(5)}},
	} {
		rows, err := conn.Query(ctx, "EXPLAIN "+c.query, c.args...)
		if err != nil {
			t.Fatalf("EXPLAIN %s: %v", c.query, err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		if p := strings.Join(plan, "\n"); !strings.Contains(p, " using "+c.index+" ") || strings.Contains(p, "Seq Scan") {
			t.Errorf("%s\nplan:\n%s\nwant a search using %s", c.query, p, c.index)
		}
	}
}

// OP-10: CheckCall's reads of a chain are bounded in the query itself: pgx
// reads a result to its end when rows close, so a scan stopped early would
// still have the server send the chain's whole rest.
func TestChainScansAreBoundedOnTheServer(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	s := mustOpen(t, dsn)
	s.AuditChain().SetKey(chaintest.Key)
	ctx := context.Background()
	const n = 2000
	for i := range n {
		if err := s.QueueAudit(ctx, chaintest.Record(i)); err != nil {
			t.Fatal(err)
		}
	}
	es, err := s.CallEntries(ctx, "call-0")
	if err != nil || len(es) != 1 {
		t.Fatal(es, err)
	}
	got, err := auditchain.CheckCall(ctx, s, "call-0", chaintest.Key)
	if err != nil || len(got) != 1 || !got[0].Verified {
		t.Fatalf("CheckCall(call-0) = %+v, %v; want verified", got, err)
	}
	// More checkpoints than the limit asks for.
	rawExec(t, dsn, `INSERT INTO audit_checkpoints (chain_id, seq, hash, time, writer, mac) VALUES ($1, 5, 'x', 0, 'w', 'm'), ($1, 6, 'y', 0, 'w', 'm')`, es[0].Chain)
	for _, c := range []struct {
		query string
		args  []any
	}{
		{s.cq.nextEntries, []any{es[0].Chain, es[0].Row, 10}},
		{s.cq.chainCheckpoints, []any{es[0].Chain, int64(1), 1}},
	} {
		rows, err := s.pool.Query(ctx, c.query, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		if !rows.Next() { // read one, as a scan that found what it needs
			t.Fatalf("%s: no row", c.query)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if sent, limit := rows.CommandTag().RowsAffected(), int64(c.args[2].(int)); sent != limit {
			t.Errorf("%s: the server sent %d rows; want the limit, %d", c.query, sent, limit)
		}
	}
}
