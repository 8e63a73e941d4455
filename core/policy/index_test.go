package policy

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core"
)

// A guard settles what it can read from plain values and leaves the rest
// to CEL: each case is an expression, a call, and what the guard says of
// it, for the call and for a listing (arguments unknown).
//
// Covers PO-1, PO-2.
func TestGuardOf(t *testing.T) {
	args := `{"amount":150,"price":9.5,"path":"/srv/a","tags":["x","y"],"nested":{"k":"v"},"flag":true,"none":null,"name":"dé"}`
	tests := []struct {
		when          string
		call, listing tri
	}{
		{`tool.name == "billing_refund" && args.amount > 100`, yes, unknown},
		{`tool.name == "other" && args.amount > 100`, no, no},
		{`"billing_refund" != tool.name || args.amount < 100`, no, unknown},
		{`args.amount > 100 && (tool.source == "fs" && "x" in actor.roles)`, no, no},
		{`tool.name == "a" || args.x == 1`, unknown, unknown},
		{`!(tool.name == "a")`, yes, yes},
		{`tool.name in ["a", "billing_refund"]`, yes, yes},
		{`tool.remoteName == "refund" && tool.kind == "action"`, yes, yes},
		{`tool.name.startsWith("billing") && !tool.name.endsWith("x") && tool.name.contains("_")`, yes, yes},
		{`size(tool.name) == 14 && tool.name.size() > 3`, yes, yes},
		{`"MEMBER" in actor.roles && actor.id == "alice" && actor.tenant == "acme"`, yes, yes},
		{`"untrusted" in session.labels || "sends-out" in tool.labels`, no, no},
		{`endpoint.path == "/mcp" && endpoint.name == "" && client.era == "legacy" && client.name == "" && client.version == ""`, yes, yes},
		{`args.price >= 9.5 && args.price < 10.0`, yes, unknown},
		{`args.price > 9`, unknown, unknown}, // a double against an int: CEL compares across types
		{`args.amount == 150.0`, unknown, unknown},
		{`args.path.startsWith("/srv/") && !args.path.endsWith(".md") && args.path.contains("srv")`, yes, unknown},
		{`size(args.path) == 6 && size(args.tags) == 2 && args.nested.size() == 1 && size(args.name) == 2`, yes, unknown},
		{`args.nested.k == "v" && args["nested"]["k"] != "w"`, yes, unknown},
		{`args.path in ["/srv/a", "/srv/b"]`, yes, unknown},
		{`"x" in args.tags`, unknown, unknown}, // an argument's array is left to CEL
		{`args.flag && has(args.amount) && !has(args.missing) && has(args.nested.k)`, yes, unknown},
		{`has(args.path.x)`, unknown, unknown}, // CEL errs: path is no object
		{`args.missing == 1 || args.amount == "150"`, unknown, unknown},
		{`args.none == null`, unknown, unknown},
		{`args.amount > 1 && args.amount.startsWith("1")`, unknown, unknown},
		{`false || args.path == "/srv/a"`, yes, unknown},
		{`actor.claims.x == "a"`, unknown, unknown},
		{`[1].all(tool, tool == 1) && tool.name.startsWith("b")`, unknown, unknown},
		{`args.items.exists(i, tool.name == "a" && i == 1)`, unknown, unknown},
		{`now > timestamp("2020-01-01T00:00:00Z") || tool.name == "billing_refund"`, yes, yes},
	}
	for _, tt := range tests {
		ast, err := compile(tt.when)
		if err != nil {
			t.Fatalf("%s: %v", tt.when, err)
		}
		var gs guards
		g := gs.of(ast)
		say := func(listing bool) tri {
			if g == nil {
				return unknown
			}
			in := &Input{Actor: alice, Tool: refund, Args: json.RawMessage(args), Endpoint: EndpointVars{Path: "/mcp"}, Client: ClientVars{Era: "legacy"}}
			return g(newGuardIn(in, listing, len(gs.slots)))
		}
		if got := say(false); got != tt.call {
			t.Errorf("%s: the call's guard says %v, want %v", tt.when, got, tt.call)
		}
		if got := say(true); got != tt.listing {
			t.Errorf("%s: the listing's guard says %v, want %v", tt.when, got, tt.listing)
		}
	}
}

