package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestImportGoldens converts each testdata/config/mcpservers/*.json into
// the upstreams YAML that `toolgate import-config` prints (OP-2), and checks
// that YAML loads back as a valid config with config.Load: servers in file
// order (IM-13), skipped ones named in comments, placeholders only for
// secrets, Claude Code's ${VAR:-default} taking its default.
func TestImportGoldens(t *testing.T) {
	files, err := filepath.Glob("../testdata/config/mcpservers/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("only %d mcpServers fixtures", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			imp, err := ParseMCPServers(data, "/base")
			if err != nil {
				t.Fatalf("ParseMCPServers: %v", err)
			}
			out, err := imp.YAML()
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, strings.TrimSuffix(f, ".json")+".yaml.golden", string(out))
			assertNoLeak(t, "import-config output", string(out))

			// The printed YAML is a config once its placeholders are set.
			// API_BASE_URL and NODE_ENV stay unset: their defaults apply.
			env := withEnv(map[string]string{
				"GITHUB_PERSONAL_ACCESS_TOKEN": "x", "REMOTE_API_AUTHORIZATION": "x", "PERPLEXITY_API_KEY": "x",
				"AIRTABLE_API_KEY": "x", "SLACK_TEAM": "x", "DATABASE_URL": "x", "API_KEY": "x", "HOME": testHome,
			})
			p := writeConfig(t, "gateway: {confirm: {secret: \"${TOOLGATE_CONFIRM_SECRET}\"}}\n"+string(out))
			cfg, _ := mustLoad(t, p, env)
			var got, want []string
			for _, u := range cfg.Upstreams {
				got = append(got, u.Name)
			}
			for _, u := range imp.Upstreams {
				want = append(want, u.Name)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("reloaded upstreams (-want +got):\n%s", diff)
			}
			if name == "claude-code" {
				if u := cfg.Upstreams[0]; u.URL != "https://api.example.com/mcp" || u.Headers["X-Tenant"].Reveal() != "acme" {
					t.Errorf("api-server reloaded as url %q, X-Tenant %q", u.URL, u.Headers["X-Tenant"].Reveal())
				}
				if got := cfg.Upstreams[1].Env["NODE_ENV"].Reveal(); got != "production" {
					t.Errorf("airtable NODE_ENV = %q, want the default", got)
				}
			}
		})
	}
}

func TestParseMCPServers(t *testing.T) {
	tests := []struct {
		name string
		json string
		want []Upstream
	}{
		{
			name: "claude desktop stdio, in file order (IM-13)",
			json: `{"mcpServers": {"zz": {"command": "z"}, "aa": {"command": "a", "args": ["x"], "env": {"K": "v"}, "cwd": "rel"}}}`,
			want: []Upstream{
				{Name: "zz", Command: "z"},
				{Name: "aa", Command: "a", Args: []string{"x"}, Env: map[string]Secret{"K": "v"}, Cwd: "/base/rel"},
			},
		},
		{
			name: "vs code types",
			json: `{"servers": {
				"a": {"type": "http", "url": "https://a"},
				"b": {"type": "streamable-http", "url": "https://b"},
				"c": {"type": "streamableHttp", "url": "https://c"},
				"d": {"type": "sse", "url": "https://d", "headers": {"H": "v"}},
				"e": {"url": "https://e"},
				"f": {"type": "stdio", "command": "f", "cwd": "/abs"}}}`,
			want: []Upstream{
				{Name: "a", URL: "https://a", Transport: "http"},
				{Name: "b", URL: "https://b", Transport: "http"},
				{Name: "c", URL: "https://c", Transport: "http"},
				{Name: "d", URL: "https://d", Transport: "sse", Headers: map[string]Secret{"H": "v"}},
				{Name: "e", URL: "https://e"},
				{Name: "f", Command: "f", Cwd: "/abs"},
			},
		},
		{
			name: "vs code settings.json",
			json: `{"editor.fontSize": 12, "mcp": {"servers": {"s": {"command": "s"}}}}`,
			want: []Upstream{{Name: "s", Command: "s"}},
		},
		{
			name: "names sanitised and made unique, the first in the file keeping it",
			json: `{"mcpServers": {"ok.name": {"command": "c"}, "My/Server": {"command": "b"}, "My Server": {"command": "a"}}}`,
			want: []Upstream{
				{Name: "ok_name", Command: "c"},
				{Name: "My_Server", Command: "b"},
				{Name: "My_Server_2", Command: "a"},
			},
		},
		{
			name: "windsurf serverUrl, disabled skipped",
			json: `{"mcpServers": {"w": {"serverUrl": "https://w"}, "off": {"command": "x", "disabled": true}}}`,
			want: []Upstream{{Name: "w", URL: "https://w"}},
		},
		{
			name: "jsonc",
			json: "{\n// comment\n\"mcpServers\": {/* c */ \"a\": {\"command\": \"http://not-a-comment\",},},\n}",
			want: []Upstream{{Name: "a", Command: "http://not-a-comment"}},
		},
		{
			name: "a repeated key keeps its first place and its last value, as JSON.parse does",
			json: `{"mcpServers": {"b": {"command": "b1"}, "a": {"command": "a"}, "b": {"command": "b2"}}}`,
			want: []Upstream{{Name: "b", Command: "b2"}, {Name: "a", Command: "a"}},
		},
		{name: "empty", json: `{"mcpServers": {}}`, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			imp, err := ParseMCPServers([]byte(tt.json), "/base")
			if err != nil {
				t.Fatal(err)
			}
			got := imp.Upstreams
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("upstreams (-want +got):\n%s", diff)
			}
		})
	}
}

