package config

import (
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/config")

// leakMarker is part of every secret value the tests use, in the
// environment and in fixture files alike; no error, warning, dump or
// generated YAML may contain it (IM-5).
const leakMarker = "SECRET-"

// fixedEnv is the environment every fixture is loaded with.
var fixedEnv = map[string]string{
	"TOOLGATE_CONFIRM_SECRET": "confirm-SECRET-0123456789abcdef-0123456789abcdef",
	"GATEWAY_KEY":             "gateway-SECRET-key-0123456789",
	"TOOLGATE_ADMIN_KEY":      "admin-SECRET-key-0123456789abcdef",
	"GITHUB_TOKEN":            "ghp_SECRET-github-token",
	"MCP_TOKEN":               "mcp-SECRET-token",
	"SIGNING_KEY":             "signing-SECRET-key",
	"MY_API_KEY":              "my-SECRET-api-key",
	"TEAM_ID":                 "team-42",
	"EMPTY_VAR":               "",
	// Unknown TOOLGATE_ variables are ignored, not errors.
	"TOOLGATE_SOMETHING_ELSE": "x",
}

const testHome = "/home/tester"

func optionsFor(env map[string]string) LoadOptions {
	return LoadOptions{
		Environ: func() []string {
			out := make([]string, 0, len(env))
			for k, v := range env {
				out = append(out, k+"="+v)
			}
			sort.Strings(out)
			return out
		},
		HomeDir: testHome,
		Version: "1.2.3-test",
	}
}

// fixtureEnv is fixedEnv for the fixture at path: a variable the key
// table reads as an override (TOOLGATE_CONFIRM_SECRET, an old name of
// the confirm secret's) is kept only when the fixture names it in a ${…},
// so it feeds that reference instead of setting a key the fixture leaves
// out.
func fixtureEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := withEnv(nil)
	for _, o := range EnvOverrides() {
		if _, ok := out[o.Name]; ok && !strings.Contains(string(src), o.Name) {
			delete(out, o.Name)
		}
	}
	return out
}

// withEnv returns fixedEnv plus extra (an empty-string key deletes).
func withEnv(extra map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range fixedEnv {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// writeConfig writes body to a temporary toolgate.yaml and returns its path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkGolden compares got with the golden file, or rewrites it under -update.
func checkGolden(t *testing.T, golden, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./config -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", golden, diff)
	}
}

func assertNoLeak(t *testing.T, what, s string) {
	t.Helper()
	if strings.Contains(s, leakMarker) {
		t.Errorf("%s contains a secret value (IM-5):\n%s", what, s)
	}
}

func mustLoad(t *testing.T, path string, env map[string]string) (*Config, []Warning) {
	t.Helper()
	cfg, warnings, err := Load(path, optionsFor(env))
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return cfg, warnings
}

func ptr[T any](v T) *T { return &v }
