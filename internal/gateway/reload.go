package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/policy"
	"github.com/toolgate/toolgate/core/upstreams"
	"github.com/toolgate/toolgate/mcp/serve"
)

// ReloadReport is what a reload applied (OP-8). It names upstreams,
// endpoints and keys, never a value.
type ReloadReport struct {
	UpstreamsAdded, UpstreamsRemoved, UpstreamsChanged []string
	// UpstreamsPending are added or changed upstreams that did not answer:
	// retried in the background (IM-37), with the error.
	UpstreamsPending map[string]string
	// Diffs are the registry changes, as refreshes publish them (IM-26).
	Diffs []core.Diff
	// EndpointsChanged had their authentication or allow-list replaced;
	// EndpointsClosed are gone from the config and refuse every request
	// until a restart unmounts them.
	EndpointsChanged, EndpointsClosed []string
	// ReviewMode is the new review mode, when it changed.
	ReviewMode string
	// ConfirmMessages names the confirm gate's texts that changed
	// (gateway.confirm.messages.*, CF-7), in force for the next answer.
	ConfirmMessages []string
	// Restart lists the keys whose change takes effect at the next
	// restart; the running values stay.
	Restart []string
}

// Changed reports whether the reload changed anything live.
func (r *ReloadReport) Changed() bool {
	return len(r.UpstreamsAdded)+len(r.UpstreamsRemoved)+len(r.UpstreamsChanged)+
		len(r.EndpointsChanged)+len(r.EndpointsClosed)+len(r.ConfirmMessages) > 0 || r.ReviewMode != ""
}

// ErrReloadClosed: the gateway is closing or closed.
var ErrReloadClosed = errors.New("reload: the gateway is closed")

// Config is the configuration in force: the one New was given, or the last
// reload's, with the keys that need a restart as they run.
func (g *Gateway) Config() *config.Config {
	g.cfgMu.Lock()
	defer g.cfgMu.Unlock()
	return g.cfg
}

func (g *Gateway) setConfig(cfg *config.Config) {
	g.cfgMu.Lock()
	g.cfg = cfg
	g.cfgMu.Unlock()
}