func (t tri) String() string { return [...]string{"unknown", "no", "yes"}[t] }

// The dnf checked before a rule's guard: the comparisons of string
// fields with literals a rule cannot hold without.
//
// Covers PO-1, PO-2.
func TestDnfOf(t *testing.T) {
	tests := []struct{ when, want string }{
		{`tool.name == "billing_refund" && args.amount > 100`, `tool.name == "billing_refund"`},
		{`"billing_refund" == tool.name`, `tool.name == "billing_refund"`},
		{`args.amount > 1 && (tool.source == "fs" && "x" in actor.roles)`, `tool.source == "fs" && "x" in actor.roles`},
		{`tool.name == "a" && tool.source == "s"`, `tool.name == "a" && tool.source == "s"`},
		{`tool.name == "a" || args.x == 1`, `true`},
		{`tool.name == "a" || "r" in actor.roles && args.x == 1`, `tool.name == "a" || "r" in actor.roles`},
		{`"r1" in actor.roles && !args.path.startsWith("/srv/") || actor.tenant == "t1" && args.amount > 1000`,
			`"r1" in actor.roles || actor.tenant == "t1"`},
		{`(tool.name == "a" || tool.name == "b") && (actor.id == "x" || endpoint.path == "/p")`,
			`tool.name == "a" && actor.id == "x" || tool.name == "a" && endpoint.path == "/p" || tool.name == "b" && actor.id == "x" || tool.name == "b" && endpoint.path == "/p"`},
		{`tool.kind == "action" && tool.name == ""`, `tool.kind == "action" && tool.name == ""`},
		{`!(tool.name == "a")`, `true`},
		{`tool.name != "a"`, `true`},
		{`tool.name in ["a"]`, `true`},
		{`tool.remoteName == "a"`, `true`},
		{`actor.claims.x == "a"`, `true`},
		{`"r" in actor.claims.groups`, `true`},
		{`[1].all(tool, tool == 1) && tool.name.startsWith("a")`, `true`},
		{`args.items.exists(i, tool.name == "a" && i == 1)`, `true`},
	}
	for _, tt := range tests {
		ast, err := compile(tt.when)
		if err != nil {
			t.Fatalf("%s: %v", tt.when, err)
		}
		if got := dnfOf(ast).String(); got != tt.want {
			t.Errorf("%s:\n guard %s\n want  %s", tt.when, got, tt.want)
		}
	}
}

