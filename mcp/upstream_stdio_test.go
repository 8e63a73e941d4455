package mcp

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
)

func stdioOptions(t *testing.T) UpstreamOptions {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return UpstreamOptions{Name: "child", Command: exe, Args: []string{stdioServerArg}}
}

func connectStdio(t *testing.T, opts UpstreamOptions) core.Upstream {
	t.Helper()
	u, err := NewUpstream(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = u.Close() })
	info, err := u.Connect(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatalf("Connect: %v (stderr: %s)", err, u.(StderrReporter).Stderr())
	}
	if info.Name != "stdio-test" || info.Version != "1.2.3" || info.Protocol != ProtocolVersion {
		t.Fatalf("server info = %+v", info)
	}
	return u
}

func call(t *testing.T, u core.Upstream, name, args string) string {
	t.Helper()
	r, err := u.CallTool(ctxT(t, 10*time.Second), name, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if r.IsError {
		t.Fatalf("%s: isError result %s", name, r.JSON)
	}
	return resultText(t, r)
}

func TestStdioCallsListAndPing(t *testing.T) {
	leakCheck(t)
	u := connectStdio(t, stdioOptions(t))
	tools, err := u.ListTools(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "crash,cwd,echo,print_env,spawn_grandchild,stderr" {
		t.Errorf("tools = %s", got)
	}
	if got := call(t, u, "echo", `{"text":"hello"}`); got != "hello" {
		t.Errorf("echo = %q", got)
	}
	if err := u.Ping(ctxT(t, 5*time.Second)); err != nil {
		t.Errorf("Ping: %v", err)
	}
	// Concurrent calls from several goroutines (run under -race).
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := "m" + strconv.Itoa(i)
			r, err := u.CallTool(ctxT(t, 10*time.Second), "echo", json.RawMessage(`{"text":"`+want+`"}`))
			if err != nil {
				errs <- err
				return
			}
			if !strings.Contains(string(r.JSON), `"`+want+`"`) {
				errs <- errors.New("wrong answer " + string(r.JSON))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// An unknown tool is a definite failure from the server, not a transport
	// error: mcp-go answers it with a JSON-RPC error.
	_, err = u.CallTool(ctxT(t, 5*time.Second), "nope", nil)
	var rpc *core.RPCError
	if !errors.As(err, &rpc) || core.Transient(err) {
		t.Errorf("unknown tool: %v", err)
	}
	if err := u.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := u.CallTool(ctxT(t, time.Second), "echo", nil); !errors.Is(err, core.ErrNotSent) {
		t.Errorf("call after Close: %v", err)
	}
}

// IM-3: no env ⇒ a minimal environment without the gateway's secrets.
func TestStdioMinimalEnvIM3(t *testing.T) {
	t.Setenv("TOOLGATE_TEST_SECRET", "xyz")
	u := connectStdio(t, stdioOptions(t))
	env := call(t, u, "print_env", `{}`)
	if strings.Contains(env, "TOOLGATE_TEST_SECRET") || strings.Contains(env, "xyz") {
		t.Errorf("child sees the gateway's secret:\n%s", env)
	}
	if os.Getenv("PATH") != "" && !strings.Contains(env, "PATH="+os.Getenv("PATH")) {
		t.Errorf("child lacks PATH:\n%s", env)
	}
	for _, kv := range strings.Split(env, "\n") {
		k, _, _ := strings.Cut(kv, "=")
		if !contains(minimalEnv, k) {
			t.Errorf("child has %q beyond the minimal set", k)
		}
	}
}

// IM-3: env given ⇒ the gateway's environment with those entries merged over.
func TestStdioMergedEnvAndCwdIM3(t *testing.T) {
	t.Setenv("TOOLGATE_TEST_SECRET", "xyz")
	dir := t.TempDir()
	opts := stdioOptions(t)
	opts.Env = map[string]string{"A": "1"}
	opts.Cwd = dir
	u := connectStdio(t, opts)
	env := strings.Split(call(t, u, "print_env", `{}`), "\n")
	if !contains(env, "A=1") || !contains(env, "TOOLGATE_TEST_SECRET=xyz") {
		t.Errorf("merged env lacks A=1 or the gateway's variable: %v", env)
	}
	want, _ := filepath.EvalSymlinks(dir)
	got, _ := filepath.EvalSymlinks(call(t, u, "cwd", `{}`))
	if got != want {
		t.Errorf("cwd = %q, want %q", got, want)
	}
}

// IM-10: Close stops the child's whole process group, grandchildren too.
func TestStdioCloseKillsGrandchildIM10(t *testing.T) {
	leakCheck(t)
	u := connectStdio(t, stdioOptions(t))
	pid, err := strconv.Atoi(call(t, u, "spawn_grandchild", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	if !processAlive(pid) {
		t.Fatalf("grandchild %d is not running before Close", pid)
	}
	start := time.Now()
	if err := u.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for processAlive(pid) {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("grandchild %d survived Close", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("Close took %v", d)
	}
	if err := u.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// IM-27/IM-29: a child dying mid-call is a transient failure whose outcome is
// unknown (not ErrNotSent); Connect then starts a fresh child.
func TestStdioCrashMidCallIM27(t *testing.T) {
	leakCheck(t)
	u := connectStdio(t, stdioOptions(t))
	_, err := u.CallTool(ctxT(t, 10*time.Second), "crash", nil)
	if err == nil {
		t.Fatal("crash returned no error")
	}
	if !core.Transient(err) || errors.Is(err, core.ErrNotSent) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("crash error %v: Transient=%v NotSent=%v", err, core.Transient(err), errors.Is(err, core.ErrNotSent))
	}
	// Further calls on the dead connection are transient too.
	if _, err := u.CallTool(ctxT(t, 5*time.Second), "echo", json.RawMessage(`{"text":"x"}`)); !core.Transient(err) {
		t.Errorf("call after crash: %v", err)
	}
	if _, err := u.Connect(ctxT(t, 20*time.Second)); err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	if got := call(t, u, "echo", `{"text":"again"}`); got != "again" {
		t.Errorf("echo after reconnect = %q", got)
	}
	if err := u.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// A command that cannot start fails before anything was sent.
func TestStdioStartFailureNotSent(t *testing.T) {
	u, err := NewUpstream(UpstreamOptions{Name: "missing", Command: filepath.Join(t.TempDir(), "no-such-binary")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = u.Connect(ctxT(t, 5*time.Second))
	if !errors.Is(err, core.ErrNotSent) {
		t.Fatalf("Connect: %v", err)
	}
	if err := u.Close(); err != nil {
		t.Errorf("Close after failed Connect: %v", err)
	}
	// A child that exits at once: the handshake fails, nothing is left over.
	u, err = NewUpstream(UpstreamOptions{Name: "false", Command: "false"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Connect(ctxT(t, 5*time.Second)); err == nil || !core.Transient(err) {
		t.Fatalf("Connect to a child that exits: %v", err)
	}
	_ = u.Close()
}

// The child's stderr is kept, bounded, newest last.
func TestStdioStderrBounded(t *testing.T) {
	opts := stdioOptions(t)
	opts.StderrLimit = 1024
	u := connectStdio(t, opts)
	call(t, u, "stderr", `{"n":5000}`)
	sr := u.(StderrReporter)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.HasSuffix(sr.Stderr(), "END-OF-STDERR\n") {
		if time.Now().After(deadline) {
			t.Fatalf("stderr tail missing: %q", sr.Stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(sr.Stderr()); n != 1024 {
		t.Errorf("kept %d bytes of stderr, want the limit 1024", n)
	}
	if strings.Contains(sr.Stderr(), "starting") {
		t.Error("the oldest stderr was not dropped")
	}
}
