package config

import (
	"fmt"

	"github.com/toolgate/toolgate/core/policy"
)

// Policies are rules on who may call what, with which arguments (PO-1):
// the top-level `policies`, and an endpoint's, whose rules run after the
// top-level ones and whose default, when set, replaces theirs.
type Policies struct {
	// Default is the effect of a call no rule matches: allow (when empty)
	// or deny.
	Default string       `koanf:"default" json:"default,omitempty" yaml:"default,omitempty"`
	Rules   []PolicyRule `koanf:"rules" json:"rules,omitempty" yaml:"rules,omitempty"`
}

// PolicyRule is one rule: when its CEL expression holds, its effect applies.
type PolicyRule struct {
	ID   string `koanf:"id" json:"id" yaml:"id"`
	When string `koanf:"when" json:"when" yaml:"when"`
	// Effect is deny, approve or allow.
	Effect string `koanf:"effect" json:"effect" yaml:"effect"`
	// Reason is what a denied client reads, and what the operator sees
	// on an approval.
	Reason string `koanf:"reason" json:"reason,omitempty" yaml:"reason,omitempty"`
}

// Policy defaults and effects (PO-1).
const (
	PolicyAllow   = "allow"
	PolicyApprove = "approve"
	PolicyDeny    = "deny"
)

var ruleIDRE = lazyRegexp(`^[a-zA-Z0-9_.:-]{1,64}$`)

// policies checks the top-level policies and every endpoint's: defaults,
// effects, ids unique where they meet (an endpoint's among its own and the
// top-level ones), and each expression compiled and type-checked with its
// cost bounded, so a rule that cannot run is refused here, at load and at
// reload, with its key path and its position.
func (v *validator) policies() {
	global := map[string]string{}
	v.policyLayer("policies", v.c.Policies, global, nil)
	for i, e := range v.c.Endpoints {
		v.policyLayer(fmt.Sprintf("endpoints[%d].policies", i), e.Policies, map[string]string{}, global)
	}
}

func (v *validator) policyLayer(p string, ps *Policies, ids, outer map[string]string) {
	if ps == nil {
		return
	}
	if ps.Default != "" && ps.Default != PolicyAllow && ps.Default != PolicyDeny {
		v.fail(p+".default", "must be allow or deny, not %q", ps.Default)
	}
	for i, r := range ps.Rules {
		rp := fmt.Sprintf("%s.rules[%d]", p, i)
		switch {
		case r.ID == "":
			v.fail(rp+".id", "required: the audit and the console name the rule by it")
		case r.ID == policy.DefaultRule:
			v.fail(rp+".id", "%q names the default in the audit; choose another id", r.ID)
		case !ruleIDRE().MatchString(r.ID):
			v.fail(rp+".id", "must match %s", ruleIDRE())
		case ids[r.ID] != "":
			v.fail(rp+".id", "%q is taken by %s", r.ID, ids[r.ID])
		case outer[r.ID] != "":
			v.fail(rp+".id", "%q is taken by %s", r.ID, outer[r.ID])
		default:
			ids[r.ID] = rp
		}
		if !oneOf(r.Effect, []string{PolicyDeny, PolicyApprove, PolicyAllow}) {
			v.fail(rp+".effect", "must be deny, approve or allow, not %q", r.Effect)
		}
		if r.When == "" {
			v.fail(rp+".when", "required: a CEL expression over actor, tool, args, endpoint, client and now")
		} else if err := policy.Check(r.When); err != nil {
			v.fail(rp+".when", "%v", err)
		}
	}
}
