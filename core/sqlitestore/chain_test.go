package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/toolgate/toolgate/core/auditchain"
	"github.com/toolgate/toolgate/core/auditchain/chaintest"
)

func sqliteHarness() chaintest.Harness {
	return chaintest.Harness{New: func(t *testing.T) (func() chaintest.Store, func(string, ...any)) {
		path := tempPath(t)
		open := func() chaintest.Store { return mustOpen(t, path) }
		exec := func(q string, args ...any) {
			t.Helper()
			db, err := sql.Open("sqlite", path+"?_busy_timeout=10000")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		return open, exec
	}}
}

// OP-10: records edited, deleted, inserted, swapped, a tail cut, a chain
// rewritten or a checkpoint forged in the file are found and located; a
// clean file and two writers' chains verify.
func TestAuditChainTamperOP10(t *testing.T) { chaintest.Run(t, sqliteHarness()) }

// OP-10: a store written before the chains migrates; its records are
// reported as unchained, not altered, and the records after them chain.
func TestAuditChainOldStoreOP10(t *testing.T) {
	path := tempPath(t)
	rawExec(t, path, migrations[0], migrations[1], migrations[2],
		fmt.Sprintf("PRAGMA user_version = 3; PRAGMA application_id = %d", applicationID),
		`INSERT INTO audit (time, endpoint, actor_id, tenant, session, tool, source, remote_name, args_hash, outcome,
			latency, confirm_token_id, call_id) VALUES (1, '/mcp', 'alice', '', '', 'old_a', '', '', '', 'ok', 0, '', ''),
			(2, '/mcp', 'bob', '', '', 'old_b', '', '', '', 'ok', 0, '', '')`)
	s := mustOpen(t, path)
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
