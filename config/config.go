// Package config loads toolgate's YAML configuration (docs/configuration.md;
// OP-1 in docs/behaviour.md) into a typed Config and validates it.
//
// The lifecycle is explicit: Load reads the file, interpolates ${VAR}
// references, applies TOOLGATE_… overrides, decodes strictly (unknown keys
// are errors), appends upstreams from an mcpServers file, fills defaults and
// runs Validate. Every error names the key path it is about
// (`upstreams[2].url`, `gateway.confirm.ttl`), and no error, warning or dump
// ever contains a secret value (IM-5): secrets are typed Secret, which prints
// as •••.
package config

import (
	"time"
)

// Config is the whole configuration file.
type Config struct {
	Gateway   Gateway    `koanf:"gateway" json:"gateway" yaml:"gateway"`
	Endpoints []Endpoint `koanf:"endpoints" json:"endpoints,omitempty" yaml:"endpoints,omitempty"`
	Upstreams []Upstream `koanf:"upstreams" json:"upstreams,omitempty" yaml:"upstreams,omitempty"`
	// UpstreamsFrom names an mcpServers JSON file (Claude Desktop, Cursor,
	// VS Code) whose servers are appended to Upstreams at load time (OP-2).
	UpstreamsFrom string `koanf:"upstreamsFrom" json:"upstreamsFrom,omitempty" yaml:"upstreamsFrom,omitempty"`
	// Policies are the rules every endpoint applies (PO-1); nil: none.
	Policies *Policies `koanf:"policies" json:"policies,omitempty" yaml:"policies,omitempty"`
	// Limits are rates and quotas on calls (PO-3).
	Limits []Limit `koanf:"limits" json:"limits,omitempty" yaml:"limits,omitempty"`
	// Audit is the tamper-evident audit's checkpoint key and export (OP-10).
	Audit Audit `koanf:"audit" json:"audit,omitzero" yaml:"audit,omitempty"`
	// Telemetry exports OpenTelemetry traces (OP-9); off by default.
	Telemetry Telemetry `koanf:"telemetry" json:"telemetry,omitzero" yaml:"telemetry,omitempty"`
	// Inspect says what calls may carry in and out (IN-1); upstreams and
	// endpoints may narrow it. Off by default.
	Inspect Inspect `koanf:"inspect" json:"inspect,omitzero" yaml:"inspect,omitempty"`
}

