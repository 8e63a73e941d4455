package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Reload says when a changed key takes effect.
type Reload string

const (
	// Live: a reload applies it, from the next request on.
	Live Reload = "live"
	// Restart: a reload names the key and the running value stays until
	// the gateway restarts.
	Restart Reload = "restart"
)

// Negative says what a negative number or duration means for a key.
type Negative int

const (
	// NegativeRefused, for most keys: a negative value is a config error.
	NegativeRefused Negative = iota
	// NegativeNever: a negative value switches the thing off for good
	// ("never park").
	NegativeNever
)

// Key is one configuration key (OP-1). Keys is the one table of them: the
// loader takes the environment overrides from it, SetDefaults and Validate
// the defaults and the rules for numbers, and config/docs_test.go holds
// docs/configuration.md to it.
//
// Numbers and durations follow one rule, stated here once: 0, like leaving
// the key out, means the default (Default, or what About says); a negative
// value is refused unless Negative says what it means; a value below Min
// is refused. Zero names a key whose default is 0 and says what 0 does.
type Key struct {
	// Path as the docs write it: nested keys joined by ".", list elements
	// as "[]" (upstreams[].timeout).
	Path string
	// Env is the environment variable that overrides the key, winning over
	// the file; "" for none. Only keys outside lists have one.
	Env string
	// EnvDeprecated is an older name of Env that still works, with a
	// warning, when Env is unset and the file does not set the key.
	EnvDeprecated string
	// Default is the value an unset key gets, as its Go type
	// (time.Duration, int, int64, string, bool); nil for none.
	Default any
	// Derived: SetDefaults computes the default from other keys or the
	// context, and Default is its usual value; About says how.
	Derived bool
	// About says in words what an unset key means when Default alone does
	// not tell it.
	About string
	// Unit is what a number counts ("bytes", "sessions"); durations are
	// Go durations (30s, 15m) and have none.
	Unit string
	// Min is the smallest accepted value of a number or duration, as its
	// Go type; nil for any value above 0.
	Min any
	// Zero says what 0 means for a key whose default is 0.
	Zero     string
	Negative Negative
	Reload   Reload
}

// Keys lists every key of the configuration, in the order of the docs. The
// slice is the caller's own.
func Keys() []Key { return slices.Clone(keys()) }

// KeyByPath returns the key at path, written as in Key.Path.
func KeyByPath(path string) (Key, bool) {
	k, ok := keyIndex()[path]
	return k, ok
}

