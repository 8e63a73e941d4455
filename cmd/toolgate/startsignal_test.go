//go:build linux

package main

// SV-9, IM-10: a supervisor's SIGTERM or SIGINT can arrive at any moment of
// start-up — while the store opens, while upstreams initialize, while the
// background reconnect brings one back — and serve must still end within
// its shutdown deadline with nothing of its process tree left.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/demo"
)

// startSignalRounds is how many random moments of start-up each signal is
// sent at.
const startSignalRounds = 20

// startSignalWindow is the start-up span the moments are drawn from.
const startSignalWindow = 2 * time.Second

// treeMarkerEnv is set in the gateway's environment; its upstreams inherit
// it (their env blocks merge over the gateway's), and so do their children:
// every process of the gateway's tree carries it, wherever it was
// reparented.
const treeMarkerEnv = "TOOLGATE_TEST_TREE"

var (
	raceBinOnce sync.Once
	raceBin     string
	raceBinErr  error
)

// toolgateRaceBinary is the toolgate binary built with the race detector
// when the tests run with it, so a data race in the shutdown path fails
// the test that provokes it; otherwise the plain binary.
func toolgateRaceBinary(t *testing.T) string {
	t.Helper()
	if !raceEnabled {
		return toolgateBinary(t)
	}
	if testing.Short() {
		t.Skip("builds the toolgate binary")
	}
	raceBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolgate-race-bin-")
		if err != nil {
			raceBinErr = err
			return
		}
		raceBin = filepath.Join(dir, "toolgate")
		if out, err := exec.Command("go", "build", "-race", "-o", raceBin, ".").CombinedOutput(); err != nil {
			raceBinErr = fmt.Errorf("go build -race: %v\n%s", err, out)
		}
	})
	if raceBinErr != nil {
		t.Fatal(raceBinErr)
	}
	return raceBin
}

// treeProcs lists the live processes whose environment carries marker.
func treeProcs(marker string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := []byte(treeMarkerEnv + "=" + marker + "\x00")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		if p, ok := readProc(pid); ok && p.state != 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// startSignalConfig is a gateway with two stdio upstreams that take a
// while to initialize, one with a grandchild of its own.
func startSignalConfig(t *testing.T) string {
	t.Helper()
	cfg := fmt.Sprintf(`gateway:
  confirm:
    secret: start-signal-test-only-confirm-secret-0123456789abcdef
endpoints:
  - path: /mcp
    actor: {id: test, roles: [ADMIN]}
upstreams:
  - name: notes
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, notes]
    env: {%s: "300ms", %s: "1"}
  - name: weather
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, weather]
    env: {%s: "700ms"}
`, demo.StallEnv, demo.GrandchildEnv, demo.StallEnv)
	path := filepath.Join(t.TempDir(), "start-signal.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// SV-9, IM-10: SIGTERM and, separately, SIGINT at random moments of
// start-up end serve cleanly within its deadline, its process tree gone.
func TestServeSignalDuringStartUp(t *testing.T) {
	bin := toolgateRaceBinary(t)
	cfg := startSignalConfig(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			for round := range startSignalRounds {
				after := time.Duration(mrand.Int64N(int64(startSignalWindow)))
				signalDuringStartUp(t, bin, cfg, sig, round, after)
			}
		})
	}
}

// signalDuringStartUp starts serve, sends sig after the given time, and
// checks that serve exits within its shutdown deadline, cleanly, and that
// no process of its tree is left.
func signalDuringStartUp(t *testing.T, bin, cfg string, sig syscall.Signal, round int, after time.Duration) {
	t.Helper()
	var m [8]byte
	_, _ = rand.Read(m[:])
	marker := hex.EncodeToString(m[:])
	cmd := exec.Command(bin, "serve", "--config", cfg, "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), gateway.SelfEnv+"="+bin, treeMarkerEnv+"="+marker,
		"TOOLGATE_GATEWAY_STORE="+filepath.Join(t.TempDir(), "toolgate.db"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &serveLog{} // read while serve runs
	cmd.Stdout, cmd.Stderr = out, out
	gw := start(t, cmd)
	t.Cleanup(func() {
		for _, pid := range treeProcs(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	// The moments are counted from serve's first log record: before it the
	// runtime is still loading, and the signal's default action ends a
	// process that has started nothing.
	waitLogRecord(t, gw, out, "starting", serveBootWait)
	timer := time.NewTimer(after)
	select {
	case <-gw.exited:
		timer.Stop()
		t.Fatalf("round %d: serve exited by itself before %v\n%s", round, after, out.String())
	case <-timer.C:
	}
	sent := time.Now()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	// The deadline Close keeps, plus the time a loaded machine takes to
	// schedule the exit.
	within := shutdownDeadline + 10*time.Second
	select {
	case <-gw.exited:
	case <-time.After(within):
		t.Fatalf("round %d (%v after %v): serve still runs %v later\n%s", round, sig, after, within, out.String())
	}
	took := time.Since(sent)
	log := out.String()
	if strings.Contains(log, "DATA RACE") {
		t.Fatalf("round %d (%v after %v): data race\n%s", round, sig, after, log)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("round %d (%v after %v): exit %d, want 0 after a clean shutdown\n%s", round, sig, after, code, log)
	}
	var left []int
	if !waittest.Poll(serveProcsWait, func() bool { left = treeProcs(marker); return len(left) == 0 }) {
		t.Fatalf("round %d (%v after %v): processes of serve's tree still run %v after it exited: %v\n%s", round, sig, after, serveProcsWait, left, log)
	}
	t.Logf("round %d: %v after %v, exited in %v", round, sig, after.Round(time.Millisecond), took.Round(time.Millisecond))
}

// waitLogRecord waits (bounded) for a log record with message msg.
func waitLogRecord(t *testing.T, s *started, out *serveLog, msg string, within time.Duration) {
	t.Helper()
	want := `"msg":"` + msg + `"`
	if !waittest.Poll(within, func() bool {
		select {
		case <-s.exited:
			t.Fatalf("exited before logging %q\n%s", msg, out.String())
		default:
		}
		return strings.Contains(out.String(), want)
	}) {
		t.Fatalf("no %q record within %v\n%s", msg, within, out.String())
	}
}
