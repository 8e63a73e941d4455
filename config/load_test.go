package config

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Every line of a config error names where the problem is: a key path, or
// file:line:col for YAML syntax (OP-1).
var errorLineRE = regexp.MustCompile(`^((gateway|endpoints|upstreams|upstreamsFrom)[^:]*: |unknown key "|config \S+:\d+:\d+: )`)

// TestBadConfigs loads each testdata/config/bad/NAME.yaml and compares the
// error with NAME.golden (OP-1, QB-3). `go test ./config -update` rewrites
// the goldens.
func TestBadConfigs(t *testing.T) {
	files, err := filepath.Glob("../testdata/config/bad/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("only %d bad configs; every rule needs one", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			cfg, warnings, err := Load(f, optionsFor(fixtureEnv(t, f)))
			if err == nil {
				t.Fatalf("loaded without error: %+v", cfg)
			}
			got := err.Error() + "\n"
			checkGolden(t, strings.TrimSuffix(f, ".yaml")+".golden", got)
			assertNoLeak(t, "error", got)
			for _, w := range warnings {
				assertNoLeak(t, "warning", w.String())
			}
			for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
				if !errorLineRE.MatchString(line) {
					t.Errorf("error line does not name a key path: %q", line)
				}
			}
		})
	}
}

func TestSyntaxErrorHasLineAndColumn(t *testing.T) {
	// OP-1: malformed YAML reports line and column, without the source line
	// (it may hold a secret).
	p := writeConfig(t, "gateway:\n  confirm:\n    secret: \"abc-SECRET-xyz\n")
	_, _, err := Load(p, optionsFor(fixedEnv))
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v (%T), want *SyntaxError", err, err)
	}
	if se.File != p || se.Line != 3 || se.Column != 13 {
		t.Errorf("position = %s:%d:%d, want %s:3:13", se.File, se.Line, se.Column, p)
	}
	assertNoLeak(t, "syntax error", err.Error())
}

func TestGoodConfigs(t *testing.T) {
	files, err := filepath.Glob("../testdata/config/good/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("only %d good configs", len(files))
	}
	abs, err := filepath.Abs("../testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			cfg, warnings := mustLoad(t, f, fixtureEnv(t, f))
			dump, err := Dump(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, w := range warnings {
				b.WriteString("# warning: " + w.String() + "\n")
			}
			b.Write(dump)
			got := strings.ReplaceAll(b.String(), abs, "$TESTDATA")
			checkGolden(t, strings.TrimSuffix(f, ".yaml")+".dump.golden", got)
			assertNoLeak(t, "dump", got)
		})
	}
}

// TestExampleFile: the documented example loads and validates cleanly with
// its variables set, and documents every key of the typed config.
func TestExampleFile(t *testing.T) {
	for k, v := range map[string]string{
		"TOOLGATE_GATEWAY_CONFIRM_SECRET": fixedEnv["TOOLGATE_CONFIRM_SECRET"],
		"GATEWAY_KEY":                     fixedEnv["GATEWAY_KEY"],
		"TOOLGATE_ADMIN_KEY":              fixedEnv["TOOLGATE_ADMIN_KEY"],
		"GITHUB_TOKEN":                    fixedEnv["GITHUB_TOKEN"],
		"MCP_TOKEN":                       fixedEnv["MCP_TOKEN"],
		"SIGNING_KEY":                     fixedEnv["SIGNING_KEY"],
	} {
		t.Setenv(k, v)
	}
	const example = "../testdata/toolgate.example.yaml"
	cfg, warnings, err := Load(example, LoadOptions{Version: "9.9.9"})
	if err != nil {
		t.Fatalf("example does not load: %v", err)
	}
	if len(warnings) != 0 {
		t.Errorf("example has warnings: %v", warnings)
	}
	if got := cfg.Endpoints[0].Auth.AnyOf[1].OAuth.ClientSecret.Reveal(); got != "oauth-client-SECRET-from-file-0123" {
		t.Errorf("clientSecret from ${file:} = %q", got)
	}
	if got := cfg.Upstreams[0].Env["GITHUB_TOKEN"].Reveal(); got != fixedEnv["GITHUB_TOKEN"] {
		t.Errorf("env GITHUB_TOKEN = %q", got)
	}

	text, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range allKeys() {
		if !regexp.MustCompile(`(?m)^\s*(- )?#?\s*` + regexp.QuoteMeta(key) + `:|[{,] ?` + regexp.QuoteMeta(key) + `:`).Match(text) {
			t.Errorf("example does not show key %q", key)
		}
	}
}

