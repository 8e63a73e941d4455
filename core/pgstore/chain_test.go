package pgstore

import (
	"context"
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
