package config

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
)

// MinConfirmSecretBytes is the shortest accepted confirm secret: RFC 2104
// advises HMAC keys no shorter than the hash output, 32 bytes for SHA-256.
const MinConfirmSecretBytes = 32

// MinAPIKeyBytes is the length below which an API key draws a warning.
const MinAPIKeyBytes = 16

var (
	upstreamNameRE = lazyRegexp(`^[a-zA-Z0-9_-]+$`)
	prefixRE       = lazyRegexp(`^[a-zA-Z0-9_-]{1,40}$`)
)

// maxPrefixLen bounds a tool-name prefix, leaving room in the 64 characters
// of a tool name (IM-12) for the remote name.
const maxPrefixLen = 40

var reviewModes = []string{ReviewOff, ReviewWarn, ReviewPin, ReviewRequire}

// reservedPaths are served by the gateway itself on every listener.
var reservedPaths = []string{"/healthz", "/readyz", "/metrics", "/.well-known"}

// MayServeActions reports whether some upstream can serve action tools, and
// so whether the confirm gate needs its secret (CF-3). Kinds are only known
// after import; at config time an upstream can serve actions unless its
// defaultKind is read and its actions list is empty.
func (c *Config) MayServeActions() bool {
	return c.actionUpstream() >= 0
}

func (c *Config) actionUpstream() int {
	for i, u := range c.Upstreams {
		if u.DefaultKind != KindRead || len(u.Actions) > 0 {
			return i
		}
	}
	return -1
}

// OpenEndpoints lists the paths of open-mode endpoints: an actor and no
// auth (AU-7). `serve` refuses them on a non-loopback listen address
// unless forced.
func (c *Config) OpenEndpoints() []string {
	var out []string
	for _, e := range c.Endpoints {
		if e.Open() {
			out = append(out, e.Path)
		}
	}
	return out
}

// ListenIsLoopback reports whether gateway.listen binds a loopback address
// only. An empty host (":7331") binds every interface.
func (c *Config) ListenIsLoopback() bool {
	host, _, err := net.SplitHostPort(c.Gateway.Listen)
	if err != nil {
		return false
	}
	return IsLoopbackHost(host)
}

// IsLoopbackHost reports whether host is "localhost" or a loopback IP.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Validate checks every rule (docs/behaviour.md) that the config alone can decide,
// and returns all problems at once as a *ValidationErrors, plus warnings.
// Run it after SetDefaults: an unset required value is an error here.
func (c *Config) Validate() ([]Warning, error) {
	v := &validator{c: c, keys: map[string]string{}}
	v.gateway()
	v.endpoints()
	v.admin()
	v.upstreams()
	v.policies()
	v.limits()
	v.audit()
	v.credentials()
	v.telemetry()
	v.inspect()
	return v.warnings, v.errs.err()
}

type validator struct {
	c        *Config
	errs     ValidationErrors
	warnings []Warning
	keys     map[string]string // API key value → path of its first use
}

func (v *validator) fail(path, format string, args ...any) { v.errs.add(path, format, args...) }

