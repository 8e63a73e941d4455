package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
)

func mustNew(t testing.TB, layers ...Layer) *Policy {
	t.Helper()
	p, err := New(layers...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func global(def Effect, rules ...Rule) Layer {
	return Layer{Path: "policies", Default: def, Rules: rules}
}

var (
	refund   = &core.Tool{Name: "billing_refund", Source: "billing", RemoteName: "refund", Kind: core.KindAction}
	readFile = &core.Tool{Name: "fs_read", Source: "fs", RemoteName: "read", Kind: core.KindRead,
		Annotations: json.RawMessage(`{"readOnlyHint":true}`)}
	alice      = core.Actor{ID: "alice", Roles: []string{"MEMBER"}, Tenant: "acme"}
	contractor = core.Actor{ID: "carl", Roles: []string{"contractor"}, Tenant: "acme"}
)

// The spec's two example rules.
var exampleRules = []Rule{
	{ID: "big-refunds", When: `tool.name == "billing_refund" && args.amount > 100`, Effect: Approve, Reason: "refunds over 100 need an operator"},
	{ID: "contractors-docs-only", When: `"contractor" in actor.roles && tool.source == "fs" && !args.path.startsWith("/srv/docs/")`,
		Effect: Deny, Reason: "contractors read /srv/docs only"},
}

// Covers PO-1.
func TestDecide(t *testing.T) {
	tests := []struct {
		name   string
		layers []Layer
		actor  core.Actor
		tool   *core.Tool
		args   string
		want   Decision
	}{
		{"no rule matches: the default allows", []Layer{global(Allow, exampleRules...)}, alice, refund, `{"amount":50}`,
			Decision{Effect: Allow, Rule: DefaultRule}},
		{"approve on an argument", []Layer{global(Allow, exampleRules...)}, alice, refund, `{"amount":150}`,
			Decision{Effect: Approve, Rule: "big-refunds", Reason: "refunds over 100 need an operator"}},
		{"a double argument against an int literal", []Layer{global(Allow, exampleRules...)}, alice, refund, `{"amount":100.5}`,
			Decision{Effect: Approve, Rule: "big-refunds", Reason: "refunds over 100 need an operator"}},
		{"deny on a string argument", []Layer{global(Allow, exampleRules...)}, contractor, readFile, `{"path":"/etc/passwd"}`,
			Decision{Effect: Deny, Rule: "contractors-docs-only", Reason: "contractors read /srv/docs only"}},
		{"the same path for someone else", []Layer{global(Allow, exampleRules...)}, alice, readFile, `{"path":"/etc/passwd"}`,
			Decision{Effect: Allow, Rule: DefaultRule}},
		{"inside /srv/docs", []Layer{global(Allow, exampleRules...)}, contractor, readFile, `{"path":"/srv/docs/a.md"}`,
			Decision{Effect: Allow, Rule: DefaultRule}},
		{"deny overrides approve, whatever the order", []Layer{global(Allow,
			Rule{ID: "ask", When: `true`, Effect: Approve},
			Rule{ID: "no", When: `true`, Effect: Deny, Reason: "never"},
		)}, alice, refund, `{}`, Decision{Effect: Deny, Rule: "no", Reason: "never"}},
		{"approve overrides allow", []Layer{global(Deny,
			Rule{ID: "ok", When: `true`, Effect: Allow},
			Rule{ID: "ask", When: `true`, Effect: Approve, Reason: "ask first"},
		)}, alice, refund, `{}`, Decision{Effect: Approve, Rule: "ask", Reason: "ask first"}},
		{"an allow rule beats a deny default", []Layer{global(Deny,
			Rule{ID: "members", When: `"MEMBER" in actor.roles`, Effect: Allow},
		)}, alice, refund, `{}`, Decision{Effect: Allow, Rule: "members"}},
		{"deny default", []Layer{global(Deny)}, alice, refund, `{}`,
			Decision{Effect: Deny, Rule: DefaultRule, Reason: ReasonDefault}},
		{"the endpoint's default overrides the global one", []Layer{global(Allow), {Path: "endpoints[0].policies", Default: Deny}},
			alice, refund, `{}`, Decision{Effect: Deny, Rule: DefaultRule, Reason: ReasonDefault}},
		{"an endpoint without a default inherits", []Layer{global(Deny), {Path: "endpoints[0].policies"}},
			alice, refund, `{}`, Decision{Effect: Deny, Rule: DefaultRule, Reason: ReasonDefault}},
		{"the endpoint's rules run after the global ones", []Layer{
			global(Allow, Rule{ID: "g", When: `true`, Effect: Approve}),
			{Path: "endpoints[0].policies", Rules: []Rule{{ID: "e", When: `tool.kind == "action"`, Effect: Deny, Reason: "no actions here"}}},
		}, alice, refund, `{}`, Decision{Effect: Deny, Rule: "e", Reason: "no actions here"}},
		{"a deny without a reason names its rule", []Layer{global(Allow, Rule{ID: "quiet", When: `true`, Effect: Deny})},
			alice, refund, `{}`, Decision{Effect: Deny, Rule: "quiet", Reason: "not permitted by policy rule quiet"}},
		{"has() guards an absent argument", []Layer{global(Allow,
			Rule{ID: "guarded", When: `has(args.amount) && args.amount > 100`, Effect: Deny},
		)}, alice, refund, `{}`, Decision{Effect: Allow, Rule: DefaultRule}},
		{"a short-circuit spares an absent argument", []Layer{global(Allow, exampleRules...)}, alice, readFile, `{}`,
			Decision{Effect: Allow, Rule: DefaultRule}},
		{"tenant, endpoint, client, annotations", []Layer{global(Allow, Rule{ID: "all",
			When:   `actor.tenant == "acme" && endpoint.path == "/mcp" && client.name == "claude" && client.era == "legacy" && tool.annotations.readOnlyHint == true && actor.claims.size() == 0`,
			Effect: Deny})}, alice, readFile, `{}`, Decision{Effect: Deny, Rule: "all", Reason: "not permitted by policy rule all"}},
		{"now", []Layer{global(Allow, Rule{ID: "y2k", When: `now < timestamp("2000-01-01T00:00:00Z")`, Effect: Deny})},
			alice, refund, `{}`, Decision{Effect: Allow, Rule: DefaultRule}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustNew(t, tt.layers...)
			got := p.Decide(&Input{Actor: tt.actor, Tool: tt.tool, Args: json.RawMessage(tt.args),
				Endpoint: EndpointVars{Path: "/mcp"}, Client: ClientVars{Name: "claude", Era: "legacy"}})
			if got.Err != nil {
				t.Fatalf("Decide erred: %v", got.Err)
			}
			if got != tt.want {
				t.Fatalf("Decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Every JSON type an argument can have, read by a rule.
//
// Covers PO-1.
func TestDecideArgumentTypes(t *testing.T) {
	args := `{"s":"text","i":42,"big":9007199254740993,"f":2.5,"e":1e3,"b":true,"n":null,"l":[1,"two",{"three":3}],"o":{"k":{"deep":"v"}}}`
	rules := []string{
		`args.s == "text" && args.s.startsWith("te") && size(args.s) == 4`,
		`args.i == 42 && args.i + 1 == 43 && type(args.i) == int`,
		`args.big == 9007199254740993`,
		`args.f == 2.5 && args.f > 2 && type(args.f) == double`,
		`args.e == 1000.0 && type(args.e) == double`,
		`args.b && args.b == true`,
		`args.n == null`,
		`size(args.l) == 3 && args.l[0] == 1 && args.l[1] == "two" && args.l[2].three == 3 && "two" in args.l`,
		`args.o.k.deep == "v" && "k" in args.o && has(args.o.k.deep)`,
	}
	for _, when := range rules {
		t.Run(when, func(t *testing.T) {
			p := mustNew(t, global(Allow, Rule{ID: "r", When: when, Effect: Deny, Reason: "matched"}))
			got := p.Decide(&Input{Actor: alice, Tool: refund, Args: json.RawMessage(args)})
			if got.Err != nil || got.Effect != Deny || got.Rule != "r" {
				t.Fatalf("Decide = %+v, want the rule to match", got)
			}
		})
	}
}

// A rule that fails at evaluation denies, names the rule, and says nothing
// of the rule's text or the arguments.
//
// Covers PO-1.
func TestDecideErrorsDeny(t *testing.T) {
	tests := []struct{ name, when, args string }{
		{"an absent argument", `args.amount > 100`, `{"other":"secret-value"}`},
		{"a wrong type", `args.amount > 100`, `{"amount":"secret-value"}`},
		{"a dyn result that is not a bool", `args.amount`, `{"amount":"secret-value"}`},
		{"an absent claim", `actor.claims.org == "acme"`, `{}`},
		{"arguments that are not an object", `args.x == 1`, `[1]`},
		{"a division by zero", `args.i / 0 == 1`, `{"i":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustNew(t, global(Allow,
				Rule{ID: "ok", When: `true`, Effect: Allow},
				Rule{ID: "broken", When: tt.when, Effect: Allow},
			))
			got := p.Decide(&Input{Actor: alice, Tool: refund, Args: json.RawMessage(tt.args)})
			if got.Effect != Deny || got.Rule != "broken" || got.Err == nil {
				t.Fatalf("Decide = %+v, want a deny by the broken rule with its error", got)
			}
			if strings.Contains(got.Reason, "secret-value") || strings.Contains(got.Reason, tt.when) {
				t.Fatalf("reason %q quotes the arguments or the rule", got.Reason)
			}
			var denied *DeniedError
			if !errors.As(got.Refusal(), &denied) || denied.Rule != "broken" {
				t.Fatalf("Refusal = %v, want a *DeniedError of the broken rule", got.Refusal())
			}
		})
	}
}

// Covers PO-2.
func TestHides(t *testing.T) {
	tests := []struct {
		name   string
		layers []Layer
		actor  core.Actor
		tool   *core.Tool
		want   bool
	}{
		{"a deny that does not read args hides", []Layer{global(Allow,
			Rule{ID: "no-fs", When: `"contractor" in actor.roles && tool.source == "fs"`, Effect: Deny})},
			contractor, readFile, true},
		{"the same rule for another actor", []Layer{global(Allow,
			Rule{ID: "no-fs", When: `"contractor" in actor.roles && tool.source == "fs"`, Effect: Deny})},
			alice, readFile, false},
		{"a deny that depends on args does not hide", []Layer{global(Allow, exampleRules...)}, contractor, readFile, false},
		{"a deny that holds whatever the args hides", []Layer{global(Allow,
			Rule{ID: "r", When: `tool.source == "fs" && (has(args.path) || true)`, Effect: Deny})}, alice, readFile, true},
		{"a default deny with no allowing rule hides", []Layer{global(Deny)}, alice, refund, true},
		{"a default deny with an allowing rule that may hold", []Layer{global(Deny,
			Rule{ID: "small", When: `args.amount < 10`, Effect: Allow})}, alice, refund, false},
		{"a default deny with an allowing rule for other tools", []Layer{global(Deny,
			Rule{ID: "fs", When: `tool.source == "fs"`, Effect: Allow})}, alice, refund, true},
		{"a default deny with an approving rule that holds", []Layer{global(Deny,
			Rule{ID: "ask", When: `tool.kind == "action"`, Effect: Approve})}, alice, refund, false},
		{"an approve never hides", []Layer{global(Allow, Rule{ID: "ask", When: `true`, Effect: Approve})}, alice, refund, false},
		{"a rule that fails whatever the args hides", []Layer{global(Allow,
			Rule{ID: "bad", When: `actor.claims.org == "x"`, Effect: Allow})}, alice, refund, true},
		{"no rules hide nothing", []Layer{global(Allow)}, alice, refund, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustNew(t, tt.layers...)
			if got := p.Hides(&Input{Actor: tt.actor, Tool: tt.tool}); got != tt.want {
				t.Fatalf("Hides = %v, want %v", got, tt.want)
			}
		})
	}
}

// Bad rules are refused at load, each with its key path and the position
// in the expression.
//
// Covers PO-1.
func TestNewRefuses(t *testing.T) {
	tests := []struct {
		name     string
		rule     Rule
		path     string
		contains []string
	}{
		{"invalid CEL", Rule{ID: "r", When: `tool.name == `, Effect: Deny}, "policies.rules[0].when", []string{"line 1, column"}},
		{"an unknown variable", Rule{ID: "r", When: `user.id == "x"`, Effect: Deny}, "policies.rules[0].when", []string{"line 1, column 1", "user"}},
		{"an unknown field", Rule{ID: "r", When: `tool.nmae == "x"`, Effect: Deny}, "policies.rules[0].when", []string{"line 1, column", "nmae"}},
		{"a string result", Rule{ID: "r", When: `tool.name`, Effect: Deny}, "policies.rules[0].when", []string{"not a bool"}},
		{"an int result", Rule{ID: "r", When: `1 + 2`, Effect: Deny}, "policies.rules[0].when", []string{"not a bool"}},
		{"an empty expression", Rule{ID: "r", When: ` `, Effect: Deny}, "policies.rules[0].when", []string{"empty"}},
		{"a cost without bound", Rule{ID: "r",
			When:   `args.xs.all(a, args.xs.all(b, args.xs.all(c, a + b + c > 0)))`,
			Effect: Deny}, "policies.rules[0].when", []string{"may cost", "limit"}},
		{"a costly literal loop", Rule{ID: "r",
			When:   `[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, a+b+c+d+e+f > 0))))))`,
			Effect: Deny}, "policies.rules[0].when", []string{"may cost"}},
		{"an unknown effect", Rule{ID: "r", When: `true`, Effect: "block"}, "policies.rules[0].effect", []string{`"block"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(global(Allow, tt.rule))
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("New = %v, want an *Error", err)
			}
			if pe.Path != tt.path {
				t.Fatalf("path %q, want %q (%v)", pe.Path, tt.path, err)
			}
			for _, s := range tt.contains {
				if !strings.Contains(pe.Message, s) {
					t.Fatalf("message %q lacks %q", pe.Message, s)
				}
			}
		})
	}
	if _, err := New(Layer{Path: "endpoints[2].policies", Default: "maybe"}); err == nil || !strings.Contains(err.Error(), "endpoints[2].policies.default") {
		t.Fatalf("a bad default: %v", err)
	}
	// One loop over the arguments is fine.
	if err := Check(`args.items.all(x, x > 0)`); err != nil {
		t.Fatalf("a single loop over args: %v", err)
	}
}