// keys is the table, built on first use rather than in the package's
// initialiser, like keyIndex: a process that loads no configuration never
// needs it (QB-5). The order is docs/configuration.md's.
var keys = sync.OnceValue(func() []Key {
	return slices.Concat([]Key{
		{Path: "gateway.listen", Env: "TOOLGATE_GATEWAY_LISTEN", Default: DefaultListen, Reload: Restart},
		{Path: "gateway.publicUrl", Env: "TOOLGATE_GATEWAY_PUBLICURL", About: "the request's scheme and Host", Reload: Live},
		{Path: "gateway.stateless", Env: "TOOLGATE_GATEWAY_STATELESS", Default: false, Reload: Restart},
		{Path: "gateway.advertise", Env: "TOOLGATE_GATEWAY_ADVERTISE", About: "the listen address as bound; for a host binding every interface, POD_IP or the first non-loopback interface address", Reload: Restart},
		{Path: "gateway.store", Env: "TOOLGATE_GATEWAY_STORE", About: "toolgate.db in the user data dir", Reload: Restart},
		{Path: "gateway.maxRequestBytes", Env: "TOOLGATE_GATEWAY_MAXREQUESTBYTES", Default: int64(DefaultMaxRequestBytes), Unit: "bytes", Reload: Restart},
		{Path: "gateway.sessionIdleTimeout", Env: "TOOLGATE_GATEWAY_SESSIONIDLETIMEOUT", Default: DefaultSessionIdleTimeout, Reload: Restart},
		{Path: "gateway.sessionParkAfter", Env: "TOOLGATE_GATEWAY_SESSIONPARKAFTER", Default: DefaultSessionParkAfter, Negative: NegativeNever, Reload: Restart},
		{Path: "gateway.maxSessions", Env: "TOOLGATE_GATEWAY_MAXSESSIONS", Default: DefaultMaxSessions, Unit: "sessions", Reload: Restart},
		{Path: "gateway.maxSessionsPerActor", Env: "TOOLGATE_GATEWAY_MAXSESSIONSPERACTOR", Default: DefaultMaxSessionsPerActor, Unit: "sessions", Reload: Restart},
		{Path: "gateway.maxStreamsPerSession", Env: "TOOLGATE_GATEWAY_MAXSTREAMSPERSESSION", Default: DefaultMaxStreamsPerSession, Unit: "streams", Reload: Restart},
		{Path: "gateway.readTimeout", Env: "TOOLGATE_GATEWAY_READTIMEOUT", Default: DefaultReadTimeout, Reload: Restart},
		{Path: "gateway.writeTimeout", Env: "TOOLGATE_GATEWAY_WRITETIMEOUT", Default: DefaultWriteTimeout, Reload: Restart},
		{Path: "gateway.idleTimeout", Env: "TOOLGATE_GATEWAY_IDLETIMEOUT", Default: DefaultIdleTimeout, Reload: Restart},
		{Path: "gateway.heartbeatInterval", Env: "TOOLGATE_GATEWAY_HEARTBEATINTERVAL", Default: DefaultHeartbeatInterval, Reload: Restart},
		{Path: "gateway.listTtl", Env: "TOOLGATE_GATEWAY_LISTTTL", Default: time.Duration(0), Zero: "the client revalidates every time", Reload: Restart},
		{Path: "gateway.watchConfig", Env: "TOOLGATE_GATEWAY_WATCHCONFIG", Default: false, Reload: Live},
		{Path: "gateway.confirm.secret", Env: "TOOLGATE_GATEWAY_CONFIRM_SECRET", EnvDeprecated: "TOOLGATE_CONFIRM_SECRET", About: "none; required when an action tool can be served", Reload: Restart},
		{Path: "gateway.confirm.ttl", Env: "TOOLGATE_GATEWAY_CONFIRM_TTL", Default: DefaultConfirmTTL, Reload: Restart},
		{Path: "gateway.confirm.approvalWait", Env: "TOOLGATE_GATEWAY_CONFIRM_APPROVALWAIT", Default: DefaultApprovalWait, Reload: Restart},
		{Path: "gateway.confirm.messages.preview", About: "built-in text", Reload: Live},
		{Path: "gateway.confirm.messages.invalid", About: "built-in text", Reload: Live},
		{Path: "gateway.confirm.messages.used", About: "built-in text", Reload: Live},
		{Path: "gateway.confirm.messages.expired", About: "built-in text", Reload: Live},
		{Path: "gateway.confirm.messages.rejected", About: "built-in text", Reload: Live},
		{Path: "gateway.confirm.messages.timedOut", About: "built-in text", Reload: Live},
		{Path: "gateway.confirm.messages.waiting", About: "built-in text", Reload: Live},
		{Path: "gateway.confirm.messages.shuttingDown", About: "built-in text", Reload: Live},
		{Path: "gateway.review.mode", Env: "TOOLGATE_GATEWAY_REVIEW_MODE", Default: DefaultReviewMode, Reload: Live},
		{Path: "gateway.metrics.enabled", Env: "TOOLGATE_GATEWAY_METRICS_ENABLED", Default: true, Derived: true, About: "on unless set to false", Reload: Restart},
		// The admin API exists only when its block does: an override of its
		// listen address alone would open one.
		{Path: "gateway.admin.listen", Default: AdminDefaultListen, Derived: true, About: "when gateway.admin is present", Reload: Restart},
		{Path: "gateway.admin.keys[].key", Reload: Restart},
		{Path: "gateway.admin.keys[].operator", Reload: Restart},
		{Path: "gateway.credentialsKey", Env: "TOOLGATE_GATEWAY_CREDENTIALSKEY", About: "none; required when an upstream has oauth", Reload: Restart},
		{Path: "gateway.credentialsKeyPrevious", Env: "TOOLGATE_GATEWAY_CREDENTIALSKEYPREVIOUS", Reload: Restart},

		{Path: "endpoints[].path", Default: DefaultEndpointPath, Derived: true, About: "the path of the endpoint served when none is configured", Reload: Restart},
		{Path: "endpoints[].name", Default: DefaultEndpointName, Reload: Restart},
		{Path: "endpoints[].version", Derived: true, About: "toolgate's version", Reload: Restart},
		{Path: "endpoints[].instructions", Reload: Restart},
		{Path: "endpoints[].discovery.mode", Default: DiscoveryOff, Reload: Restart},
		{Path: "endpoints[].discovery.alwaysList", Reload: Restart},
		{Path: "endpoints[].tools", Derived: true, About: `["*"]: every tool`, Reload: Live},
		{Path: "endpoints[].auth.apiKeys[].key", Reload: Live},
		{Path: "endpoints[].auth.apiKeys[].actor.id", Reload: Live},
		{Path: "endpoints[].auth.apiKeys[].actor.roles", Reload: Live},
		{Path: "endpoints[].auth.apiKeys[].actor.tenant", Reload: Live},
		{Path: "endpoints[].auth.apiKeys[].actor.claims", Reload: Live},
		{Path: "endpoints[].auth.oauth.issuer", Reload: Live},
		{Path: "endpoints[].auth.oauth.jwksUrl", About: "discovered from the issuer", Reload: Live},
		{Path: "endpoints[].auth.oauth.audience", Derived: true, About: "default: this endpoint's resource URL", Reload: Live},
		{Path: "endpoints[].auth.oauth.scopesSupported", Reload: Live},
		{Path: "endpoints[].auth.oauth.rolesFromScopes", Reload: Live},
		{Path: "endpoints[].auth.oauth.actorClaim", Default: DefaultActorClaim, Derived: true, About: "in every oauth block, anyOf's included", Reload: Live},
		{Path: "endpoints[].auth.oauth.tenantClaim", Reload: Live},
		{Path: "endpoints[].auth.oauth.introspectionUrl", Reload: Live},
		{Path: "endpoints[].auth.oauth.clientId", Reload: Live},
		{Path: "endpoints[].auth.oauth.clientSecret", Reload: Live},
		{Path: "endpoints[].auth.anyOf[]", Reload: Live},
		{Path: "endpoints[].actor.id", Reload: Live},
		{Path: "endpoints[].actor.roles", Reload: Live},
		{Path: "endpoints[].actor.tenant", Reload: Live},
		{Path: "endpoints[].actor.claims", Reload: Live},
		{Path: "endpoints[].policies.default", About: "the top-level policies.default", Reload: Live},
		{Path: "endpoints[].policies.rules[].id", Reload: Live},
		{Path: "endpoints[].policies.rules[].when", Reload: Live},
		{Path: "endpoints[].policies.rules[].effect", Reload: Live},
		{Path: "endpoints[].policies.rules[].reason", Reload: Live},
	}, inspectKeys("endpoints[].inspect", "the upstream's, else the top level's"), []Key{

		{Path: "upstreams[].name", Reload: Live},
		{Path: "upstreams[].command", Reload: Live},
		{Path: "upstreams[].args", Reload: Live},
		{Path: "upstreams[].cwd", About: "the gateway's", Reload: Live},
		{Path: "upstreams[].env", About: "a minimal environment", Reload: Live},
		{Path: "upstreams[].required", Default: false, Reload: Live},
		{Path: "upstreams[].prefix", About: "the name", Reload: Live},
		{Path: "upstreams[].include", About: "all", Reload: Live},
		{Path: "upstreams[].exclude", Reload: Live},
		{Path: "upstreams[].reads", Reload: Live},
		{Path: "upstreams[].actions", Reload: Live},
		{Path: "upstreams[].defaultKind", Default: KindAction, Reload: Live},
		{Path: "upstreams[].approval", Default: ApprovalClient, Reload: Live},
		{Path: "upstreams[].roles", Reload: Live},
		{Path: "upstreams[].timeout", Default: DefaultUpstreamTimeout, Reload: Live},
		{Path: "upstreams[].health.enabled", Default: true, Derived: true, About: "on unless set to false", Reload: Live},
		{Path: "upstreams[].health.interval", Default: DefaultHealthInterval, Min: MinHealthInterval, Reload: Live},
		{Path: "upstreams[].health.timeout", Default: DefaultHealthTimeout, Derived: true, About: "at most timeout and health.interval", Reload: Live},
		{Path: "upstreams[].reconnect.enabled", Default: true, Derived: true, About: "on unless set to false", Reload: Live},
		{Path: "upstreams[].reconnect.initialDelay", Default: DefaultReconnectDelay, Min: MinReconnectDelay, Reload: Live},
		{Path: "upstreams[].reconnect.maxDelay", Default: DefaultReconnectMax, Derived: true, About: "at least reconnect.initialDelay", Reload: Live},
		{Path: "upstreams[].url", Reload: Live},
		{Path: "upstreams[].transport", Default: TransportAuto, Derived: true, About: "for a url upstream", Reload: Live},
		{Path: "upstreams[].headers", Reload: Live},
		{Path: "upstreams[].authorization", Reload: Live},
		{Path: "upstreams[].signing.hmacSha256.secret", Reload: Live},
		{Path: "upstreams[].signing.hmacSha256.header", Reload: Live},
		{Path: "upstreams[].roots", Reload: Live},
		{Path: "upstreams[].oauth.credentials", Reload: Restart},
		{Path: "upstreams[].oauth.clientId", About: "a Client ID Metadata Document, else dynamic registration", Reload: Restart},
		{Path: "upstreams[].oauth.clientSecret", Reload: Restart},
		{Path: "upstreams[].oauth.clientKeyFile", Reload: Restart},
		{Path: "upstreams[].oauth.clientKeyId", Reload: Restart},
		{Path: "upstreams[].oauth.clientAssertionAudience", Default: "issuer", Derived: true, About: "read as issuer when unset", Reload: Restart},
		{Path: "upstreams[].oauth.scopes", About: "the scopes_supported of the upstream's protected-resource metadata", Reload: Restart},
		{Path: "upstreams[].oauth.tokenExchange", Default: false, Reload: Restart},
	}, inspectKeys("upstreams[].inspect", "the top level's"), []Key{
		{Path: "upstreams[].labels", Reload: Live},
		{Path: "upstreams[].toolLabels", Reload: Live},
		{Path: "upstreamsFrom", Reload: Live},

		{Path: "policies.default", Default: PolicyAllow, Derived: true, About: "read as allow when unset", Reload: Live},
		{Path: "policies.rules[].id", Reload: Live},
		{Path: "policies.rules[].when", Reload: Live},
		{Path: "policies.rules[].effect", Reload: Live},
		{Path: "policies.rules[].reason", Reload: Live},
		{Path: "limits[].id", Reload: Live},
		{Path: "limits[].per", Reload: Live},
		{Path: "limits[].rate", Reload: Live},
		{Path: "limits[].burst", Derived: true, About: "the rate's count, rounded up", Unit: "calls", Reload: Live},
		{Path: "limits[].match", About: "every call", Reload: Live},
		{Path: "limits[].quota", Reload: Live},

		{Path: "telemetry.traces.endpoint", About: "none (no traces)", Reload: Restart},
		{Path: "telemetry.traces.protocol", Derived: true, About: "OTEL_EXPORTER_OTLP_PROTOCOL, else http", Reload: Restart},
		{Path: "telemetry.traces.headers", Reload: Restart},
		{Path: "telemetry.traces.sampleRatio", Derived: true, About: "1.0", Reload: Restart},
		{Path: "audit.checkpointKey", Env: "TOOLGATE_AUDIT_CHECKPOINTKEY", About: "derived from gateway.confirm.secret", Reload: Restart},
		{Path: "audit.export.path", Reload: Restart},
	}, inspectKeys("inspect", ""))
})

