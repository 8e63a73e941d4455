package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/mcp/demo"
)

// policyCLI runs `toolgate policy ARGS…` in process.
func policyCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut}
	code = runPolicy(faultCtx(t, 90*time.Second), c, args)
	return code, out.String(), errOut.String()
}

// policyConfig writes a config with the notes demo served over loopback
// HTTP until the test ends, an API-key endpoint for carl (a contractor)
// and the rules of the spec's example.
func policyConfig(t *testing.T) string {
	t.Helper()
	return policyConfigWith(t, "")
}

// policyConfigWith is policyConfig with extra gateway keys (indented
// under gateway:).
func policyConfigWith(t *testing.T, gatewayExtra string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- demo.ServeHTTP(ctx, "notes", demo.Options{}, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("demo: %v", err)
		}
	})
	yaml := fmt.Sprintf(`gateway:
  listen: 127.0.0.1:0
  store: %q
  confirm:
    secret: policy-test-confirm-secret-0123456789abcdef
%sendpoints:
  - path: /mcp
    auth:
      apiKeys:
        - key: policy-test-key-0123456789
          actor: {id: carl, roles: [contractor], tenant: acme}
  - path: /ops
    actor: {id: dev, roles: [ADMIN]}
    policies:
      default: deny
      rules:
        - {id: admins, when: '"ADMIN" in actor.roles', effect: allow}
upstreams:
  - name: notes
    url: http://%s/mcp
    transport: http
    timeout: 20s
policies:
  rules:
    - id: big-notes
      when: tool.name == "notes_create_note" && size(args.text) > 10
      effect: approve
      reason: long notes need an operator
    - id: contractors-search-docs-only
      when: '"contractor" in actor.roles && tool.name == "notes_search" && !args.query.startsWith("docs")'
      effect: deny
      reason: contractors search docs only
    - id: no-counters
      when: '"contractor" in actor.roles && tool.name == "notes_side_effects"'
      effect: deny
`, filepath.Join(t.TempDir(), "toolgate.db"), gatewayExtra, ln.Addr())
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// PO-4, OP-3: policy test names the deciding rule, its effect and
// reason without calling anything; the actor's roles come from the
// config's API key, or from --roles and --tenant.
func TestPolicyTest(t *testing.T) {
	cfg := policyConfig(t)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"a deny by argument", []string{"--actor", "carl", "--tool", "notes_search", "--args", `{"query":"payroll"}`},
			[]string{"rule:      contractors-search-docs-only", "effect:    deny", "reason:    contractors search docs only", "listed:    yes", "roles=contractor tenant=acme"}},
		{"the same call, allowed", []string{"--actor", "carl", "--tool", "notes_search", "--args", `{"query":"docs/a"}`},
			[]string{"rule:      default", "effect:    allow"}},
		{"an approve", []string{"--actor", "carl", "--tool", "notes_create_note", "--args", `{"text":"a rather long note"}`},
			[]string{"rule:      big-notes", "effect:    approve", "reason:    long notes need an operator"}},
		{"a hidden tool", []string{"--actor", "carl", "--tool", "notes_side_effects"},
			[]string{"rule:      no-counters", "effect:    deny", "listed:    no"}},
		{"roles from the flags", []string{"--actor", "carl", "--roles", "MEMBER", "--tenant", "t2", "--tool", "notes_search", "--args", `{"query":"payroll"}`},
			[]string{"rule:      default", "effect:    allow", "roles=MEMBER tenant=t2"}},
		{"an endpoint's default", []string{"--actor", "eve", "--endpoint", "/ops", "--tool", "notes_list_notes"},
			[]string{"rule:      default", "effect:    deny", "listed:    no", "endpoint:  /ops"}},
		{"an endpoint's rule", []string{"--actor", "dev", "--endpoint", "/ops", "--tool", "notes_list_notes"},
			[]string{"rule:      admins", "effect:    allow"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := policyCLI(t, append([]string{"test", "--config", cfg}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s%s", code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	code, out, errOut := policyCLI(t, "test", "--config", cfg, "--json", "--actor", "carl", "--tool", "notes_search", "--args", `{"query":"x"}`)
	var trial gateway.PolicyTrial
	if code != 0 || json.Unmarshal([]byte(out), &trial) != nil || trial.Rule != "contractors-search-docs-only" || trial.Effect != "deny" {
		t.Fatalf("--json: %d %s %s", code, out, errOut)
	}
}

// Bad input to policy test: a clear error and status 1 or 2, each kind.
//
// Covers PO-4.
func TestPolicyTestRefuses(t *testing.T) {
	cfg := policyConfig(t)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no actor", []string{"--tool", "notes_search"}, 2, "--actor and --tool are required"},
		{"args not JSON", []string{"--actor", "carl", "--tool", "notes_search", "--args", `{"query":`}, 2, "--args must be a JSON object"},
		{"args not an object", []string{"--actor", "carl", "--tool", "notes_search", "--args", `[1]`}, 2, "--args must be a JSON object"},
		{"an unknown tool", []string{"--actor", "carl", "--tool", "nope"}, 1, "unknown tool"},
		{"invalid arguments", []string{"--actor", "carl", "--tool", "notes_search", "--args", `{"query":1}`}, 1, "invalid arguments"},
		{"an unknown endpoint", []string{"--actor", "carl", "--tool", "notes_search", "--endpoint", "/nope"}, 1, "no such endpoint"},
		// DS-2: only call_tool is a route a call can take, and only where
		// the endpoint has tool search.
		{"via another tool", []string{"--actor", "carl", "--tool", "notes_search", "--via", "search_tools"}, 2, `--via must be call_tool, not "search_tools"`},
		{"via call_tool without search", []string{"--actor", "carl", "--tool", "notes_search", "--via", "call_tool"}, 1, "serves no call_tool: its discovery mode is not search"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := policyCLI(t, append([]string{"test", "--config", cfg}, tt.args...)...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stderr %q (stdout %q); want %d and %q", code, errOut, out, tt.code, tt.want)
			}
		})
	}
}

// Covers PO-4.
func TestPolicyList(t *testing.T) {
	cfg := policyConfig(t)
	code, out, errOut := policyCLI(t, "list", "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"/mcp (default: allow)", "/ops (default: deny)", "big-notes", "approve", "long notes need an operator",
		"admins", "endpoints[1].policies"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	code, out, _ = policyCLI(t, "list", "--config", cfg, "--json")
	var got []policyListing
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got) != 2 || len(got[0].Rules) != 3 || len(got[1].Rules) != 4 || got[1].Default != "deny" {
		t.Fatalf("--json: %d %s", code, out)
	}
	if code, _, errOut := policyCLI(t, "frob"); code != 2 || !strings.Contains(errOut, `unknown subcommand "frob"`) {
		t.Fatalf("unknown subcommand: %d %q", code, errOut)
	}
}

// PO-4, CO-9: policy test --attach asks the running gateway, over its
// admin API, with the rules it runs and the roles its config gives.
func TestPolicyTestAttached(t *testing.T) {
	const adminKey = "policy-test-admin-key-0123456789abcdef"
	path := policyConfigWith(t, "  admin:\n    listen: 127.0.0.1:0\n    keys:\n      - {key: "+adminKey+", operator: olivia}\n")
	cfg, _, err := config.Load(path, config.LoadOptions{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := faultCtx(t, 90*time.Second)
	g, err := gateway.New(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	url := "http://" + g.AdminAddr()
	code, out, errOut := policyCLI(t, "test", "--attach", url, "--admin-key", adminKey, "--actor", "carl", "--tool", "notes_search", "--args", `{"query":"payroll"}`)
	if code != 0 || !strings.Contains(out, "rule:      contractors-search-docs-only") || !strings.Contains(out, "roles=contractor tenant=acme") {
		t.Fatalf("attached: %d\n%s%s", code, out, errOut)
	}
	code, out, _ = policyCLI(t, "test", "--attach", url, "--admin-key", adminKey, "--json", "--actor", "carl", "--roles", "MEMBER", "--tool", "notes_search", "--args", `{"query":"payroll"}`)
	var trial gateway.PolicyTrial
	if code != 0 || json.Unmarshal([]byte(out), &trial) != nil || trial.Rule != "default" || len(trial.Actor.Roles) != 1 {
		t.Fatalf("attached with --roles: %d %s", code, out)
	}
	code, _, errOut = policyCLI(t, "test", "--attach", url, "--admin-key", adminKey, "--actor", "carl", "--tool", "nope")
	if code != 1 || !strings.Contains(errOut, "unknown tool") {
		t.Fatalf("an unknown tool attached: %d %q", code, errOut)
	}
	code, _, errOut = policyCLI(t, "test", "--attach", url, "--admin-key", "wrong-key-0123456789abcdef", "--actor", "carl", "--tool", "notes_search")
	if code != 1 || strings.Contains(errOut, "wrong-key") {
		t.Fatalf("a wrong key: %d %q", code, errOut)
	}
	if code, _, errOut := policyCLI(t, "test", "--attach", url, "--config", path, "--actor", "carl", "--tool", "notes_search"); code != 2 || !strings.Contains(errOut, "exclude each other") {
		t.Fatalf("--attach with --config: %d %q", code, errOut)
	}
}
