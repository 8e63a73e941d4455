package main

// Review (RV-1…RV-4) through the CLI and against real demo upstreams run by
// the built binary, with the embedded SQLite store.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/review"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/report"
	"github.com/toolgate/toolgate/internal/store/sqlite"
	"github.com/toolgate/toolgate/mcp/demo"
)

// reviewCLI runs `toolgate review ARGS…` in process.
func reviewCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut}
	code = runReview(faultCtx(t, 90*time.Second), c, args)
	return code, out.String(), errOut.String()
}

// reviewConfig writes a config whose store is store and whose upstreams
// are built-in demo servers run by the built binary. Each upstream is
// "name" or "name:STATEDIR".
func reviewConfig(t *testing.T, store, mode string, upstreams ...string) string {
	t.Helper()
	t.Setenv(gateway.SelfEnv, toolgateBinary(t))
	var ups strings.Builder
	for _, u := range upstreams {
		name, state, _ := strings.Cut(u, ":")
		args := fmt.Sprintf("[demo-upstream, %s]", name)
		if state != "" {
			args = fmt.Sprintf("[demo-upstream, %s, --state, %q]", name, state)
		}
		fmt.Fprintf(&ups, "  - name: %s\n    command: ${%s}\n    args: %s\n    timeout: 20s\n", name, gateway.SelfEnv, args)
	}
	yaml := fmt.Sprintf(`gateway:
  listen: 127.0.0.1:7331
  store: %q
  confirm:
    secret: review-test-confirm-secret-0123456789abcdef
  review:
    mode: %s
endpoints:
  - path: /mcp
    actor: {id: review-test, roles: [ADMIN]}
upstreams:
%s`, store, mode, ups.String())
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// reviewList runs `review list --json` and returns the rows by name.
func reviewList(t *testing.T, cfg string) map[string]report.Review {
	t.Helper()
	code, out, errOut := reviewCLI(t, "list", "--json", "--config", cfg)
	if code != 0 {
		t.Fatalf("review list: exit %d\n%s", code, errOut)
	}
	var rows []report.Review
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("review list --json: %v\n%s", err, out)
	}
	m := map[string]report.Review{}
	for _, r := range rows {
		m[r.Name] = r
	}
	return m
}

func hasFlags(row report.Review, kinds ...core.FlagKind) bool {
	for _, k := range kinds {
		if !slices.Contains(report.Kinds(row.Flags), string(k)) {
			return false
		}
	}
	return true
}

// RV-1, RV-2, IM-33: list imports the upstreams and shows every imported
// tool as new, with sneaky's fetch_page flagged and its fingerprint.
func TestReviewListDemoRV2(t *testing.T) {
	cfg := reviewConfig(t, filepath.Join(t.TempDir(), "toolgate.db"), "pin", "notes", "sneaky")
	rows := reviewList(t, cfg)
	for _, name := range []string{"notes_search", "notes_list_notes", "notes_create_note", "notes_side_effects", "sneaky_fetch_page"} {
		r, ok := rows[name]
		if !ok {
			t.Errorf("%s is not listed (rows: %v)", name, rows)
			continue
		}
		if r.ReviewState != core.ReviewNew || !r.Served || !strings.HasPrefix(r.Fingerprint, review.FingerprintPrefix) || len(r.Fingerprint) != len(review.FingerprintPrefix)+64 {
			t.Errorf("%s: %+v, want new, served under pin, with a fingerprint", name, r)
		}
	}
	fetch := rows["sneaky_fetch_page"]
	if !hasFlags(fetch, core.FlagHiddenInstruction, core.FlagInvisible, core.FlagSecretPath) {
		t.Errorf("sneaky_fetch_page flags = %+v, want hidden-instruction, invisible and secret-path", fetch.Flags)
	}
	if f := rows["notes_search"].Flags; len(f) != 0 {
		t.Errorf("notes_search is flagged: %+v", f)
	}

	code, out, errOut := reviewCLI(t, "list", "--config", cfg)
	if code != 0 || !strings.Contains(out, "review mode: pin") || !strings.Contains(out, "NAME") {
		t.Fatalf("review list: %d\n%s\n%s", code, out, errOut)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "sneaky_fetch_page") && !(strings.Contains(line, "hidden-instruction") && strings.Contains(line, " new ")) {
			t.Errorf("table line %q lacks its state or flags", line)
		}
	}
}