// Gateway holds the process-wide settings.
type Gateway struct {
	Listen string `koanf:"listen" json:"listen" yaml:"listen"`
	// PublicURL is the public origin (scheme://host[:port]) used to build
	// OAuth resource URLs behind a proxy (AU-6). Empty: use the request's.
	PublicURL string `koanf:"publicUrl" json:"publicUrl,omitempty" yaml:"publicUrl,omitempty"`
	Stateless bool   `koanf:"stateless" json:"stateless" yaml:"stateless"`
	// Advertise is host:port where the other replicas sharing the store
	// reach this one (OP-11). Empty: the listen address, its host taken
	// from POD_IP, else the host name, when it binds every interface.
	Advertise string `koanf:"advertise" json:"advertise,omitempty" yaml:"advertise,omitempty"`
	// Store is an embedded database file or a postgres:// URL (OP-5).
	// Empty means the store package's default location.
	Store           string `koanf:"store" json:"store,omitempty" yaml:"store,omitempty"`
	MaxRequestBytes int64  `koanf:"maxRequestBytes" json:"maxRequestBytes" yaml:"maxRequestBytes"`
	// SessionIdleTimeout ends a session after that long without a request
	// or an open stream (SV-2).
	SessionIdleTimeout time.Duration `koanf:"sessionIdleTimeout" json:"sessionIdleTimeout" yaml:"sessionIdleTimeout"`
	// SessionParkAfter lets go of an idle session's protocol state after
	// that long without a request or an open stream; its next request makes
	// it again from its sealed id (SV-2). Negative: never.
	SessionParkAfter time.Duration `koanf:"sessionParkAfter" json:"sessionParkAfter" yaml:"sessionParkAfter"`
	// MaxSessions and MaxSessionsPerActor cap open sessions in all and per
	// actor; MaxStreamsPerSession caps a session's GET streams (SV-2).
	MaxSessions          int `koanf:"maxSessions" json:"maxSessions" yaml:"maxSessions"`
	MaxSessionsPerActor  int `koanf:"maxSessionsPerActor" json:"maxSessionsPerActor" yaml:"maxSessionsPerActor"`
	MaxStreamsPerSession int `koanf:"maxStreamsPerSession" json:"maxStreamsPerSession" yaml:"maxStreamsPerSession"`
	// ReadTimeout bounds reading a request's body, IdleTimeout an idle
	// keep-alive connection, WriteTimeout each write of a response; event
	// streams get an SSE comment every HeartbeatInterval (SV-9).
	ReadTimeout       time.Duration `koanf:"readTimeout" json:"readTimeout" yaml:"readTimeout"`
	WriteTimeout      time.Duration `koanf:"writeTimeout" json:"writeTimeout" yaml:"writeTimeout"`
	IdleTimeout       time.Duration `koanf:"idleTimeout" json:"idleTimeout" yaml:"idleTimeout"`
	HeartbeatInterval time.Duration `koanf:"heartbeatInterval" json:"heartbeatInterval" yaml:"heartbeatInterval"`
	// ListTTL is the ttlMs a 2026-07-28 client is told it may reuse a list
	// for (lists are per actor: cacheScope private). 0: revalidate always.
	ListTTL time.Duration `koanf:"listTtl" json:"listTtl,omitempty" yaml:"listTtl,omitempty"`
	// WatchConfig reloads the config when its file changes; SIGHUP always
	// reloads (OP-8).
	WatchConfig bool    `koanf:"watchConfig" json:"watchConfig" yaml:"watchConfig"`
	Confirm     Confirm `koanf:"confirm" json:"confirm" yaml:"confirm"`
	Review      Review  `koanf:"review" json:"review" yaml:"review"`
	// Metrics is /metrics on the listen address (OP-7).
	Metrics Metrics `koanf:"metrics" json:"metrics,omitzero" yaml:"metrics,omitempty"`
	// Admin is the admin API (CO-9); nil: none.
	Admin *Admin `koanf:"admin" json:"admin,omitempty" yaml:"admin,omitempty"`
	// CredentialsKey encrypts stored upstream OAuth tokens (UI-3);
	// CredentialsKeyPrevious only decrypts, while tokens are rotated to the
	// new key. 32 bytes, base64 (see upstreamoauth.go).
	CredentialsKey         Secret `koanf:"credentialsKey" json:"credentialsKey,omitempty" yaml:"credentialsKey,omitempty"`
	CredentialsKeyPrevious Secret `koanf:"credentialsKeyPrevious" json:"credentialsKeyPrevious,omitempty" yaml:"credentialsKeyPrevious,omitempty"`
}

// Metrics configures the Prometheus metrics at /metrics (OP-7).
type Metrics struct {
	// Enabled is nil when absent, which means on. Use On.
	Enabled *bool `koanf:"enabled" json:"enabled,omitempty" yaml:"enabled,omitempty"`
}

// On reports whether /metrics is served.
func (m Metrics) On() bool { return m.Enabled == nil || *m.Enabled }

// Confirm configures the confirm gate for action tools (CF-3, CF-5).
type Confirm struct {
	Secret       Secret        `koanf:"secret" json:"secret,omitempty" yaml:"secret,omitempty"`
	TTL          time.Duration `koanf:"ttl" json:"ttl" yaml:"ttl"`
	ApprovalWait time.Duration `koanf:"approvalWait" json:"approvalWait" yaml:"approvalWait"`
	// Messages are the texts clients read (CF-7); a reload applies them.
	Messages ConfirmMessages `koanf:"messages" json:"messages,omitzero" yaml:"messages,omitempty"`
}

// ConfirmMessages are the confirm gate's texts (CF-7), each with the
// placeholders it may use: {tool} and {upstream} in all of them, and
// preview, expired: {expires} {minutes}; invalid: {reason}; rejected:
// {operator} {reason}. nil keeps the built-in text; an empty text is
// refused.
type ConfirmMessages struct {
	// Preview answers a call without confirm: nothing ran.
	Preview *string `koanf:"preview" json:"preview,omitempty" yaml:"preview,omitempty"`
	// Invalid refuses a token that is forged or of another tool, actor,
	// tenant or arguments, or missing; {reason} says which (CF-4).
	Invalid *string `koanf:"invalid" json:"invalid,omitempty" yaml:"invalid,omitempty"`
	// Used refuses a token's second use.
	Used    *string `koanf:"used" json:"used,omitempty" yaml:"used,omitempty"`
	Expired *string `koanf:"expired" json:"expired,omitempty" yaml:"expired,omitempty"`
	// Rejected: an operator rejected the call (CF-5).
	Rejected *string `koanf:"rejected" json:"rejected,omitempty" yaml:"rejected,omitempty"`
	// TimedOut: no operator decided within approvalWait.
	TimedOut *string `koanf:"timedOut" json:"timedOut,omitempty" yaml:"timedOut,omitempty"`
	// Waiting is the progress message while a call waits for an operator.
	Waiting *string `koanf:"waiting" json:"waiting,omitempty" yaml:"waiting,omitempty"`
	// ShuttingDown: the gateway shut down while the call waited (SV-9).
	ShuttingDown *string `koanf:"shuttingDown" json:"shuttingDown,omitempty" yaml:"shuttingDown,omitempty"`
}