func (v *validator) warn(path, format string, args ...any) {
	v.warnings = append(v.warnings, Warning{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) gateway() {
	g := v.c.Gateway
	if g.Listen == "" {
		v.fail("gateway.listen", "required (host:port)")
	} else if host, port, err := net.SplitHostPort(g.Listen); err != nil {
		v.fail("gateway.listen", "must be host:port, such as 127.0.0.1:7331")
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.fail("gateway.listen", "port must be a number from 0 to 65535")
	} else if strings.ContainsAny(host, " /") {
		v.fail("gateway.listen", "must be host:port, such as 127.0.0.1:7331")
	}
	if g.Advertise != "" {
		if host, port, err := net.SplitHostPort(g.Advertise); err != nil || host == "" || strings.ContainsAny(host, " /") {
			v.fail("gateway.advertise", "must be host:port where the other replicas reach this one, such as 10.0.0.5:7331")
		} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			v.fail("gateway.advertise", "port must be a number from 1 to 65535")
		}
	}
	if g.PublicURL != "" {
		if msg := checkOrigin(g.PublicURL); msg != "" {
			v.fail("gateway.publicUrl", "%s", msg)
		}
	}
	if msg := checkStore(g.Store); msg != "" {
		v.fail("gateway.store", "%s", msg)
	}
	v.numbers("gateway", "gateway", reflect.ValueOf(g))
	if g.HeartbeatInterval > 0 && g.WriteTimeout > 0 && g.HeartbeatInterval >= g.WriteTimeout {
		// An event stream idle between heartbeats would hit the deadline.
		v.fail("gateway.heartbeatInterval", "must be shorter than gateway.writeTimeout (%s)", g.WriteTimeout)
	}
	for _, m := range g.Confirm.Messages.Each() {
		p := "gateway.confirm.messages." + m.Key
		switch {
		case m.Text == nil:
		case strings.TrimSpace(*m.Text) == "":
			v.fail(p, "must not be empty; leave the key out to keep the built-in text")
		default:
			if err := confirm.CheckMessage(m.Key, *m.Text); err != nil {
				v.fail(p, "%s", err.Error())
			}
		}
	}
	if !oneOf(g.Review.Mode, reviewModes) {
		v.fail("gateway.review.mode", "must be one of %s (got %q)", strings.Join(reviewModes, ", "), g.Review.Mode)
	}
	secret := g.Confirm.Secret.Reveal()
	switch {
	case secret == "":
		if i := v.c.actionUpstream(); i >= 0 {
			v.fail("gateway.confirm.secret", "required because %s may serve action tools (confirm tokens are signed with it); set it to %d or more random bytes, e.g. in the environment as %s", v.c.Upstreams[i].describe(i), MinConfirmSecretBytes, envOf("gateway.confirm.secret"))
		}
	case len(secret) < MinConfirmSecretBytes:
		v.fail("gateway.confirm.secret", "must be at least %d bytes long", MinConfirmSecretBytes)
	}
}

// checkStore accepts a file path or a PostgreSQL URL (OP-5). Its messages
// never quote the value: a URL may carry a password.
func checkStore(s string) string {
	if !strings.Contains(s, "://") {
		return ""
	}
	scheme, _, _ := strings.Cut(s, "://")
	if scheme != "postgres" && scheme != "postgresql" {
		return fmt.Sprintf("unsupported URL scheme %q: use a file path, or postgres://user:password@host:port/database for PostgreSQL", scheme)
	}
	u, err := url.Parse(s)
	if err != nil {
		return "not a valid PostgreSQL URL (a password with @ : / ? # % must be percent-encoded)"
	}
	if sc := u.Query().Get("schema"); u.Query().Has("schema") && !storeSchema().MatchString(sc) {
		return fmt.Sprintf("schema %q: must be 1 to 63 of a-z, 0-9 and _, not starting with a digit", sc)
	}
	return ""
}

// storeSchema is what a PostgreSQL store's ?schema= may be.
var storeSchema = lazyRegexp(`^[a-z_][a-z0-9_]{0,62}$`)

// RedactStore shows a store URL with its password as ••• (IM-5); a file
// path is returned as it is. A URL that does not parse is shown as a
// placeholder: which part of it is secret cannot be told.
func RedactStore(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "postgres://" + Redacted
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), Redacted)
		}
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", Redacted)
		u.RawQuery = q.Encode()
	}
	return strings.ReplaceAll(u.String(), url.QueryEscape(Redacted), Redacted)
}

// checkOrigin enforces AU-6: publicUrl is scheme://host[:port] and nothing
// more. It returns "" when s is a valid origin.
func checkOrigin(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Opaque != "":
		return "must be an origin such as https://tools.example.com"
	case u.Scheme != "http" && u.Scheme != "https":
		return "scheme must be http or https"
	case u.Host == "" || u.Hostname() == "":
		return "must include a host, such as https://tools.example.com"
	case u.User != nil:
		return "must be an origin only: remove the user info"
	case u.Path != "" || u.RawPath != "":
		return fmt.Sprintf("must be an origin only: remove the path %q", u.EscapedPath())
	case u.RawQuery != "" || u.ForceQuery:
		return "must be an origin only: remove the query"
	case u.Fragment != "" || strings.Contains(s, "#"):
		return "must be an origin only: remove the fragment"
	}
	return ""
}