// allKeys lists every key of the configuration (docs/configuration.md) as
// the typed config declares it.
func allKeys() []string {
	return []string{
		"gateway", "listen", "publicUrl", "stateless", "store", "maxRequestBytes", "confirm", "secret", "ttl", "approvalWait",
		"messages", "preview", "invalid", "used", "expired", "rejected", "timedOut", "waiting", "shuttingDown", "review", "mode",
		"endpoints", "path", "name", "version", "instructions", "tools", "auth", "actor", "anyOf", "apiKeys", "key", "id", "roles", "tenant",
		"oauth", "issuer", "jwksUrl", "audience", "scopesSupported", "rolesFromScopes", "actorClaim", "tenantClaim", "introspectionUrl", "clientId", "clientSecret",
		"upstreams", "command", "args", "cwd", "env", "required", "prefix", "include", "exclude", "reads", "actions", "defaultKind", "approval", "timeout",
		"health", "enabled", "interval", "reconnect", "initialDelay", "maxDelay",
		"url", "transport", "headers", "authorization", "signing", "hmacSha256", "header", "roots", "upstreamsFrom",
		"metrics", "admin", "keys", "operator",
		"policies", "default", "rules", "when", "effect", "reason",
		"limits", "per", "match", "rate", "burst", "quota",
	}
}

