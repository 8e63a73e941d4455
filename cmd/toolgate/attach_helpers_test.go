//go:build linux

package main

// Helpers of the admin API's end-to-end tests (CO-9): a real `toolgate
// serve` with gateway.admin, an upstream whose tool list the test changes
// behind the gateway's back (so a refresh has a diff), the official
// TypeScript SDK client making calls that wait on an operator, and real
// attached consoles in tmux.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/internal/lab/peers"
	"github.com/toolgate/toolgate/internal/waittest"
)

// Keys of the admin tests: none may ever show on a screen, in a log or in
// a command's output.
const (
	attachKeyAlice  = "attach-SECRET-admin-alice-6b1f0c9e2d"
	attachKeyBob    = "attach-SECRET-admin-bob-3e7a5d1c8f"
	attachClientKey = "attach-SECRET-client-key-9c4e2a7b1d"
)

var attachSecrets = []string{attachKeyAlice, attachKeyBob, attachClientKey, serveConfirmSecret, "attach-SECRET-"}

// assertNoAttachSecret fails if any key of the admin tests is in s.
func assertNoAttachSecret(t *testing.T, what, s string) {
	t.Helper()
	for _, k := range attachSecrets {
		if strings.Contains(s, k) {
			t.Fatalf("a secret (%.14s…) leaked into %s:\n%s", k, what, s)
		}
	}
}

// attachConfig serves the notes demo (its actions wait for an operator) and
// the test's catalog upstream on /mcp for one API-key actor, with the
// admin API on adminPort for alice and bob.
const attachConfig = `gateway:
  confirm:
    secret: ${TOOLGATE_CONFIRM_SECRET}
  admin:
    listen: 127.0.0.1:%d
    keys:
      - key: ${ADMIN_KEY_ALICE}
        operator: alice
      - key: ${ADMIN_KEY_BOB}
        operator: bob
endpoints:
  - path: /mcp
    auth:
      apiKeys:
        - key: ${CLIENT_KEY}
          actor: {id: sdk, roles: [MEMBER]}
upstreams:
  - name: notes
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, notes]
    required: true
    approval: operator
  - name: catalog
    url: %s
    transport: http
    required: true
    defaultKind: read
`

var attachEnv = map[string]string{
	"TOOLGATE_CONFIRM_SECRET": serveConfirmSecret,
	"ADMIN_KEY_ALICE":         attachKeyAlice,
	"ADMIN_KEY_BOB":           attachKeyBob,
	"CLIENT_KEY":              attachClientKey,
}

// catalogUpstream is an MCP server in the test process whose tools the test
// changes without telling anyone (no list_changed): only a refresh finds
// out.
type catalogUpstream struct {
	s   *server.MCPServer
	url string
}

func startCatalog(t *testing.T) *catalogUpstream {
	t.Helper()
	s := server.NewMCPServer("catalog", "1.0.0", server.WithToolCapabilities(false))
	c := &catalogUpstream{s: s}
	c.put("alpha", "List the catalog's sections.")
	c.put("beta", "Look up an item of the catalog.")
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(srv.Close)
	c.url = srv.URL + "/mcp"
	return c
}

func (c *catalogUpstream) put(name, description string) {
	c.s.AddTool(mcpgo.NewTool(name, mcpgo.WithDescription(description), mcpgo.WithReadOnlyHintAnnotation(true)),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText(name), nil
		})
}

// attachedGateway is one `toolgate serve` with the admin API.
type attachedGateway struct {
	*servedGateway
	cfg      string
	adminURL string
}

func startAttachServe(t *testing.T, catalog *catalogUpstream) *attachedGateway {
	t.Helper()
	port := serveFreePort(t)
	cfg := writeServeConfig(t, fmt.Sprintf(attachConfig, port, catalog.url))
	g := &attachedGateway{cfg: cfg, adminURL: fmt.Sprintf("http://127.0.0.1:%d", port)}
	g.servedGateway = startServe(t, cfg, attachEnv)
	return g
}

// kill ends serve as a crash does: SIGKILL to its group, no shutdown.
func (g *attachedGateway) kill(t *testing.T) {
	t.Helper()
	g.killGroups()
	select {
	case <-g.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("toolgate serve not reaped 10 s after SIGKILL")
	}
}