func (v *validator) endpoints() {
	seen := map[string]string{}
	for i, e := range v.c.Endpoints {
		p := fmt.Sprintf("endpoints[%d]", i)
		v.endpointPath(p+".path", e.Path, seen)
		for j, g := range e.Tools {
			if err := core.ValidateGlob(g); err != nil {
				v.fail(fmt.Sprintf("%s.tools[%d]", p, j), "%v", err)
			}
		}
		if e.Tools != nil && len(e.Tools) == 0 {
			v.warn(p+".tools", "empty: this endpoint serves no tools (omit tools to serve all)")
		}
		switch {
		case e.Auth != nil && e.Actor != nil:
			v.fail(p, "auth and actor are mutually exclusive: auth derives the actor from the credential, actor alone is open mode (see docs/security.md#open-mode)")
		case e.Auth == nil && e.Actor == nil:
			v.warn(p, "no auth and no actor: every request is refused with 401")
		case e.Actor != nil && v.c.Gateway.Listen != "" && !v.c.ListenIsLoopback():
			v.warn(p, "open mode (actor without auth) on non-loopback listen address %q: serve refuses it unless --insecure-open (see docs/security.md#open-mode)", v.c.Gateway.Listen)
		}
		if e.Actor != nil {
			v.actor(p+".actor", *e.Actor)
		}
		if e.Auth != nil {
			v.auth(p+".auth", *e.Auth, false)
		}
		if e.Discovery != nil {
			v.discovery(p+".discovery", *e.Discovery)
		}
	}
}

// discovery checks an endpoint's tool search (DS-1).
func (v *validator) discovery(p string, d Discovery) {
	switch d.Mode {
	case "", DiscoveryOff, DiscoverySearch:
	default:
		v.fail(p+".mode", "must be %s or %s, not %q", DiscoveryOff, DiscoverySearch, d.Mode)
	}
	seen := map[string]int{}
	for j, n := range d.AlwaysList {
		q := fmt.Sprintf("%s.alwaysList[%d]", p, j)
		switch {
		case n == "":
			v.fail(q, "empty tool name")
		case n == "search_tools" || n == "call_tool":
			v.fail(q, "%q is one of the two tools discovery lists itself", n)
		case !core.ValidToolName(n):
			v.fail(q, "%q is not a tool name (letters, digits, _ and -, at most 64)", n)
		}
		if k, dup := seen[n]; dup && n != "" {
			v.fail(q, "%q is already alwaysList[%d]", n, k)
		}
		seen[n] = j
	}
	if len(d.AlwaysList) > 0 && !d.Search() {
		v.warn(p+".alwaysList", "has no effect unless mode is %s", DiscoverySearch)
	}
}

func (v *validator) endpointPath(p, s string, seen map[string]string) {
	switch {
	case s == "":
		v.fail(p, "required")
		return
	case !strings.HasPrefix(s, "/"):
		v.fail(p, "must start with \"/\"")
		return
	case strings.ContainsAny(s, "?#%") || strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		v.fail(p, "must be a plain path (no query, fragment, escapes or spaces)")
		return
	}
	clean := path.Clean(s)
	for _, r := range reservedPaths {
		if clean == r || strings.HasPrefix(clean, r+"/") {
			v.fail(p, "%q is reserved for the gateway (%s)", s, strings.Join(reservedPaths, ", "))
			return
		}
	}
	if first, ok := seen[clean]; ok {
		v.fail(p, "%q is the same path as %s", s, first)
		return
	}
	seen[clean] = p
}

func (v *validator) actor(p string, a Actor) {
	if a.ID == "" {
		v.fail(p+".id", "required")
	}
	for j, r := range a.Roles {
		if r == "" {
			v.fail(fmt.Sprintf("%s.roles[%d]", p, j), "empty role")
		}
	}
}

