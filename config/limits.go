package config

import (
	"fmt"
	"math"
	"reflect"

	"github.com/toolgate/toolgate/core/policy"
)

// Limit is one entry of `limits` (PO-3): a token-bucket rate per replica,
// a windowed quota counted in the store (so replicas share it), or both,
// per actor, actor and tool, upstream or endpoint, for the calls match
// holds for (all when empty).
type Limit struct {
	ID  string `koanf:"id" json:"id" yaml:"id"`
	Per string `koanf:"per" json:"per" yaml:"per"`
	// Match is a CEL expression over the variables a policy rule reads.
	Match string `koanf:"match" json:"match,omitempty" yaml:"match,omitempty"`
	// Rate is N/UNIT (10/s, 100/min); Burst the bucket's size (default:
	// N rounded up).
	Rate  string `koanf:"rate" json:"rate,omitempty" yaml:"rate,omitempty"`
	Burst int    `koanf:"burst" json:"burst,omitempty" yaml:"burst,omitempty"`
	// Quota is N/UNIT with a whole N (200/day): at most N calls in each
	// window of one UNIT, aligned to UTC.
	Quota string `koanf:"quota" json:"quota,omitempty" yaml:"quota,omitempty"`
}

// LimitSpecs converts the limits to core/policy's terms; Validate has
// checked them.
func (c *Config) LimitSpecs() []policy.LimitSpec {
	out := make([]policy.LimitSpec, 0, len(c.Limits))
	for i, l := range c.Limits {
		s := policy.LimitSpec{ID: l.ID, Per: policy.Per(l.Per), Match: l.Match, Burst: l.Burst, Path: fmt.Sprintf("limits[%d]", i)}
		if n, per, err := policy.ParseRate(l.Rate); err == nil {
			s.Rate = n / per.Seconds()
		}
		if n, per, err := policy.ParseRate(l.Quota); err == nil {
			s.Quota, s.Window = int64(n), per
		}
		out = append(out, s)
	}
	return out
}

func (v *validator) limits() {
	ids := map[string]string{}
	for i, l := range v.c.Limits {
		p := fmt.Sprintf("limits[%d]", i)
		switch {
		case l.ID == "":
			v.fail(p+".id", "required: refusals, the audit and the metrics name the limit by it")
		case !ruleIDRE().MatchString(l.ID):
			v.fail(p+".id", "must match %s", ruleIDRE())
		case ids[l.ID] != "":
			v.fail(p+".id", "%q is taken by %s", l.ID, ids[l.ID])
		default:
			ids[l.ID] = p
		}
		if !policy.Per(l.Per).Valid() {
			v.fail(p+".per", "must be actor, actor+tool, upstream or endpoint, not %q", l.Per)
		}
		if l.Rate == "" && l.Quota == "" {
			v.fail(p, "needs a rate (10/s), a quota (200/day) or both")
		}
		if l.Rate != "" {
			if _, _, err := policy.ParseRate(l.Rate); err != nil {
				v.fail(p+".rate", "%v", err)
			}
		}
		v.numbers(p, "limits[]", reflect.ValueOf(l))
		if l.Burst > 0 && l.Rate == "" {
			v.fail(p+".burst", "only a rate has a burst")
		}
		if l.Quota != "" {
			if n, _, err := policy.ParseRate(l.Quota); err != nil {
				v.fail(p+".quota", "%v", err)
			} else if n != math.Trunc(n) {
				v.fail(p+".quota", "%q: a quota counts whole calls", l.Quota)
			}
		}
		if l.Match != "" {
			if err := policy.Check(l.Match); err != nil {
				v.fail(p+".match", "%v", err)
			}
		}
	}
}