// restart starts serve again on the same config, so on the same admin
// address (a new store, as after a crash that took the disk).
func (g *attachedGateway) restart(t *testing.T) {
	t.Helper()
	g.servedGateway = startServe(t, g.cfg, attachEnv)
}

// sdkResult is one run of sdk-confirm.mjs, started in the background.
type sdkResult struct {
	run            confirmSDKRun
	code           int
	stdout, stderr string
	err            error
}

// startSDK runs sdk-confirm.mjs (the official TypeScript SDK client) with
// calls against url in the background; its result arrives on the channel.
// The process is killed at cleanup if it still runs.
func startSDK(t *testing.T, url, calls string) <-chan sdkResult {
	t.Helper()
	dir, node := peers.Dir(t), peers.Node(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "sdk-confirm.mjs"), url, calls)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SDK_CLIENT_TOKEN="+attachClientKey)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	leader := holdLeader(cmd.Process.Pid)
	t.Cleanup(func() { leader.killGroup(); leader.release(); cancel() })
	ch := make(chan sdkResult, 1)
	go func() {
		defer cancel()
		err := cmd.Wait()
		r := sdkResult{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errOut.String()}
		if ctx.Err() != nil {
			r.err = fmt.Errorf("sdk-confirm still ran after 2 min")
		} else if _, ok := err.(*exec.ExitError); err != nil && !ok {
			r.err = err
		} else if jerr := json.Unmarshal(out.Bytes(), &r.run); jerr != nil {
			r.err = fmt.Errorf("sdk-confirm (exit %d) printed no result: %v", r.code, jerr)
		}
		ch <- r
	}()
	return ch
}

// waitSDK waits (bounded) for a run started by startSDK.
func waitSDK(t *testing.T, ch <-chan sdkResult, calls int) confirmSDKRun {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil || r.run.Error != "" || len(r.run.Results) != calls {
			t.Fatalf("sdk-confirm: %v, error %q, %d results for %d calls\nstdout: %s\nstderr: %s", r.err, r.run.Error, len(r.run.Results), calls, r.stdout, r.stderr)
		}
		assertNoAttachSecret(t, "the SDK client's output", r.stdout+r.stderr)
		return r.run
	case <-time.After(2 * time.Minute):
		t.Fatal("sdk-confirm did not finish within 2 min")
	}
	return confirmSDKRun{}
}

// previewThenConfirm is a preview of notes_create_note and its
// confirmation, which waits for an operator.
func previewThenConfirm(text string, more ...string) string {
	args, _ := json.Marshal(map[string]string{"text": text})
	confirmArgs := fmt.Sprintf(`{"text":%q,"confirm":true,"confirmToken":"$confirmToken:0"}`, text)
	return confirmCalls(append([]string{confirmCall("notes_create_note", string(args)), confirmCall("notes_create_note", confirmArgs)}, more...)...)
}

// tmuxTerm is a tmux server of the test's own, whose sessions are
// consoles; every screen read is checked for secrets.
type tmuxTerm struct {
	t    *testing.T
	sock string
	dir  string
}

func newTmux(t *testing.T) *tmuxTerm {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed: the attached console's end-to-end test needs it (.ci/run installs it with apt-get)")
		}
		t.Skip("tmux is not installed (apt-get install tmux): the attached console's end-to-end test needs a real terminal")
	}
	// The server's socket lives in the test's directory, so nothing of it
	// outlives the test.
	dir := t.TempDir()
	x := &tmuxTerm{t: t, sock: filepath.Join(dir, "tmux.sock"), dir: dir}
	t.Cleanup(func() { _ = x.cmd("kill-server").Run() })
	return x
}