func (v *validator) auth(p string, a Auth, nested bool) {
	var set []string
	if a.APIKeys != nil {
		set = append(set, "apiKeys")
	}
	if a.OAuth != nil {
		set = append(set, "oauth")
	}
	if a.AnyOf != nil {
		set = append(set, "anyOf")
	}
	switch len(set) {
	case 0:
		v.fail(p, "needs one of apiKeys, oauth or anyOf")
		return
	case 1:
	default:
		v.fail(p, "set only one of %s; combine strategies with anyOf", strings.Join(set, ", "))
		return
	}
	switch {
	case a.APIKeys != nil:
		if len(a.APIKeys) == 0 {
			v.fail(p+".apiKeys", "must list at least one key")
		}
		for j, k := range a.APIKeys {
			v.apiKey(fmt.Sprintf("%s.apiKeys[%d]", p, j), k)
		}
	case a.OAuth != nil:
		v.oauth(p+".oauth", *a.OAuth)
	case a.AnyOf != nil:
		// One level of anyOf covers every order of strategies; nesting would
		// only add a second way to write the same chain (AU-2).
		if nested {
			v.fail(p+".anyOf", "anyOf cannot be nested; list every strategy in one anyOf")
			return
		}
		if len(a.AnyOf) == 0 {
			v.fail(p+".anyOf", "must list at least one strategy")
		}
		for j, s := range a.AnyOf {
			v.auth(fmt.Sprintf("%s.anyOf[%d]", p, j), s, true)
		}
	}
}

func (v *validator) apiKey(p string, k APIKey) {
	key := k.Key.Reveal()
	switch {
	case key == "":
		v.fail(p+".key", "required")
	case v.keys[key] != "":
		v.fail(p+".key", "same key as %s: a key must identify one actor on one endpoint", v.keys[key])
	default:
		v.keys[key] = p + ".key"
		if len(key) < MinAPIKeyBytes {
			v.warn(p+".key", "shorter than %d bytes: use a long random key", MinAPIKeyBytes)
		}
	}
	if strings.ContainsAny(key, "\r\n") {
		v.fail(p+".key", "contains a line break")
	}
	v.actor(p+".actor", k.Actor)
}

func (v *validator) oauth(p string, o OAuth) {
	if o.Issuer == "" {
		v.fail(p+".issuer", "required")
	} else if msg := checkHTTPSURL(o.Issuer); msg != "" {
		v.fail(p+".issuer", "%s", msg)
	}
	if o.JWKSURL != "" {
		if msg := checkHTTPSURL(o.JWKSURL); msg != "" {
			v.fail(p+".jwksUrl", "%s", msg)
		}
	}
	if o.IntrospectionURL != "" {
		if msg := checkHTTPSURL(o.IntrospectionURL); msg != "" {
			v.fail(p+".introspectionUrl", "%s", msg)
		}
	}
	if o.Audience.Values != nil {
		if len(o.Audience.Values) == 0 {
			v.fail(p+".audience", "empty list: write default, any or at least one audience")
		}
		for j, a := range o.Audience.Values {
			if a == "" {
				v.fail(fmt.Sprintf("%s.audience[%d]", p, j), "empty audience")
			}
		}
	}
	for j, s := range o.ScopesSupported {
		if s == "" || strings.ContainsAny(s, " \t") {
			v.fail(fmt.Sprintf("%s.scopesSupported[%d]", p, j), "a scope is one non-empty word")
		}
	}
	for _, scope := range sortedKeys(o.RolesFromScopes) {
		for j, r := range o.RolesFromScopes[scope] {
			if r == "" {
				v.fail(fmt.Sprintf("%s.rolesFromScopes.%s[%d]", p, scope, j), "empty role")
			}
		}
	}
	switch {
	case o.ClientSecret != "" && o.ClientID == "":
		v.fail(p+".clientId", "required with clientSecret")
	case o.ClientID != "" && o.ClientSecret == "":
		v.fail(p+".clientSecret", "required with clientId")
	}
}