// inspectKeys are the keys of an inspect block at prefix. inherited says
// where an unset action, list or bound of a scoped block comes from; ""
// is the top level, which holds the defaults and the flow window.
func inspectKeys(prefix, inherited string) []Key {
	var ks []Key
	for _, k := range []string{"arguments.secrets", "arguments.pii", "results.secrets", "results.pii", "results.injection", "results.links"} {
		if inherited == "" {
			ks = append(ks, Key{Path: prefix + "." + k, Default: InspectOff, Reload: Live})
		} else {
			ks = append(ks, Key{Path: prefix + "." + k, About: inherited, Reload: Live})
		}
	}
	if inherited == "" {
		ks = append(ks,
			Key{Path: prefix + ".allowHosts", About: "none", Reload: Live},
			Key{Path: prefix + ".pii.types", About: "all", Reload: Live},
			Key{Path: prefix + ".maxBytes", Default: int64(DefaultInspectMaxBytes), Unit: "bytes", Reload: Live},
			Key{Path: prefix + ".flowWindow", Default: DefaultFlowWindow, Reload: Live})
	} else {
		ks = append(ks,
			Key{Path: prefix + ".allowHosts", About: inherited, Reload: Live},
			Key{Path: prefix + ".pii.types", About: inherited, Reload: Live},
			Key{Path: prefix + ".maxBytes", About: inherited, Unit: "bytes", Reload: Live},
			Key{Path: prefix + ".flowWindow", About: "not accepted here: inspect.flowWindow", Reload: Live})
	}
	return append(ks,
		Key{Path: prefix + ".hooks[].url", Reload: Live},
		Key{Path: prefix + ".hooks[].on", About: "both", Reload: Live},
		Key{Path: prefix + ".hooks[].timeout", Default: DefaultHookTimeout, Reload: Live},
		Key{Path: prefix + ".hooks[].failure", Default: HookBlock, Reload: Live},
		Key{Path: prefix + ".hooks[].headers", Reload: Live})
}

