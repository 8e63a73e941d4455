package serve_test

// toolgate as the client of the official conformance suite's client
// scenarios (@modelcontextprotocol/conformance, testdata/peers): the suite
// starts a fixture server and runs internal/lab/peers/confclient against it,
// which imports the fixture's tools through the importer and calls through
// the registry.

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/lab/peers"
)

// conformanceRun bounds one scenario run of the CLI, fixture and client
// included.
const conformanceRun = 120 * time.Second

// TestConformanceClient runs the client scenarios toolgate must pass:
// initialize (protocol version, client info) and tools_call (import the
// fixture's add_numbers through the importer, IM-2/IM-11, and call it
// through the registry). Each must end with every check passed, none failed
// and no warnings.
func TestConformanceClient(t *testing.T) {
	t.Parallel()
	cli := peers.ConformanceCmd(t)
	bin := buildConfClient(t)
	for _, scenario := range []string{"initialize", "tools_call"} {
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			runClientScenario(t, cli, bin, scenario)
		})
	}
}

func buildConfClient(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the conformance client is built with the go command, which is not on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "confclient")
	// The suite splits --command on spaces.
	if strings.ContainsAny(bin, " \t") {
		t.Fatalf("temporary path %q has a space; the conformance suite would split it", bin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, gobin, "build", "-o", bin,
		"github.com/toolgate/toolgate/internal/lab/peers/confclient").CombinedOutput()
	if err != nil {
		t.Fatalf("go build confclient: %v\n%s", err, out)
	}
	return bin
}

var (
	ansi    = regexp.MustCompile(`\x1b\[[0-9;]*m`)
	results = regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings`)
)

func runClientScenario(t *testing.T, cli []string, bin, scenario string) {
	ctx, cancel := context.WithTimeout(context.Background(), conformanceRun)
	defer cancel()
	args := append(cli[1:len(cli):len(cli)], "client", "--command", bin, "--scenario", scenario,
		// The client's own budget, inside the run's.
		"--timeout", strconv.Itoa(int((conformanceRun - 30*time.Second).Milliseconds())))
	cmd := exec.Command(cli[0], args...)
	cmd.Dir = t.TempDir()
	// Captured, never streamed: the CLI's summary lines look like a test
	// count to whatever reads this test's output.
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	p := peers.Start(t, cmd)
	select {
	case <-p.Done():
	case <-ctx.Done():
		p.Kill()
		<-p.Done()
		t.Fatalf("conformance %s did not finish in %v\n%s", scenario, conformanceRun, logTail(out.String()))
	}
	text := ansi.ReplaceAllString(out.String(), "")
	if err := p.Err(); err != nil {
		t.Fatalf("conformance %s: %v after %v\n%s", scenario, err, time.Since(start).Round(time.Millisecond), logTail(text))
	}
	m := results.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("conformance %s: no results line\n%s", scenario, logTail(text))
	}
	ok, total, failed, warnings := m[1], m[2], m[3], m[4]
	if ok != total || total == "0" || failed != "0" || warnings != "0" || !strings.Contains(text, "OVERALL: PASSED") {
		t.Fatalf("conformance %s: %s/%s checks ok, %s failing, %s warnings\n%s", scenario, ok, total, failed, warnings, logTail(text))
	}
}

// logTail is the end of the CLI's output, fit for t.Log: the lines that
// read like a test count ("Total: N passed, N failed", "Passed: N/M") are
// reworded so nothing mistakes them for this test run's count.
func logTail(s string) string {
	s = ansi.ReplaceAllString(s, "")
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 60 {
		lines = lines[len(lines)-60:]
	}
	for i, l := range lines {
		l = strings.ReplaceAll(l, " passed,", " ok,")
		l = strings.ReplaceAll(l, "Passed:", "Checks ok:")
		lines[i] = "  | " + l
	}
	return strings.Join(lines, "\n")
}