// ConfirmMessage is one of ConfirmMessages by its key.
type ConfirmMessage struct {
	Key  string
	Text *string
}

// Each lists the messages by key, in the order of the struct.
func (m *ConfirmMessages) Each() []ConfirmMessage {
	return []ConfirmMessage{
		{"preview", m.Preview}, {"invalid", m.Invalid}, {"used", m.Used}, {"expired", m.Expired},
		{"rejected", m.Rejected}, {"timedOut", m.TimedOut}, {"waiting", m.Waiting}, {"shuttingDown", m.ShuttingDown},
	}
}

// Review configures how third-party tool descriptions are gated (RV-3).
type Review struct {
	Mode string `koanf:"mode" json:"mode" yaml:"mode"`
}

// Review modes (RV-3).
const (
	ReviewOff     = "off"
	ReviewWarn    = "warn"
	ReviewPin     = "pin"
	ReviewRequire = "require"
)

// Endpoint is one MCP server the gateway exposes (SV-3).
type Endpoint struct {
	Path         string `koanf:"path" json:"path" yaml:"path"`
	Name         string `koanf:"name" json:"name,omitempty" yaml:"name,omitempty"`
	Version      string `koanf:"version" json:"version,omitempty" yaml:"version,omitempty"`
	Instructions string `koanf:"instructions" json:"instructions,omitempty" yaml:"instructions,omitempty"`
	// Tools is the allow-list of registry names (globs). nil means all;
	// an explicit empty list serves nothing.
	Tools []string `koanf:"tools" json:"tools" yaml:"tools"`
	// Auth and Actor are mutually exclusive: Actor alone is open mode
	// (AU-7); neither fails closed (AU-8).
	Auth  *Auth  `koanf:"auth" json:"auth,omitempty" yaml:"auth,omitempty"`
	Actor *Actor `koanf:"actor" json:"actor,omitempty" yaml:"actor,omitempty"`
	// Policies run after the top-level ones (PO-1); nil: none.
	Policies *Policies `koanf:"policies" json:"policies,omitempty" yaml:"policies,omitempty"`
	// Discovery lists search_tools and call_tool instead of every tool
	// (DS-1); nil: off.
	Discovery *Discovery `koanf:"discovery" json:"discovery,omitempty" yaml:"discovery,omitempty"`
	// Inspect overrides the top-level and upstreams' inspection for calls
	// through this endpoint, key by key (IN-1); nil: none.
	Inspect *Inspect `koanf:"inspect" json:"inspect,omitempty" yaml:"inspect,omitempty"`
}

// Discovery modes (DS-1).
const (
	DiscoveryOff    = "off"
	DiscoverySearch = "search"
)

// Discovery is an endpoint's tool search (DS-1).
type Discovery struct {
	// Mode is off (every tool listed) or search (the two meta-tools and
	// AlwaysList). Empty is off.
	Mode string `koanf:"mode" json:"mode,omitempty" yaml:"mode,omitempty"`
	// AlwaysList names tools listed beside the meta-tools.
	AlwaysList []string `koanf:"alwaysList" json:"alwaysList,omitempty" yaml:"alwaysList,omitempty"`
}

// Search reports whether d turns tool search on.
func (d *Discovery) Search() bool { return d != nil && d.Mode == DiscoverySearch }

// Open reports whether the endpoint runs in open mode (AU-7).
func (e Endpoint) Open() bool { return e.Auth == nil && e.Actor != nil }

// Auth is one authentication strategy: exactly one field is set.
type Auth struct {
	APIKeys []APIKey `koanf:"apiKeys" json:"apiKeys,omitempty" yaml:"apiKeys,omitempty"`
	OAuth   *OAuth   `koanf:"oauth" json:"oauth,omitempty" yaml:"oauth,omitempty"`
	// AnyOf tries strategies in order (AU-2). Nesting is refused.
	AnyOf []Auth `koanf:"anyOf" json:"anyOf,omitempty" yaml:"anyOf,omitempty"`
}

