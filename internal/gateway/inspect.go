package gateway

import (
	"fmt"
	"slices"

	"github.com/toolgate/toolgate/config"
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
	if len(by) == 0 {
		return nil, nil
	}
	return &serve.Inspection{BySource: by}, nil
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
