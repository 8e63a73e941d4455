package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/bench"
)

// PO-1, PO-3, OP-9: each profile the command prints is a config the
// gateway loads and validates, and carries what its name says; the
// everything profile holds bench's own rules and limits, traces of every
// call and the audit export.
func TestProfilesLoadPO1PO3OP9(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"BENCH_KEY": "benchkey-0123456789abcdef0123456789", "TOOLGATE_SELF": "/bin/true"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, name := range profiles {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := []string{"--listen", "127.0.0.1:18299", "--store", filepath.Join(dir, name+".db"),
				"--http", "http://127.0.0.1:18100/mcp", "--key-env", "BENCH_KEY",
				"--collector", "http://127.0.0.1:14318", "--export", filepath.Join(dir, "audit.jsonl"), name}
			if code := run(context.Background(), append([]string{"profile"}, args...), &out, &errOut); code != 0 {
				t.Fatalf("profile %s: exit %d: %s", name, code, errOut.String())
			}
			path := filepath.Join(dir, name+".yaml")
			if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, _, err := config.Load(path, config.LoadOptions{LookupEnv: lookup, Environ: func() []string {
				return []string{"TOOLGATE_GATEWAY_CONFIRM_SECRET=0123456789abcdef0123456789abcdef-lab"}
			}})
			if err != nil {
				t.Fatalf("load:\n%s\n%v", out.String(), err)
			}
			if _, err := cfg.Validate(); err != nil {
				t.Fatalf("validate: %v", err)
			}
			if got := cfg.Gateway.Listen; got != "127.0.0.1:18299" {
				t.Errorf("listen = %q", got)
			}
			if n := len(cfg.Upstreams); n != 2 {
				t.Errorf("%d upstreams, want http and stdio", n)
			}
			ep := cfg.Endpoints[0]
			governed := name != "open"
			if got := ep.Auth != nil && len(ep.Auth.APIKeys) == 1 && string(ep.Auth.APIKeys[0].Key) == env["BENCH_KEY"]; got != governed {
				t.Errorf("API key from the environment: %v, want %v", got, governed)
			}
			if got := cfg.Gateway.Review.Mode == "pin"; got != governed {
				t.Errorf("review mode %q", cfg.Gateway.Review.Mode)
			}
			everything := name == "everything"
			if !everything {
				if cfg.Policies != nil || len(cfg.Limits) != 0 || cfg.Telemetry.Traces.Endpoint != "" || cfg.Audit.Export.Path != "" {
					t.Errorf("profile %s has rules, limits, traces or an export", name)
				}
				return
			}
			if cfg.Policies == nil {
				t.Fatal("no policies")
			}
			if d := cmp.Diff(bench.PolicedRules(), cfg.Policies.Rules); d != "" {
				t.Errorf("rules differ from bench's (-bench +profile):\n%s", d)
			}
			if d := cmp.Diff(bench.PolicedLimits(), cfg.Limits); d != "" {
				t.Errorf("limits differ from bench's (-bench +profile):\n%s", d)
			}
			tr := cfg.Telemetry.Traces
			if tr.Endpoint != "http://127.0.0.1:14318" || tr.SampleRatio == nil || *tr.SampleRatio != 1.0 {
				t.Errorf("traces = %+v, want every call to the collector", tr)
			}
			if got := cfg.Audit.Export.Path; got != filepath.Join(dir, "audit.jsonl") {
				t.Errorf("export path = %q", got)
			}
		})
	}
}

// QB-3: a profile the command cannot write is a usage error that says why.
func TestProfileUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "x.db"}, "name one profile"},
		{[]string{"--store", "x.db", "loud"}, `unknown profile "loud"`},
		{[]string{"open"}, "--store is required"},
		{[]string{"--store", "x.db", "--stdio=false", "open"}, "no upstream"},
		{[]string{"--store", "x.db", "--key-env", "A-B", "governed"}, "not an environment variable's name"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), append([]string{"profile"}, tc.args...), &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if !strings.Contains(errOut.String(), tc.want) || out.Len() != 0 {
			t.Errorf("%v: stderr %q (want %q), stdout %q", tc.args, errOut.String(), tc.want, out.String())
		}
	}
}
