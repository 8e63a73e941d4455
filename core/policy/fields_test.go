package policy

import (
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/core"
)

// Fields read through the per-call cache give what the inputs hold, for
// every rule that reads them, nested arguments included; a struct a rule
// builds itself has no cache and reads the same way.
//
// Covers PO-1.
func TestCachedFields(t *testing.T) {
	rules := []Rule{
		{ID: "a", Effect: Approve, When: `tool.name == "billing_refund" && actor.id == "alice" && "MEMBER" in actor.roles && actor.claims.tier == "gold"`},
		{ID: "b", Effect: Approve, When: `tool.source == "billing" && tool.annotations.idempotentHint && endpoint.path == "/mcp" && client.era == "modern"`},
		{ID: "c", Effect: Approve, When: `args.items[1].qty == 2 && args.items.exists(i, i.sku == "x") && size(args.tags) == 2 && args.tags[0] == "t"`},
		{ID: "d", Effect: Approve, When: `policy.ToolVars{name: "n"}.name == "n" && has(tool.kind) && tool.kind == "action"`},
		{ID: "e", Effect: Approve, When: `tool.name == "billing_refund" && actor.tenant == "acme" && client.name == "cli"`},
	}
	tool := *refund
	tool.Annotations = json.RawMessage(`{"idempotentHint":true}`)
	in := func() *Input {
		return &Input{Actor: alice, Claims: map[string]any{"tier": "gold"}, Tool: &tool,
			Args:     json.RawMessage(`{"items":[{"sku":"y","qty":1},{"sku":"x","qty":2}],"tags":["t","u"]}`),
			Endpoint: EndpointVars{Path: "/mcp"}, Client: ClientVars{Name: "cli", Era: "modern"}}
	}
	// One Input for all, both ways round: each rule after the first reads
	// fields others have cached.
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}} {
		shared := in()
		for _, i := range order {
			p := mustNew(t, global(Allow, rules[i]))
			if d := p.Decide(shared); d.Effect != Approve || d.Err != nil {
				t.Errorf("rule %s: %+v", rules[i].ID, d)
			}
		}
	}
	// All at once, in one Input: every rule after the first reads cached
	// fields; a rule reading other values must not match.
	all := append(rules, Rule{ID: "z", Effect: Deny, When: `tool.name == "fs_read" || actor.id == "bob" || args.items[0].qty == 2 || client.name == "x"`})
	p := mustNew(t, global(Allow, all...))
	if d := p.Decide(in()); d.Effect != Approve || d.Rule != "a" {
		t.Errorf("all rules: %+v", d)
	}
	other := in()
	other.Tool = &core.Tool{Name: "fs_read"}
	if d := p.Decide(other); d.Effect != Deny || d.Rule != "z" {
		t.Errorf("another tool: %+v", d)
	}
}
