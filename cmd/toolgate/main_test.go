package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/cmd/toolgate/internal/earlygc"
	"github.com/toolgate/toolgate/internal/report"
	"github.com/toolgate/toolgate/mcp/demo"
)

// exampleEnv is what testdata/toolgate.example.yaml references.
var exampleEnv = map[string]string{
	"TOOLGATE_GATEWAY_CONFIRM_SECRET": "cli-SECRET-confirm-0123456789abcdef0123456789",
	"GATEWAY_KEY":                     "cli-SECRET-gateway-key-0123456789",
	"TOOLGATE_ADMIN_KEY":              "cli-SECRET-admin-key-0123456789",
	"GITHUB_TOKEN":                    "cli-SECRET-github",
	"MCP_TOKEN":                       "cli-SECRET-mcp",
	"SIGNING_KEY":                     "cli-SECRET-signing",
}

func setExampleEnv(t *testing.T) {
	for k, v := range exampleEnv {
		t.Setenv(k, v)
	}
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func assertNoSecrets(t *testing.T, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(s, "cli-SECRET-") {
			t.Fatalf("a secret leaked (IM-5):\n%s", s)
		}
	}
}

// OP-3: every command exists and answers --help with status 0.
func TestEveryCommandHasHelp(t *testing.T) {
	for _, cmd := range commands() {
		t.Run(cmd.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, cmd.name, "--help")
			if code != 0 || !strings.HasPrefix(out, "Usage: toolgate "+cmd.name) || strings.Count(out, "Usage:") != 1 || errOut != "" {
				t.Fatalf("code=%d stdout=%q stderr=%q", code, out, errOut)
			}
		})
	}
	code, out, _ := runCLI(t, "--help")
	if code != 0 || !strings.Contains(out, "import-config") {
		t.Fatalf("top-level help: %d %q", code, out)
	}
	if code, _, errOut := runCLI(t, "frobnicate"); code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "check", "--bogus"); code != 2 || !strings.Contains(errOut, "bogus") {
		t.Fatalf("bad flag: %d %q", code, errOut)
	}
}

// Issue done-when: check of the example exits 0 with its variables set, and
// prints no secret.
func TestCheckExample(t *testing.T) {
	setExampleEnv(t)
	code, out, errOut := runCLI(t, "check", "--offline", "--config", "../../testdata/toolgate.example.yaml")
	if code != 0 {
		t.Fatalf("check exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(out, "config ok") || !strings.Contains(errOut, "not probed") {
		t.Fatalf("check output does not say what it did:\nstdout: %s\nstderr: %s", out, errOut)
	}
	// CO-9: check names the admin API and its operators, never a key.
	if !strings.Contains(out, "admin API on 127.0.0.1:7332 (this machine only), operators: alice") {
		t.Fatalf("check does not report the admin API:\n%s", out)
	}
	assertNoSecrets(t, out, errOut)

	code, out, errOut = runCLI(t, "check", "--offline", "--json", "--config", "../../testdata/toolgate.example.yaml")
	if code != 0 {
		t.Fatalf("check --json exit %d: %s", code, errOut)
	}
	var checked map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &checked); err != nil {
		t.Fatalf("check --json is not one JSON object: %v\n%s", err, out)
	}
	for _, key := range []string{"upstreams", "tools", "collisions", "dropped"} {
		if _, ok := checked[key]; !ok {
			t.Fatalf("check --json lacks %q: %s", key, out)
		}
	}
	var adm report.Admin
	if err := json.Unmarshal(checked["admin"], &adm); err != nil || !adm.Enabled || adm.Listen != "127.0.0.1:7332" || !adm.Loopback || len(adm.Operators) != 1 || adm.Operators[0] != "alice" {
		t.Fatalf("check --json admin: %v %s", err, checked["admin"])
	}
	var ups []report.Upstream
	if err := json.Unmarshal(checked["upstreams"], &ups); err != nil || len(ups) == 0 || ups[0].Name != "github" || ups[0].Transport != "stdio" {
		t.Fatalf("upstreams: %v %+v", err, ups)
	}
	assertNoSecrets(t, out, errOut)
}