// RV-4: approvals persist in the store across runs, export to a file, and
// import into a fresh store with identical states.
func TestReviewApproveExportImportRV4(t *testing.T) {
	dir := t.TempDir()
	cfg := reviewConfig(t, filepath.Join(dir, "a.db"), "require", "notes", "sneaky")
	// Five tools, the notes prompt and resource, sneaky's prompt.
	code, out, errOut := reviewCLI(t, "approve", "--all-new", "--by", "alice", "--config", cfg)
	if code != 0 || strings.Count(out, "approved ") != 8 || !strings.Contains(out, "approved prompt:sneaky_code_review (sneaky/code_review) ") {
		t.Fatalf("approve --all-new: %d\n%s\n%s", code, out, errOut)
	}
	// A new process over the same file: the decisions were persisted.
	before := reviewList(t, cfg)
	for name, r := range before {
		if r.ReviewState != core.ReviewApproved || !r.Served || r.DecidedBy != "alice" {
			t.Errorf("%s after approve: %+v", name, r)
		}
	}
	if code, out, _ := reviewCLI(t, "reject", "sneaky_fetch_page", "--config", cfg, "--by", "bob"); code != 0 || !strings.HasPrefix(out, "rejected sneaky_fetch_page (sneaky/fetch_page) "+review.FingerprintPrefix) {
		t.Fatalf("reject: %d %q", code, out)
	}
	if code, out, _ := reviewCLI(t, "approve", "--all-new", "--config", cfg); code != 0 || out != "no new tools\n" {
		t.Errorf("approve --all-new with nothing new: %d %q", code, out)
	}
	before = reviewList(t, cfg)

	file := filepath.Join(dir, "approvals.json")
	if code, _, errOut := reviewCLI(t, "export", "--config", cfg, "--out", file); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	exported, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if code, out, _ := reviewCLI(t, "export", "--config", cfg); code != 0 || out != string(exported) {
		t.Errorf("export to stdout differs from --out:\n%s", out)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o644 {
		t.Errorf("approvals file mode %v, want 0644 (it holds no secret and is meant to be committed)", fi.Mode().Perm())
	}

	fresh := reviewConfig(t, filepath.Join(dir, "b.db"), "require", "notes", "sneaky")
	if rows := reviewList(t, fresh); rows["notes_search"].ReviewState != core.ReviewNew || rows["notes_search"].Served {
		t.Fatalf("the fresh store is not fresh: %+v", rows["notes_search"])
	}
	code, out, errOut = reviewCLI(t, "import", file, "--config", fresh)
	if code != 0 || out != fmt.Sprintf("imported 8 decision(s) from %s\n", file) {
		t.Fatalf("import: %d %q %s", code, out, errOut)
	}
	after := reviewList(t, fresh)
	if len(after) != len(before) {
		t.Fatalf("%d tools after import, %d before", len(after), len(before))
	}
	for name, b := range before {
		if a := after[name]; a.ReviewState != b.ReviewState || a.Served != b.Served || a.Fingerprint != b.Fingerprint || a.DecidedBy != b.DecidedBy {
			t.Errorf("%s: exported %+v, imported %+v", name, b, a)
		}
	}
	if after["sneaky_fetch_page"].ReviewState != core.ReviewRejected || after["sneaky_fetch_page"].Served {
		t.Errorf("the rejection did not travel: %+v", after["sneaky_fetch_page"])
	}
	if code, out, _ := reviewCLI(t, "export", "--config", fresh); code != 0 || out != string(exported) {
		t.Errorf("re-export differs:\n%s\nwant:\n%s", out, exported)
	}
}

// RV-4, QB-3: usage errors exit 2; a malformed or newer approvals file and
// an unknown tool name exit 1 and write nothing.
func TestReviewCLIErrorsRV4(t *testing.T) {
	dir := t.TempDir()
	cfg := reviewConfig(t, filepath.Join(dir, "toolgate.db"), "pin", "echo")
	emptyExport := func() {
		t.Helper()
		code, out, errOut := reviewCLI(t, "export", "--config", cfg)
		if code != 0 || !strings.Contains(out, `"approvals": []`) {
			t.Errorf("the store is not empty: %d\n%s\n%s", code, out, errOut)
		}
	}
	for _, c := range []struct {
		args []string
		code int
		out  string // in stdout for 0, stderr otherwise
	}{
		{nil, 2, "name a subcommand"},
		{[]string{"--help"}, 0, "Usage: toolgate review export|import|list|approve|reject"},
		{[]string{"frob"}, 2, `unknown subcommand "frob"`},
		{[]string{"list", "--help"}, 0, "Usage: toolgate review list [--config F] [--json]"},
		{[]string{"list", "--bogus"}, 2, "bogus"},
		{[]string{"list", "extra", "--config", cfg}, 2, `unexpected argument "extra"`},
		{[]string{"approve", "--config", cfg}, 2, "name the tools or pass --all-new"},
		{[]string{"reject", "echo_echo", "--all-new", "--config", cfg}, 2, "name the tools or pass --all-new"},
		{[]string{"import", "--config", cfg}, 2, "want exactly one FILE"},
		{[]string{"import", filepath.Join(dir, "missing.json"), "--config", cfg}, 1, "no such file"},
		{[]string{"export", "--config", filepath.Join(dir, "nope.yaml")}, 1, "nope.yaml"},
	} {
		code, out, errOut := reviewCLI(t, c.args...)
		got := errOut
		if c.code == 0 {
			got = out
		}
		if code != c.code || !strings.Contains(got, c.out) {
			t.Errorf("review %q: exit %d, stdout %q, stderr %q; want exit %d with %q", c.args, code, out, errOut, c.code, c.out)
		}
	}

	bad := map[string]string{
		"malformed.json": `{"version":1,"approvals":[{"source":"echo","remoteName":"echo","fingerprint":"sha256:00","decision":"approved"}]}`,
		"newer.json":     `{"version":2,"approvals":[]}`,
		"yaml.yaml":      "version: 1\napprovals: []\n",
	}
	wants := map[string]string{"malformed.json": "is not sha256:", "newer.json": "newer toolgate", "yaml.yaml": "invalid approvals file"}
	for name, body := range bad {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := reviewCLI(t, "import", "--config", cfg, p); code != 1 || !strings.Contains(errOut, wants[name]) {
			t.Errorf("import %s: exit %d, %q; want 1 with %q", name, code, errOut, wants[name])
		}
	}
	emptyExport()

	// One unknown name among good ones: nothing is approved.
	if code, _, errOut := reviewCLI(t, "approve", "--config", cfg, "echo_echo", "nope"); code != 1 || !strings.Contains(errOut, `no tool, prompt or resource "nope"`) {
		t.Errorf("approve with an unknown name: %d %q", code, errOut)
	}
	emptyExport()
}

// RV-4: decisions outlive the store handle: a reviewer over a reopened
// SQLite file sees them, and an import into SQLite exports the same bytes.
func TestReviewPersistsAcrossReopenRV4(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolgate.db")
	tool := core.ToolInfo{Name: "up_lookup", Source: "up", RemoteName: "lookup", Kind: core.KindRead,
		Description: demo.ShiftyInnocent, InputSchema: json.RawMessage(`{"type":"object"}`)}
	other := core.ToolInfo{Name: "up_shift", Source: "up", RemoteName: "shift", Kind: core.KindAction, Description: "Shift."}

	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := review.NewReviewer(ctx, core.ReviewPin, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rev.Approve(ctx, tool, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := rev.Reject(ctx, other, "bob"); err != nil {
		t.Fatal(err)
	}
	exported, err := rev.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rev, err = review.NewReviewer(ctx, core.ReviewPin, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := rev.State(tool), rev.State(other); a != core.ReviewApproved || b != core.ReviewRejected {
		t.Errorf("after reopen: %q, %q; want approved, rejected", a, b)
	}
	poisoned := tool
	poisoned.Description = demo.ShiftyPoisoned
	if got := rev.State(poisoned); got != core.ReviewChanged || rev.Allows(poisoned) {
		t.Errorf("changed after reopen: %q, allowed %v", got, rev.Allows(poisoned))
	}

	fresh, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "fresh.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	rev2, err := review.NewReviewer(ctx, core.ReviewPin, fresh, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := rev2.Import(ctx, exported); err != nil || n != 2 {
		t.Fatalf("import: %d, %v", n, err)
	}
	if again, _ := rev2.Export(ctx); !bytes.Equal(again, exported) {
		t.Errorf("export after import into SQLite:\n%s\nwant:\n%s", again, exported)
	}
}

// RV-3 through the CLI: the shift outlives the upstream process (its
// marker in the state directory), so the next run sees the changed tool,
// withheld under pin and served under warn, until it is approved again.
func TestReviewRugPullCLIRV3(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	db := filepath.Join(dir, "toolgate.db")
	pin := reviewConfig(t, db, "pin", "shifty:"+state)
	warn := reviewConfig(t, db, "warn", "shifty:"+state)

	if code, _, errOut := reviewCLI(t, "approve", "--config", pin, "shifty_lookup"); code != 0 {
		t.Fatalf("approve: %d %s", code, errOut)
	}
	approved := reviewList(t, pin)["shifty_lookup"]
	if approved.ReviewState != core.ReviewApproved || !approved.Served {
		t.Fatalf("approved: %+v", approved)
	}
	if err := os.WriteFile(filepath.Join(state, demo.ShiftedMarker), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	pulled := reviewList(t, pin)["shifty_lookup"]
	if pulled.ReviewState != core.ReviewChanged || pulled.Served || pulled.Fingerprint == approved.Fingerprint ||
		!hasFlags(pulled, core.FlagHiddenInstruction, core.FlagSecretPath) {
		t.Errorf("pin after the shift: %+v, want changed, withheld, flagged", pulled)
	}
	if w := reviewList(t, warn)["shifty_lookup"]; w.ReviewState != core.ReviewChanged || !w.Served {
		t.Errorf("warn after the shift: %+v, want changed and served", w)
	}
	if code, out, errOut := reviewCLI(t, "approve", "--config", pin, "shifty_lookup"); code != 0 || !strings.Contains(out, pulled.Fingerprint) {
		t.Fatalf("re-approve: %d %q %s", code, out, errOut)
	}
	if again := reviewList(t, pin)["shifty_lookup"]; again.ReviewState != core.ReviewApproved || !again.Served {
		t.Errorf("re-approved: %+v", again)
	}
}
