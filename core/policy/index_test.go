package policy

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core"
)

// Covers PO-1, PO-2.
func TestGuardOf(t *testing.T) {
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
		if got := guardOf(ast).String(); got != tt.want {
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
	argSets := []string{`{"amount":150,"path":"/etc/x","items":["fs_read"],"zero":0}`, `{"amount":5,"path":"/srv/a"}`, `{}`, `[1]`}
	actors := []core.Actor{alice, contractor, {ID: "nobody"}}
	skipped := 0
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
							return &Input{Actor: actor, Tool: tool, Args: json.RawMessage(args), Endpoint: EndpointVars{Path: path}}
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
	if skipped < 300 {
		t.Fatalf("only %d generated rules have a guard: the comparison tests little", skipped)
	}
}

func ruleText(rules []Rule) string {
	var b strings.Builder
	for _, r := range rules {
		fmt.Fprintf(&b, "\n  %s %s: %s", r.ID, r.Effect, r.When)
	}
	return b.String()
}