// CO-9: without gateway.admin there is no admin API, and check
// says so, in --json too.
func TestCheckWithoutAdmin(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(cfg, []byte("endpoints:\n  - path: /mcp\n    actor: {id: dev}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "check", "--offline", "--config", cfg)
	if code != 0 || !strings.Contains(out, "admin API: none (no gateway.admin)") {
		t.Fatalf("check exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "check", "--offline", "--json", "--config", cfg)
	var checked struct {
		Admin *report.Admin `json:"admin"`
	}
	if err := json.Unmarshal([]byte(out), &checked); code != 0 || err != nil || checked.Admin == nil || checked.Admin.Enabled {
		t.Fatalf("check --json exit %d, admin %+v (%v)\n%s%s", code, checked.Admin, err, out, errOut)
	}
}

// Issue done-when: each bad config exits 1 with the config package's
// message, which names the key path (or file:line:col).
func TestCheckBadConfigs(t *testing.T) {
	// The environment the config package's golden files were written with
	// (TOOLGATE_CONFIRM_SECRET, an old name of the confirm secret's
	// override, only for the fixtures that name it; see fixtureEnv there).
	for k, v := range map[string]string{
		"GATEWAY_KEY":  "cli-SECRET-gateway-key-0123456789",
		"GITHUB_TOKEN": "cli-SECRET-github",
		"MCP_TOKEN":    "cli-SECRET-mcp",
		"SIGNING_KEY":  "cli-SECRET-signing",
		"MY_API_KEY":   "cli-SECRET-my-api-key",
		"TEAM_ID":      "team-42",
		"EMPTY_VAR":    "",
	} {
		t.Setenv(k, v)
	}
	files, err := filepath.Glob("../../testdata/config/bad/*.yaml")
	if err != nil || len(files) < 30 {
		t.Fatalf("bad configs: %v (%d)", err, len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			if src, err := os.ReadFile(f); err != nil {
				t.Fatal(err)
			} else if strings.Contains(string(src), "TOOLGATE_CONFIRM_SECRET") {
				t.Setenv("TOOLGATE_CONFIRM_SECRET", "cli-SECRET-confirm-0123456789abcdef0123456789")
			}
			code, out, errOut := runCLI(t, "check", "--config", f)
			if code != 1 {
				t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			// The first line of the golden (written by the config tests, whose
			// working directory is config/) names the same problem.
			golden, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".golden")
			if err != nil {
				t.Fatal(err)
			}
			first := strings.SplitN(strings.TrimSpace(string(golden)), "\n", 2)[0]
			first = strings.ReplaceAll(first, "../testdata/", "../../testdata/")
			if !strings.Contains(errOut, first) {
				t.Fatalf("stderr does not carry the expected error\nwant line: %s\ngot: %s", first, errOut)
			}
			assertNoSecrets(t, out, errOut)

			// OP-3: with --json, stdout is one object naming the
			// same problem, and still no secret (IM-5).
			code, out, errOut = runCLI(t, "check", "--json", "--config", f)
			if code != 1 {
				t.Fatalf("--json: exit %d, want 1\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			if msg := checkError(t, out); !strings.Contains(msg, first) {
				t.Fatalf("--json: error does not carry the expected error\nwant line: %s\ngot: %s", first, msg)
			}
			assertNoSecrets(t, out, errOut)
			if strings.Contains(out, "literal-SECRET") {
				t.Fatalf("--json: a secret of the file leaked (IM-5):\n%s", out)
			}
		})
	}
}

// checkError decodes check --json's output as the one-key error object.
func checkError(t *testing.T, out string) string {
	t.Helper()
	var obj map[string]string
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&obj); err != nil || len(obj) != 1 || obj["error"] == "" || dec.More() {
		t.Fatalf("check --json did not print one {\"error\": …} object (%v):\n%s", err, out)
	}
	return obj["error"]
}

// OP-3: check --json of a file that is missing or cannot be read
// prints the error object too, exit 1.
func TestCheckJSONUnreadableConfig(t *testing.T) {
	dir := t.TempDir()
	for name, path := range map[string]string{
		"missing":   filepath.Join(dir, "missing.yaml"),
		"directory": dir,
	} {
		code, out, errOut := runCLI(t, "check", "--json", "--config", path)
		if code != 1 {
			t.Fatalf("%s: exit %d, want 1\nstdout: %s\nstderr: %s", name, code, out, errOut)
		}
		if msg := checkError(t, out); !strings.Contains(msg, path) {
			t.Fatalf("%s: error %q does not name the file", name, msg)
		}
	}
}

func TestCheckWithoutConfig(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	code, _, errOut := runCLI(t, "check")
	if code != 1 || !strings.Contains(errOut, "no config file") {
		t.Fatalf("check with no config: %d %q", code, errOut)
	}
	code, out, _ := runCLI(t, "check", "--json")
	if code != 1 || !strings.Contains(checkError(t, out), "no config file") {
		t.Fatalf("check --json with no config: %d %q", code, out)
	}
	code, out, _ = runCLI(t)
	if code != 0 || !strings.Contains(out, "demo") {
		t.Fatalf("toolgate with no config: %d %q", code, out)
	}
}

// OP-2: import-config prints the upstreams YAML the config package produces,
// servers in file order (IM-13), and says on stderr which servers it skipped
// and why.
func TestImportConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		skipped []string
	}{
		{"claude-desktop", []string{`skipped mcpServers.old: disabled ("disabled": true)`}},
		{"claude-code", nil},
		{"cursor", nil},
		{"vscode", []string{"skipped servers.postgres: envFile is not supported; move its variables into env"}},
	} {
		name := tc.name
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "import-config", "../../testdata/config/mcpservers/"+name+".json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, s := range tc.skipped {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr %q does not say %q", errOut, s)
				}
			}
			if tc.skipped == nil && errOut != "" {
				t.Errorf("stderr = %q, want nothing", errOut)
			}
			want, err := os.ReadFile("../../testdata/config/mcpservers/" + name + ".yaml.golden")
			if err != nil {
				t.Fatal(err)
			}
			if out != string(want) {
				t.Fatalf("output differs from golden\n--- got\n%s\n--- want\n%s", out, want)
			}
			assertNoSecrets(t, out, errOut)
		})
	}
	if code, _, errOut := runCLI(t, "import-config", "does-not-exist.json"); code != 1 || errOut == "" {
		t.Fatalf("missing file: %d %q", code, errOut)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"mcpServers": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "import-config", bad); code != 1 || !strings.Contains(errOut, "bad.json") {
		t.Fatalf("malformed file: %d %q", code, errOut)
	}
	if code, _, _ := runCLI(t, "import-config"); code != 2 {
		t.Fatalf("no argument: %d", code)
	}
}