// checkHTTPSURL accepts an absolute https URL, or http for a loopback host
// (a local test identity provider). It returns "" when s is acceptable.
func checkHTTPSURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return "must be an absolute https URL"
	case u.User != nil:
		return "must not contain user info"
	case u.Scheme == "https":
		return ""
	case u.Scheme == "http" && IsLoopbackHost(u.Hostname()):
		return ""
	}
	return "must be an https URL (http only for loopback hosts)"
}

// describe names upstream i for a message: by name, or by position when
// it has none.
func (u Upstream) describe(i int) string {
	switch {
	case u.Name != "":
		return fmt.Sprintf("upstream %q", u.Name)
	case u.From != "":
		return u.From
	}
	return fmt.Sprintf("upstreams[%d]", i)
}

func (v *validator) upstreams() {
	names := map[string]string{}
	for i, u := range v.c.Upstreams {
		p := u.From
		if p == "" {
			p = fmt.Sprintf("upstreams[%d]", i)
		}
		v.upstream(p, u, names)
	}
}

func (v *validator) upstream(p string, u Upstream, names map[string]string) {
	switch {
	case u.Name == "":
		v.fail(p+".name", "required")
	case !upstreamNameRE().MatchString(u.Name):
		v.fail(p+".name", "must match ^[a-zA-Z0-9_-]+$ (it prefixes tool names)")
	case names[u.Name] != "":
		v.fail(p+".name", "duplicate upstream name %q (also %s)", u.Name, names[u.Name])
	default:
		names[u.Name] = p
		if u.Prefix == nil && len(u.Name) > maxPrefixLen {
			v.fail(p+".name", "longer than %d characters, so it cannot be the tool-name prefix; set a shorter prefix", maxPrefixLen)
		}
	}
	who := "this upstream"
	if u.Name != "" {
		who = fmt.Sprintf("upstream %q", u.Name)
	}

	// IM-1: exactly one of command and url.
	switch {
	case u.Command != "" && u.URL != "":
		v.fail(p, "%s sets both command and url; set exactly one", who)
	case u.Command == "" && u.URL == "":
		v.fail(p, "%s needs command (stdio) or url (network)", who)
	case u.URL != "":
		if msg := checkUpstreamURL(u.URL); msg != "" {
			v.fail(p+".url", "%s", msg)
		}
		stdioOnly := []struct {
			key string
			set bool
		}{{"args", len(u.Args) > 0}, {"cwd", u.Cwd != ""}, {"env", len(u.Env) > 0}}
		for _, f := range stdioOnly {
			if f.set {
				v.fail(p+"."+f.key, "only for command (stdio) upstreams")
			}
		}
		if u.Transport != "" && !oneOf(u.Transport, []string{TransportAuto, TransportHTTP, TransportSSE}) {
			v.fail(p+".transport", "must be one of auto, http, sse (got %q)", u.Transport)
		}
	case u.Command != "":
		httpOnly := []struct {
			key string
			set bool
		}{{"transport", u.Transport != ""}, {"headers", len(u.Headers) > 0}, {"authorization", u.Authorization != ""}, {"signing", u.Signing != nil}}
		for _, f := range httpOnly {
			if f.set {
				v.fail(p+"."+f.key, "only for url (network) upstreams")
			}
		}
	}

	for _, k := range sortedKeys(u.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			v.fail(p+".env."+k, "not a valid environment variable name")
		}
		if strings.ContainsRune(u.Env[k].Reveal(), 0) {
			v.fail(p+".env."+k, "value contains a NUL byte")
		}
	}
	if u.URL != "" {
		v.headers(p, u)
		if u.Signing != nil {
			v.signing(p+".signing", *u.Signing)
		}
	}
	if u.OAuth != nil {
		v.upstreamOAuth(p, u)
	}

	if u.Prefix != nil && *u.Prefix != "" && !prefixRE().MatchString(*u.Prefix) {
		v.fail(p+".prefix", `must match ^[a-zA-Z0-9_-]{1,40}$, or be "" for no prefix`)
	}
	v.globs(p+".include", u.Include)
	v.globs(p+".exclude", u.Exclude)
	v.globs(p+".reads", u.Reads)
	v.globs(p+".actions", u.Actions)
	if !oneOf(u.DefaultKind, []string{KindRead, KindAction}) {
		v.fail(p+".defaultKind", "must be read or action (got %q)", u.DefaultKind)
	}
	if !oneOf(u.Approval, []string{ApprovalClient, ApprovalOperator}) {
		v.fail(p+".approval", "must be client or operator (got %q)", u.Approval)
	}
	for j, r := range u.Roles {
		if r == "" {
			v.fail(fmt.Sprintf("%s.roles[%d]", p, j), "empty role")
		}
	}
	v.numbers(p, "upstreams[]", reflect.ValueOf(u))
	v.health(p+".health", u.Health)
	v.reconnect(p+".reconnect", u.Reconnect)
	for j, r := range u.Roots {
		switch {
		case r == "":
			v.fail(fmt.Sprintf("%s.roots[%d]", p, j), "empty root")
		case !strings.HasPrefix(r, "file://") && !filepath.IsAbs(r):
			v.fail(fmt.Sprintf("%s.roots[%d]", p, j), "must be a file:// URI or an absolute path")
		}
	}
}