// keyIndex finds a key by its path.
var keyIndex = sync.OnceValue(func() map[string]Key {
	ks := keys()
	m := make(map[string]Key, len(ks))
	for _, k := range ks {
		m[k.Path] = k
	}
	return m
})

// FormatValue writes a default or limit as a config file would: durations
// in their shortest Go form (30m, 1s, 100ms), the rest as YAML scalars.
func FormatValue(v any) string {
	switch v := v.(type) {
	case time.Duration:
		return formatDuration(v)
	case string:
		return v
	}
	return fmt.Sprint(v)
}

// formatDuration drops the zero units Go's String keeps: 30m, not 30m0s.
func formatDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// zeroMeans is the words an error about a negative or too small value
// ends with: what the operator can write instead.
func (k Key) zeroMeans() string {
	if k.Zero != "" {
		return "0: " + k.Zero
	}
	var def []string
	if k.Default != nil {
		def = append(def, FormatValue(k.Default))
	}
	if k.About != "" {
		def = append(def, k.About)
	}
	if len(def) == 0 {
		return "leave it out for none"
	}
	return "0 or leaving it out means the default, " + strings.Join(def, ", ")
}

// envOf is the environment variable of the key at path, for messages.
func envOf(path string) string {
	return keyIndex()[path].Env
}

