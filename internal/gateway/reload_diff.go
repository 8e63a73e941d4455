package gateway

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/config"
)

// configDiff is what a reload would change (OP-8): the upstreams to add,
// remove or replace, the endpoints whose authentication or allow-list
// change, and the settings that only a restart applies. It names keys and
// upstreams, never a value, so it can be logged whole (IM-5).
type configDiff struct {
	upAdded, upRemoved, upChanged []string
	// upFields names, per changed upstream, the keys that differ.
	upFields map[string][]string
	// endpoints whose auth (keys, strategies, open-mode actor) or
	// allow-list change; closed are the ones the new config no longer has.
	authChanged, toolsChanged, closed []string
	// policyChanged are the endpoints whose rules (their own or the
	// top-level ones) change (PO-1).
	policyChanged []string
	// limits: the rates and quotas change (PO-3).
	limits     bool
	reviewMode bool
	// operators: an upstream's approval changed, which needs no reconnect.
	operators bool
	// messages names the confirm gate's texts that change (CF-7).
	messages []string
	// restart lists the keys whose change takes effect at the next restart.
	restart []string
	// effective is the config in force after the reload: next, with what
	// needs a restart kept as it runs, so the next reload reports it again.
	effective *config.Config
}

// changed reports whether the reload changes anything live.
func (d *configDiff) changed() bool {
	return len(d.upAdded)+len(d.upRemoved)+len(d.upChanged)+len(d.authChanged)+len(d.toolsChanged)+len(d.closed)+len(d.policyChanged) > 0 ||
		d.reviewMode || d.operators || d.limits || len(d.messages) > 0
}

// needsRestart reports whether a change of the gateway key at path (or of
// a block compared whole, such as gateway.admin) takes effect only at a
// restart, as the key table says (OP-8). A path the table does not know
// counts as needing one, so a key added later is reported rather than
// silently ignored.
func needsRestart(path string) bool {
	if k, ok := config.KeyByPath(path); ok {
		return k.Reload == config.Restart
	}
	known := false
	for _, k := range config.Keys() {
		if strings.HasPrefix(k.Path, path+".") {
			known = true
			if k.Reload == config.Restart {
				return true
			}
		}
	}
	return !known
}

// confirmMessagesKey prefixes the confirm gate's texts, which a reload
// applies (CF-7); the gate's other keys wait for a restart.
const confirmMessagesKey = "gateway.confirm.messages."

// upstreamLive are upstream keys applied without reconnecting.
var upstreamLive = map[string]bool{"approval": true, "inspect": true, "labels": true, "toolLabels": true}