func TestDefaults(t *testing.T) {
	// The documented defaults (docs/configuration.md); no endpoints ⇒ one /mcp that fails closed (AU-8).
	cfg, warnings := mustLoad(t, writeConfig(t, `
gateway:
  confirm: {secret: "${TOOLGATE_CONFIRM_SECRET}"}
upstreams:
  - name: github
    command: mcp-github
  - name: search
    url: https://mcp.example.com/mcp
`), fixedEnv)
	// IM-37: health checks and reconnects are on, every 30 s and capped at 30 s.
	health := Health{Interval: 30 * time.Second, Timeout: 5 * time.Second}
	reconnect := Reconnect{InitialDelay: time.Second, MaxDelay: 30 * time.Second}
	want := &Config{
		Gateway: Gateway{
			Listen:             "127.0.0.1:7331",
			MaxRequestBytes:    4194304,
			SessionIdleTimeout: 30 * time.Minute, SessionParkAfter: time.Second, MaxSessions: 10000, MaxSessionsPerActor: 100, MaxStreamsPerSession: 4,
			ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, HeartbeatInterval: 15 * time.Second,
			Confirm: Confirm{Secret: Secret(fixedEnv["TOOLGATE_CONFIRM_SECRET"]), TTL: 15 * time.Minute, ApprovalWait: 2 * time.Minute},
			Review:  Review{Mode: "pin"},
		},
		Endpoints: []Endpoint{{Path: "/mcp", Name: "toolgate", Version: "1.2.3-test", Tools: []string{"*"}}},
		Upstreams: []Upstream{
			{Name: "github", Command: "mcp-github", DefaultKind: "action", Approval: "client", Timeout: 30 * time.Second, Health: health, Reconnect: reconnect},
			{Name: "search", URL: "https://mcp.example.com/mcp", Transport: "auto", DefaultKind: "action", Approval: "client", Timeout: 30 * time.Second, Health: health, Reconnect: reconnect},
		},
		// IN-1: inspection off; content up to 1 MiB read once it is on.
		Inspect: Inspect{
			Arguments: InspectArguments{Secrets: "off", PII: "off"},
			Results:   InspectResults{Secrets: "off", PII: "off", Injection: "off", Links: "off"},
			MaxBytes:  1 << 20, FlowWindow: time.Hour,
		},
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	wantWarnings := []Warning{
		{Path: "endpoints", Message: "none configured: serving /mcp without auth or actor, so every request is refused; add an endpoint with auth"},
		{Path: "endpoints[0]", Message: "no auth and no actor: every request is refused with 401"},
	}
	if diff := cmp.Diff(wantWarnings, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if cfg.Upstreams[0].EffectivePrefix() != "github" {
		t.Errorf("EffectivePrefix = %q, want the name", cfg.Upstreams[0].EffectivePrefix())
	}
}

func TestZeroUpstreamsIsValid(t *testing.T) {
	for _, body := range []string{"", "upstreams: []\n", "# comment only\n"} {
		cfg, _ := mustLoad(t, writeConfig(t, body), fixedEnv)
		if len(cfg.Upstreams) != 0 {
			t.Errorf("%q: %d upstreams", body, len(cfg.Upstreams))
		}
		if cfg.MayServeActions() {
			t.Errorf("%q: MayServeActions with no upstreams", body)
		}
	}
}

func TestNoConfig(t *testing.T) {
	if _, _, err := Load("", LoadOptions{}); !errors.Is(err, ErrNoConfig) {
		t.Errorf("Load(\"\") = %v, want ErrNoConfig", err)
	}
	_, _, err := Load(filepath.Join(t.TempDir(), "missing.yaml"), optionsFor(fixedEnv))
	if !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrNoConfig) {
		t.Errorf("missing explicit file: err = %v, want not-exist (and not ErrNoConfig: only no path means the demo)", err)
	}
}

func TestDefaultPath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	t.Setenv("HOME", filepath.Join(dir, "home"))
	t.Setenv("AppData", filepath.Join(dir, "xdg"))

	if got := DefaultPath(); got != "" {
		t.Errorf("no file: DefaultPath() = %q, want \"\" (demo)", got)
	}
	userCfg, err := os.UserConfigDir()
	if err != nil {
		t.Skip("no user config dir:", err)
	}
	userFile := filepath.Join(userCfg, "toolgate", "toolgate.yaml")
	if err := os.MkdirAll(filepath.Dir(userFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(userFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := DefaultPath(); got != userFile {
		t.Errorf("user file only: DefaultPath() = %q, want %q", got, userFile)
	}
	if err := os.WriteFile("toolgate.yaml", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := DefaultPath(); got != "./toolgate.yaml" {
		t.Errorf("both: DefaultPath() = %q, want ./toolgate.yaml first", got)
	}
}

// TestOverrides: TOOLGATE_GATEWAY_… variables win over the file; other
// TOOLGATE_ variables are ignored (OP-1).
func TestOverrides(t *testing.T) {
	body := `
gateway:
  listen: 127.0.0.1:7331
  publicUrl: https://file.example.com
  confirm:
    secret: "${TOOLGATE_CONFIRM_SECRET}"
    ttl: 15m
  review: {mode: pin}
`
	tests := []struct {
		name string
		env  map[string]string
		want Gateway
	}{
		{
			name: "none",
			want: Gateway{Listen: "127.0.0.1:7331", PublicURL: "https://file.example.com", MaxRequestBytes: DefaultMaxRequestBytes, SessionIdleTimeout: DefaultSessionIdleTimeout, SessionParkAfter: DefaultSessionParkAfter,
				MaxSessions: DefaultMaxSessions, MaxSessionsPerActor: DefaultMaxSessionsPerActor, MaxStreamsPerSession: DefaultMaxStreamsPerSession,
				ReadTimeout: DefaultReadTimeout, WriteTimeout: DefaultWriteTimeout, IdleTimeout: DefaultIdleTimeout, HeartbeatInterval: DefaultHeartbeatInterval,
				Confirm: Confirm{Secret: Secret(fixedEnv["TOOLGATE_CONFIRM_SECRET"]), TTL: 15 * time.Minute, ApprovalWait: 2 * time.Minute}, Review: Review{Mode: "pin"}},
		},
		{
			name: "every key",
			env: map[string]string{
				"TOOLGATE_GATEWAY_LISTEN":               "127.0.0.1:9000",
				"TOOLGATE_GATEWAY_PUBLICURL":            "https://env.example.com",
				"TOOLGATE_GATEWAY_STATELESS":            "true",
				"TOOLGATE_GATEWAY_STORE":                "postgres://db/toolgate",
				"TOOLGATE_GATEWAY_MAXREQUESTBYTES":      "1024",
				"TOOLGATE_GATEWAY_CONFIRM_SECRET":       "override-SECRET-0123456789abcdef0123456789",
				"TOOLGATE_GATEWAY_CONFIRM_TTL":          "1m",
				"TOOLGATE_GATEWAY_CONFIRM_APPROVALWAIT": "10s",
				"TOOLGATE_GATEWAY_REVIEW_MODE":          "require",
				"TOOLGATE_GATEWAY_SESSIONIDLETIMEOUT":   "5m",
				"TOOLGATE_GATEWAY_SESSIONPARKAFTER":     "-1s",
				"TOOLGATE_GATEWAY_MAXSESSIONS":          "50",
				"TOOLGATE_GATEWAY_MAXSESSIONSPERACTOR":  "5",
				"TOOLGATE_GATEWAY_MAXSTREAMSPERSESSION": "2",
				"TOOLGATE_GATEWAY_READTIMEOUT":          "5s",
				"TOOLGATE_GATEWAY_WRITETIMEOUT":         "20s",
				"TOOLGATE_GATEWAY_IDLETIMEOUT":          "1m",
				"TOOLGATE_GATEWAY_HEARTBEATINTERVAL":    "10s",
			},
			want: Gateway{Listen: "127.0.0.1:9000", PublicURL: "https://env.example.com", Stateless: true, Store: "postgres://db/toolgate", MaxRequestBytes: 1024,
				SessionIdleTimeout: 5 * time.Minute, SessionParkAfter: -time.Second, MaxSessions: 50, MaxSessionsPerActor: 5, MaxStreamsPerSession: 2,
				ReadTimeout: 5 * time.Second, WriteTimeout: 20 * time.Second, IdleTimeout: time.Minute, HeartbeatInterval: 10 * time.Second,
				Confirm: Confirm{Secret: "override-SECRET-0123456789abcdef0123456789", TTL: time.Minute, ApprovalWait: 10 * time.Second}, Review: Review{Mode: "require"}},
		},
		{
			name: "case-insensitive, empty ignored, unknown ignored",
			env: map[string]string{
				"toolgate_gateway_listen":      "localhost:1234",
				"TOOLGATE_GATEWAY_PUBLICURL":   "",
				"TOOLGATE_FOO":                 "bar",
				"TOOLGATE_GATEWAY_NOPE":        "x",
				"TOOLGATE_UPSTREAMS_0_COMMAND": "evil",
			},
			want: Gateway{Listen: "localhost:1234", PublicURL: "https://file.example.com", MaxRequestBytes: DefaultMaxRequestBytes, SessionIdleTimeout: DefaultSessionIdleTimeout, SessionParkAfter: DefaultSessionParkAfter,
				MaxSessions: DefaultMaxSessions, MaxSessionsPerActor: DefaultMaxSessionsPerActor, MaxStreamsPerSession: DefaultMaxStreamsPerSession,
				ReadTimeout: DefaultReadTimeout, WriteTimeout: DefaultWriteTimeout, IdleTimeout: DefaultIdleTimeout, HeartbeatInterval: DefaultHeartbeatInterval,
				Confirm: Confirm{Secret: Secret(fixedEnv["TOOLGATE_CONFIRM_SECRET"]), TTL: 15 * time.Minute, ApprovalWait: 2 * time.Minute}, Review: Review{Mode: "pin"}},
		},
	}
	p := writeConfig(t, body)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := mustLoad(t, p, withEnv(tt.env))
			if diff := cmp.Diff(tt.want, cfg.Gateway); diff != "" {
				t.Errorf("gateway (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOverrideErrors(t *testing.T) {
	env := withEnv(map[string]string{
		"TOOLGATE_GATEWAY_MAXREQUESTBYTES": "lots",
		"TOOLGATE_GATEWAY_STATELESS":       "maybe",
		"TOOLGATE_GATEWAY_CONFIRM_TTL":     "forever",
	})
	_, _, err := Load(writeConfig(t, ""), optionsFor(env))
	want := `gateway.confirm.ttl: TOOLGATE_GATEWAY_CONFIRM_TTL is not a duration: "forever" (use Go syntax such as 30s or 15m)
gateway.maxRequestBytes: TOOLGATE_GATEWAY_MAXREQUESTBYTES is not an integer
gateway.stateless: TOOLGATE_GATEWAY_STATELESS is not a boolean (true or false)`
	if err == nil || err.Error() != want {
		t.Errorf("err =\n%v\nwant\n%s", err, want)
	}
}

// TestInterpolation covers ${VAR} substitution on parsed values (OP-1).
func TestInterpolation(t *testing.T) {
	tests := []struct {
		name  string
		value string
		env   map[string]string
		want  string
	}{
		{"plain", "plain text", nil, "plain text"},
		{"whole", "${X}", map[string]string{"X": "val"}, "val"},
		{"embedded", "a-${X}-b-${Y}", map[string]string{"X": "1", "Y": "2"}, "a-1-b-2"},
		{"env form", "${env:X}", map[string]string{"X": "vs"}, "vs"},
		{"escape", "$${X}", nil, "${X}"},
		{"escape then var", "$${X} is ${X}", map[string]string{"X": "x"}, "${X} is x"},
		{"lone dollar", "cost $5 and $X", nil, "cost $5 and $X"},
		{"set but empty", "[${EMPTY}]", map[string]string{"EMPTY": ""}, "[]"},
		{"value cannot inject structure", "${X}", map[string]string{"X": "a\nb: c\n- d"}, "a\nb: c\n- d"},
		{"no recursion", "${X}", map[string]string{"X": "${Y}", "Y": "no"}, "${Y}"},
		// OP-1, OP-2: Claude Code's default form; only an unset variable
		// takes the default.
		{"default when unset", "${X:-/var/lib/tg.db}", nil, "/var/lib/tg.db"},
		{"default when set", "${X:-fallback}", map[string]string{"X": "set"}, "set"},
		{"default when set but empty", "[${X:-fallback}]", map[string]string{"X": ""}, "[]"},
		{"empty default", "[${X:-}]", nil, "[]"},
		{"default with colons", "${X:-postgres://db.example.com:5432}/toolgate", nil, "postgres://db.example.com:5432/toolgate"},
		{"default not expanded again", "${X:-$Y}", nil, "$Y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeConfig(t, "gateway:\n  store: '"+strings.ReplaceAll(tt.value, "'", "''")+"'\n")
			cfg, _ := mustLoad(t, p, tt.env)
			got := cfg.Gateway.Store
			// Store is made absolute when it is a relative path.
			got = strings.TrimPrefix(got, filepath.Dir(p)+string(filepath.Separator))
			if got != tt.want {
				t.Errorf("store = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestInterpolationFillsTypedFields(t *testing.T) {
	// A substituted value may fill a number, boolean or duration field.
	cfg, _ := mustLoad(t, writeConfig(t, `
gateway:
  stateless: ${STATELESS}
  maxRequestBytes: ${MAX}
  confirm: {ttl: "${TTL}"}
`), map[string]string{"STATELESS": "true", "MAX": "2048", "TTL": "90s"})
	if !cfg.Gateway.Stateless || cfg.Gateway.MaxRequestBytes != 2048 || cfg.Gateway.Confirm.TTL != 90*time.Second {
		t.Errorf("gateway = %+v", cfg.Gateway)
	}
	// A literal string there is still a type error.
	_, _, err := Load(writeConfig(t, "gateway:\n  maxRequestBytes: \"2048\"\n"), optionsFor(nil))
	if err == nil || err.Error() != "gateway.maxRequestBytes: expected an integer, got a string" {
		t.Errorf("err = %v", err)
	}
}

// TestPrefix: absent ⇒ nil (default to name), "" ⇒ opt out (IM-11).
func TestPrefix(t *testing.T) {
	cfg, _ := mustLoad(t, writeConfig(t, `
upstreams:
  - {name: absent, command: a, defaultKind: read}
  - {name: empty, command: b, defaultKind: read, prefix: ""}
  - {name: custom, command: c, defaultKind: read, prefix: gh}
  - {name: null-is-absent, command: d, defaultKind: read, prefix: null}
`), fixedEnv)
	got := map[string]*string{}
	eff := map[string]string{}
	for _, u := range cfg.Upstreams {
		got[u.Name] = u.Prefix
		eff[u.Name] = u.EffectivePrefix()
	}
	want := map[string]*string{"absent": nil, "empty": ptr(""), "custom": ptr("gh"), "null-is-absent": nil}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Prefix (-want +got):\n%s", diff)
	}
	wantEff := map[string]string{"absent": "absent", "empty": "", "custom": "gh", "null-is-absent": "null-is-absent"}
	if diff := cmp.Diff(wantEff, eff); diff != "" {
		t.Errorf("EffectivePrefix (-want +got):\n%s", diff)
	}
}

// TestAudience: "default", "any" or a list (AU-1).
func TestAudience(t *testing.T) {
	tests := []struct {
		yaml string
		want Audience
		str  string
	}{
		{"", Audience{}, "default"},
		{"audience: default", Audience{}, "default"},
		{"audience: any", Audience{Any: true}, "any"},
		{"audience: [https://a.example.com, api://b]", Audience{Values: []string{"https://a.example.com", "api://b"}}, "[https://a.example.com, api://b]"},
		{"audience: [\"${AUD}\"]", Audience{Values: []string{"from-env"}}, "[from-env]"},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			cfg, _ := mustLoad(t, writeConfig(t, `
endpoints:
  - path: /mcp
    auth:
      oauth:
        issuer: https://id.example.com
        `+tt.yaml+"\n"), map[string]string{"AUD": "from-env"})
			got := cfg.Endpoints[0].Auth.OAuth.Audience
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("audience (-want +got):\n%s", diff)
			}
			if got.String() != tt.str {
				t.Errorf("String() = %q, want %q", got.String(), tt.str)
			}
			if got.IsDefault() != (tt.str == "default") {
				t.Errorf("IsDefault() = %v", got.IsDefault())
			}
		})
	}
}

// TestRolesFromScopesDottedKeys: the spec's example has `tools.admin` and
// `tools` side by side; dots in keys must survive loading.
func TestRolesFromScopesDottedKeys(t *testing.T) {
	cfg, _ := mustLoad(t, writeConfig(t, `
endpoints:
  - path: /mcp
    auth:
      anyOf:
        - oauth:
            issuer: https://id.example.com
            rolesFromScopes: {tools.admin: [ADMIN], tools: [MEMBER], a.b.c: [X, Y]}
upstreams:
  - name: s
    url: https://s.example.com/mcp
    defaultKind: read
    headers: {X.Dotted.Header: v}
`), fixedEnv)
	got := cfg.Endpoints[0].Auth.AnyOf[0].OAuth.RolesFromScopes
	want := map[string][]string{"tools.admin": {"ADMIN"}, "tools": {"MEMBER"}, "a.b.c": {"X", "Y"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rolesFromScopes (-want +got):\n%s", diff)
	}
	if got := cfg.Upstreams[0].Headers["X.Dotted.Header"]; got != "v" {
		t.Errorf("dotted header = %q", got.Reveal())
	}
	// Round trip through Dump and back.
	dump, err := Dump(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dump), "tools.admin:") {
		t.Errorf("dump lost the dotted key:\n%s", dump)
	}
}

func TestRelativePaths(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "toolgate.yaml")
	body := `
gateway:
  store: data/toolgate.db
upstreams:
  - {name: a, command: x, cwd: work, defaultKind: read}
  - {name: b, command: x, cwd: ~/mcp, defaultKind: read}
  - {name: c, command: x, cwd: /abs, defaultKind: read}
`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _ := mustLoad(t, p, nil)
	got := []string{cfg.Gateway.Store, cfg.Upstreams[0].Cwd, cfg.Upstreams[1].Cwd, cfg.Upstreams[2].Cwd}
	want := []string{filepath.Join(dir, "data/toolgate.db"), filepath.Join(dir, "work"), filepath.Join(testHome, "mcp"), "/abs"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
}

// TestUpstreamsFrom: the file's servers come after the config's own
// upstreams, in the file's order; `~` is the home directory, ${VAR} is
// expanded (OP-2).
func TestUpstreamsFrom(t *testing.T) {
	home := t.TempDir()
	json := `{"mcpServers": {"zeta": {"command": "z", "env": {"TOKEN": "${env:TEAM_ID}"}}, "alpha": {"url": "https://a.example.com/mcp", "type": "http"}}}`
	if err := os.WriteFile(filepath.Join(home, "mcp.json"), []byte(json), 0o600); err != nil {
		t.Fatal(err)
	}
	p := writeConfig(t, `
gateway: {confirm: {secret: "${TOOLGATE_CONFIRM_SECRET}"}}
upstreams:
  - {name: own, command: o}
upstreamsFrom: ~/mcp.json
`)
	opts := optionsFor(fixedEnv)
	opts.HomeDir = home
	cfg, _, err := Load(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range cfg.Upstreams {
		names = append(names, u.Name)
	}
	// File order, not alphabetical: it decides who keeps a contested name
	// (IM-13).
	if diff := cmp.Diff([]string{"own", "zeta", "alpha"}, names); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if got := cfg.Upstreams[1].Env["TOKEN"].Reveal(); got != "team-42" {
		t.Errorf("zeta env TOKEN = %q", got)
	}
	if got := cfg.Upstreams[2].Transport; got != "http" {
		t.Errorf("alpha transport = %q", got)
	}
	if got := cfg.UpstreamsFrom; got != filepath.Join(home, "mcp.json") {
		t.Errorf("UpstreamsFrom = %q", got)
	}
}

func TestKeyPath(t *testing.T) {
	tests := map[string]string{
		"config.Config":                        "",
		"upstreams[2].url":                     "upstreams[2].url",
		"upstreams[0].env[GITHUB_TOKEN]":       "upstreams[0].env.GITHUB_TOKEN",
		"endpoints[0].auth.anyOf[1].oauth":     "endpoints[0].auth.anyOf[1].oauth",
		"x.rolesFromScopes[tools.admin][0]":    "x.rolesFromScopes.tools.admin[0]",
		"gateway.confirm.ttl":                  "gateway.confirm.ttl",
		"upstreams[10].headers[X-Tenant]":      "upstreams[10].headers.X-Tenant",
		"endpoints[0].auth.oauth.audience[12]": "endpoints[0].auth.oauth.audience[12]",
	}
	for in, want := range tests {
		if got := keyPath(in); got != want {
			t.Errorf("keyPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNaturalOrder(t *testing.T) {
	errs := []FieldError{{Path: "upstreams[10].url"}, {Path: "upstreams[9].url"}, {Path: "gateway.listen"}, {Path: "upstreams[2]"}}
	sortFieldErrors(errs)
	var got []string
	for _, e := range errs {
		got = append(got, e.Path)
	}
	want := []string{"gateway.listen", "upstreams[2]", "upstreams[9].url", "upstreams[10].url"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// OP-1: configs copied from older docs write ${VAR} unquoted inside flow
// mappings, which plain YAML refuses; the loader quotes such whole-scalar references and
// the values are interpolated as usual.
func TestFlowMappingVars(t *testing.T) {
	cfg, _ := mustLoad(t, "../testdata/config/good/spec-appendix-a.yaml", fixedEnv)
	gh := cfg.Upstreams[0]
	if got := gh.Env["GITHUB_TOKEN"].Reveal(); got != fixedEnv["GITHUB_TOKEN"] {
		t.Fatalf("env.GITHUB_TOKEN = %q", got)
	}
	sig := cfg.Upstreams[1].Signing.HMACSHA256
	if sig.Secret.Reveal() != fixedEnv["SIGNING_KEY"] || sig.Header != "X-Signature" {
		t.Fatalf("signing = %q %q", sig.Secret.Reveal(), sig.Header)
	}

	p := writeConfig(t, "upstreams:\n  - {name: a, command: x, args: [${TEAM_ID}, ${TEAM_ID},${TEAM_ID}], defaultKind: read}\n")
	cfg, _ = mustLoad(t, p, fixedEnv)
	if diff := cmp.Diff([]string{"team-42", "team-42", "team-42"}, cfg.Upstreams[0].Args); diff != "" {
		t.Fatalf("args (-want +got):\n%s", diff)
	}

	// A flow mapping that is broken for another reason still reports it.
	p = writeConfig(t, "upstreams:\n  - {name: a, command: ${TEAM_ID}\n")
	if _, _, err := Load(p, optionsFor(fixedEnv)); err == nil || !strings.Contains(err.Error(), p+":") {
		t.Fatalf("broken flow mapping: %v", err)
	}
}

// OP-8: gateway.watchConfig is a boolean, off by default, and can be set
// from the environment like the other scalar gateway keys.
func TestWatchConfig(t *testing.T) {
	p := writeConfig(t, "gateway:\n  watchConfig: true\n")
	if cfg, _ := mustLoad(t, p, fixedEnv); !cfg.Gateway.WatchConfig {
		t.Error("watchConfig: true loaded as false")
	}
	p = writeConfig(t, "gateway: {}\n")
	if cfg, _ := mustLoad(t, p, fixedEnv); cfg.Gateway.WatchConfig {
		t.Error("watchConfig is on by default")
	}
	if cfg, _ := mustLoad(t, p, withEnv(map[string]string{"TOOLGATE_GATEWAY_WATCHCONFIG": "true"})); !cfg.Gateway.WatchConfig {
		t.Error("TOOLGATE_GATEWAY_WATCHCONFIG=true did not turn it on")
	}
}