// APIKey maps one static bearer key to the actor it authenticates (AU-1).
type APIKey struct {
	Key   Secret `koanf:"key" json:"key" yaml:"key"`
	Actor Actor  `koanf:"actor" json:"actor" yaml:"actor"`
}

// OAuth verifies JWT access tokens against the issuer's JWKS (AU-1), or
// opaque ones by introspection (AU-9).
type OAuth struct {
	Issuer string `koanf:"issuer" json:"issuer" yaml:"issuer"`
	// JWKSURL is discovered from the issuer when empty.
	JWKSURL         string              `koanf:"jwksUrl" json:"jwksUrl,omitempty" yaml:"jwksUrl,omitempty"`
	Audience        Audience            `koanf:"audience" json:"audience" yaml:"audience"`
	ScopesSupported []string            `koanf:"scopesSupported" json:"scopesSupported,omitempty" yaml:"scopesSupported,omitempty"`
	RolesFromScopes map[string][]string `koanf:"rolesFromScopes" json:"rolesFromScopes,omitempty" yaml:"rolesFromScopes,omitempty"`
	ActorClaim      string              `koanf:"actorClaim" json:"actorClaim,omitempty" yaml:"actorClaim,omitempty"`
	TenantClaim     string              `koanf:"tenantClaim" json:"tenantClaim,omitempty" yaml:"tenantClaim,omitempty"`
	// IntrospectionURL, ClientID and ClientSecret verify opaque tokens by
	// RFC 7662 introspection (AU-9).
	IntrospectionURL string `koanf:"introspectionUrl" json:"introspectionUrl,omitempty" yaml:"introspectionUrl,omitempty"`
	ClientID         string `koanf:"clientId" json:"clientId,omitempty" yaml:"clientId,omitempty"`
	ClientSecret     Secret `koanf:"clientSecret" json:"clientSecret,omitempty" yaml:"clientSecret,omitempty"`
}

// Actor is who is calling (concepts table).
type Actor struct {
	ID     string   `koanf:"id" json:"id" yaml:"id"`
	Roles  []string `koanf:"roles" json:"roles,omitempty" yaml:"roles,omitempty"`
	Tenant string   `koanf:"tenant" json:"tenant,omitempty" yaml:"tenant,omitempty"`
	// Claims are what policy rules read as actor.claims for this actor
	// (PO-1): an API key or open endpoint has no token to take them from.
	Claims map[string]any `koanf:"claims" json:"claims,omitempty" yaml:"claims,omitempty"`
}