// diffConfigs compares the config in force with the next one. Both are
// loaded, defaulted and valid.
func diffConfigs(cur, next *config.Config) *configDiff {
	d := &configDiff{upFields: map[string][]string{}}
	eff := *next
	d.effective = &eff

	// gateway: the live keys from next, the rest as running (the key
	// table's reload column; TestReloadFollowsKeyTableOP8 holds the two
	// together).
	eff.Gateway = cur.Gateway
	eff.Gateway.Review = next.Gateway.Review
	eff.Gateway.WatchConfig = next.Gateway.WatchConfig
	eff.Gateway.PublicURL = next.Gateway.PublicURL
	eff.Gateway.Confirm.Messages = next.Gateway.Confirm.Messages
	for _, k := range fieldDiffs("gateway", reflect.ValueOf(cur.Gateway), reflect.ValueOf(next.Gateway)) {
		if strings.HasPrefix(k, confirmMessagesKey) {
			d.messages = append(d.messages, k)
			continue
		}
		if needsRestart(k) {
			d.restart = append(d.restart, k)
		}
	}
	// audit: the key and the export's path at restart; SIGHUP reopens
	// the export file (OP-10).
	eff.Audit = cur.Audit
	d.restart = append(d.restart, fieldDiffs("audit", reflect.ValueOf(cur.Audit), reflect.ValueOf(next.Audit))...)
	// telemetry: the exporter is made once, at start (OP-9).
	eff.Telemetry = cur.Telemetry
	d.restart = append(d.restart, fieldDiffs("telemetry", reflect.ValueOf(cur.Telemetry), reflect.ValueOf(next.Telemetry))...)
	d.reviewMode = cur.Gateway.Review.Mode != next.Gateway.Review.Mode
	d.limits = !reflect.DeepEqual(cur.Limits, next.Limits)
	publicURL := cur.Gateway.PublicURL != next.Gateway.PublicURL

	// endpoints, matched by path: auth and allow-list live, the others
	// (the MCP server's name, version, instructions) at restart. A path
	// cannot be mounted or unmounted live: a new one is served at restart,
	// a removed one refuses every request until then.
	nextByPath := map[string]int{}
	for i, e := range next.Endpoints {
		nextByPath[e.Path] = i
	}
	eff.Endpoints = make([]config.Endpoint, 0, len(cur.Endpoints))
	for _, e := range cur.Endpoints {
		i, ok := nextByPath[e.Path]
		if !ok {
			closed := e
			closed.Auth, closed.Actor, closed.Tools = nil, nil, []string{}
			if !reflect.DeepEqual(e, closed) {
				d.closed = append(d.closed, e.Path)
			}
			d.restart = append(d.restart, fmt.Sprintf("endpoints: %s removed (refuses every request until the restart unmounts it)", e.Path))
			eff.Endpoints = append(eff.Endpoints, closed)
			continue
		}
		n := next.Endpoints[i]
		merged := e
		merged.Auth, merged.Actor, merged.Tools = n.Auth, n.Actor, n.Tools
		merged.Policies = n.Policies
		merged.Inspect = n.Inspect // IN-1: read per call
		eff.Endpoints = append(eff.Endpoints, merged)
		if !reflect.DeepEqual(cur.Policies, next.Policies) || !reflect.DeepEqual(e.Policies, n.Policies) {
			d.policyChanged = append(d.policyChanged, e.Path)
		}
		if publicURL || !reflect.DeepEqual(e.Auth, n.Auth) || !reflect.DeepEqual(e.Actor, n.Actor) {
			d.authChanged = append(d.authChanged, e.Path)
		}
		if !slices.Equal(e.Tools, n.Tools) {
			d.toolsChanged = append(d.toolsChanged, e.Path)
		}
		if !reflect.DeepEqual(e.Discovery, n.Discovery) {
			d.restart = append(d.restart, fmt.Sprintf("endpoints[%d].discovery", i))
		}
		for _, k := range []struct {
			key       string
			from, not string
		}{{"name", e.Name, n.Name}, {"version", e.Version, n.Version}, {"instructions", e.Instructions, n.Instructions}} {
			if k.from != k.not {
				d.restart = append(d.restart, fmt.Sprintf("endpoints[%d].%s", i, k.key))
			}
		}
	}
	curPaths := map[string]bool{}
	for _, e := range cur.Endpoints {
		curPaths[e.Path] = true
	}
	for i, e := range next.Endpoints {
		if !curPaths[e.Path] {
			d.restart = append(d.restart, fmt.Sprintf("endpoints[%d]: %s added (served from the restart)", i, e.Path))
		}
	}

	// upstreams, matched by name: all of it live. A new order is taken
	// as it is: a contested name stays with its holder until a refresh.
	curUps := map[string]config.Upstream{}
	for _, u := range cur.Upstreams {
		curUps[u.Name] = u
	}
	nextNames := map[string]bool{}
	for _, u := range next.Upstreams {
		nextNames[u.Name] = true
		old, ok := curUps[u.Name]
		if !ok {
			d.upAdded = append(d.upAdded, u.Name)
			continue
		}
		var reconnect []string
		for _, k := range fieldDiffs("", reflect.ValueOf(old), reflect.ValueOf(u)) {
			if upstreamLive[k] {
				d.operators = true
				continue
			}
			reconnect = append(reconnect, k)
		}
		if len(reconnect) > 0 {
			d.upChanged = append(d.upChanged, u.Name)
			d.upFields[u.Name] = reconnect
		}
	}
	for _, u := range cur.Upstreams {
		if !nextNames[u.Name] {
			d.upRemoved = append(d.upRemoved, u.Name)
		}
	}
	return d
}

// fieldDiffs names the keys under prefix whose values differ, descending
// into structs (not into pointers, lists or maps, which count whole) and
// naming them by their koanf keys. Values are never looked at beyond
// equality.
func fieldDiffs(prefix string, a, b reflect.Value) []string {
	var out []string
	t := a.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("koanf"), ",")
		if key == "" || key == "-" {
			continue
		}
		if prefix != "" {
			key = prefix + "." + key
		}
		fa, fb := a.Field(i), b.Field(i)
		if f.Type.Kind() == reflect.Struct && f.Type.NumField() > 1 {
			out = append(out, fieldDiffs(key, fa, fb)...)
			continue
		}
		if !reflect.DeepEqual(fa.Interface(), fb.Interface()) {
			out = append(out, key)
		}
	}
	return out
}
