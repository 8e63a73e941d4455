package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/mcp/upstream"
)

// TestMain lets the test binary stand in for toolgate as a supervisor:
// supervisorArgs names the running executable, which in-process tests is
// this binary. It also removes the toolgate binary the tests built.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "_supervise" {
		os.Exit(runSupervise(context.Background(), &cli{stdout: os.Stdout, stderr: os.Stderr}, os.Args[2:]))
	}
	code := m.Run()
	if builtDir != "" {
		_ = os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	builtDir  string
	builtBin  string
	buildErr  error
)

// toolgateBinary builds the real toolgate binary once per test run and
// returns its path. Skipped with -short.
func toolgateBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the toolgate binary")
	}
	buildOnce.Do(func() {
		builtDir, buildErr = os.MkdirTemp("", "toolgate-bin-")
		if buildErr != nil {
			return
		}
		builtBin = filepath.Join(builtDir, "toolgate")
		if runtime.GOOS == "windows" {
			builtBin += ".exe"
		}
		out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// The hidden command's arguments: `--help` and no command.
func TestSuperviseArgs(t *testing.T) {
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut}
	if code := runSupervise(context.Background(), c, []string{"--help"}); code != 0 || !strings.HasPrefix(out.String(), "Usage: toolgate _supervise -- CMD") || errOut.Len() != 0 {
		t.Errorf("--help: %d %q %q", code, out.String(), errOut.String())
	}
	for _, args := range [][]string{nil, {"--"}} {
		out.Reset()
		errOut.Reset()
		if code := runSupervise(context.Background(), c, args); code != upstream.SuperviseUsage || !strings.Contains(errOut.String(), "no command") {
			t.Errorf("%q: %d %q", args, code, errOut.String())
		}
	}
	errOut.Reset()
	if code := runSupervise(context.Background(), c, []string{"--bogus", "--", "true"}); code != 2 || !strings.Contains(errOut.String(), "bogus") {
		t.Errorf("bad flag: %d %q", code, errOut.String())
	}
	if got := gateway.SupervisorArgs(); len(got) != 3 || got[1] != "_supervise" || got[2] != "--" {
		t.Errorf("gateway.SupervisorArgs() = %q", got)
	}
}

// QB-5: the supervisor a stdio upstream starts under runs before the
// binary's heavy packages initialise (the review scanner's tables, the
// phone-number metadata, the JSON Schema meta-schemas), so none of their
// time or heap is spent on it. The same binary asked for _supervise
// without a command goes through the command line, after every
// initialiser: the trace shows them there, so their absence means
// something.
func TestSupervisorSkipsHeavyInitsQB5(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no sh")
	}
	bin := toolgateBinary(t)
	heavy := []string{
		"github.com/toolgate/toolgate/core/review/scan ",
		"github.com/nyaruka/phonenumbers ",
		"github.com/santhosh-tekuri/jsonschema/v6 ",
	}
	trace := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stderr.String(), "init runtime ") {
			t.Fatalf("no init trace in %q", stderr.String())
		}
		return stderr.String(), code
	}

	full, code := trace("_supervise")
	if code != upstream.SuperviseUsage {
		t.Fatalf("_supervise without a command exited %d, want %d", code, upstream.SuperviseUsage)
	}
	for _, p := range heavy {
		if !strings.Contains(full, "init "+p) {
			t.Fatalf("the command line's trace lacks %q; the list of heavy packages is out of date", p)
		}
	}

	early, code := trace("_supervise", "--", "sh", "-c", "exit 7")
	if code != 7 {
		t.Fatalf("supervised command's status = %d, want 7\n%s", code, early)
	}
	for _, p := range heavy {
		if strings.Contains(early, "init "+p) {
			t.Errorf("%sinitialised before the supervisor ran", p)
		}
	}
}