// A file that is not an mcpServers file is an error.
func TestParseMCPServersErrors(t *testing.T) {
	tests := []struct {
		json, want string
	}{
		{`[]`, "expected a JSON object"},
		{`{"other": {}}`, `no "mcpServers" or "servers" object (Claude Desktop, Cursor or VS Code format)`},
		{`{"mcpServers": {}, "servers": {}}`, "both mcpServers and servers present; keep one"},
		{`{"mcpServers": []}`, "mcpServers: expected an object of servers"},
		{"{\n  \"mcpServers\": {\n    \"a\": {\"command\" \"x\"}\n  }\n}", `invalid JSON at line 3, column 21: invalid character '"' after object key`},
	}
	for _, tt := range tests {
		_, err := ParseMCPServers([]byte(tt.json), "/base")
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseMCPServers(%s):\n got %v\nwant %s", tt.json, err, tt.want)
		}
	}
}

// OP-2: a server that cannot be imported, or is disabled, is skipped with
// the reason; the rest of the file is imported.
func TestParseMCPServersSkips(t *testing.T) {
	tests := []struct {
		json, want string
	}{
		{`{"mcpServers": {"a": {}}}`, "mcpServers.a: has neither command nor url"},
		{`{"mcpServers": {"a": {"command": "x", "url": "https://x"}}}`, "mcpServers.a: has both command and url"},
		{`{"mcpServers": {"a": {"type": "stdio", "url": "https://x"}}}`, `mcpServers.a: type "stdio" needs command`},
		{`{"mcpServers": {"a": {"type": "sse", "command": "x"}}}`, `mcpServers.a: type "sse" needs url`},
		{`{"mcpServers": {"a b": {"type": "ws", "url": "wss://x"}}}`, `mcpServers["a b"]: unknown type "ws" (expected stdio, http, streamable-http or sse)`},
		{`{"servers": {"a": {"command": "x", "envFile": "${workspaceFolder}/.env"}}}`, "servers.a: envFile is not supported; move its variables into env"},
		{`{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}`, "mcpServers.a: env: expected a string, got a JSON number"},
		{`{"mcpServers": {"a": "x"}}`, "mcpServers.a: expected an object"},
		{`{"mcpServers": {"a": {"command": "x", "disabled": true}}}`, `mcpServers.a: disabled ("disabled": true)`},
		{`{"mcpServers": {"a": {"command": "x", "disabled": false}}}`, ""},
	}
	for _, tt := range tests {
		// The same server between two good ones: both of those are kept.
		j := strings.Replace(tt.json, `": {"`, `": {"first": {"command": "f"}, "`, 1)
		j = strings.TrimSuffix(j, "}}") + `, "last": {"command": "l"}}}`
		imp, err := ParseMCPServers([]byte(j), "/base")
		if err != nil {
			t.Errorf("ParseMCPServers(%s): %v", j, err)
			continue
		}
		var skipped, want []string
		for _, s := range imp.Skipped {
			skipped = append(skipped, s.String())
		}
		keep := 3
		if tt.want != "" {
			want, keep = []string{tt.want}, 2
		}
		if diff := cmp.Diff(want, skipped); diff != "" {
			t.Errorf("ParseMCPServers(%s) skipped (-want +got):\n%s", j, diff)
		}
		if len(imp.Upstreams) != keep || imp.Upstreams[0].Name != "first" || imp.Upstreams[keep-1].Name != "last" {
			t.Errorf("ParseMCPServers(%s) upstreams = %+v, want first and last", j, imp.Upstreams)
		}
	}
}

