package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Covers PO-1.
func TestPoliciesLoad(t *testing.T) {
	path := writeConfig(t, `
gateway: {confirm: {secret: ${TOOLGATE_CONFIRM_SECRET}}}
endpoints:
  - path: /mcp
    actor: {id: dev}
    policies:
      default: deny
      rules:
        - {id: members, when: '"MEMBER" in actor.roles', effect: allow}
policies:
  default: allow
  rules:
    - id: big-refunds
      when: tool.name == "billing_refund" && args.amount > 100
      effect: approve
      reason: refunds over 100 need an operator
`)
	cfg, _, err := Load(path, optionsFor(fixedEnv))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := &Policies{Default: "allow", Rules: []PolicyRule{{ID: "big-refunds", When: `tool.name == "billing_refund" && args.amount > 100`,
		Effect: "approve", Reason: "refunds over 100 need an operator"}}}
	if d := cmp.Diff(want, cfg.Policies); d != "" {
		t.Errorf("policies (-want +got):\n%s", d)
	}
	if got := cfg.Endpoints[0].Policies; got == nil || got.Default != "deny" || len(got.Rules) != 1 || got.Rules[0].ID != "members" {
		t.Errorf("endpoints[0].policies = %+v", got)
	}
}

// Covers PO-1.
func TestPoliciesValidate(t *testing.T) {
	rule := func(id, when, effect string) PolicyRule { return PolicyRule{ID: id, When: when, Effect: effect} }
	tests := []struct {
		name     string
		global   *Policies
		endpoint *Policies
		path     string
		contains string
	}{
		{"a bad default", &Policies{Default: "maybe"}, nil, "policies.default", `"maybe"`},
		{"a bad endpoint default", nil, &Policies{Default: "approve"}, "endpoints[0].policies.default", `"approve"`},
		{"no id", &Policies{Rules: []PolicyRule{rule("", "true", "deny")}}, nil, "policies.rules[0].id", "required"},
		{"the reserved id", &Policies{Rules: []PolicyRule{rule("default", "true", "deny")}}, nil, "policies.rules[0].id", "default"},
		{"an id with spaces", &Policies{Rules: []PolicyRule{rule("a b", "true", "deny")}}, nil, "policies.rules[0].id", "must match"},
		{"a duplicate id", &Policies{Rules: []PolicyRule{rule("a", "true", "deny"), rule("a", "true", "allow")}}, nil,
			"policies.rules[1].id", "policies.rules[0]"},
		{"an endpoint id that a global rule has", &Policies{Rules: []PolicyRule{rule("a", "true", "deny")}},
			&Policies{Rules: []PolicyRule{rule("a", "true", "allow")}}, "endpoints[0].policies.rules[0].id", "policies.rules[0]"},
		{"a bad effect", &Policies{Rules: []PolicyRule{rule("a", "true", "block")}}, nil, "policies.rules[0].effect", `"block"`},
		{"no when", &Policies{Rules: []PolicyRule{rule("a", "", "deny")}}, nil, "policies.rules[0].when", "required"},
		{"invalid CEL", &Policies{Rules: []PolicyRule{rule("a", "true", "deny"), rule("b", `tool.name == "x" &&`, "deny")}}, nil,
			"policies.rules[1].when", "line 1, column"},
		{"an unknown variable", &Policies{Rules: []PolicyRule{rule("a", `user.id == "x"`, "deny")}}, nil,
			"policies.rules[0].when", "line 1, column 1: undeclared reference to 'user'"},
		{"a non-bool", &Policies{Rules: []PolicyRule{rule("a", `tool.name + "x"`, "deny")}}, nil, "policies.rules[0].when", "not a bool"},
		{"a pathological cost", nil, &Policies{Rules: []PolicyRule{rule("a",
			`args.xs.all(a, args.xs.all(b, args.xs.all(c, a + b + c > 0)))`, "deny")}}, "endpoints[0].policies.rules[0].when", "may cost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			c.Policies, c.Endpoints[0].Policies = tt.global, tt.endpoint
			_, err := c.Validate()
			var ve *ValidationErrors
			if !errors.As(err, &ve) {
				t.Fatalf("Validate = %v, want errors", err)
			}
			for _, fe := range ve.Errors {
				if fe.Path == tt.path && strings.Contains(fe.Message, tt.contains) {
					return
				}
			}
			t.Fatalf("no error at %s containing %q in:\n%v", tt.path, tt.contains, err)
		})
	}
	c := base()
	c.Policies = &Policies{Default: "deny", Rules: []PolicyRule{{ID: "ok", When: `has(args.path) && args.path.startsWith("/srv/")`, Effect: "allow"}}}
	c.Endpoints[0].Policies = &Policies{Rules: []PolicyRule{{ID: "ok2", When: `tool.kind == "action"`, Effect: "approve"}}}
	if _, err := c.Validate(); err != nil {
		t.Fatalf("valid policies refused: %v", err)
	}
}

// Covers PO-3.
func TestLimitsValidate(t *testing.T) {
	tests := []struct {
		name     string
		limit    Limit
		path     string
		contains string
	}{
		{"no id", Limit{Per: "actor", Rate: "1/s"}, "limits[0].id", "required"},
		{"a bad per", Limit{ID: "a", Per: "tenant", Rate: "1/s"}, "limits[0].per", `"tenant"`},
		{"neither rate nor quota", Limit{ID: "a", Per: "actor"}, "limits[0]", "needs a rate"},
		{"a bad rate", Limit{ID: "a", Per: "actor", Rate: "10 per second"}, "limits[0].rate", "N/UNIT"},
		{"a bad unit", Limit{ID: "a", Per: "actor", Quota: "10/fortnight"}, "limits[0].quota", "unit"},
		{"a fractional quota", Limit{ID: "a", Per: "actor", Quota: "2.5/day"}, "limits[0].quota", "whole"},
		{"a burst without a rate", Limit{ID: "a", Per: "actor", Quota: "2/day", Burst: 3}, "limits[0].burst", "only a rate"},
		{"a bad match", Limit{ID: "a", Per: "actor", Rate: "1/s", Match: `tool.kind = "action"`}, "limits[0].match", "line 1, column"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			c.Limits = []Limit{tt.limit}
			_, err := c.Validate()
			var ve *ValidationErrors
			if !errors.As(err, &ve) {
				t.Fatalf("Validate = %v, want errors", err)
			}
			for _, fe := range ve.Errors {
				if fe.Path == tt.path && strings.Contains(fe.Message, tt.contains) {
					return
				}
			}
			t.Fatalf("no error at %s containing %q in:\n%v", tt.path, tt.contains, err)
		})
	}
	c := base()
	c.Limits = []Limit{{ID: "per-person", Per: "actor", Rate: "10/s", Burst: 20},
		{ID: "daily-writes", Per: "actor", Match: `tool.kind == "action"`, Quota: "200/day"}}
	if _, err := c.Validate(); err != nil {
		t.Fatalf("the spec's limits refused: %v", err)
	}
	specs := c.LimitSpecs()
	if specs[0].Rate != 10 || specs[0].Burst != 20 || specs[1].Quota != 200 || specs[1].Window != 24*time.Hour || specs[1].Path != "limits[1]" {
		t.Fatalf("LimitSpecs = %+v", specs)
	}
}