// health: the ranges are the table's (a tiny interval is a load on the
// upstream, not a check, IM-37); a timeout must fit in the interval.
func (v *validator) health(p string, h Health) {
	switch {
	case h.Timeout <= 0 || h.Interval < MinHealthInterval:
	case h.Timeout > h.Interval:
		v.fail(p+".timeout", "must not be longer than health.interval (%s)", h.Interval)
	}
}

// reconnect: the delays bound how hard a down upstream is knocked on
// (IM-37); their ranges are the table's.
func (v *validator) reconnect(p string, r Reconnect) {
	if r.MaxDelay >= 0 && r.MaxDelay < r.InitialDelay && r.InitialDelay >= MinReconnectDelay {
		v.fail(p+".maxDelay", "must not be shorter than reconnect.initialDelay (%s)", r.InitialDelay)
	}
}

func (v *validator) headers(p string, u Upstream) {
	for _, name := range sortedKeys(u.Headers) {
		hp := p + ".headers." + name
		if !validHeaderName(name) {
			v.fail(hp, "not a valid header name")
			continue
		}
		if badHeaderValue(u.Headers[name].Reveal()) {
			v.fail(hp, "value contains a line break or NUL")
		}
		if strings.EqualFold(name, "Authorization") && u.Authorization != "" {
			v.fail(hp, "conflicts with authorization; set one of them")
		}
	}
	auth := u.Authorization.Reveal()
	if badHeaderValue(auth) {
		v.fail(p+".authorization", "contains a line break or NUL")
	}
	if len(auth) >= 7 && strings.EqualFold(auth[:7], "bearer ") {
		v.fail(p+".authorization", `give the token alone: "Bearer " is added when it is sent`)
	}
}

func (v *validator) signing(p string, s Signing) {
	if s.HMACSHA256 == nil {
		v.fail(p, "needs hmacSha256")
		return
	}
	h := s.HMACSHA256
	if h.Secret == "" {
		v.fail(p+".hmacSha256.secret", "required")
	}
	if h.Header == "" {
		v.fail(p+".hmacSha256.header", "required")
	} else if !validHeaderName(h.Header) {
		v.fail(p+".hmacSha256.header", "not a valid header name")
	}
}

func (v *validator) globs(p string, globs []string) {
	for j, g := range globs {
		if err := core.ValidateGlob(g); err != nil {
			v.fail(fmt.Sprintf("%s[%d]", p, j), "%v", err)
		}
	}
}

// checkUpstreamURL does not echo the URL: a pasted URL may carry a token.
func checkUpstreamURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "not a valid URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "scheme must be http or https"
	case u.Host == "" || u.Hostname() == "":
		return "must include a host"
	case u.User != nil:
		return "must not contain credentials; use authorization or headers, which are kept secret"
	}
	return ""
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func badHeaderValue(s string) bool { return strings.ContainsAny(s, "\r\n\x00") }

func oneOf(s string, set []string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}
