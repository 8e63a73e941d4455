package main

// Fault tests against real child processes: the built toolgate binary's demo
// upstreams, over stdio and Streamable HTTP, driven through core.Importer and
// upstream.New or the CLI.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/eventbustest"
	"github.com/toolgate/toolgate/core/upstreams"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/report"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/demo"
	"github.com/toolgate/toolgate/mcp/upstream"
)

var faultActor = core.Actor{ID: "faults-test"}

// faultCtx is a bounded context for one test.
func faultCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// stdioDemoSpec is a built-in upstream run by the real binary over stdio,
// supervised as the gateway runs it.
func stdioDemoSpec(t *testing.T, name string, env map[string]string) upstreams.UpstreamSpec {
	t.Helper()
	up, err := upstream.New(upstream.Options{
		Name: name, Command: toolgateBinary(t), Args: []string{"demo-upstream", name},
		Env: env, Supervisor: gateway.SupervisorArgs(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return upstreams.UpstreamSpec{Name: name, Prefix: name, Transport: "stdio", Timeout: 20 * time.Second, Upstream: up}
}

func httpSpec(t *testing.T, name, url string) upstreams.UpstreamSpec {
	t.Helper()
	up, err := upstream.New(upstream.Options{Name: name, URL: url, Transport: "http"})
	if err != nil {
		t.Fatal(err)
	}
	return upstreams.UpstreamSpec{Name: name, Prefix: name, Transport: "http", Timeout: 5 * time.Second, Upstream: up}
}

// startImporter imports specs into a fresh registry; the importer (and with
// it every child process) is closed at cleanup.
func startImporter(t *testing.T, specs ...upstreams.UpstreamSpec) (*core.Registry, *upstreams.Importer, error) {
	t.Helper()
	reg := core.NewRegistry(nil)
	im := upstreams.NewImporter(reg, specs, &upstreams.ImporterOptions{Debounce: 100 * time.Millisecond})
	t.Cleanup(func() { _ = im.Close() })
	err := im.Start(faultCtx(t, 60*time.Second))
	return reg, im, err
}

func statusOf(t *testing.T, im *upstreams.Importer, name string) core.UpstreamStatus {
	t.Helper()
	for _, st := range im.Statuses() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no upstream %q", name)
	return core.UpstreamStatus{}
}

// text is the text of a result's first content block.
func text(t *testing.T, r core.Result) string {
	t.Helper()
	var v struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(r.JSON, &v); err != nil || len(v.Content) == 0 {
		t.Fatalf("result without content: %s (%v)", r.JSON, err)
	}
	return v.Content[0].Text
}

// closedPort returns a 127.0.0.1 port nothing listens on (it was free a
// moment ago).
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	return port
}

// startHTTPDemo runs `toolgate demo-upstream NAME --http 127.0.0.1:0` and
// returns its process and URL. The process is killed at cleanup.
func startHTTPDemo(t *testing.T, name string) (*exec.Cmd, string) {
	t.Helper()
	return startHTTPDemoAt(t, name, "127.0.0.1:0")
}

// startHTTPDemoAt is startHTTPDemo listening on addr.
func startHTTPDemoAt(t *testing.T, name, addr string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(toolgateBinary(t), "demo-upstream", name, "--http", addr)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	found := make(chan string, 1)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, url, ok := strings.Cut(sc.Text(), "listening on "); ok {
				select {
				case found <- url:
				default:
				}
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case url := <-found:
		return cmd, url
	case <-exited:
		t.Fatalf("demo-upstream %s --http exited before listening", name)
	case <-time.After(20 * time.Second):
		t.Fatalf("demo-upstream %s --http: no address within 20s", name)
	}
	return nil, ""
}

// runToolgate runs the built binary with a bounded wait and returns its exit
// status and output.
func runToolgate(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	bin := toolgateBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), gateway.SelfEnv+"="+bin)
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("toolgate %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("toolgate %v did not finish within 90s\nstdout: %s\nstderr: %s", args, out.String(), errOut.String())
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// IM-27, IM-28: a read tool whose upstream dies mid-call is retried in place
// and succeeds once the importer has reconnected.
func TestFaultReadRetriedAfterCrashIM27IM28(t *testing.T) {
	state := t.TempDir()
	reg, im, err := startImporter(t, stdioDemoSpec(t, "flaky", map[string]string{demo.StateEnv: state}))
	if err != nil {
		t.Fatal(err)
	}
	if tl, ok := reg.Get("flaky_crash_once"); !ok || tl.Kind != core.KindRead {
		t.Fatalf("flaky_crash_once: %+v %v", tl, ok)
	}
	res, err := reg.Invoke(faultCtx(t, 60*time.Second), faultActor, "flaky_crash_once", nil)
	if err != nil {
		t.Fatalf("read after a crash mid-call: %v", err)
	}
	if got := text(t, res); got != "recovered" {
		t.Errorf("result = %q, want the second child's answer", got)
	}
	if _, err := os.Stat(filepath.Join(state, "crash_once")); err != nil {
		t.Errorf("the first call did not crash the server: %v", err)
	}
	if st := statusOf(t, im, "flaky"); st.State != core.StateConnected {
		t.Errorf("status after the retry = %+v", st)
	}
}

// IM-29: an action whose upstream dies after performing it is not
// re-issued: the caller gets "outcome unknown" and the side effect happened
// exactly once. The next call reconnects (IM-27).
func TestFaultActionOutcomeUnknownIM29(t *testing.T) {
	state := t.TempDir()
	reg, _, err := startImporter(t, stdioDemoSpec(t, "flaky", map[string]string{demo.StateEnv: state}))
	if err != nil {
		t.Fatal(err)
	}
	if tl, _ := reg.Get("flaky_write_then_crash"); tl.Kind != core.KindAction {
		t.Fatalf("flaky_write_then_crash kind = %q", tl.Kind)
	}
	_, err = reg.Invoke(faultCtx(t, 60*time.Second), faultActor, "flaky_write_then_crash", nil)
	if !errors.Is(err, core.ErrOutcomeUnknown) {
		t.Fatalf("error = %v, want one wrapping ErrOutcomeUnknown", err)
	}
	if got := demo.Effects(state); !slices.Equal(got, []string{"write_then_crash"}) {
		t.Fatalf("side effects = %q, want exactly one", got)
	}
	res, err := reg.Invoke(faultCtx(t, 60*time.Second), faultActor, "flaky_ok", nil)
	if err != nil || text(t, res) != "ok" {
		t.Fatalf("call after the crash: %v", err)
	}
	if got := demo.Effects(state); len(got) != 1 {
		t.Errorf("side effects after the next call = %q", got)
	}
}

// IM-8: upstreams down at start — a command that does not exist, a URL on a
// closed port — are reported and skipped; the others are imported. A
// required one makes Start fail, naming it.
func TestFaultUpstreamDownAtStartIM8(t *testing.T) {
	missing, err := upstream.New(upstream.Options{
		Name: "missing", Command: filepath.Join(t.TempDir(), "no-such-server"), Supervisor: gateway.SupervisorArgs(),
	})
	if err != nil {
		t.Fatal(err)
	}
	closedURL := fmt.Sprintf("http://127.0.0.1:%d/mcp", closedPort(t))
	reg, im, err := startImporter(t,
		upstreams.UpstreamSpec{Name: "missing", Prefix: "missing", Transport: "stdio", Timeout: 5 * time.Second, Upstream: missing},
		httpSpec(t, "closed", closedURL),
		stdioDemoSpec(t, "notes", nil),
	)
	if err != nil {
		t.Fatalf("Start with no required upstream: %v", err)
	}
	for name, want := range map[string]core.ConnState{"missing": core.StateFailed, "closed": core.StateFailed, "notes": core.StateConnected} {
		if st := statusOf(t, im, name); st.State != want || (want == core.StateFailed) != (st.LastError != "") {
			t.Errorf("%s: %+v, want %s", name, st, want)
		}
	}
	if got := reg.Names("notes"); len(got) != 4 {
		t.Errorf("notes tools = %q", got)
	}

	req := httpSpec(t, "vital", closedURL)
	req.Required = true
	reg, _, err = startImporter(t, stdioDemoSpec(t, "notes", nil), req)
	if err == nil || !strings.Contains(err.Error(), `"vital"`) {
		t.Fatalf("Start with a required upstream down: %v", err)
	}
	if got := reg.Names("notes"); len(got) != 4 {
		t.Errorf("notes tools next to the failed required upstream = %q", got)
	}
}

// IM-8, OP-3: the CLI on upstreams down at start. tools skips them
// (exit 0, warnings name them); check exits 2; a required one is named in
// check's error.
func TestFaultCLIUpstreamDownIM8(t *testing.T) {
	code, out, errOut := runToolgate(t, "tools", "--json", "--config", "../../testdata/faults/down.yaml")
	if code != 0 {
		t.Fatalf("tools: exit %d\n%s", code, errOut)
	}
	var tools []report.Tool
	if err := json.Unmarshal([]byte(out), &tools); err != nil || len(tools) != 4 || tools[0].Source != "notes" {
		t.Errorf("tools = %+v (%v)", tools, err)
	}
	for _, name := range []string{"upstream missing is failed", "upstream closed is failed"} {
		if !strings.Contains(errOut, name) {
			t.Errorf("tools stderr does not say %q:\n%s", name, errOut)
		}
	}

	code, out, errOut = runToolgate(t, "check", "--config", "../../testdata/faults/down.yaml")
	if code != 2 || !strings.Contains(out, "missing") || !strings.Contains(out, "closed") {
		t.Errorf("check: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	code, out, errOut = runToolgate(t, "check", "--config", "../../testdata/faults/down-required.yaml")
	if code != 2 || !strings.Contains(errOut, `required upstream "vital"`) {
		t.Errorf("check, required upstream down: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// IM-23: an upstream that cannot be reached during a refresh prunes
// nothing: its tools stay registered.
func TestFaultRefreshWhileDownIM23(t *testing.T) {
	proc, url := startHTTPDemo(t, "notes")
	reg, im, err := startImporter(t, httpSpec(t, "notes", url))
	if err != nil {
		t.Fatal(err)
	}
	before := reg.Names("notes")
	if len(before) != 4 {
		t.Fatalf("imported %q", before)
	}
	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waittest.Eventually(t, 10*time.Second, "the killed demo upstream to stop accepting connections", func() bool {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://"), time.Second)
		if err != nil {
			return true
		}
		_ = c.Close()
		return false
	})
	if _, err := im.Refresh(faultCtx(t, 60*time.Second), "notes"); err == nil {
		t.Fatal("Refresh of a dead upstream succeeded")
	}
	if got := reg.Names("notes"); !slices.Equal(got, before) {
		t.Errorf("tools after a failed refresh = %q, want %q", got, before)
	}
	if st := statusOf(t, im, "notes"); st.State != core.StateFailed || st.Tools != 4 {
		t.Errorf("status = %+v", st)
	}
}

// IM-37: a real upstream process that dies is found out by the health
// check, keeps its tools meanwhile (IM-23), and once a new process listens
// on its address it is imported again in the background, within its
// backoff bound, with no operator action.
func TestFaultUpstreamLostAndBackIM37(t *testing.T) {
	proc, url := startHTTPDemo(t, "notes")
	spec := httpSpec(t, "notes", url)
	spec.Health = upstreams.HealthCheck{Interval: time.Second, Timeout: time.Second}
	spec.Reconnect = upstreams.Reconnect{InitialDelay: 200 * time.Millisecond, MaxDelay: time.Second}
	reg := core.NewRegistry(nil)
	_, sub := reg.Bus().Subscribe(0)
	defer sub.Close()
	im := upstreams.NewImporter(reg, []upstreams.UpstreamSpec{spec}, nil)
	t.Cleanup(func() { _ = im.Close() })
	if err := im.Start(faultCtx(t, 60*time.Second)); err != nil {
		t.Fatal(err)
	}
	before := reg.Names("notes")
	if len(before) != 4 {
		t.Fatalf("imported %q", before)
	}

	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	eventbustest.Expect(t, sub, func(e core.UpstreamChanged) bool { return e.Status.State == core.StateFailed })
	if got := reg.Names("notes"); !slices.Equal(got, before) {
		t.Errorf("tools of the lost upstream = %q, want %q kept", got, before)
	}

	startHTTPDemoAt(t, "notes", strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp"))
	back := time.Now()
	eventbustest.Expect(t, sub, func(e core.RefreshApplied) bool { return e.Diff.Upstream == "notes" })
	// The backoff cap, then a connect and a list.
	if took, bound := time.Since(back), spec.Reconnect.MaxDelay+2*spec.Timeout; took > bound {
		t.Errorf("re-imported %v after the new process listened, want within %v", took, bound)
	}
	res, err := reg.Invoke(faultCtx(t, 30*time.Second), faultActor, "notes_list_notes", nil)
	if err != nil {
		t.Fatalf("a call after the upstream came back: %v (%+v)", err, res)
	}
	if st := statusOf(t, im, "notes"); st.State != core.StateConnected || st.Tools != 4 || !st.NextAttempt.IsZero() {
		t.Errorf("status = %+v", st)
	}
}

// IM-25: an upstream's tools/list_changed is picked up: after flaky's grow
// the registry gains flaky_grown_1 without anyone asking for a refresh.
func TestFaultListChangedIM25(t *testing.T) {
	reg, _, err := startImporter(t, stdioDemoSpec(t, "flaky", nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Get("flaky_grown_1"); ok {
		t.Fatal("flaky_grown_1 exists before grow")
	}
	if _, err := reg.Invoke(faultCtx(t, 30*time.Second), faultActor, "flaky_grow", nil); err != nil {
		t.Fatal(err)
	}
	waittest.Succeeds(t, 10*time.Second, "flaky_grown_1", func() error {
		if _, ok := reg.Get("flaky_grown_1"); !ok {
			return fmt.Errorf("registry: %q", reg.Names("flaky"))
		}
		return nil
	})
	if tl, _ := reg.Get("flaky_grown_1"); tl.Source != "flaky" || tl.RemoteName != "grown_1" {
		t.Errorf("grown tool = %+v", tl)
	}
	res, err := reg.Invoke(faultCtx(t, 30*time.Second), faultActor, "flaky_grown_1", nil)
	if err != nil || text(t, res) != "grown_1" {
		t.Errorf("flaky_grown_1: %v", err)
	}
}

// IM-7 with a large list: 2000 tools import completely without hanging. The
// time is logged, never asserted.
func TestFaultBulkImportIM7(t *testing.T) {
	start := time.Now()
	reg, im, err := startImporter(t, stdioDemoSpec(t, "bulk", nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("imported 2000 tools over stdio in %v", time.Since(start))
	if got := len(reg.Names("bulk")); got != 2000 {
		t.Errorf("imported %d tools, want 2000", got)
	}
	if st := statusOf(t, im, "bulk"); st.Tools != 2000 || st.State != core.StateConnected {
		t.Errorf("status = %+v", st)
	}
	if d := im.Drops(); len(d) != 0 {
		t.Errorf("drops = %+v", d)
	}
	if _, ok := reg.Get("bulk_tool_1999"); !ok {
		t.Error("the last tool is missing")
	}
}

// OP-3, IM-13, IM-18, IM-19, IM-8: check --json of the demo config
// through the real binary.
func TestFaultCheckDemoJSON(t *testing.T) {
	code, out, errOut := runToolgate(t, "check", "--json", "--config", "../../testdata/demo.yaml")
	if code != 2 {
		t.Fatalf("exit %d, want 2\nstderr: %s", code, errOut)
	}
	var report report.Check
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("not the check object: %v\n%s", err, out)
	}
	want := core.Collision{Name: "search", Kept: core.Claimant{Source: "notes", RemoteName: "search"}, Refused: core.Claimant{Source: "weather", RemoteName: "search"}}
	if !slices.Contains(report.Collisions, want) {
		t.Errorf("collisions = %+v, want %+v", report.Collisions, want)
	}
	drops := map[string]string{}
	for _, d := range report.Dropped {
		if d.Source == "sneaky" {
			drops[d.RemoteName] = d.Reason
		}
	}
	if len(drops) != 2 || !strings.HasPrefix(drops["broken_schema"], "schema") || !strings.HasPrefix(drops["check_email"], "pattern") {
		t.Errorf("sneaky's drops = %q, want broken_schema (schema) and check_email (pattern)", drops)
	}
	states := map[string]string{}
	for _, u := range report.Upstreams {
		states[u.Name] = u.State
	}
	wantStates := map[string]string{"notes": "connected", "weather": "connected", "sneaky": "connected", "flaky": "connected", "offline": "failed"}
	for name, st := range wantStates {
		if states[name] != st {
			t.Errorf("upstream %s is %q, want %q (all: %v)", name, states[name], st, states)
		}
	}
}

// leakConfig is a config whose every secret holds LEAKCHECK: the confirm
// secret, and for each network upstream its header value, bearer token and
// signing secret.
func leakConfig(t *testing.T, stdio string, network ...[3]string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`gateway:
  confirm:
    secret: LEAKCHECK-confirm-0123456789abcdef0123456789abcdef
endpoints:
  - path: /mcp
    actor: {id: test, roles: [ADMIN]}
upstreams:
`)
	for _, n := range network { // name, transport, url
		fmt.Fprintf(&b, `  - name: %s
    url: %s
    transport: %s
    timeout: 5s
    headers: {X-Tenant: LEAKCHECK-header-%[1]s}
    authorization: LEAKCHECK-token-%[1]s
    signing: {hmacSha256: {secret: LEAKCHECK-signing-%[1]s, header: X-Signature}}
`, n[0], n[2], n[1])
	}
	b.WriteString(stdio)
	path := filepath.Join(t.TempDir(), "secrets.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// assertNoLeak runs check and tools, JSON and text, on cfg and fails if any
// output holds LEAKCHECK. check --json must report the upstream states in
// want, so the run is known to have reached every target.
func assertNoLeak(t *testing.T, cfg string, want map[string]string) {
	t.Helper()
	for _, args := range [][]string{{"check", "--json"}, {"check"}, {"tools", "--json"}, {"tools"}} {
		code, out, errOut := runToolgate(t, append(args, "--config", cfg)...)
		if strings.Contains(out+errOut, "LEAKCHECK") {
			t.Errorf("toolgate %v leaks a secret (IM-5):\nstdout: %s\nstderr: %s", args, out, errOut)
		}
		if args[0] != "check" || len(args) == 1 {
			continue
		}
		var report report.Check
		if err := json.Unmarshal([]byte(out), &report); err != nil {
			t.Fatalf("check --json: exit %d: %v\n%s", code, err, errOut)
		}
		states := map[string]string{}
		for _, u := range report.Upstreams {
			states[u.Name] = u.State
		}
		for name, st := range want {
			if states[name] != st {
				t.Errorf("upstream %s is %q, want %q", name, states[name], st)
			}
		}
	}
}

// IM-5: header values, the bearer token, the signing secret, env values and
// the confirm secret appear in no output of check and tools, whether the
// upstream answers (so requests carried them), refuses the connection,
// fails with a bare error status, or is a child that exits at once or never
// starts.
func TestFaultSecretsNeverPrintedIM5(t *testing.T) {
	_, live := startHTTPDemo(t, "notes")
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	cfg := leakConfig(t, `  - name: child
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, echo]
    env: {DEMO_TOKEN: LEAKCHECK-env-child}
  - name: dying
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, no-such-server]
    env: {DEMO_TOKEN: LEAKCHECK-env-dying}
  - name: absent
    command: /nonexistent/toolgate-faults/server
    env: {DEMO_TOKEN: LEAKCHECK-env-absent}
`,
		[3]string{"live", "http", live},
		[3]string{"closed", "http", fmt.Sprintf("http://127.0.0.1:%d/mcp", closedPort(t))},
		[3]string{"failing", "http", failing.URL + "/mcp"},
		[3]string{"failingsse", "sse", failing.URL + "/sse"},
		[3]string{"auto", "auto", failing.URL + "/mcp"},
	)
	assertNoLeak(t, cfg, map[string]string{
		"live": "connected", "child": "connected",
		"closed": "failed", "failing": "failed", "failingsse": "failed", "auto": "failed", "dying": "failed", "absent": "failed",
	})
}

// IM-5: an upstream whose error page echoes the request — its headers,
// among them the bearer token, the tenant header and the signature — must
// not carry those secrets into the gateway's errors and output.
func TestFaultSecretsEchoedByUpstreamIM5(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		_ = r.Header.Write(&b)
		http.Error(w, "refused:\n"+b.String(), http.StatusInternalServerError)
	}))
	t.Cleanup(echo.Close)
	cfg := leakConfig(t, "",
		[3]string{"echoing", "http", echo.URL + "/mcp"},
		[3]string{"echoingsse", "sse", echo.URL + "/sse"},
	)
	assertNoLeak(t, cfg, map[string]string{"echoing": "failed", "echoingsse": "failed"})
}
