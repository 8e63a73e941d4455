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
	"github.com/toolgate/toolgate/core/sqlitestore"
)

// OP-6: `toolgate audit` prints the store's records, as a table or JSON,
// filtered by --since.
func TestAuditCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "toolgate.db")
	store, err := sqlitestore.Open(context.Background(), db)
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
	_ = store.Close()
	cfg := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(cfg, []byte("gateway:\n  store: "+db+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runCLI(t, "audit", "--config", cfg, "--json")
	var recs []core.AuditRecord
	if code != 0 || json.Unmarshal([]byte(out), &recs) != nil || len(recs) != 3 || recs[0].Tool != "old_tool" {
		t.Fatalf("audit --json: %d %s %s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "audit", "--config", cfg, "--since", "30h")
	if code != 0 || strings.Contains(out, "old_tool") || !strings.Contains(out, "notes_create_note") || !strings.Contains(out, "OUTCOME") {
		t.Fatalf("audit --since 30h: %d\n%s", code, out)
	}
	if code, _, errOut := runCLI(t, "audit", "--config", cfg, "--since", "yesterday"); code != 2 || !strings.Contains(errOut, "--since") {
		t.Fatalf("bad --since: %d %s", code, errOut)
	}
}
