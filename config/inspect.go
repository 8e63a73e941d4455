package config

import (
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/inspect"
)

// Inspection actions (IN-1), from the mildest.
const (
	InspectOff     = "off"
	InspectFlag    = "flag"
	InspectRedact  = "redact"
	InspectBlock   = "block"
	InspectApprove = "approve"
)

// InspectActions lists the actions in the order docs and errors give them.
var InspectActions = []string{InspectOff, InspectFlag, InspectRedact, InspectBlock, InspectApprove}

// Hook directions and failure modes (IN-4).
const (
	HookArguments = "arguments"
	HookResults   = "results"
	HookBlock     = "block"
	HookAllow     = "allow"
)

// Defaults of the inspect block (IN-1, IN-3, IN-4).
const (
	// DefaultInspectMaxBytes: content above it is not read by the
	// detectors (see Inspect.MaxBytes).
	DefaultInspectMaxBytes = 1 << 20
	DefaultFlowWindow      = time.Hour
	DefaultHookTimeout     = 500 * time.Millisecond
)

// Inspect says what calls may carry in and out (IN-1). It is read at the
// top level, per upstream and per endpoint; for each key the narrowest
// scope that sets it wins (endpoint over upstream over top level), see
// InspectFor.
type Inspect struct {
	Arguments InspectArguments `koanf:"arguments" json:"arguments,omitzero" yaml:"arguments,omitempty"`
	Results   InspectResults   `koanf:"results" json:"results,omitzero" yaml:"results,omitempty"`
	// AllowHosts are hosts links may carry data to: "example.com" (or
	// "*.example.com") allows it and its subdomains. nil: inherit.
	AllowHosts []string   `koanf:"allowHosts" json:"allowHosts,omitempty" yaml:"allowHosts,omitempty"`
	PII        InspectPII `koanf:"pii" json:"pii,omitzero" yaml:"pii,omitempty"`
	// MaxBytes bounds the content the detectors read, as the JSON size of a
	// call's arguments or of one result or message. Above it nothing is
	// read and the strictest action of the direction's kinds applies to the
	// whole: redact becomes block (no span is known), block and approve
	// stay, flag flags it as uninspected.
	MaxBytes int64 `koanf:"maxBytes" json:"maxBytes,omitempty" yaml:"maxBytes,omitempty"`
	// FlowWindow is how long a sessionless client's labels are kept per
	// actor and client (IN-3). Top level only.
	FlowWindow time.Duration `koanf:"flowWindow" json:"flowWindow,omitempty" yaml:"flowWindow,omitempty"`
	// Hooks are external guards (IN-4). nil: inherit; a scope's list
	// replaces its parent's.
	Hooks []InspectHook `koanf:"hooks" json:"hooks,omitempty" yaml:"hooks,omitempty"`
}

// InspectArguments are the actions on what a client sends.
type InspectArguments struct {
	Secrets string `koanf:"secrets" json:"secrets,omitempty" yaml:"secrets,omitempty"`
	PII     string `koanf:"pii" json:"pii,omitempty" yaml:"pii,omitempty"`
}

// InspectResults are the actions on what an upstream answers, its progress
// notifications and log messages included.
type InspectResults struct {
	Secrets   string `koanf:"secrets" json:"secrets,omitempty" yaml:"secrets,omitempty"`
	PII       string `koanf:"pii" json:"pii,omitempty" yaml:"pii,omitempty"`
	Injection string `koanf:"injection" json:"injection,omitempty" yaml:"injection,omitempty"`
	Links     string `koanf:"links" json:"links,omitempty" yaml:"links,omitempty"`
}

// InspectPII selects the personal data that counts.
type InspectPII struct {
	// Types is a subset of email, phone, card, iban, ssn; nil: inherit,
	// all at the top level.
	Types []string `koanf:"types" json:"types,omitempty" yaml:"types,omitempty"`
}

// InspectHook is one external guard (IN-4).
type InspectHook struct {
	URL string `koanf:"url" json:"url" yaml:"url"`
	// On is arguments, results or both; empty: both.
	On      []string          `koanf:"on" json:"on,omitempty" yaml:"on,omitempty"`
	Timeout time.Duration     `koanf:"timeout" json:"timeout,omitempty" yaml:"timeout,omitempty"`
	Failure string            `koanf:"failure" json:"failure,omitempty" yaml:"failure,omitempty"`
	Headers map[string]Secret `koanf:"headers" json:"headers,omitempty" yaml:"headers,omitempty"`
}

// InspectFor is the inspection that applies to a call of an upstream's
// tool through an endpoint: per key, the endpoint's setting, else the
// upstream's, else the top level's, else the default (off, every PII
// type, DefaultInspectMaxBytes). Either scope may be nil.
func (c *Config) InspectFor(endpoint *Endpoint, upstream *Upstream) Inspect {
	out := c.Inspect
	for _, s := range []*Inspect{upstreamInspect(upstream), endpointInspect(endpoint)} {
		if s == nil {
			continue
		}
		over := func(dst *string, v string) {
			if v != "" {
				*dst = v
			}
		}
		over(&out.Arguments.Secrets, s.Arguments.Secrets)
		over(&out.Arguments.PII, s.Arguments.PII)
		over(&out.Results.Secrets, s.Results.Secrets)
		over(&out.Results.PII, s.Results.PII)
		over(&out.Results.Injection, s.Results.Injection)
		over(&out.Results.Links, s.Results.Links)
		if s.AllowHosts != nil {
			out.AllowHosts = s.AllowHosts
		}
		if s.PII.Types != nil {
			out.PII.Types = s.PII.Types
		}
		if s.MaxBytes > 0 {
			out.MaxBytes = s.MaxBytes
		}
		if s.Hooks != nil {
			out.Hooks = s.Hooks
		}
	}
	for _, p := range []*string{&out.Arguments.Secrets, &out.Arguments.PII, &out.Results.Secrets, &out.Results.PII, &out.Results.Injection, &out.Results.Links} {
		setIfZero(p, InspectOff)
	}
	setIfZero(&out.MaxBytes, DefaultInspectMaxBytes)
	setIfZero(&out.FlowWindow, DefaultFlowWindow)
	if out.PII.Types == nil {
		out.PII.Types = slices.Clone(inspect.PIITypes)
	}
	return out
}

