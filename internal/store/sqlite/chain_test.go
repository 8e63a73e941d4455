package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
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

// OP-10: what CheckCall reads, and a query of the log by call id (OP-6),
// is searched through an index, never a scan of the log, whatever the
// planner would do on a small table.
func TestCallLookupsUseIndexes(t *testing.T) {
	s := mustOpen(t, tempPath(t))
	for _, c := range []struct {
		query, index string
		args         []any
	}{
		{callEntriesSQL, "USING INDEX audit_call (call_id=?)", []any{"call-1"}},
		{auditCallSQL, "USING INDEX audit_call (call_id=?)", []any{"call-1", 0, -1}},
		{prevEntrySQL, "USING INDEX audit_chain (chain_id=? AND seq<?)", []any{"c", 5}},
		{nextEntriesSQL, "USING INDEX audit_chain (chain_id=? AND seq>?)", []any{"c", 5, 10}},
		{chainCheckpointsSQL, "USING PRIMARY KEY (chain_id=? AND seq>?)", []any{"c", 5, 10}},
		{chainedBeforeSQL, "USING INTEGER PRIMARY KEY (rowid<?)", []any{5}},
	} {
		rows, err := s.r.Query("EXPLAIN QUERY PLAN "+c.query, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if p := strings.Join(plan, "; "); !strings.Contains(p, c.index) || strings.Contains(p, "SCAN") {
			t.Errorf("%s\nplan: %s; want a search %s", c.query, p, c.index)
		}
	}
}