// A loop over an argument too large for the limit is stopped, and denies.
//
// Covers PO-1.
func TestCostLimitAtRuntime(t *testing.T) {
	// One loop: the estimate at the assumed size passes; a far larger
	// input does not.
	p := mustNew(t, global(Allow, Rule{ID: "loop", When: `args.xs.all(a, a == "xzy" || a == "y")`, Effect: Allow}))
	xs := make([]string, 200000)
	for i := range xs {
		xs[i] = "xzy"
	}
	raw, _ := json.Marshal(map[string]any{"xs": xs})
	got := p.Decide(&Input{Actor: alice, Tool: refund, Args: raw})
	if got.Effect != Deny || got.Rule != "loop" || got.Err == nil || !strings.Contains(got.Err.Error(), "cost") && !strings.Contains(got.Err.Error(), "interrupt") {
		t.Fatalf("Decide = %+v, want a deny for the cost limit", got)
	}
	small, _ := json.Marshal(map[string]any{"xs": xs[:10]})
	if got := p.Decide(&Input{Actor: alice, Tool: refund, Args: small}); got.Effect != Allow || got.Rule != "loop" {
		t.Fatalf("a small input: %+v", got)
	}
}

// Covers PO-1.
func TestNowDefaultsToTheClock(t *testing.T) {
	p := mustNew(t, global(Allow, Rule{ID: "recent", When: `now > timestamp("2020-01-01T00:00:00Z")`, Effect: Deny}))
	if got := p.Decide(&Input{Actor: alice, Tool: refund}); got.Rule != "recent" {
		t.Fatalf("Decide = %+v", got)
	}
	old := time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := p.Decide(&Input{Actor: alice, Tool: refund, Now: old}); got.Rule != DefaultRule {
		t.Fatalf("Decide at %v = %+v", old, got)
	}
}

