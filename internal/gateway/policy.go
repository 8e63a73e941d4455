package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/discovery"
	"github.com/toolgate/toolgate/core/policy"
)

// policyLayer is one config layer of rules in core/policy's terms.
func policyLayer(path string, ps *config.Policies) policy.Layer {
	l := policy.Layer{Path: path}
	if ps == nil {
		return l
	}
	l.Default = policy.Effect(ps.Default)
	for i, r := range ps.Rules {
		l.Rules = append(l.Rules, policy.Rule{ID: r.ID, When: r.When, Effect: policy.Effect(r.Effect), Reason: r.Reason,
			Path: fmt.Sprintf("%s.rules[%d]", path, i)})
	}
	return l
}

// EndpointPolicy compiles the policy endpoint i of cfg applies (PO-1): the
// top-level rules, then the endpoint's. nil when neither is configured.
func EndpointPolicy(cfg *config.Config, i int) (*policy.Policy, error) {
	e := cfg.Endpoints[i]
	if cfg.Policies == nil && e.Policies == nil {
		return nil, nil
	}
	return policy.New(policyLayer("policies", cfg.Policies), policyLayer(fmt.Sprintf("endpoints[%d].policies", i), e.Policies))
}

// endpointPolicies compiles every endpoint's policy, by path.
func endpointPolicies(cfg *config.Config) (map[string]*policy.Policy, error) {
	out := make(map[string]*policy.Policy, len(cfg.Endpoints))
	for i, e := range cfg.Endpoints {
		p, err := EndpointPolicy(cfg, i)
		if err != nil {
			return nil, err
		}
		out[e.Path] = p
	}
	return out, nil
}

// ConfigActor finds the actor with id that cfg names: an API key's or an
// open endpoint's. ok is false when none has that id.
func ConfigActor(cfg *config.Config, id string) (core.Actor, bool) {
	var walk func(a config.Auth) (config.Actor, bool)
	walk = func(a config.Auth) (config.Actor, bool) {
		for _, k := range a.APIKeys {
			if k.Actor.ID == id {
				return k.Actor, true
			}
		}
		for _, sub := range a.AnyOf {
			if act, ok := walk(sub); ok {
				return act, true
			}
		}
		return config.Actor{}, false
	}
	for _, e := range cfg.Endpoints {
		if e.Actor != nil && e.Actor.ID == id {
			return coreActor(*e.Actor), true
		}
		if e.Auth != nil {
			if act, ok := walk(*e.Auth); ok {
				return coreActor(act), true
			}
		}
	}
	return core.Actor{}, false
}

// PolicyTrial is which rule decides a call, found without making it.
type PolicyTrial = policy.Trial

// ErrNoEndpoint: the config has no endpoint at the path asked for.
var ErrNoEndpoint = errors.New("no such endpoint")

// TryPolicy decides a call of tool with args by actor on the endpoint at
// path ("" is the first), as a served call would be decided, without
// making it: the tool is looked up in the registry (so the upstreams must
// have been imported: Start) and the arguments validated against its
// schema first.
//
// via "call_tool" tries the call as made through the endpoint's tool
// search (DS-2): the same rules decide it, but a tool the listing hides
// from the actor whatever the arguments is not found there, so the call is
// denied as unknown instead of by its rule's reason.
func (g *Gateway) TryPolicy(ctx context.Context, path string, actor core.Actor, tool string, args json.RawMessage, via string, sessionLabels []string) (PolicyTrial, error) {
	cfg := g.Config()
	i := slices.IndexFunc(cfg.Endpoints, func(e config.Endpoint) bool { return path == "" || e.Path == path })
	if i < 0 {
		return PolicyTrial{}, fmt.Errorf("%w: %q", ErrNoEndpoint, path)
	}
	e := cfg.Endpoints[i]
	switch {
	case via == "":
	case via != ViaCallTool:
		return PolicyTrial{}, fmt.Errorf("via must be %s or nothing, not %q", ViaCallTool, via)
	case !e.Discovery.Search():
		return PolicyTrial{}, fmt.Errorf("endpoint %s serves no %s: its discovery mode is not %s", e.Path, ViaCallTool, config.DiscoverySearch)
	}
	p, err := EndpointPolicy(cfg, i)
	if err != nil {
		return PolicyTrial{}, err
	}
	c, err := g.reg.Resolve(ctx, actor, e.Tools, tool, args)
	if err != nil {
		return PolicyTrial{}, err
	}
	confirm.Split(c)
	if c.ArgsErr != nil {
		return PolicyTrial{}, fmt.Errorf("invalid arguments: %w", c.ArgsErr)
	}
	if err := c.Validate(); err != nil {
		return PolicyTrial{}, fmt.Errorf("invalid arguments: %w", err)
	}
	in := policy.Input{Actor: actor, Tool: &c.Tool, Args: c.Args, Endpoint: policy.EndpointVars{Path: e.Path, Name: e.Name},
		Client: policy.ClientVars{Era: "legacy"}, ToolLabels: toolLabelsOf(cfg, c.Tool), SessionLabels: sessionLabels} // IN-3
	d := p.Decide(&in)
	trial := PolicyTrial{Endpoint: e.Path, Actor: actor, Tool: tool, Rule: d.Rule, Effect: string(d.Effect), Reason: d.Reason,
		ToolLabels: in.ToolLabels, SessionLabels: sessionLabels,
		Listed: !p.Hides(&policy.Input{Actor: actor, Tool: &c.Tool, Endpoint: in.Endpoint, Client: in.Client})}
	if d.Err != nil {
		trial.Error = d.Err.Error()
	}
	if trial.Via = via; via != "" && !trial.Listed {
		// What the client reads: call_tool answers a hidden tool as unknown.
		trial.Effect, trial.Reason, trial.Error = string(policy.Deny), "unknown tool: "+tool, ""
	}
	return trial, nil
}

// ViaCallTool is the meta-tool a trial can be made through (DS-2).
const ViaCallTool = discovery.CallToolName

// newCallLimits compiles cfg's rates and quotas over the gateway's store
// (PO-3); nil when there are none.
func (g *Gateway) newCallLimits(cfg *config.Config) (*policy.Limits, error) {
	if len(cfg.Limits) == 0 {
		return nil, nil
	}
	counter, _ := g.store.(core.QuotaCounter)
	return policy.NewLimits(cfg.LimitSpecs(), counter)
}

// useLimits makes l the limits in force and returns the quota leases of
// the limits it replaces (PO-3).
func (g *Gateway) useLimits(l *policy.Limits) {
	if old := g.callLimits.Swap(l); old != l {
		g.returnLeases(old)
	}
}

// returnLeasesWait bounds returning a gateway's quota leases: a store
// that does not answer leaves them counted until their windows end.
const returnLeasesWait = 5 * time.Second

// returnLeases gives the store back what l leased and did not run.
func (g *Gateway) returnLeases(l *policy.Limits) {
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), returnLeasesWait)
	defer cancel()
	if err := l.Close(ctx); err != nil {
		g.log.Warn("unused quota could not be given back to the store; it stays counted until its window ends", "err", err)
	}
}