func upstreamInspect(u *Upstream) *Inspect {
	if u == nil {
		return nil
	}
	return u.Inspect
}

func endpointInspect(e *Endpoint) *Inspect {
	if e == nil {
		return nil
	}
	return e.Inspect
}

// Off reports whether in reads nothing: every action off and no hook. A
// call under it pays nothing for inspection.
func (in Inspect) Off() bool {
	for _, a := range []string{in.Arguments.Secrets, in.Arguments.PII, in.Results.Secrets, in.Results.PII, in.Results.Injection, in.Results.Links} {
		if a != "" && a != InspectOff {
			return false
		}
	}
	return len(in.Hooks) == 0
}

// setDefaults fills an inspect block's number defaults: the top level gets
// the table's, a scope below only its hooks' timeouts (the rest inherits).
func (in *Inspect) setDefaults(top bool) {
	if top {
		applyDefaults(reflect.ValueOf(in), "inspect")
	}
	for i := range in.Hooks {
		setIfZero(&in.Hooks[i].Timeout, DefaultHookTimeout)
		setIfZero(&in.Hooks[i].Failure, HookBlock)
		if len(in.Hooks[i].On) == 0 {
			in.Hooks[i].On = []string{HookArguments, HookResults}
		}
	}
}

// inspectBlock checks an inspect block at p (inspect, upstreams[0].inspect,
// endpoints[0].inspect); prefix is its key-table path.
func (v *validator) inspectBlock(p, prefix string, in *Inspect, top bool) {
	if in == nil {
		return
	}
	v.numbers(p, prefix, reflect.ValueOf(in))
	for key, a := range map[string]string{
		"arguments.secrets": in.Arguments.Secrets, "arguments.pii": in.Arguments.PII,
		"results.secrets": in.Results.Secrets, "results.pii": in.Results.PII,
		"results.injection": in.Results.Injection, "results.links": in.Results.Links,
	} {
		if a != "" && !slices.Contains(InspectActions, a) {
			v.fail(p+"."+key, "must be one of %s, not %q", strings.Join(InspectActions, ", "), a)
		}
	}
	for i, t := range in.PII.Types {
		if !slices.Contains(inspect.PIITypes, t) {
			v.fail(fmt.Sprintf("%s.pii.types[%d]", p, i), "must be one of %s, not %q", strings.Join(inspect.PIITypes, ", "), t)
		}
	}
	for i, h := range in.AllowHosts {
		host := strings.TrimPrefix(h, "*.")
		if host == "" || strings.ContainsAny(host, "/:@?#* ") {
			v.fail(fmt.Sprintf("%s.allowHosts[%d]", p, i), "must be a host name such as docs.example.com, not %q", h)
		}
	}
	if !top && in.FlowWindow != 0 {
		v.fail(p+".flowWindow", "is read only at the top level (inspect.flowWindow): labels are gathered per session, across upstreams and endpoints")
	}
	for i, h := range in.Hooks {
		hp := fmt.Sprintf("%s.hooks[%d]", p, i)
		v.numbers(hp, prefix+".hooks[]", reflect.ValueOf(&in.Hooks[i]))
		if u, err := url.Parse(h.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.fail(hp+".url", "must be an http or https URL, not %q", h.URL)
		}
		for j, o := range h.On {
			if o != HookArguments && o != HookResults {
				v.fail(fmt.Sprintf("%s.on[%d]", hp, j), "must be %s or %s, not %q", HookArguments, HookResults, o)
			}
		}
		if h.Failure != "" && h.Failure != HookBlock && h.Failure != HookAllow {
			v.fail(hp+".failure", "must be %s or %s, not %q", HookBlock, HookAllow, h.Failure)
		}
	}
}

// inspect validates every inspect block.
func (v *validator) inspect() {
	v.inspectBlock("inspect", "inspect", &v.c.Inspect, true)
	for i, e := range v.c.Endpoints {
		v.inspectBlock(fmt.Sprintf("endpoints[%d].inspect", i), "endpoints[].inspect", e.Inspect, false)
	}
	for i, u := range v.c.Upstreams {
		p := u.From
		if p == "" {
			p = fmt.Sprintf("upstreams[%d]", i)
		}
		v.inspectBlock(p+".inspect", "upstreams[].inspect", u.Inspect, false)
		v.labels(p, u)
	}
}

// labels checks an upstream's flow labels (IN-3): names a rule can test,
// globs the importer's syntax.
func (v *validator) labels(p string, u Upstream) {
	check := func(at, l string) {
		if l == "" || strings.ContainsAny(l, " \t\n\"") {
			v.fail(at, "must be a word such as sends-out, not %q", l)
		}
	}
	for i, l := range u.Labels {
		check(fmt.Sprintf("%s.labels[%d]", p, i), l)
	}
	for g, ls := range u.ToolLabels {
		at := fmt.Sprintf("%s.toolLabels[%q]", p, g)
		if err := core.ValidateGlob(g); err != nil {
			v.fail(at, "%v", err)
		}
		for i, l := range ls {
			check(fmt.Sprintf("%s[%d]", at, i), l)
		}
	}
}
