package serve

import (
	"slices"

	"github.com/toolgate/toolgate/core/policy"
)

// Rules are what an endpoint applies to a request: the allow-list, the
// policy, the rates and quotas, and the inspection (OP-8). The endpoint
// holds them behind one pointer: a reload builds a new set whole and
// swaps it, and a request loads the pointer once and reads that set from
// resolve to settle, so no request sees half of a reload.
//
// A Rules is never changed once the endpoint holds it.
type Rules struct {
	// Tools is the allow-list (SV-4).
	Tools []string
	// Policy is the rule set (PO-1); nil applies none.
	Policy *policy.Policy
	// Limits are the rates and quotas (PO-3); nil applies none.
	Limits *policy.Limits
	// Inspection is what calls may carry (IN-1); nil inspects nothing.
	Inspection *Inspection
}

// Rules is the set in force.
func (e *Endpoint) Rules() *Rules { return e.rules.Load() }

// SetRules swaps the rules in force for r (a reload, OP-8): calls already
// started keep the set they loaded, the next one reads r. Live sessions
// are told their tool lists may have changed when the allow-list or the
// policy did (PO-2), as a listing applies both; the limits and the
// inspection change no listing.
func (e *Endpoint) SetRules(r *Rules) {
	r = &Rules{Tools: slices.Clone(r.Tools), Policy: r.Policy, Limits: r.Limits, Inspection: r.Inspection}
	old := e.rules.Swap(r)
	if old == nil || old.Policy != r.Policy || !slices.Equal(old.Tools, r.Tools) {
		e.ToolsChanged()
	}
}

// inspectFor is the inspection of a tool of source, nil when nothing is
// inspected: then a call pays one map lookup.
func (r *Rules) inspectFor(source string) *Inspect {
	if r == nil || r.Inspection == nil {
		return nil
	}
	return r.Inspection.BySource[source]
}