// EnvOverride is one environment variable that overrides a key.
type EnvOverride struct {
	Name string
	Key  Key
	// Deprecated: an older name of the key's variable.
	Deprecated bool
}

// EnvOverrides lists every environment variable the loader reads, the
// deprecated names included, in the order of Keys.
func EnvOverrides() []EnvOverride {
	var out []EnvOverride
	for _, k := range keys() {
		if k.Env != "" {
			out = append(out, EnvOverride{Name: k.Env, Key: k})
		}
		if k.EnvDeprecated != "" {
			out = append(out, EnvOverride{Name: k.EnvDeprecated, Key: k, Deprecated: true})
		}
	}
	return out
}

// numberAt reads the int or duration at rel (dot-separated koanf names,
// no lists) below the struct v. ok is false when rel is not a number or
// passes a nil pointer.
func numberAt(v reflect.Value, rel string) (n int64, t reflect.Type, ok bool) {
	f, ok := fieldAt(v, rel)
	if !ok {
		return 0, nil, false
	}
	switch f.Kind() {
	case reflect.Int, reflect.Int64:
		return f.Int(), f.Type(), true
	}
	return 0, nil, false
}

// fieldAt follows rel's koanf names from the struct v; ok is false at a
// nil pointer or an unknown name.
func fieldAt(v reflect.Value, rel string) (reflect.Value, bool) {
	for _, seg := range strings.Split(rel, ".") {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		found := false
		for i := range v.NumField() {
			if name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("koanf"), ","); name == seg {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			return reflect.Value{}, false
		}
	}
	return v, true
}

