//go:build linux

package main

// OP-5, SV-2, CF-4, CF-5, CO-9: the topology replicas are run
// in — one PostgreSQL, three `toolgate serve` processes on one config and
// confirm secret, a round-robin proxy in front of their MCP listeners —
// driven by the official TypeScript SDK client on one session.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/lab/rrproxy"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/waittest"
)

// TestThreeReplicaTopologyOP5SV2: every request of the client goes to the
// next replica (where each went is read from the proxy's log), and
//
//   - a preview on one replica, confirmed on another, runs exactly once; the
//     same confirmation replayed on the third is refused ("already used");
//   - an action waiting for an operator through one replica is approved in
//     `toolgate console --attach` on another, and the call completes;
//   - one replica SIGKILLed mid-session: the client's next calls go on, on
//     the same session, through the two left (the proxy skips the dead one);
//   - the replica holding the client's GET stream killed (if it was not that
//     one): the client opens the stream again on a replica left, on the same
//     session, and calls there;
//   - the audit log in PostgreSQL (`toolgate audit --json`) holds every call
//     the client made exactly once, on that session.
func TestThreeReplicaTopologyOP5SV2(t *testing.T) {
	// The console approves in a real terminal; without tmux outside CI
	// (where newTmux fails the test), the headless approve does instead,
	// so that the rest of the topology is still tested.
	var x *tmuxTerm
	if _, err := exec.LookPath("tmux"); err == nil || os.Getenv("CI") == "true" {
		x = newTmux(t)
	} else {
		t.Log("tmux is not installed: the operator approves with toolgate approve --attach instead of the console")
	}
	bin := toolgateBinary(t)
	dsn := pgtest.Start(t, nil).NewDatabase(t)
	notes := startTopoUpstream(t, "notes", "create_note", "text", "list_notes")
	ops := startTopoUpstream(t, "ops", "deploy", "service", "")
	cfg := writeServeConfig(t, fmt.Sprintf(topoConfig, dsn, notes.url, ops.url))
	rs := startTopoReplicas(t, cfg, dsn, 3)

	var bases []string
	for _, r := range rs {
		bases = append(bases, r.base)
	}
	proxy, err := rrproxy.New(bases, &rrproxy.Options{Record: true})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(proxy) // 127.0.0.1
	t.Cleanup(proxy.CloseIdleConnections)
	t.Cleanup(front.Close)

	sdk := startSDKDriver(t, front.URL+"/mcp", topoClientKey)
	for _, want := range []string{"notes_create_note", "notes_list_notes", "ops_deploy"} {
		if !slices.Contains(sdk.ready.Tools, want) {
			t.Fatalf("the SDK client is not served %s: %q", want, sdk.ready.Tools)
		}
	}
	sid := sdk.ready.SessionID
	// The client opens its GET stream once initialized; after it, the
	// client's requests are the test's calls, one at a time.
	if _, err := proxy.Wait(t.Context(), serveHTTPWait, func(l []rrproxy.Entry) bool {
		return slices.ContainsFunc(l, func(e rrproxy.Entry) bool { return e.Method == http.MethodGet && e.Backend >= 0 })
	}); err != nil {
		t.Fatalf("%v: the SDK client opened no GET stream\n%s", err, logText(proxy.Entries()))
	}
	byCall := map[string]int{} // tool/outcome → audit records wanted

	// Confirm across replicas (CF-4, OP-5).
	from := len(proxy.Entries())
	text := "written once across replicas"
	tok := confirmTokenOf(t, sdk.call("notes_create_note", map[string]any{"text": text}))
	confirmArgs := map[string]any{"text": text, "confirm": true, "confirmToken": tok}
	if r := sdk.call("notes_create_note", confirmArgs); r.IsError || !strings.Contains(r.text(), "create_note done (1)") {
		t.Fatalf("the confirmation on another replica: %q", r.text())
	}
	replay := sdk.call("notes_create_note", confirmArgs)
	if !replay.IsError || !strings.Contains(replay.text(), "already used") {
		t.Errorf("the replay on the third replica: isError %v, %q; want refused as already used", replay.IsError, replay.text())
	}
	if got := notes.runs(); len(got) != 1 || got[0] != text {
		t.Fatalf("create_note ran %d times (%q), want once", len(got), got)
	}
	calls := toolCalls(proxy.Entries()[from:])
	if len(calls) != 3 {
		t.Fatalf("the proxy saw %d tools/call for 3 calls\n%s", len(calls), logText(proxy.Entries()))
	}
	served := []int{calls[0].Backend, calls[1].Backend, calls[2].Backend}
	if slices.Contains(served, -1) || served[0] == served[1] || served[1] == served[2] || served[0] == served[2] {
		t.Fatalf("preview, confirmation and replay were served by replicas %v, want three different ones\n%s", served, logText(proxy.Entries()))
	}
	t.Logf("preview on replica %d, confirmed on %d, replay refused on %d", served[0]+1, served[1]+1, served[2]+1)
	byCall["notes_create_note/preview"]++
	byCall["notes_create_note/ok"]++
	byCall["notes_create_note/refused"]++

	// Operator approval (CF-5, CO-9): the confirmation waits on the replica
	// that got it; an operator approves it in a console attached to another.
	tok = confirmTokenOf(t, sdk.call("ops_deploy", map[string]any{"service": "api"}))
	from = len(proxy.Entries())
	sdk.send("ops_deploy", map[string]any{"service": "api", "confirm": true, "confirmToken": tok})
	log, err := proxy.Wait(t.Context(), serveHTTPWait, func(l []rrproxy.Entry) bool {
		c := toolCalls(l[from:])
		return len(c) == 1 && c[0].Backend >= 0
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, logText(proxy.Entries()))
	}
	pendingOn := toolCalls(log[from:])[0].Backend
	consoleOn := (pendingOn + 1) % len(rs)
	t.Logf("operator confirmation waiting through replica %d, approved through replica %d", pendingOn+1, consoleOn+1)
	if x != nil {
		x.start("ops", map[string]string{"TOOLGATE_ADMIN_KEY": topoAdminKey}, bin, "console", "--attach", rs[consoleOn].adminURL)
		x.waitFor("ops", screenWait, "⇄ "+rs[consoleOn].adminURL+" as alice", "⚑ 1 pending approval")
		x.keys("ops", "5")
		x.waitFor("ops", screenWait, "[5 Approvals 1]", "ops_deploy")
		x.keys("ops", "a")
		x.waitFor("ops", screenWait, "ops_deploy approved")
	} else {
		id := waitTopoPending(t, rs[consoleOn].adminURL)
		if code, out, errOut := runTool(t, map[string]string{"TOOLGATE_ADMIN_KEY": topoAdminKey}, "", "approve", id, "--attach", rs[consoleOn].adminURL); code != 0 {
			t.Fatalf("toolgate approve: exit %d\n%s%s", code, out, errOut)
		}
	}
	a := sdk.answer()
	if a.Error != "" || a.Result == nil || a.Result.IsError || !strings.Contains(a.Result.text(), "deploy done (1): api") || a.SessionID != sid {
		t.Fatalf("the approved call: error %q, result %+v, session %q", a.Error, a.Result, a.SessionID)
	}
	if e := proxy.Entries()[toolCalls(proxy.Entries()[from:])[0].Seq]; e.Backend != pendingOn || len(e.Refused) != 0 {
		t.Fatalf("the approved call moved from replica %d: %+v", pendingOn+1, e)
	}
	if got := ops.runs(); len(got) != 1 {
		t.Fatalf("deploy ran %d times, want once", len(got))
	}
	if x != nil {
		x.keys("ops", "q")
		if code := x.waitExit("ops", screenWait); code != 0 {
			t.Errorf("the console exited %d: %s", code, readFile(t, x.stderrPath("ops")))
		}
	}
	byCall["ops_deploy/preview"]++
	byCall["ops_deploy/ok"]++

	// Replica 2 dies mid-session (SIGKILL, no shutdown); the client goes on.
	// Every call so far was of an action, answered only once its record was
	// committed (OP-6): the log already holds them all.
	if n := auditCalls(t, rs[0].adminURL); n != sum(byCall) {
		t.Fatalf("before the kill the audit log holds %d MCP calls, want %d", n, sum(byCall))
	}
	rs[1].kill(t)
	from = len(proxy.Entries())
	for i := range 4 {
		if r := sdk.call("notes_list_notes", map[string]any{}); r.IsError || r.text() != text {
			t.Fatalf("read %d after the kill: isError %v, %q", i, r.IsError, r.text())
		}
		byCall["notes_list_notes/ok"]++
	}
	text2 := "written after a replica died"
	tok = confirmTokenOf(t, sdk.call("notes_create_note", map[string]any{"text": text2}))
	if r := sdk.call("notes_create_note", map[string]any{"text": text2, "confirm": true, "confirmToken": tok}); r.IsError {
		t.Fatalf("a confirmation after the kill: %q", r.text())
	}
	byCall["notes_create_note/preview"]++
	byCall["notes_create_note/ok"]++
	if got := notes.runs(); len(got) != 2 || got[1] != text2 {
		t.Fatalf("create_note runs after the kill: %q", got)
	}
	after := toolCalls(proxy.Entries()[from:])
	skipped := 0
	for _, e := range after {
		if e.Backend == 1 || e.Backend < 0 || e.Session != sid || e.Status != http.StatusOK {
			t.Errorf("after the kill: %+v, want served by replica 1 or 3 on session %s", e, sid)
		}
		if slices.Contains(e.Refused, 1) {
			skipped++
		}
	}
	if skipped == 0 {
		t.Errorf("no call after the kill was offered to the dead replica first: the test did not test failing over\n%s", logText(proxy.Entries()))
	}

	// The client's GET stream dies with the replica holding it; the client
	// opens it again through the proxy, on a replica left, on the same
	// session (SV-2), and its calls go on there.
	var getOn int
	for _, e := range proxy.Entries() {
		if e.Method == http.MethodGet && e.Backend >= 0 {
			getOn = e.Backend
		}
	}
	if getOn != 1 {
		// Reads are committed moments after their answer (OP-6); what the
		// replica served must be in the store before it crashes.
		waitAuditCalls(t, rs[0].adminURL, sum(byCall))
		from = len(proxy.Entries())
		rs[getOn].kill(t)
		t.Logf("replica %d, holding the GET stream, killed too", getOn+1)
	}
	alive := 3 - 1 - getOn // the one replica left, when getOn was not 1
	if getOn == 1 {
		alive = -1 // either of the two left
	}
	if _, err := proxy.Wait(t.Context(), serveHTTPWait, func(l []rrproxy.Entry) bool {
		return slices.ContainsFunc(l[from:], func(e rrproxy.Entry) bool {
			return e.Method == http.MethodGet && e.Status == http.StatusOK && e.Session == sid && e.Backend != 1 && e.Backend != getOn && e.Backend >= 0
		})
	}); err != nil {
		t.Fatalf("%v: the SDK client did not open its GET stream again on a replica left\n%s\n%s", err, logText(proxy.Entries()), sdk.stderr)
	}
	if r := sdk.call("notes_list_notes", map[string]any{}); r.IsError || !strings.Contains(r.text(), text2) {
		t.Fatalf("a read on the last replica: isError %v, %q", r.IsError, r.text())
	}
	byCall["notes_list_notes/ok"]++
	if last := toolCalls(proxy.Entries()); alive >= 0 && last[len(last)-1].Backend != alive {
		t.Errorf("the last call was served by replica %d, the one left is %d", last[len(last)-1].Backend+1, alive+1)
	}

	// The audit log: every call once, on the client's one session; the two
	// confirmed actions that ran also have their intents (CF-3).
	code, out, errOut := runTool(t, topoEnv("127.0.0.1:1"), "", "audit", "--json", "--config", cfg)
	if code != 0 {
		t.Fatalf("toolgate audit: exit %d: %s", code, errOut)
	}
	var recs []core.AuditRecord
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		t.Fatalf("toolgate audit --json: %v\n%s", err, out)
	}
	got := map[string]int{}
	outcomes := map[string]int{} // call id → records that are not intents
	intents := 0
	for _, r := range recs {
		if r.Endpoint != "/mcp" {
			continue
		}
		if r.Session != sid {
			t.Errorf("audit record on session %q, want %q: %+v", r.Session, sid, r)
		}
		if r.Outcome == core.AuditIntent {
			intents++
			continue
		}
		got[r.Tool+"/"+r.Outcome]++
		outcomes[r.CallID]++
	}
	if fmt.Sprint(got) != fmt.Sprint(byCall) {
		t.Errorf("audit records by tool/outcome: %v, want %v", got, byCall)
	}
	if n := len(toolCalls(proxy.Entries())); n != len(outcomes) || n != sum(byCall) {
		t.Errorf("%d tools/call through the proxy, %d calls in the audit log, %d made", n, len(outcomes), sum(byCall))
	}
	for id, n := range outcomes {
		if n != 1 {
			t.Errorf("call %s has %d outcome records", id, n)
		}
	}
	if intents != 3 {
		t.Errorf("%d intent records, want 3 (the confirmed actions that ran)", intents)
	}
	for _, s := range []string{sdk.stderr.String(), rs[0].stderr.String(), rs[1].stderr.String(), rs[2].stderr.String()} {
		if strings.Contains(s, topoAdminKey) || strings.Contains(s, topoClientKey) {
			t.Fatal("a key leaked into a log")
		}
	}
}