func TestToolsJSON(t *testing.T) {
	setExampleEnv(t)
	code, out, errOut := runCLI(t, "tools", "--json", "--config", "../../testdata/toolgate.example.yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var tools []report.Tool
	if err := json.Unmarshal([]byte(out), &tools); err != nil {
		t.Fatalf("tools --json is not an array: %v\n%s", err, out)
	}
	// The example's upstreams are fictional: both are reported, none fails
	// the command since neither is required (IM-8).
	if !strings.Contains(errOut, "upstream github is failed") || !strings.Contains(errOut, "upstream search is failed") {
		t.Fatalf("tools does not report the unreachable upstreams: %q", errOut)
	}
	assertNoSecrets(t, out, errOut)
}

// The real binary: exit statuses as a shell sees them.
func TestBinaryExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "toolgate")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cases := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"version"}, 0, "toolgate "},
		{[]string{"check", "--config", "../../testdata/config/bad/upstream-both.yaml"}, 1, "upstreams[0]"},
		{[]string{"serve", "--help"}, 0, "Usage: toolgate serve"},
	}
	for _, tc := range cases {
		cmd := exec.Command(bin, tc.args...)
		cmd.Env = append(os.Environ(), "TOOLGATE_CONFIRM_SECRET="+exampleEnv["TOOLGATE_CONFIRM_SECRET"])
		out, _ := cmd.CombinedOutput()
		if got := cmd.ProcessState.ExitCode(); got != tc.code || !strings.Contains(string(out), tc.out) {
			t.Errorf("toolgate %v: exit %d, output %q; want exit %d containing %q", tc.args, got, out, tc.code, tc.out)
		}
	}
}