// Upstream is one MCP server tools are imported from (IM-1..IM-16).
type Upstream struct {
	Name string `koanf:"name" json:"name" yaml:"name"`

	// stdio (IM-3)
	Command string            `koanf:"command" json:"command,omitempty" yaml:"command,omitempty"`
	Args    []string          `koanf:"args" json:"args,omitempty" yaml:"args,omitempty"`
	Cwd     string            `koanf:"cwd" json:"cwd,omitempty" yaml:"cwd,omitempty"`
	Env     map[string]Secret `koanf:"env" json:"env,omitempty" yaml:"env,omitempty"`

	Required bool `koanf:"required" json:"required,omitempty" yaml:"required,omitempty"`
	// Prefix is nil when absent (the name is used) and "" to opt out of
	// prefixing (IM-11). Use EffectivePrefix.
	Prefix      *string       `koanf:"prefix" json:"prefix,omitempty" yaml:"prefix,omitempty"`
	Include     []string      `koanf:"include" json:"include,omitempty" yaml:"include,omitempty"`
	Exclude     []string      `koanf:"exclude" json:"exclude,omitempty" yaml:"exclude,omitempty"`
	Reads       []string      `koanf:"reads" json:"reads,omitempty" yaml:"reads,omitempty"`
	Actions     []string      `koanf:"actions" json:"actions,omitempty" yaml:"actions,omitempty"`
	DefaultKind string        `koanf:"defaultKind" json:"defaultKind,omitempty" yaml:"defaultKind,omitempty"`
	Approval    string        `koanf:"approval" json:"approval,omitempty" yaml:"approval,omitempty"`
	Roles       []string      `koanf:"roles" json:"roles,omitempty" yaml:"roles,omitempty"`
	Timeout     time.Duration `koanf:"timeout" json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// Health and Reconnect keep the upstream imported while the gateway
	// runs (IM-37).
	Health    Health    `koanf:"health" json:"health,omitzero" yaml:"health,omitempty"`
	Reconnect Reconnect `koanf:"reconnect" json:"reconnect,omitzero" yaml:"reconnect,omitempty"`

	// network (IM-2, IM-4)
	URL           string            `koanf:"url" json:"url,omitempty" yaml:"url,omitempty"`
	Transport     string            `koanf:"transport" json:"transport,omitempty" yaml:"transport,omitempty"`
	Headers       map[string]Secret `koanf:"headers" json:"headers,omitempty" yaml:"headers,omitempty"`
	Authorization Secret            `koanf:"authorization" json:"authorization,omitempty" yaml:"authorization,omitempty"`
	Signing       *Signing          `koanf:"signing" json:"signing,omitempty" yaml:"signing,omitempty"`
	// OAuth makes toolgate the upstream's OAuth client (UI-1, UI-2); nil:
	// none.
	OAuth *UpstreamOAuth `koanf:"oauth" json:"oauth,omitempty" yaml:"oauth,omitempty"`

	// Roots answer the upstream's roots/list: file:// URIs or absolute
	// paths on the gateway's machine. The downstream client's roots are
	// never passed on: they name paths on the client's machine.
	Roots []string `koanf:"roots" json:"roots,omitempty" yaml:"roots,omitempty"`

	// Inspect overrides the top-level inspection for this upstream's
	// tools, key by key (IN-1); nil: none.
	Inspect *Inspect `koanf:"inspect" json:"inspect,omitempty" yaml:"inspect,omitempty"`
	// Labels are flow labels of every tool of this upstream, ToolLabels
	// those of the tools whose names match a glob (IN-3).
	Labels     []string            `koanf:"labels" json:"labels,omitempty" yaml:"labels,omitempty"`
	ToolLabels map[string][]string `koanf:"toolLabels" json:"toolLabels,omitempty" yaml:"toolLabels,omitempty"`

	// From is set for upstreams appended from upstreamsFrom; it replaces
	// "upstreams[i]" in error paths, since those entries have no index in
	// the user's file. Never read from the config.
	From string `koanf:"-" json:"-" yaml:"-"`
}

// Upstream kinds (IM-15), approvals (CF-5) and transports (IM-2).
const (
	KindRead   = "read"
	KindAction = "action"

	ApprovalClient   = "client"
	ApprovalOperator = "operator"

	TransportAuto = "auto"
	TransportHTTP = "http"
	TransportSSE  = "sse"
)

// EffectivePrefix is the prefix imported names get (IM-11): the name unless
// prefix was given, and "" when prefixing is switched off.
func (u Upstream) EffectivePrefix() string {
	if u.Prefix != nil {
		return *u.Prefix
	}
	return u.Name
}

// Health is the periodic health check (MCP ping) of a connected upstream
// (IM-37). Two failed pings in a row mark it failed, and it is reconnected.
type Health struct {
	// Enabled is nil when absent, which means on. Use On.
	Enabled  *bool         `koanf:"enabled" json:"enabled,omitempty" yaml:"enabled,omitempty"`
	Interval time.Duration `koanf:"interval" json:"interval,omitempty" yaml:"interval,omitempty"`
	Timeout  time.Duration `koanf:"timeout" json:"timeout,omitempty" yaml:"timeout,omitempty"`
}

// On reports whether the health check runs.
func (h Health) On() bool { return h.Enabled == nil || *h.Enabled }

// Reconnect is the background retry of a failed or lost upstream (IM-37):
// the wait doubles from InitialDelay up to MaxDelay, with jitter.
type Reconnect struct {
	// Enabled is nil when absent, which means on. Use On.
	Enabled      *bool         `koanf:"enabled" json:"enabled,omitempty" yaml:"enabled,omitempty"`
	InitialDelay time.Duration `koanf:"initialDelay" json:"initialDelay,omitempty" yaml:"initialDelay,omitempty"`
	MaxDelay     time.Duration `koanf:"maxDelay" json:"maxDelay,omitempty" yaml:"maxDelay,omitempty"`
}

// On reports whether failed upstreams are retried.
func (r Reconnect) On() bool { return r.Enabled == nil || *r.Enabled }

// Signing configures a per-request signer for network upstreams (IM-4).
type Signing struct {
	HMACSHA256 *HMACSigning `koanf:"hmacSha256" json:"hmacSha256,omitempty" yaml:"hmacSha256,omitempty"`
}

// HMACSigning signs method, URL and body with HMAC-SHA256 into Header.
type HMACSigning struct {
	Secret Secret `koanf:"secret" json:"secret" yaml:"secret"`
	Header string `koanf:"header" json:"header" yaml:"header"`
}