// toolCalls are the tools/call requests of log.
func toolCalls(log []rrproxy.Entry) []rrproxy.Entry {
	var out []rrproxy.Entry
	for _, e := range log {
		if e.RPC == "tools/call" {
			out = append(out, e)
		}
	}
	return out
}

func logText(log []rrproxy.Entry) string {
	var b strings.Builder
	for _, e := range log {
		fmt.Fprintf(&b, "%3d %-6s %-28s %-20s replica %d refused %v status %d done %v\n", e.Seq, e.Method, e.RPC, e.Tool, e.Backend+1, e.Refused, e.Status, e.Done)
	}
	return b.String()
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// waitTopoPending polls an admin API (bounded) until one confirmation
// waits, and returns its id.
func waitTopoPending(t *testing.T, adminURL string) string {
	t.Helper()
	c := adminClient(t, adminURL, topoAdminKey)
	var id string
	waittest.Succeeds(t, screenWait, "one confirmation waiting at "+adminURL, func() error {
		list, err := c.Confirmations(t.Context())
		if err != nil || len(list) != 1 {
			return fmt.Errorf("%d confirmations waiting (%v), want 1", len(list), err)
		}
		id = list[0].ID
		return nil
	})
	return id
}

// waitAuditCalls polls the store (bounded) until it holds n records of MCP
// calls.
func waitAuditCalls(t *testing.T, adminURL string, n int) {
	t.Helper()
	waittest.Succeeds(t, serveHTTPWait, fmt.Sprintf("%d MCP calls in the audit log", n), func() error {
		have := auditCalls(t, adminURL)
		if have > n {
			t.Fatalf("the audit log holds %d MCP calls, want %d", have, n)
		}
		if have != n {
			return fmt.Errorf("the audit log holds %d MCP calls", have)
		}
		return nil
	})
}

// auditCalls counts the records of MCP calls (intents aside) in the store,
// read through an admin API.
func auditCalls(t *testing.T, adminURL string) int {
	t.Helper()
	recs, err := adminClient(t, adminURL, topoAdminKey).Audit(t.Context(), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Endpoint == "/mcp" && r.Outcome != core.AuditIntent {
			n++
		}
	}
	return n
}
