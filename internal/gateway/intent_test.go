package gateway_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core"
)

// CF-3, OP-6: an action runs only once its audit intent is committed. The
// store refuses audit records (a trigger aborts every insert into the audit
// log: a real SQLite failure, while the ledger still takes writes): a
// confirmation runs nothing and answers isError saying why. Once the log
// takes records again, a confirmed action runs, with its intent and its
// outcome in the log under one call id.
func TestActionNotRunWithoutAuditIntentCF3(t *testing.T) {
	ctx := testCtx(t)
	notes := serveDemo(t, "notes")
	store := filepath.Join(t.TempDir(), "toolgate.db")
	g := newGateway(t, loadConfig(t, gatewayYAML(store, upstreamYAML("notes", notes, true))), nil)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s := connect(t, ctx, "http://"+g.Addr()+"/mcp", testKey)
	waitServed(t, ctx, s, notesTools, nil)
	unrecorded := confirmArgs(previewToken(t, ctx, s, "unrecorded"), "unrecorded")

	// The gateway writes the file meanwhile (the queued audit of the read
	// below, the ledger): this connection waits for its lock as the
	// store's own do, instead of failing with SQLITE_BUSY.
	db, err := sql.Open("sqlite", store+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER refuse_audit BEFORE INSERT ON audit BEGIN SELECT RAISE(ABORT, 'audit log refused'); END`); err != nil {
		t.Fatal(err)
	}
	if res := call(t, ctx, s, "notes_create_note", unrecorded); !res.IsError || !strings.Contains(resultText(res), "audit") {
		t.Errorf("confirm with the audit log refusing records: %q isError=%v; want a refusal naming the audit log", resultText(res), res.IsError)
	}
	if res := call(t, ctx, s, "notes_search", map[string]any{"query": "welcome"}); res.IsError {
		t.Errorf("a read with the audit log refusing records: %q", resultText(res))
	}
	wantEffects(t, ctx, s, "0")

	if _, err := db.Exec(`DROP TRIGGER refuse_audit`); err != nil {
		t.Fatal(err)
	}
	tok := previewToken(t, ctx, s, "recorded")
	if res := call(t, ctx, s, "notes_create_note", confirmArgs(tok, "recorded")); res.IsError {
		t.Fatalf("confirm: %q", resultText(res))
	}
	wantEffects(t, ctx, s, "1")
	recs, err := g.Store().Audit(ctx, core.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	var intent core.AuditRecord
	for _, r := range recs {
		if r.Tool != "notes_create_note" {
			continue
		}
		if r.Outcome == core.AuditIntent {
			intent = r
		}
		if intent.CallID != "" && r.CallID == intent.CallID {
			outcomes = append(outcomes, r.Outcome)
		}
	}
	if strings.Join(outcomes, ",") != core.AuditIntent+",ok" {
		t.Errorf("records of the confirmed call: %v; want its intent, then ok", outcomes)
	}
}