// Skipping the rules a call's tool excludes never changes a decision or a
// listing: random rule sets over random calls decide the same with every
// rule evaluated.
//
// Covers PO-1, PO-2.
func TestSkippingKeepsDecisions(t *testing.T) {
	names := []string{"billing_refund", "fs_read", "fs_write", "other"}
	sources := []string{"billing", "fs", "web"}
	atoms := []string{
		`tool.name == "{N}"`, `"{N}" == tool.name`, `tool.source == "{S}"`, `tool.name != "{N}"`,
		`tool.name.startsWith("fs")`, `args.amount > 100`, `args.missing == 1`, `args.path.startsWith("/srv/")`,
		`"contractor" in actor.roles`, `actor.tenant == "acme"`, `args.items.exists(i, i == "{N}")`,
		`1 / args.zero == 1`, `tool.kind == "read"`, `tool.kind == "action"`, `actor.id == "carl"`, `"MEMBER" in actor.roles`,
		`endpoint.path == "/mcp"`, `endpoint.path == "/ops"`, `actor.tenant == ""`, `!("contractor" in actor.roles)`,
		`args.amount <= 5`, `100 < args.amount`, `args.amount == 150`, `args.amount != 5.0`, `args.price >= 2.5`,
		`size(args.path) > 6`, `args.path.size() == 6`, `size(args.items) == 1`, `args.path in ["/srv/a", "/etc/x"]`,
		`has(args.amount)`, `has(args.nested.k)`, `args.nested.k == "v"`, `args["path"].endsWith("x")`, `args.flag`,
		`args.path.contains("srv")`, `"{N}" in args.items`, `tool.name in ["{N}", "other"]`, `"read-only" in tool.labels`,
		`"untrusted" in session.labels`, `client.era == "modern"`, `size(tool.name) < 7`, `true`, `false`, `args.amount > 1.5`,
	}
	effects := []Effect{Allow, Approve, Deny}
	rng := rand.New(rand.NewPCG(7, 11))
	atom := func() string {
		r := strings.NewReplacer("{N}", names[rng.IntN(len(names))], "{S}", sources[rng.IntN(len(sources))])
		return r.Replace(atoms[rng.IntN(len(atoms))])
	}
	var expr func(depth int) string
	expr = func(depth int) string {
		if depth == 0 || rng.IntN(3) == 0 {
			return atom()
		}
		switch rng.IntN(4) {
		case 0:
			return "(" + expr(depth-1) + " || " + expr(depth-1) + ")"
		case 1:
			return "!(" + expr(depth-1) + ")"
		}
		return expr(depth-1) + " && " + expr(depth-1)
	}
	argSets := []string{`{"amount":150,"path":"/etc/x","items":["fs_read"],"zero":0,"flag":false,"price":2.5}`,
		`{"amount":5,"path":"/srv/a","nested":{"k":"v"},"flag":true,"price":3}`, `{}`, `[1]`,
		`{"amount":5.0,"path":7,"items":"fs_read","nested":"k","flag":"yes","price":null}`}
	actors := []core.Actor{alice, contractor, {ID: "nobody"}}
	labels := [][]string{nil, {"read-only", "untrusted"}, {"sends-out"}}
	skipped, settled := 0, 0
	for set := range 300 {
		var rules []Rule
		for i := range 1 + rng.IntN(6) {
			rules = append(rules, Rule{ID: fmt.Sprintf("r%d", i), When: expr(3), Effect: effects[rng.IntN(len(effects))]})
		}
		def := []Effect{Allow, Deny}[rng.IntN(2)]
		fast := mustNew(t, global(def, rules...))
		all := mustNew(t, global(def, rules...))
		all.evalAll = true
		for _, r := range fast.rules {
			if r.guard != nil {
				skipped++
			}
		}
		for _, name := range names {
			for _, src := range sources {
				tool := &core.Tool{Name: name, Source: src, Kind: []core.Kind{core.KindRead, core.KindAction}[rng.IntN(2)]}
				for _, actor := range actors {
					for i, args := range argSets {
						path := []string{"/mcp", "/ops"}[i%2]
						in := func() *Input {
							return &Input{Actor: actor, Tool: tool, Args: json.RawMessage(args), Endpoint: EndpointVars{Path: path},
								Client: ClientVars{Era: []string{"legacy", "modern"}[i%2]}, ToolLabels: labels[i%3], SessionLabels: labels[(i+1)%3]}
						}
						c := newGuardIn(in(), false, fast.slots)
						for _, r := range fast.rules {
							if r.guard != nil && r.guard(c) != unknown {
								settled++
							}
						}
						got, want := fast.Decide(in()), all.Decide(in())
						if got.Effect != want.Effect || got.Rule != want.Rule || got.Reason != want.Reason || (got.Err == nil) != (want.Err == nil) {
							t.Fatalf("set %d, %s/%s, %s, %s: skipping decided %+v, evaluating all %+v\nrules: %s", set, name, src, actor.ID, args, got, want, ruleText(rules))
						}
						if got, want := fast.Hides(in()), all.Hides(in()); got != want {
							t.Fatalf("set %d, %s/%s, %s: skipping hides %v, evaluating all %v\nrules: %s", set, name, src, actor.ID, got, want, ruleText(rules))
						}
					}
				}
			}
		}
	}
	if skipped < 300 || settled < 10000 {
		t.Fatalf("only %d generated rules have a guard, settling %d calls: the comparison tests little", skipped, settled)
	}
}

func ruleText(rules []Rule) string {
	var b strings.Builder
	for _, r := range rules {
		fmt.Fprintf(&b, "\n  %s %s: %s", r.ID, r.Effect, r.When)
	}
	return b.String()
}