func TestUpstreamsYAMLPlaceholders(t *testing.T) {
	ups := []Upstream{{
		Name: "my-api", URL: "https://api.example.com/mcp", Transport: "http",
		Headers: map[string]Secret{
			"Authorization": "Bearer lit-SECRET-1",
			"X-Ref":         "${env:TEAM}",
			"X-Mixed":       "Bearer ${TOKEN}",
			"X-Input":       "${input:key}",
			"X-Default":     "${KEY:-sk-live-SECRET-default}",
			"X-Region":      "${REGION:-eu-west-1}",
		},
	}}
	out, err := UpstreamsYAML(ups)
	if err != nil {
		t.Fatal(err)
	}
	want := `upstreams:
  - name: my-api
    url: https://api.example.com/mcp
    transport: http
    headers:
      Authorization: "${MY_API_AUTHORIZATION}"  # set MY_API_AUTHORIZATION in the environment (the imported file had the value inline)
      X-Default: "${KEY}"  # set KEY in the environment (the imported file had a default inline)
      X-Input: "${MY_API_X_INPUT}"  # set MY_API_X_INPUT in the environment (replaces a VS Code input prompt)
      X-Mixed: "Bearer ${TOKEN}"
      X-Ref: "${TEAM}"
      X-Region: "${REGION:-eu-west-1}"
`
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("YAML (-want +got):\n%s", diff)
	}
	assertNoLeak(t, "UpstreamsYAML", string(out))
	if out, _ := UpstreamsYAML(nil); string(out) != "upstreams: []\n" {
		t.Errorf("no upstreams: %q", out)
	}
}

func TestYAMLScalar(t *testing.T) {
	for in, want := range map[string]string{
		"plain":         "plain",
		"-y":            "-y",
		"@scope/pkg":    `"@scope/pkg"`,
		"true":          `"true"`,
		"null":          `"null"`,
		"123":           `"123"`,
		"1.5":           `"1.5"`,
		"a: b":          `"a: b"`,
		"trailing:":     `"trailing:"`,
		"#comment":      `"#comment"`,
		"":              `""`,
		"with space":    `"with space"`,
		"${X}":          `"${X}"`,
		"/usr/bin/node": "/usr/bin/node",
		"a\"b\\c\n":     `"a\"b\\c\n"`,
		"<tag>&":        `"<tag>&"`,
		"~":             `"~"`,
		"~/x":           "~/x",
	} {
		if got := yamlScalar(in); got != want {
			t.Errorf("yamlScalar(%q) = %s, want %s", in, got, want)
		}
	}
}
