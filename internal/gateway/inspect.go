package gateway

import (
	"fmt"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/flows"
	"github.com/toolgate/toolgate/core/inspect"
	"github.com/toolgate/toolgate/mcp/serve"
)

// endpointInspection builds the inspection of every upstream's tools (and
// the gateway's own, source "") through e (IN-1). A source whose actions
// are all off gets no policy, so its calls pay nothing; an endpoint where
// every source is off gets nil.
func endpointInspection(cfg *config.Config, e *config.Endpoint) (*serve.Inspection, error) {
	by := map[string]*serve.Inspect{}
	add := func(source string, u *config.Upstream) error {
		in := cfg.InspectFor(e, u)
		if in.Off() {
			return nil
		}
		p, err := inspectPolicy(in)
		if err != nil {
			return fmt.Errorf("inspect of %q through %s: %w", source, e.Path, err)
		}
		by[source] = &serve.Inspect{Policy: p, Hooks: inspectHooks(in.Hooks)}
		return nil
	}
	if err := add("", nil); err != nil {
		return nil, err
	}
	for i := range cfg.Upstreams {
		if err := add(cfg.Upstreams[i].Name, &cfg.Upstreams[i]); err != nil {
			return nil, err
		}
	}
	labels := map[string]*flows.Rules{}
	for _, u := range cfg.Upstreams {
		if len(u.Labels) > 0 || len(u.ToolLabels) > 0 {
			labels[u.Name] = &flows.Rules{Labels: u.Labels, ByGlob: u.ToolLabels}
		}
	}
	// Flows are gathered where something can read or make labels: a rule
	// on them, configured labels, or inspection (IN-3).
	if len(by) == 0 && len(labels) == 0 && !rulesReadLabels(cfg.Policies) && !rulesReadLabels(e.Policies) {
		return nil, nil
	}
	return &serve.Inspection{BySource: by, Labels: labels, FlowWindow: cfg.InspectFor(e, nil).FlowWindow}, nil
}

// rulesReadLabels reports whether a rule reads tool.labels or
// session.labels.
func rulesReadLabels(p *config.Policies) bool {
	if p == nil {
		return false
	}
	for _, r := range p.Rules {
		if strings.Contains(r.When, "tool.labels") || strings.Contains(r.When, "session.labels") {
			return true
		}
	}
	return false
}

// inspectPolicy compiles one merged inspect block.
func inspectPolicy(in config.Inspect) (*inspect.Policy, error) {
	det, err := inspect.New(&inspect.Options{PIITypes: in.PII.Types, AllowHosts: in.AllowHosts})
	if err != nil {
		return nil, err
	}
	a := func(s string) inspect.Action { return inspect.Action(s) }
	return &inspect.Policy{
		Inspector: det,
		// Indexed like inspect.Types: secrets, pii, injection, links.
		Arguments: [4]inspect.Action{a(in.Arguments.Secrets), a(in.Arguments.PII), inspect.ActionOff, inspect.ActionOff},
		Results:   [4]inspect.Action{a(in.Results.Secrets), a(in.Results.PII), a(in.Results.Injection), a(in.Results.Links)},
		MaxBytes:  int(in.MaxBytes),
	}, nil
}

// inspectHooks are the external guards of one merged inspect block (IN-4),
// defaults applied by config.
func inspectHooks(hs []config.InspectHook) []serve.Hook {
	var out []serve.Hook
	for _, h := range hs {
		sh := serve.Hook{URL: h.URL, Timeout: h.Timeout, FailAllow: h.Failure == config.HookAllow,
			Arguments: slices.Contains(h.On, config.HookArguments), Results: slices.Contains(h.On, config.HookResults)}
		if len(h.Headers) > 0 {
			sh.Headers = make(map[string]string, len(h.Headers))
			for k, v := range h.Headers {
				sh.Headers[k] = v.Reveal()
			}
		}
		out = append(out, sh)
	}
	return out
}

// toolLabelsOf are t's flow labels under cfg (IN-3), as an endpoint
// computes them for a call.
func toolLabelsOf(cfg *config.Config, t core.Tool) []string {
	for _, u := range cfg.Upstreams {
		if u.Name == t.Source {
			return flows.ToolLabels(&flows.Rules{Labels: u.Labels, ByGlob: u.ToolLabels}, t)
		}
	}
	return flows.ToolLabels(nil, t)
}