// Reload applies next, a loaded and valid config, to the running gateway
// without dropping a session (OP-8):
//
//   - upstreams added, removed or changed are applied like a refresh: the
//     removed one's tools unregistered, an added or changed one connected
//     and imported, or retried in the background while it does not answer;
//   - endpoints' authentication (keys, strategies, open-mode actor) and
//     allow-lists are replaced, and the review mode and operator approvals
//     switched, and the confirm gate's texts replaced (CF-7), for the next
//     request; live sessions get
//     notifications/tools/list_changed. A session whose credentials are no
//     longer accepted is ended at its next request, which says so;
//   - everything else (listen address, store, confirm gate, session and
//     connection limits, metrics, endpoint paths, names, versions and
//     instructions) takes effect at the next restart: Report.Restart names
//     those keys, and the running values stay.
//
// What can fail (an OAuth issuer's discovery, an upstream's options) is
// built before anything is applied, so an error leaves the running config
// in force, whole. Reloads run one at a time.
func (g *Gateway) Reload(ctx context.Context, next *config.Config) (*ReloadReport, error) {
	if g.importer == nil || g.sessions == nil {
		return nil, errors.New("reload: this gateway serves nothing")
	}
	if next == nil {
		return nil, errors.New("reload: no config")
	}
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	if g.reloads.closed {
		return nil, ErrReloadClosed
	}
	if _, err := next.Validate(); err != nil {
		return nil, err
	}
	d := diffConfigs(g.Config(), next)
	eff := d.effective

	type builtAuth struct {
		sw  *endpointSwitch
		ea  auth.EndpointAuth
		end context.CancelFunc
	}
	var auths []builtAuth
	var built []upstreams.UpstreamSpec
	fail := func(err error) (*ReloadReport, error) {
		for _, a := range auths {
			a.end()
		}
		for _, s := range built {
			_ = s.Upstream.Close()
		}
		return nil, err
	}
	for i, e := range eff.Endpoints {
		sw := g.switches[e.Path]
		if sw == nil || !slices.Contains(d.authChanged, e.Path) && !slices.Contains(d.closed, e.Path) {
			continue
		}
		// The strategies live until a later reload replaces them; their
		// discovery is bounded by ctx as well.
		actx, end := context.WithCancel(g.life)
		unbind := context.AfterFunc(ctx, end)
		ea, err := endpointAuth(actx, eff, e, g.log)
		if !unbind() && err == nil {
			err = context.Cause(ctx)
		}
		if err != nil {
			end()
			return fail(fmt.Errorf("endpoints[%d] %s: %w", i, e.Path, err))
		}
		ea.OnRefusal = g.authRefused(e.Path)
		auths = append(auths, builtAuth{sw: sw, ea: ea, end: end})
	}
	// Compiled before anything is applied: Validate checked every rule,
	// so this fails only if it disagrees with itself.
	policies, err := endpointPolicies(eff)
	if err != nil {
		return fail(err)
	}
	// Built whole before anything is applied (IN-1).
	inspections := map[string]*serve.Inspection{}
	for i := range eff.Endpoints {
		in, err := endpointInspection(eff, &eff.Endpoints[i])
		if err != nil {
			return fail(err)
		}
		inspections[eff.Endpoints[i].Path] = in
	}
	// A limits change starts every bucket afresh; quotas keep their
	// counts in the store.
	var limits *policy.Limits
	if d.limits {
		if limits, err = g.newCallLimits(eff); err != nil {
			return fail(err)
		}
	}
	// Each endpoint's rules are built whole before anything is applied
	// and swapped below in one store, so a call reads the old set or the
	// new one, never a mix (OP-8). A part the diff finds unchanged keeps
	// the value in force: the limits hold the rate buckets, and an
	// allow-list or policy carried over tells no session of a change that
	// is none.
	rules := map[string]*serve.Rules{}
	for _, e := range eff.Endpoints {
		sw := g.switches[e.Path]
		if sw == nil {
			continue
		}
		cur := sw.ep.Rules()
		r := &serve.Rules{Tools: cur.Tools, Policy: cur.Policy, Limits: cur.Limits, Inspection: inspections[e.Path]}
		if d.limits {
			r.Limits = limits
		}
		if slices.Contains(d.policyChanged, e.Path) {
			r.Policy = policies[e.Path]
		}
		if slices.Contains(d.toolsChanged, e.Path) {
			r.Tools = e.Tools
		}
		rules[e.Path] = r
	}
	specs := make([]upstreams.UpstreamSpec, 0, len(eff.Upstreams))
	for _, u := range eff.Upstreams {
		if !slices.Contains(d.upAdded, u.Name) && !slices.Contains(d.upChanged, u.Name) {
			specs = append(specs, upstreams.UpstreamSpec{Name: u.Name}) // keep it running
			continue
		}
		s, err := g.specOf(u, g.hub)
		if err != nil {
			return fail(err)
		}
		built = append(built, s)
		specs = append(specs, s)
	}

	// The texts were checked with the config, so this refuses nothing in
	// practice; were it to, nothing is applied yet.
	if len(d.messages) > 0 && g.gate != nil {
		if err := g.gate.SetMessages(confirmMessages(eff.Gateway.Confirm.Messages)); err != nil {
			return fail(err)
		}
	}
	// Authentication first: a removed key stops working before the
	// upstreams, which may take a while to answer, are done.
	rep := &ReloadReport{
		UpstreamsAdded: d.upAdded, UpstreamsRemoved: d.upRemoved, UpstreamsChanged: d.upChanged,
		EndpointsClosed: d.closed, ConfirmMessages: d.messages, Restart: d.restart,
	}
	for _, a := range auths {
		a.sw.set(a.ea, a.end)
	}
	// The mode first: the endpoints told below re-read what it gates
	// (their prompts and resources at once).
	if d.reviewMode {
		if err := g.review.SetMode(core.ReviewMode(eff.Gateway.Review.Mode)); err == nil {
			rep.ReviewMode = eff.Gateway.Review.Mode
		}
	}
	notify := map[string]bool{}
	for _, e := range eff.Endpoints {
		sw := g.switches[e.Path]
		if sw == nil {
			continue
		}
		sw.ep.SetRules(rules[e.Path]) // notifies when the allow-list or policy changed
		switch {
		case slices.Contains(d.policyChanged, e.Path), slices.Contains(d.toolsChanged, e.Path):
		case slices.Contains(d.authChanged, e.Path), d.reviewMode:
			// Roles or review decide what an actor sees.
			sw.ep.ToolsChanged()
		default:
			continue
		}
		notify[e.Path] = true
	}
	for _, e := range eff.Endpoints {
		if notify[e.Path] && !slices.Contains(d.closed, e.Path) {
			rep.EndpointsChanged = append(rep.EndpointsChanged, e.Path)
		}
	}
	g.setOperators(eff)
	g.setConfig(eff)
	if d.limits {
		// Every endpoint counts on the new limits: the old ones' unused
		// quota goes back to the store (PO-3).
		g.useLimits(limits)
	}

	if moved := !slices.EqualFunc(g.importer.Statuses(), eff.Upstreams, func(s core.UpstreamStatus, u config.Upstream) bool { return s.Name == u.Name }); moved || len(built) > 0 {
		res, err := g.importer.Reconfigure(ctx, specs)
		if err != nil {
			// Only a closed importer or a spec list that contradicts itself
			// get here; the config was valid, so it is the former.
			for _, s := range built {
				_ = s.Upstream.Close()
			}
			return rep, err
		}
		rep.Diffs = res.Diffs
		for name, err := range res.Pending {
			if rep.UpstreamsPending == nil {
				rep.UpstreamsPending = map[string]string{}
			}
			rep.UpstreamsPending[name] = err.Error()
		}
	}
	g.logReload(rep, d)
	return rep, nil
}

// logReload writes the reload's record: names and keys only (IM-5). The
// tool diffs are the operator log's, as for every refresh.
func (g *Gateway) logReload(rep *ReloadReport, d *configDiff) {
	if rep.Changed() {
		attrs := []any{}
		add := func(key string, names []string) {
			if len(names) > 0 {
				attrs = append(attrs, key, names)
			}
		}
		add("upstreamsAdded", rep.UpstreamsAdded)
		add("upstreamsRemoved", rep.UpstreamsRemoved)
		add("upstreamsChanged", rep.UpstreamsChanged)
		if len(d.upFields) > 0 {
			attrs = append(attrs, "upstreamKeys", d.upFields)
		}
		add("endpointsChanged", rep.EndpointsChanged)
		add("endpointsClosed", rep.EndpointsClosed)
		if rep.ReviewMode != "" {
			attrs = append(attrs, "reviewMode", rep.ReviewMode)
		}
		add("confirmMessages", rep.ConfirmMessages)
		g.log.Info("config reloaded", attrs...)
	} else {
		g.log.Info("config reloaded: nothing changed that applies live")
	}
	for _, name := range slices.Sorted(maps.Keys(rep.UpstreamsPending)) {
		g.log.Warn("upstream unavailable after the reload; retried in the background", "upstream", name, "err", rep.UpstreamsPending[name])
	}
	if len(rep.Restart) > 0 {
		g.log.Warn("config reload: these changes take effect at the next restart; the running values stay", "keys", rep.Restart)
	}
}