// BenchmarkPolicy is the cost one call pays for 50 rules that do not
// match, against none. The sets: mixed names a tool in one disjunct and
// reads actor and args in the other; othertool requires another tool's
// name in every rule; generic reads only actor (roles, tenant) and args;
// argsonly reads only args; gateway is `toolgate bench`'s. Every rule's
// guard settles it on the call's plain values, so no CEL runs: what is
// left is decoding the arguments once and the comparisons. cpu-ns/op is
// the process's CPU time a call, which the other work on a loaded machine
// inflates less than the wall time.
func BenchmarkPolicy(b *testing.B) {
	sets := []struct {
		name string
		when string
	}{
		{"mixed", `tool.name == "tool_%[1]d" && args.amount > %[1]d || "role%[1]d" in actor.roles && !args.path.startsWith("/srv/")`},
		{"othertool", `tool.name == "tool_%[1]d" && args.amount > %[1]d`},
		{"generic", `"role%[1]d" in actor.roles && !args.path.startsWith("/srv/") || actor.tenant == "t%[1]d" && args.amount > 1000`},
		{"argsonly", `args.amount > 2%03[1]d && !args.path.startsWith("/x%[1]d/")`},
	}
	args := json.RawMessage(`{"amount":150,"path":"/srv/docs/a.md","note":"some text"}`)
	b.Run("rules=0", func(b *testing.B) { benchDecide(b, mustNew(b, global(Allow)), args) })
	// gateway is internal/bench's policed set: half the rules guarded by
	// roles and tenant, half on the arguments only, none matching.
	var gw []Rule
	for i := range 50 {
		when := fmt.Sprintf(`"role%[1]d" in actor.roles && !args.message.startsWith("toolgate") || actor.tenant == "t%[1]d" && size(args.message) > 10`, i)
		if i%2 == 1 {
			when = fmt.Sprintf(`args.message.startsWith("forbidden-%[1]d") || size(args.message) > 100%[1]d`, i)
		}
		gw = append(gw, Rule{ID: fmt.Sprintf("r%d", i), Effect: Deny, When: when})
	}
	b.Run("rules=50/gateway", func(b *testing.B) {
		benchDecide(b, mustNew(b, global(Allow, gw...)), json.RawMessage(`{"message":"toolgate bench: the quick brown fox jumps over the lazy dog"}`))
	})
	for _, set := range sets {
		var rules []Rule
		for i := range 50 {
			rules = append(rules, Rule{ID: fmt.Sprintf("r%d", i), Effect: Deny, When: fmt.Sprintf(set.when, i)})
		}
		p := mustNew(b, global(Allow, rules...))
		b.Run("rules=50/"+set.name, func(b *testing.B) { benchDecide(b, p, args) })
	}
}

