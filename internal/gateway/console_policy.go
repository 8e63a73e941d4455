package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/policy"
)

// PolicyDesk is what a console reads of the gateway's policy (PO-4, CO-8):
// the rules and limits in force with their hits, and trials of calls.
type PolicyDesk interface {
	Policies(ctx context.Context) (core.PolicyReport, error)
	TryPolicy(ctx context.Context, q core.PolicyQuestion) (core.PolicyTrial, error)
}

// errNoPolicyDesk answers the policy reads of a console built without one.
var errNoPolicyDesk = errors.New("policies are not available from this gateway")

func (c *LocalConsole) Policies(ctx context.Context) (core.PolicyReport, error) {
	if c.Policy == nil {
		return core.PolicyReport{}, errNoPolicyDesk
	}
	return c.Policy.Policies(ctx)
}

func (c *LocalConsole) TryPolicy(ctx context.Context, q core.PolicyQuestion) (core.PolicyTrial, error) {
	if c.Policy == nil {
		return core.PolicyTrial{}, errNoPolicyDesk
	}
	return c.Policy.TryPolicy(ctx, q)
}

// gatewayPolicy is the gateway's PolicyDesk.
type gatewayPolicy struct{ g *Gateway }

// Policies lists the running config's rules (top-level, then each
// endpoint's) and limits, and counts the audit records of the last
// core.PolicyHitWindow by their Rule. A top-level rule counts on every
// endpoint; an endpoint's own rule only on its endpoint, since ids need be
// unique only within an endpoint and the top level.
func (p gatewayPolicy) Policies(ctx context.Context) (core.PolicyReport, error) {
	cfg := p.g.Config()
	since := time.Now().Add(-core.PolicyHitWindow)
	recs, err := p.g.store.Audit(ctx, core.AuditQuery{Since: since})
	if err != nil {
		return core.PolicyReport{}, err
	}
	rep := policyReport(cfg, recs, since)
	// The windowed quotas' use, read where the calls are counted (PO-4),
	// less what this replica leased and has not run (PO-3).
	if l := p.g.callLimits.Load(); l != nil {
		rep.Quotas = l.Usage(ctx, policy.UsageTop)
	} else {
		counter, _ := p.g.store.(core.QuotaCounter)
		rep.Quotas = policy.Usage(ctx, cfg.LimitSpecs(), counter, time.Now(), policy.UsageTop)
	}
	return rep, nil
}

// policyReport builds the report of cfg's rules and limits over recs.
func policyReport(cfg *config.Config, recs []core.AuditRecord, since time.Time) core.PolicyReport {
	type key struct{ endpoint, rule string }
	type hit struct {
		n    int
		last time.Time
	}
	hits := map[key]*hit{}
	count := func(k key, t time.Time) {
		h := hits[k]
		if h == nil {
			h = &hit{}
			hits[k] = h
		}
		h.n++
		if t.After(h.last) {
			h.last = t
		}
	}
	for _, r := range recs {
		// The intent record of a confirmed call is followed by its
		// outcome's: the call is counted once.
		if r.Rule == "" || r.Outcome == core.AuditIntent || r.Endpoint == AdminEndpoint {
			continue
		}
		count(key{r.Endpoint, r.Rule}, r.Time)
		count(key{"", r.Rule}, r.Time)
	}
	get := func(endpoint, id string) (int, time.Time) {
		if h := hits[key{endpoint, id}]; h != nil {
			return h.n, h.last
		}
		return 0, time.Time{}
	}
	rep := core.PolicyReport{Since: since, Rules: []core.PolicyRuleStats{}}
	add := func(endpoint string, ps *config.Policies) {
		if ps == nil {
			return
		}
		for _, r := range ps.Rules {
			n, last := get(endpoint, r.ID)
			rep.Rules = append(rep.Rules, core.PolicyRuleStats{Endpoint: endpoint, ID: r.ID, Effect: r.Effect,
				When: r.When, Reason: r.Reason, Hits: n, LastHit: last})
		}
	}
	add("", cfg.Policies)
	for _, e := range cfg.Endpoints {
		add(e.Path, e.Policies)
	}
	for _, l := range cfg.Limits {
		n, last := get("", l.ID)
		rep.Rules = append(rep.Rules, core.PolicyRuleStats{ID: l.ID, Effect: "limit", When: l.Match, Hits: n, LastHit: last})
	}
	return rep
}

// TryPolicy decides q over the running config and registry, the actor's
// roles and tenant those the config gives its id.
func (p gatewayPolicy) TryPolicy(ctx context.Context, q core.PolicyQuestion) (core.PolicyTrial, error) {
	actor, ok := ConfigActor(p.g.Config(), q.Actor)
	if !ok {
		actor = core.Actor{ID: q.Actor}
	}
	args := q.Args
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	t, err := p.g.TryPolicy(ctx, q.Endpoint, actor, q.Tool, args, q.Via, q.SessionLabels)
	if err != nil {
		return core.PolicyTrial{}, err
	}
	return core.PolicyTrial(t), nil
}

func (c *accountedConsole) Policies(ctx context.Context) (core.PolicyReport, error) {
	return c.local.Policies(ctx)
}

// AuditOf reads only, so it is not accounted.
func (c *accountedConsole) AuditOf(ctx context.Context, callID string) ([]core.AuditCheck, error) {
	return c.local.AuditOf(ctx, callID)
}

// TryPolicy makes no call and changes nothing, so it is not accounted.
func (c *accountedConsole) TryPolicy(ctx context.Context, q core.PolicyQuestion) (core.PolicyTrial, error) {
	return c.local.TryPolicy(ctx, q)
}