// keysBelow yields the keys of the table directly below prefix (a path
// such as "gateway" or "upstreams[]"), without entering lists, with their
// path relative to it.
func keysBelow(prefix string) []struct {
	rel string
	key Key
} {
	var out []struct {
		rel string
		key Key
	}
	for _, k := range keys() {
		rel, ok := strings.CutPrefix(k.Path, prefix+".")
		if ok && !strings.Contains(rel, "[]") {
			out = append(out, struct {
				rel string
				key Key
			}{rel, k})
		}
	}
	return out
}

// applyDefaults fills the unset keys below prefix in the struct v (a
// pointer) with their table defaults; Derived ones are SetDefaults' own.
func applyDefaults(v reflect.Value, prefix string) {
	for _, b := range keysBelow(prefix) {
		if b.key.Default == nil || b.key.Derived {
			continue
		}
		f, ok := fieldAt(v, b.rel)
		if !ok || !f.IsZero() || !f.CanSet() {
			continue
		}
		d := reflect.ValueOf(b.key.Default)
		if !d.Type().ConvertibleTo(f.Type()) {
			panic("config: default of " + b.key.Path + " is a " + d.Type().String() + ", the key a " + f.Type().String())
		}
		f.Set(d.Convert(f.Type()))
	}
}

// numbers checks every number and duration below prefix in the struct v
// against the table's rules; p is v's path in messages (upstreams[2]).
func (val *validator) numbers(p, prefix string, v reflect.Value) {
	for _, b := range keysBelow(prefix) {
		n, t, ok := numberAt(v, b.rel)
		if !ok {
			continue
		}
		path := p + "." + b.rel
		k := b.key
		switch {
		case n < 0 && k.Negative == NegativeNever:
		case n < 0:
			val.fail(path, "must not be negative (%s)", k.zeroMeans())
		case k.Min != nil && n < reflect.ValueOf(k.Min).Convert(t).Int():
			val.fail(path, "must be at least %s", FormatValue(reflect.ValueOf(k.Min).Convert(t).Interface()))
		}
	}
}

// envValue parses an override's text into the type of the key it
// overrides, or says why it cannot.
func envValue(t reflect.Type, value string) (any, string) {
	switch {
	case t == durationType:
		if _, err := time.ParseDuration(value); err != nil {
			return nil, fmt.Sprintf("is not a duration: %q (use Go syntax such as 30s or 15m)", value)
		}
		return value, ""
	case t.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(value)
		if err != nil {
			return nil, "is not a boolean (true or false)"
		}
		return b, ""
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return nil, "is not an integer"
		}
		return n, ""
	}
	return value, ""
}
