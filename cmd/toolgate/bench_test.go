package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gateway"
)

// QB-2: bench runs every phase end to end and reports the ratios and zero
// errors. Speed is a benchmark, not a timed test: no timing or ratio is
// asserted, only that each was measured.
func TestBenchQuickJSON(t *testing.T) {
	t.Setenv(gateway.SelfEnv, toolgateBinary(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code := runBench(ctx, &cli{stdout: &out, stderr: &errOut}, []string{
		"--quick", "--json",
		"--calls", "12", "--sessions", "2", "--seconds", "0.2", "--rounds", "2",
		"--idle-sessions", "10", "--upstreams", "3", "--upstream-tools", "4", "--list-delay", "20ms", "--startup-rounds", "1",
		"--startup-order", "shuffled",
	})
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s\nstdout: %s", code, errOut.String(), out.String())
	}
	var res struct {
		Config struct {
			Quick        bool   `json:"quick"`
			Calls        int    `json:"calls"`
			Sessions     int    `json:"sessions"`
			StartupOrder string `json:"startupOrder"`
		} `json:"config"`
		HTTP             map[string]json.RawMessage `json:"http"`
		Stdio            map[string]json.RawMessage `json:"stdio"`
		StartupRatio     *float64                   `json:"startupRatio"`
		IdleSessionBytes *float64                   `json:"idleSessionBytes"`
		Errors           *int                       `json:"errors"`
		HopFloor         *struct {
			SeqP50Ratio float64 `json:"seqP50Ratio"`
			ConcRatio   float64 `json:"concRatio"`
		} `json:"httpHopFloor"`
		Modern *struct {
			Via struct {
				Seq  struct{ Calls int } `json:"seq"`
				Conc struct{ Calls int } `json:"conc"`
			} `json:"via"`
			SeqP50Ratio float64 `json:"seqP50RatioToLegacy"`
			ConcRatio   float64 `json:"concRatioToLegacy"`
		} `json:"httpModern"`
		Startup struct {
			ToolsServed   int `json:"toolsServed"`
			ToolsExpected int `json:"toolsExpected"`
			Rounds        []json.RawMessage
		} `json:"startup"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out.String())
	}
	if !res.Config.Quick || res.Config.Calls != 12 || res.Config.Sessions != 2 || res.Config.StartupOrder != "shuffled" {
		t.Errorf("config not echoed: %+v", res.Config)
	}
	for name, tr := range map[string]map[string]json.RawMessage{"http": res.HTTP, "stdio": res.Stdio} {
		for _, k := range []string{"seqP50Ratio", "seqP99Ratio", "concRatio", "errors", "direct", "via", "gatewayCpuPerCallUs"} {
			if _, ok := tr[k]; !ok {
				t.Errorf("%s.%s missing", name, k)
			}
		}
		var n int
		if err := json.Unmarshal(tr["errors"], &n); err != nil || n != 0 {
			t.Errorf("%s.errors = %s, want 0 (note: %s)", name, tr["errors"], tr["note"])
		}
		for _, path := range []string{"direct", "via"} {
			var p struct {
				Seq  struct{ Calls int } `json:"seq"`
				Conc struct{ Calls int } `json:"conc"`
			}
			if err := json.Unmarshal(tr[path], &p); err != nil || p.Seq.Calls != 12 || p.Conc.Calls == 0 {
				t.Errorf("%s.%s: %s", name, path, tr[path])
			}
		}
	}
	// A 2026-07-28 client's calls are measured beside the legacy session's.
	if m := res.Modern; m == nil || m.Via.Seq.Calls != 12 || m.Via.Conc.Calls == 0 || m.SeqP50Ratio <= 0 || m.ConcRatio <= 0 {
		t.Errorf("httpModern missing or empty: %+v", res.Modern)
	}
	if res.HopFloor == nil || res.HopFloor.SeqP50Ratio <= 0 || res.HopFloor.ConcRatio <= 0 {
		t.Errorf("httpHopFloor missing or empty: %+v", res.HopFloor)
	}
	if res.StartupRatio == nil || res.IdleSessionBytes == nil || res.Errors == nil {
		t.Fatalf("startupRatio, idleSessionBytes or errors missing:\n%s", out.String())
	}
	if *res.Errors != 0 {
		t.Errorf("errors = %d, want 0\n%s", *res.Errors, out.String())
	}
	if res.Startup.ToolsServed != 12 || res.Startup.ToolsExpected != 12 || len(res.Startup.Rounds) != 1 {
		t.Errorf("start-up: served %d of %d tools in %d rounds", res.Startup.ToolsServed, res.Startup.ToolsExpected, len(res.Startup.Rounds))
	}
}

// The sizes for tests stay out of --help; bad values are usage errors.
func TestBenchFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut}
	if code := runBench(context.Background(), c, []string{"--help"}); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	help := out.String()
	for _, want := range []string{"Usage: toolgate bench", "-json", "-quick", "-cpuprofile", "-soak", "-soak-duration"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q:\n%s", want, help)
		}
	}
	for name := range benchHidden {
		if strings.Contains(help, "-"+name+" ") || strings.Contains(help, "-"+name+"\n") {
			t.Errorf("--help shows the hidden flag %s:\n%s", name, help)
		}
	}
	for _, args := range [][]string{{"--calls", "-1"}, {"--seconds", "-2"}, {"--startup-order", "sideways"}, {"--bogus"}, {"extra"},
		{"--soak", "--soak-duration", "0s"}, {"--soak", "--soak-duration", "11m"}, {"--soak", "--soak-clients", "-1"}} {
		errOut.Reset()
		if code := runBench(context.Background(), c, args); code != 2 || errOut.Len() == 0 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", args, code, errOut.String())
		}
	}
}