// IM-9, IM-2, OP-3: check shows an upstream with transport omitted
// (auto) over the transport that answered, in text and in --json.
func TestCheckShowsResolvedTransportIM9(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	weather, err := demo.New("weather", demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	echo, err := demo.New("echo", demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	legacy := httptest.NewServer(server.NewSSEServer(weather))
	t.Cleanup(legacy.Close)
	modern := httptest.NewServer(server.NewStreamableHTTPServer(echo))
	t.Cleanup(modern.Close)
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	yaml := "endpoints:\n  - path: /mcp\n    actor: {id: test, roles: [ADMIN]}\n" +
		"upstreams:\n" +
		"  - name: legacy\n    url: " + legacy.URL + "/sse\n    defaultKind: read\n" +
		"  - name: modern\n    url: " + modern.URL + "/mcp\n    defaultKind: read\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runCLI(t, "check", "--json", "--config", path)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var checked report.Check
	if err := json.Unmarshal([]byte(out), &checked); err != nil {
		t.Fatalf("not the check object: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, u := range checked.Upstreams {
		got[u.Name] = u.State + " over " + u.Transport
	}
	want := map[string]string{"legacy": "connected over sse", "modern": "connected over http"}
	if !maps.Equal(got, want) {
		t.Fatalf("upstreams: %v, want %v", got, want)
	}

	code, out, errOut = runCLI(t, "check", "--config", path)
	if code != 0 || !regexp.MustCompile(`upstream legacy +sse +connected`).MatchString(out) ||
		!regexp.MustCompile(`upstream modern +http +connected`).MatchString(out) {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// QB-5: package main's initialiser resumed the collector earlygc held off
// during the other initialisers: from the first collection on, everything
// main runs has it as GOGC says.
func TestCollectorOnAfterInitQB5(t *testing.T) {
	want := 100
	switch v := os.Getenv("GOGC"); v {
	case "":
	case "off":
		want = -1
	default:
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Skipf("GOGC=%q", v)
		}
		want = n
	}
	settled := false
	for range 2000 {
		runtime.GC()
		select {
		case <-earlygc.Settled():
			settled = true
		default:
			time.Sleep(time.Millisecond) // the cleanup runs on the runtime's goroutine
		}
		if settled {
			break
		}
	}
	if !settled {
		t.Fatal("no collection gave the collector its setting back")
	}
	if got := debug.SetGCPercent(want); got != want {
		t.Errorf("the collector's setting in main is %d, want %d", got, want)
	}
}

// QB-5: the collector is off before the heavy initialisers start, so the
// binary's start runs no collection at all before main: earlygc comes
// ahead of the phone-number metadata and the JSON Schema meta-schemas in
// the initialisation order, and no cycle ends (gctrace prints one line per
// cycle) before the last initialiser has run.
func TestNoCollectionBeforeMainQB5(t *testing.T) {
	bin := toolgateBinary(t)
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1,gctrace=1", "GOGC=100", "GOMEMLIMIT=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("toolgate version: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(stderr.String(), "\n")
	at := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return i
			}
		}
		t.Fatalf("no line %q in the trace:\n%s", prefix, stderr.String())
		return -1
	}
	held := at("init github.com/toolgate/toolgate/cmd/toolgate/internal/earlygc ")
	for _, heavy := range []string{"github.com/nyaruka/phonenumbers ", "github.com/santhosh-tekuri/jsonschema/v6 "} {
		if i := at("init " + heavy); i < held {
			t.Errorf("%sinitialised before earlygc held the collector off", heavy)
		}
	}
	lastInit := 0
	for i, l := range lines {
		if strings.HasPrefix(l, "init ") {
			lastInit = i
		}
	}
	for _, l := range lines[:lastInit] {
		if strings.HasPrefix(l, "gc ") {
			t.Errorf("a collection ran among the initialisers: %s", l)
		}
	}
}