func (x *tmuxTerm) cmd(args ...string) *exec.Cmd {
	return exec.Command("tmux", append([]string{"-S", x.sock}, args...)...)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// start opens session name running argv in a 100×30 terminal, with env
// set for it (never on the command line, so never on the screen); its
// stderr and exit status go to files in the tmux dir, and TMPDIR (where
// the console writes its log) is a directory of its own.
func (x *tmuxTerm) start(name string, env map[string]string, argv ...string) {
	x.t.Helper()
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shellQuote(a)
	}
	tmp := filepath.Join(x.dir, name+"-tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		x.t.Fatal(err)
	}
	line := fmt.Sprintf("%s 2>%s; echo $? >%s", strings.Join(quoted, " "), shellQuote(x.stderrPath(name)), shellQuote(x.statusPath(name)))
	args := []string{"new-session", "-d", "-s", name, "-x", "100", "-y", "30", "-e", "NO_COLOR=1", "-e", "TMPDIR=" + tmp}
	for k, v := range env {
		args = append(args, "-e", k+"="+v)
	}
	args = append(args, line)
	if out, err := x.cmd(args...).CombinedOutput(); err != nil {
		x.t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
}

func (x *tmuxTerm) stderrPath(name string) string { return filepath.Join(x.dir, name+".stderr") }
func (x *tmuxTerm) statusPath(name string) string { return filepath.Join(x.dir, name+".status") }

// logs is every console log file the session wrote.
func (x *tmuxTerm) logs(name string) string {
	files, _ := filepath.Glob(filepath.Join(x.dir, name+"-tmp", "toolgate-console-*.log"))
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f)
		b.Write(data)
	}
	return b.String()
}

// screen is the session's visible screen.
func (x *tmuxTerm) screen(name string) string {
	x.t.Helper()
	out, _ := x.cmd("capture-pane", "-p", "-t", name).Output()
	s := string(out)
	assertNoAttachSecret(x.t, "the console screen "+name, s)
	return s
}

// waitFor polls the screen (bounded) until it shows every one of wants.
func (x *tmuxTerm) waitFor(name string, d time.Duration, wants ...string) string {
	x.t.Helper()
	var s, missing string
	if !waittest.Poll(d, func() bool {
		s, missing = x.screen(name), ""
		for _, w := range wants {
			if !strings.Contains(s, w) {
				missing = w
				break
			}
		}
		return missing == ""
	}) {
		stderr, _ := os.ReadFile(x.stderrPath(name))
		x.t.Fatalf("console %s never showed %q within %v\n---- screen ----\n%s\n---- stderr ----\n%s", name, missing, d, s, stderr)
	}
	return s
}

// waitGone polls the screen (bounded) until it no longer shows text.
func (x *tmuxTerm) waitGone(name string, d time.Duration, text string) string {
	x.t.Helper()
	var s string
	if !waittest.Poll(d, func() bool { s = x.screen(name); return !strings.Contains(s, text) }) {
		x.t.Fatalf("console %s still shows %q after %v\n---- screen ----\n%s", name, text, d, s)
	}
	return s
}

// keys sends keys to the session (tmux key names: Enter, Right, …, or
// literal characters).
func (x *tmuxTerm) keys(name string, keys ...string) {
	x.t.Helper()
	if out, err := x.cmd(append([]string{"send-keys", "-t", name}, keys...)...).CombinedOutput(); err != nil {
		x.t.Fatalf("tmux send-keys %q: %v\n%s", keys, err, out)
	}
}

// text types s literally.
func (x *tmuxTerm) text(name, s string) {
	x.t.Helper()
	if out, err := x.cmd("send-keys", "-t", name, "-l", s).CombinedOutput(); err != nil {
		x.t.Fatalf("tmux send-keys -l %q: %v\n%s", s, err, out)
	}
}

// waitExit waits (bounded) for the session's program to end and returns
// its exit status.
func (x *tmuxTerm) waitExit(name string, d time.Duration) int {
	x.t.Helper()
	var b []byte
	if !waittest.Poll(d, func() bool {
		var err error
		b, err = os.ReadFile(x.statusPath(name))
		return err == nil && len(bytes.TrimSpace(b)) > 0
	}) {
		x.t.Fatalf("console %s did not exit within %v\n%s", name, d, x.screen(name))
	}
	code, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil {
		x.t.Fatalf("status %q", b)
	}
	return code
}

// runTool runs the built binary with args and env added (bounded), and
// returns its status and output, checked for secrets.
func runTool(t *testing.T, env map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, toolgateBinary(t), args...)
	cmd.Env = os.Environ()
	for _, k := range []string{"TOOLGATE_ATTACH", "TOOLGATE_ADMIN_KEY"} {
		cmd.Env = append(cmd.Env, k+"=") // only what the test gives
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("toolgate %q still ran after 2 min", args)
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	assertNoAttachSecret(t, fmt.Sprintf("the output of toolgate %s", strings.Join(args, " ")), out.String()+errOut.String())
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}
