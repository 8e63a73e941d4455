//go:build linux

package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core/auditchain"
	"github.com/toolgate/toolgate/internal/mcptest"
)

// exportArg is an argument value the export and the logs must never hold.
const exportArg = "export-SECRET-argument-value-5d1f"

// exportLines reads the JSON lines of path (none if it does not exist).
func exportLines(t *testing.T, path string) []auditchain.ExportLine {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditchain.ExportLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l auditchain.ExportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: a line that is not JSON: %q: %v", path, sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// waitLines waits (bounded) until path holds n lines.
func waitLines(t *testing.T, g *servedGateway, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(reloadWait)
	for len(exportLines(t, path)) < n {
		select {
		case <-g.exited:
			t.Fatalf("toolgate serve exited (%v)\n%s", g.cmd.ProcessState, g.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d lines, want %d within %v", path, len(exportLines(t, path)), n, reloadWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// OP-10 against a real `toolgate serve`: every committed record is exported
// once, in order, with its chain hash; after logrotate's rename and a
// SIGHUP the records go to a new file at the path. No argument value or
// secret is in either file or the log. The store then verifies, and an edit
// to it is found.
func TestServeAuditExportAndVerifyOP10(t *testing.T) {
	dir := t.TempDir()
	export := filepath.Join(dir, "log", "audit.jsonl")
	db := filepath.Join(dir, "toolgate.db")
	yaml := reloadConfig("  store: "+db+"\n", []string{"alice"}, "echo", "notes") + "audit:\n  export: {path: " + export + "}\n"
	path := writeServeConfig(t, yaml)
	env := reloadEnv()
	env["TOOLGATE_GATEWAY_STORE"] = db
	g := startServe(t, path, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*reloadWait)
	defer cancel()
	c := mcptest.New(g.base+"/mcp", &mcptest.Options{Authorization: "Bearer " + reloadAliceKey})
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	call := func() {
		t.Helper()
		if res, rpcErr, err := c.CallTool(ctx, "echo_echo", map[string]any{"message": exportArg}); err != nil || rpcErr != nil || res.IsError {
			t.Fatalf("echo_echo: %+v %v %v", res, rpcErr, err)
		}
	}
	call()
	call()
	// An action called without a token is refused with a preview: audited
	// as alice's, like every refusal, and exported too.
	if _, rpcErr, err := c.CallTool(ctx, "notes_create_note", map[string]any{"text": exportArg}); err != nil || rpcErr != nil {
		t.Fatalf("notes_create_note: %v %v", rpcErr, err)
	}
	waitLines(t, g, export, 3)

	rotated := export + ".1"
	if err := os.Rename(export, rotated); err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	g.waitLog(t, func(log string) bool { return strings.Contains(log, `"msg":"audit export reopened"`) })
	for range 2 {
		call()
	}
	waitLines(t, g, export, 2)
	if code := g.terminate(t); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0", code)
	}

	old, cur := exportLines(t, rotated), exportLines(t, export)
	if len(old) != 3 || len(cur) != 2 {
		t.Fatalf("%d lines before the rotation and %d after, want 3 and 2", len(old), len(cur))
	}
	all := append(old, cur...)
	for i, l := range all {
		tool, outcome := "echo_echo", "ok"
		if i == 2 {
			tool, outcome = "notes_create_note", "preview"
		}
		if l.Chain != all[0].Chain || l.Seq != int64(i+1) || len(l.Hash) != 64 || l.Tool != tool || l.Outcome != outcome || l.ActorID != "alice" || l.ArgsHash == "" {
			t.Errorf("line %d = %+v; want %s (%s) by alice at seq %d of one chain, with its hash and argument hash", i, l, tool, outcome, i+1)
		}
	}
	// The lines are the store's records: the same hashes, in order.
	vctx := context.Background()
	t.Setenv("TOOLGATE_CONFIRM_SECRET", serveConfirmSecret)
	t.Setenv("ALICE_KEY", reloadAliceKey)
	t.Setenv("BOB_KEY", reloadBobKey)
	code, out, errOut := runCLI(t, "audit", "verify", "--config", path, "--json")
	var rep auditchain.Report
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.Intact() || len(rep.Chains) != 1 || rep.Chains[0].Records != 5 ||
		rep.Chains[0].Signed != 5 || !rep.CheckpointsChecked {
		t.Fatalf("audit verify: %d %s %s; want one intact chain of 5 records, signed at 5 on close", code, out, errOut)
	}
	for _, text := range []string{string(mustRead(t, rotated)), string(mustRead(t, export)), g.stderr.String(), out} {
		for _, secret := range []string{exportArg, serveConfirmSecret, reloadAliceKey} {
			if strings.Contains(text, secret) {
				t.Fatalf("%q leaked into the export, the log or the report:\n%s", secret, text)
			}
		}
	}

	rdb, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if _, err := rdb.ExecContext(vctx, `UPDATE audit SET actor_id = 'bob' WHERE chain_seq = 2`); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "audit", "verify", "--config", path)
	if code != 1 || !strings.Contains(out, "edited at seq 2") || !strings.Contains(out, "audit ALTERED") {
		t.Fatalf("audit verify after an edit: %d\n%s", code, out)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
