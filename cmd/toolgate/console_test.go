package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/gateway"
)

// TestConsoleEndToEnd runs testdata/e2e/console.sh: the demo console in a
// real terminal (tmux), driven by keys and a real MCP client (CO-1..CO-8,
// OP-4). CI installs tmux; elsewhere the test is skipped without it.
func TestConsoleEndToEnd(t *testing.T) {
	for _, tool := range []string{"tmux", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed: the console's end-to-end test needs it (.ci/run installs it with apt-get)", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	bin := toolgateBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "testdata", "e2e", "console.sh"), bin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("console.sh: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "PASS") {
		t.Fatalf("console.sh did not pass:\n%s", out.String())
	}
}

// OP-4: the demo is built in code and passes the config's own validation:
// open mode on loopback, operator approval on notes, a generated secret, a
// collision (two upstreams without prefix) and an unreachable upstream.
func TestDemoConfig(t *testing.T) {
	dir := t.TempDir()
	cfg, err := gateway.DemoConfig("/usr/bin/toolgate", dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.ListenIsLoopback() || len(cfg.OpenEndpoints()) != 1 {
		t.Fatalf("listen %s, open %v", cfg.Gateway.Listen, cfg.OpenEndpoints())
	}
	if s := cfg.Gateway.Confirm.Secret.Reveal(); len(s) != 64 {
		t.Fatalf("secret of %d hex digits", len(s))
	}
	other, err := gateway.DemoConfig("/usr/bin/toolgate", t.TempDir(), "test")
	if err != nil {
		t.Fatal(err)
	}
	if other.Gateway.Confirm.Secret.Reveal() == cfg.Gateway.Confirm.Secret.Reveal() {
		t.Fatal("the demo secret is not generated per session")
	}
	byName := map[string]config.Upstream{}
	for _, u := range cfg.Upstreams {
		byName[u.Name] = u
	}
	if byName["notes"].Approval != config.ApprovalOperator || byName["notes"].EffectivePrefix() != "" || byName["weather"].EffectivePrefix() != "" {
		t.Fatalf("notes/weather: %+v %+v", byName["notes"], byName["weather"])
	}
	if byName["offline"].URL == "" || byName["sneaky"].Command != "/usr/bin/toolgate" || byName["shifty"].Args[1] != "shifty" {
		t.Fatalf("upstreams: %+v", cfg.Upstreams)
	}
	if !strings.HasPrefix(cfg.Gateway.Store, dir) || cfg.Gateway.Review.Mode != config.ReviewPin {
		t.Fatalf("store %q, review %q", cfg.Gateway.Store, cfg.Gateway.Review.Mode)
	}
	// PO-1, PO-3: testdata/demo.yaml, the demo as a file, has the same
	// rules and limit as the built-in one.
	if cfg.Policies == nil || len(cfg.Policies.Rules) != 2 || len(cfg.Limits) != 1 {
		t.Fatalf("policies %+v, limits %+v", cfg.Policies, cfg.Limits)
	}
	t.Setenv(gateway.SelfEnv, "/usr/bin/toolgate")
	file, _, err := config.Load(filepath.Join("..", "..", "testdata", "demo.yaml"), config.LoadOptions{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(cfg.Policies, file.Policies); d != "" {
		t.Errorf("testdata/demo.yaml's policies differ from the built-in demo's (-built-in +file):\n%s", d)
	}
	if d := cmp.Diff(cfg.Limits, file.Limits); d != "" {
		t.Errorf("testdata/demo.yaml's limits differ from the built-in demo's (-built-in +file):\n%s", d)
	}
}
