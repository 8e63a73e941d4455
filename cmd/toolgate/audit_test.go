package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/store/sqlite"
)

// OP-6: `toolgate audit` prints the store's records, as a table or JSON,
// filtered by --since.
func TestAuditCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "toolgate.db")
	store, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i, tool := range []string{"old_tool", "notes_search", "notes_create_note"} {
		rec := core.AuditRecord{
			Time: now.Add(time.Duration(i-2) * 48 * time.Hour / 2), Endpoint: "/mcp", ActorID: "alice", Tool: tool,
			Source: "notes", Outcome: "ok", Latency: 3 * time.Millisecond, CallID: tool, ArgsHash: "sha256:00",
		}
		if err := store.AppendAudit(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	// CO-9: an operator's action, as the admin API records it.
	if err := store.AppendAudit(context.Background(), core.AuditRecord{Time: now, Endpoint: gateway.AdminEndpoint, ActorID: "bob",
		Tool: core.ActionApproveConfirmation, RemoteName: "c-42", Outcome: "ok", Latency: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	_ = store.Close()
	cfg := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(cfg, []byte("gateway:\n  store: "+db+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runCLI(t, "audit", "--config", cfg, "--json")
	var recs []core.AuditRecord
	if code != 0 || json.Unmarshal([]byte(out), &recs) != nil || len(recs) != 4 || recs[0].Tool != "old_tool" {
		t.Fatalf("audit --json: %d %s %s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "audit", "--config", cfg, "--since", "30h")
	if code != 0 || strings.Contains(out, "old_tool") || !strings.Contains(out, "notes_create_note") || !strings.Contains(out, "OUTCOME") {
		t.Fatalf("audit --since 30h: %d\n%s", code, out)
	}
	var action string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "bob") {
			action = strings.Join(strings.Fields(line), " ")
		}
	}
	if !strings.Contains(action, "admin bob confirmation.approve c-42 - ok") {
		t.Errorf("an operator action's row: %q, want its action, target and no source", action)
	}
	if code, _, errOut := runCLI(t, "audit", "--config", cfg, "--since", "yesterday"); code != 2 || !strings.Contains(errOut, "--since") {
		t.Fatalf("bad --since: %d %s", code, errOut)
	}
}

// OP-6, CF-3: a confirmed action's intent and outcome records are one call
// in the table (the outcome's row); an intent with no outcome in the
// listing is shown as such and counted below the table. --json prints
// every record.
func TestAuditCommandFoldsIntentsCF3(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "toolgate.db")
	store, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i, r := range []struct{ tool, outcome, call string }{
		{"notes_create_note", core.AuditIntent, "c1"},
		{"notes_create_note", "ok", "c1"},
		{"notes_delete_note", core.AuditIntent, "c2"},
		{"notes_search", "ok", "c3"},
	} {
		rec := core.AuditRecord{Time: now.Add(time.Duration(i) * time.Second), Endpoint: "/mcp", ActorID: "alice", Tool: r.tool,
			Source: "notes", Outcome: r.outcome, CallID: r.call, ConfirmTokenID: "tok-" + r.call}
		if err := store.AppendAudit(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	_ = store.Close()
	cfg := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(cfg, []byte("gateway:\n  store: "+db+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "audit", "--config", cfg)
	if code != 0 {
		t.Fatalf("audit: %d %s", code, errOut)
	}
	if n := strings.Count(out, "notes_create_note"); n != 1 {
		t.Errorf("the confirmed call is on %d rows, want 1:\n%s", n, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "notes_create_note") && !strings.Contains(line, " ok ") {
			t.Errorf("the confirmed call's row does not show its outcome: %q", line)
		}
		if strings.Contains(line, "notes_delete_note") && !strings.Contains(line, "intent (no outcome)") {
			t.Errorf("the call with an intent only: %q", line)
		}
	}
	if !strings.Contains(out, "1 action call") {
		t.Errorf("no count of calls without an outcome:\n%s", out)
	}
	code, out, _ = runCLI(t, "audit", "--config", cfg, "--json")
	var recs []core.AuditRecord
	if code != 0 || json.Unmarshal([]byte(out), &recs) != nil || len(recs) != 4 {
		t.Fatalf("audit --json: %d %s", code, out)
	}
}

// OP-10: the console refuses audit.export to stdout, which it draws on.
func TestConsoleRefusesStdoutExport(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(cfg, []byte("audit:\n  export: {path: \"-\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "console", "--config", cfg); code != 1 || !strings.Contains(errOut, "audit.export.path") {
		t.Fatalf("console with audit.export to stdout: %d %q", code, errOut)
	}
}

// OP-10: verify's usage errors and a store it cannot open exit 2, not 1
// (which says the audit was altered).
func TestAuditVerifyErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(cfg, []byte("gateway:\n  store: "+filepath.Join(dir, "toolgate.db")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "audit", "verify", "--config", cfg, "extra"); code != 2 || !strings.Contains(errOut, "extra") {
		t.Fatalf("an extra argument: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "audit", "verify", "--bogus"); code != 2 || !strings.Contains(errOut, "bogus") {
		t.Fatalf("a bad flag: %d %q", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "toolgate.db"), []byte("not a database, just some text long enough to be read as one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "audit", "verify", "--config", cfg); code != 2 || errOut == "" {
		t.Fatalf("a store that is not one: %d %q", code, errOut)
	}
	// An empty store without a key: intact, and the report says the
	// checkpoints were not checked.
	if err := os.Remove(filepath.Join(dir, "toolgate.db")); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "audit", "verify", "--config", cfg)
	if code != 0 || !strings.Contains(out, "audit intact: 0 chain(s)") || !strings.Contains(out, "checkpoints were not checked") {
		t.Fatalf("an empty store: %d\n%s", code, out)
	}
}

// OP-10: verify with a key shows a chain written without one as unsigned,
// not as intact, and says what that leaves unchecked; it is no finding.
func TestAuditVerifyShowsUnsignedChains(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "toolgate.db")
	store, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := store.AppendAudit(context.Background(), core.AuditRecord{Time: time.Unix(int64(i), 0), ActorID: "alice", Tool: "t", Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(cfg, []byte("gateway:\n  store: "+db+"\naudit:\n  checkpointKey: ${AUDIT_KEY}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AUDIT_KEY", "0123456789abcdef0123456789abcdef")
	code, out, errOut := runCLI(t, "audit", "verify", "--config", cfg)
	if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), "0/3 unsigned") || !strings.Contains(out, "1 chain(s) unsigned: no checkpoint") || !strings.Contains(out, "audit intact: 1 chain(s)") {
		t.Fatalf("audit verify: %d %q\n%s", code, errOut, out)
	}
}
