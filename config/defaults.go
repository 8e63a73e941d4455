package config

import (
	"reflect"
	"time"
)

// Defaults (docs/configuration.md, and the ids of docs/behaviour.md they
// come from).
const (
	DefaultListen          = "127.0.0.1:7331"
	DefaultMaxRequestBytes = 4 << 20 // SV-8
	// SV-2: sessions and streams.
	DefaultSessionIdleTimeout   = 30 * time.Minute
	DefaultSessionParkAfter     = time.Second
	DefaultMaxSessions          = 10000
	DefaultMaxSessionsPerActor  = 100
	DefaultMaxStreamsPerSession = 4
	// SV-9: connection deadlines and heartbeats.
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultHeartbeatInterval = 15 * time.Second
	DefaultConfirmTTL        = 15 * time.Minute
	DefaultApprovalWait      = 2 * time.Minute // CF-5
	DefaultReviewMode        = ReviewPin       // RV-3
	DefaultUpstreamTimeout   = 30 * time.Second
	DefaultHealthInterval    = 30 * time.Second // IM-37
	DefaultHealthTimeout     = 5 * time.Second
	DefaultReconnectDelay    = time.Second
	DefaultReconnectMax      = 30 * time.Second
	MinHealthInterval        = time.Second            // a shorter one is load, not health
	MinReconnectDelay        = 100 * time.Millisecond // a shorter one hammers a server that is down
	DefaultEndpointPath      = "/mcp"
	DefaultEndpointName      = "toolgate"
	DefaultActorClaim        = "sub"
)

// SetDefaults fills every unset value with its default; version is the
// default endpoint version. The static defaults come from the key table
// (Keys), where 0 counts as unset, so `timeout: 0s` means the default;
// negative values are left for Validate. It returns warnings about
// defaults an operator should know of.
func (c *Config) SetDefaults(version string) []Warning {
	var warnings []Warning
	g := &c.Gateway
	applyDefaults(reflect.ValueOf(g), "gateway")
	if g.Admin != nil {
		g.Admin.setDefaults()
	}

	// With no endpoint configured there is nothing to say who may call, so
	// the default endpoint has neither auth nor actor and refuses everything
	// (AU-8). Defaulting to open mode instead would hand every tool to
	// anyone who can reach the port, and a config file is exactly the case
	// where the operator means to choose. The demo (no file) runs open mode
	// on loopback on its own.
	if len(c.Endpoints) == 0 {
		c.Endpoints = []Endpoint{{Path: DefaultEndpointPath}}
		warnings = append(warnings, Warning{Path: "endpoints", Message: "none configured: serving " + DefaultEndpointPath + " without auth or actor, so every request is refused; add an endpoint with auth"})
	}
	for i := range c.Endpoints {
		e := &c.Endpoints[i]
		applyDefaults(reflect.ValueOf(e), "endpoints[]")
		setIfZero(&e.Version, version)
		if e.Tools == nil {
			e.Tools = []string{"*"}
		}
		if e.Auth != nil {
			authDefaults(e.Auth)
		}
	}

	c.Inspect.setDefaults(true)
	for i := range c.Endpoints {
		if in := c.Endpoints[i].Inspect; in != nil {
			in.setDefaults(false)
		}
	}
	for i := range c.Upstreams {
		u := &c.Upstreams[i]
		if u.Inspect != nil {
			u.Inspect.setDefaults(false)
		}
		// defaultKind action: unknown side effects are side effects (IM-15).
		applyDefaults(reflect.ValueOf(u), "upstreams[]")
		// Derived from the keys just defaulted.
		setIfZero(&u.Health.Timeout, healthTimeout(u))
		setIfZero(&u.Reconnect.MaxDelay, max(DefaultReconnectMax, u.Reconnect.InitialDelay))
		if u.URL != "" {
			setIfZero(&u.Transport, TransportAuto)
		}
	}
	return warnings
}

// healthTimeout is the default ping timeout: no longer than one operation
// nor than the interval, which Validate requires. Invalid values are left
// for Validate to name.
func healthTimeout(u *Upstream) time.Duration {
	d := DefaultHealthTimeout
	if u.Timeout > 0 {
		d = min(d, u.Timeout)
	}
	if u.Health.Interval > 0 {
		d = min(d, u.Health.Interval)
	}
	return d
}

func authDefaults(a *Auth) {
	if a.OAuth != nil {
		setIfZero(&a.OAuth.ActorClaim, DefaultActorClaim)
	}
	for i := range a.AnyOf {
		authDefaults(&a.AnyOf[i])
	}
}

func setIfZero[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}