func benchDecide(b *testing.B, p *Policy, args json.RawMessage) {
	b.ReportAllocs()
	cpu := startCPU()
	for b.Loop() {
		d := p.Decide(&Input{Actor: alice, Tool: refund, Args: args, Endpoint: EndpointVars{Path: "/mcp"}})
		if d.Effect != Allow {
			b.Fatalf("%+v", d)
		}
	}
	cpu.report(b)
}

// cpuClock is the process's CPU time, reported per operation beside the
// wall time: on a machine other work loads, the wall time of an operation
// counts the waits for a core, its CPU time does not.
type cpuClock time.Duration

func startCPU() cpuClock { return cpuClock(processCPU()) }

func (c cpuClock) report(b *testing.B) {
	b.ReportMetric(float64(processCPU()-time.Duration(c))/float64(b.N), "cpu-ns/op")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Rules read the actor's own claims (a verified token's, or an API key's
// configured ones); Input.Claims replaces them; absent claims read as an
// empty map, so has() is false rather than an error (PO-1).
func TestDecideActorClaims(t *testing.T) {
	p := mustNew(t, global(Allow, Rule{ID: "finance-only",
		When:   `tool.name == "billing_refund" && !(has(actor.claims.department) && actor.claims.department == "finance") || has(actor.claims.level) && actor.claims.level > 5`,
		Effect: Deny, Reason: "refunds are for finance"}))
	with := func(claims map[string]any) core.Actor {
		a := alice
		a.Claims = claims
		return a
	}
	tests := []struct {
		name     string
		actor    core.Actor
		override map[string]any
		want     Effect
	}{
		{"finance in the actor's claims", with(map[string]any{"department": "finance"}), nil, Allow},
		{"sales in the actor's claims", with(map[string]any{"department": "sales"}), nil, Deny},
		{"no claims at all", alice, nil, Deny},
		{"Input.Claims replaces the actor's", with(map[string]any{"department": "sales"}), map[string]any{"department": "finance"}, Allow},
		{"a JSON number as a token gives it", with(map[string]any{"department": "finance", "level": float64(6)}), nil, Deny},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := p.Decide(&Input{Actor: tc.actor, Claims: tc.override, Tool: refund, Args: json.RawMessage(`{}`)})
			if d.Effect != tc.want || d.Err != nil {
				t.Fatalf("Decide = %+v; want %s", d, tc.want)
			}
		})
	}
}

// IN-3: the trifecta rule reads tool.labels and session.labels; either
// missing a label, it does not match; labels default to empty lists.
func TestDecideFlowLabels(t *testing.T) {
	p := mustNew(t, global(Allow, Rule{ID: "no-send-after-untrusted",
		When:   `"untrusted" in session.labels && "private" in session.labels && "sends-out" in tool.labels`,
		Effect: Approve, Reason: "this session read untrusted content and private data"}))
	send := &core.Tool{Name: "mail_send", Source: "mail", Kind: core.KindRead}
	cases := []struct {
		tool, session []string
		want          Effect
	}{
		{[]string{"sends-out"}, []string{"untrusted", "private", "read-only"}, Approve},
		{[]string{"sends-out"}, []string{"untrusted"}, Allow},
		{[]string{"read-only"}, []string{"untrusted", "private"}, Allow},
		{nil, nil, Allow},
	}
	for _, c := range cases {
		d := p.Decide(&Input{Actor: alice, Tool: send, Args: json.RawMessage(`{}`), ToolLabels: c.tool, SessionLabels: c.session})
		if d.Effect != c.want || d.Err != nil {
			t.Errorf("tool %v, session %v: %+v, want %s", c.tool, c.session, d, c.want)
		}
	}
}
