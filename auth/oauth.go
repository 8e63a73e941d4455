package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/toolgate/toolgate/core"
)

// AudienceRule says which token audiences an OAuth strategy accepts
// (AU-1, RFC 8707). The zero value is the default: the token's aud must
// contain the endpoint's resource URL, computed per request (ResourceURL).
type AudienceRule struct {
	// Any turns the audience check off.
	Any bool
	// Values, when not empty, are the accepted audiences: the token's aud
	// must contain at least one of them.
	Values []string
}

// OAuthConfig configures the OAuth strategy. Zero values mean defaults.
type OAuthConfig struct {
	// Issuer is the authorization server's issuer identifier, compared
	// exactly with the iss claim.
	Issuer string
	// JWKSURL is where the signing keys are. Empty: discovered from the
	// issuer's /.well-known/openid-configuration, then RFC 8414
	// /.well-known/oauth-authorization-server.
	JWKSURL  string
	Audience AudienceRule
	// ScopesSupported is advertised in the metadata document (AU-5).
	ScopesSupported []string
	// RolesFromScopes maps a granted scope to the roles it confers; an
	// actor's roles are the sorted union over its scopes.
	RolesFromScopes map[string][]string
	// ActorClaim names the claim holding the actor id; default "sub".
	ActorClaim string
	// TenantClaim names the claim holding the tenant; empty: no tenant.
	TenantClaim string

	// IntrospectionURL, when set, verifies opaque (non-JWT) tokens by RFC
	// 7662 introspection, authenticating with ClientID and ClientSecret
	// (HTTP Basic). Without it an opaque token is "not mine" (AU-9).
	IntrospectionURL string
	ClientID         string
	ClientSecret     string

	// HTTPClient talks to the issuer; default: a client with a 10 s timeout.
	HTTPClient *http.Client
	// Leeway is the clock skew allowed on exp and nbf: default 30 s;
	// negative means none.
	Leeway time.Duration
	// IntrospectionCacheTTL is how long an active introspection result is
	// reused: default 30 s, at most 60 s, never beyond the token's exp;
	// negative disables the cache. Inactive results are never cached.
	IntrospectionCacheTTL time.Duration
	// JWKSRefreshInterval is how often the key set is fetched again, which
	// is how keys removed by the issuer stop being trusted: default 10 min.
	JWKSRefreshInterval time.Duration
	// JWKSUnknownKIDInterval is the least time between fetches triggered by a
	// token signed with a key id not in the cache, which is how new keys are
	// picked up: default 30 s. It bounds what a flood of made-up key ids can
	// cost the issuer.
	JWKSUnknownKIDInterval time.Duration
	// Logger receives failures to reach the issuer; default slog.Default().
	// Nothing logged contains a token.
	Logger *slog.Logger
}

const (
	defaultLeeway            = 30 * time.Second
	defaultIntrospectionTTL  = 30 * time.Second
	maxIntrospectionTTL      = 60 * time.Second
	defaultJWKSRefresh       = 10 * time.Minute
	defaultUnknownKIDRefresh = 30 * time.Second
	defaultHTTPTimeout       = 10 * time.Second
	maxDocumentBytes         = 1 << 20
)

// allowedAlgs are the asymmetric JWS algorithms accepted: symmetric ones
// (HS*) and "none" are refused, so a public key can never serve as an HMAC
// secret.
var allowedAlgs = []string{
	"RS256", "RS384", "RS512",
	"PS256", "PS384", "PS512",
	"ES256", "ES384", "ES512",
	"EdDSA",
}

// OAuth returns a strategy verifying the issuer's access tokens (AU-1, AU-9):
// JWTs against its JWKS, and opaque tokens by introspection when configured.
//
// OAuth does network I/O: without JWKSURL it discovers the key set's URL
// from the issuer, and fails when it cannot. The key set is fetched too, but
// an unreachable key set is not an error: it is fetched again when a token
// arrives. ctx bounds the strategy's life: cancelling it stops the
// background refresh of the key set.
func OAuth(ctx context.Context, cfg OAuthConfig) (Strategy, error) {
	if err := checkAbsoluteURL("issuer", cfg.Issuer); err != nil {
		return nil, err
	}
	if cfg.JWKSURL != "" {
		if err := checkAbsoluteURL("jwksUrl", cfg.JWKSURL); err != nil {
			return nil, err
		}
	}
	if cfg.IntrospectionURL != "" {
		if err := checkAbsoluteURL("introspectionUrl", cfg.IntrospectionURL); err != nil {
			return nil, err
		}
	}
	s := &oauth{cfg: cfg}
	s.client = cfg.HTTPClient
	if s.client == nil {
		s.client = &http.Client{Timeout: defaultHTTPTimeout}
	}
	s.log = cfg.Logger
	if s.log == nil {
		s.log = slog.Default()
	}
	s.actorClaim = cfg.ActorClaim
	if s.actorClaim == "" {
		s.actorClaim = "sub"
	}
	switch {
	case cfg.Leeway == 0:
		s.leeway = defaultLeeway
	case cfg.Leeway > 0:
		s.leeway = cfg.Leeway
	}
	ttl := cfg.IntrospectionCacheTTL
	switch {
	case ttl == 0:
		ttl = defaultIntrospectionTTL
	case ttl > maxIntrospectionTTL:
		ttl = maxIntrospectionTTL
	case ttl < 0:
		ttl = 0
	}
	s.cache = newIntrospectionCache(ttl)

	jwksURL := cfg.JWKSURL
	if jwksURL == "" {
		var err error
		if jwksURL, err = discoverJWKS(ctx, s.client, cfg.Issuer); err != nil {
			return nil, err
		}
	}
	s.jwksURL = jwksURL
	refresh := cfg.JWKSRefreshInterval
	if refresh <= 0 {
		refresh = defaultJWKSRefresh
	}
	unknown := cfg.JWKSUnknownKIDInterval
	if unknown <= 0 {
		unknown = defaultUnknownKIDRefresh
	}
	timeout := defaultHTTPTimeout
	if s.client.Timeout > 0 {
		timeout = s.client.Timeout
	}
	kf, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{jwksURL}, keyfunc.Override{
		Client:      s.client,
		HTTPTimeout: timeout,
		// A request waits for the unknown-kid limiter only when its turn is
		// near; beyond this it fails at once. The same deadline covers the
		// fetch that follows.
		RateLimitWaitMax: timeout,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(ctx context.Context, err error) {
				s.log.WarnContext(ctx, "auth: fetching the JWKS failed", "issuer", cfg.Issuer, "url", u, "error", err)
			}
		},
		RefreshInterval:   refresh,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(unknown), 1),
	})
	if err != nil {
		return nil, fmt.Errorf("auth: oauth %s: key set: %w", cfg.Issuer, err)
	}
	s.keys = kf
	return s, nil
}

func checkAbsoluteURL(field, s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("auth: oauth %s %q: must be an absolute http(s) URL", field, s)
	}
	return nil
}

type oauth struct {
	cfg        OAuthConfig
	client     *http.Client
	log        *slog.Logger
	actorClaim string
	leeway     time.Duration
	jwksURL    string
	keys       keyfunc.Keyfunc
	cache      *introspectionCache
}

var (
	_ Strategy         = (*oauth)(nil)
	_ MetadataProvider = (*oauth)(nil)
)

// Metadata names the issuer as the authorization server (AU-5).
func (s *oauth) Metadata() ProtectedResourceMetadata {
	return ProtectedResourceMetadata{
		AuthorizationServers: []string{s.cfg.Issuer},
		ScopesSupported:      slices.Clone(s.cfg.ScopesSupported),
	}
}

func (s *oauth) Authenticate(r *http.Request, token string) (core.Actor, error) {
	actor, err := s.authenticate(r, token)
	if err == nil {
		// Verified: the token may be exchanged for an upstream's (RFC 8693).
		setSubject(r.Context(), token, s.cfg.Issuer)
	}
	return actor, err
}

func (s *oauth) authenticate(r *http.Request, token string) (core.Actor, error) {
	header, claims, ok := splitJWT(token)
	if !ok {
		if s.cfg.IntrospectionURL == "" {
			return core.Actor{}, notMine{"the token is not a JWT"}
		}
		return s.introspect(r, token)
	}
	if iss, _ := claims["iss"].(string); iss != s.cfg.Issuer {
		return core.Actor{}, notMine{"the token was not issued by a trusted issuer"}
	}
	if alg, _ := header["alg"].(string); !slices.Contains(allowedAlgs, alg) {
		return core.Actor{}, invalidToken("the token's signing algorithm is not allowed")
	}
	parser := jwt.NewParser(
		jwt.WithValidMethods(allowedAlgs),
		jwt.WithIssuer(s.cfg.Issuer),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(s.leeway),
	)
	verified := jwt.MapClaims{}
	if _, err := parser.ParseWithClaims(token, verified, s.keys.KeyfuncCtx(r.Context())); err != nil {
		return core.Actor{}, jwtRefusal(err)
	}
	return s.actorFrom(r, verified)
}

// jwtRefusal turns a verification failure into a client-safe refusal; the
// library's own messages stay out of responses.
func jwtRefusal(err error) *Error {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return invalidToken("the token has expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return invalidToken("the token is not valid yet")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return invalidToken("the token has no expiry")
	case errors.Is(err, jwt.ErrTokenMalformed):
		return invalidToken("the token is malformed")
	case errors.Is(err, jwt.ErrTokenUnverifiable), errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return invalidToken("the token's signature could not be verified")
	default:
		return invalidToken("the token is not valid")
	}
}

// splitJWT decodes a compact JWS's header and claims without verifying
// anything, to tell a JWT from an opaque token and read its issuer.
func splitJWT(token string) (header, claims map[string]any, ok bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, nil, false
	}
	if json.Unmarshal(decodeSegment(parts[0]), &header) != nil || header == nil {
		return nil, nil, false
	}
	if json.Unmarshal(decodeSegment(parts[1]), &claims) != nil || claims == nil {
		return nil, nil, false
	}
	return header, claims, true
}

func decodeSegment(s string) []byte {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil
	}
	return b
}

// actorFrom applies the audience rule and maps claims to an actor; it
// serves verified JWT claims and introspection responses alike.
func (s *oauth) actorFrom(r *http.Request, claims map[string]any) (core.Actor, error) {
	if err := s.checkAudience(r, stringList(claims["aud"])); err != nil {
		return core.Actor{}, err
	}
	id := claimString(claims[s.actorClaim])
	if id == "" {
		return core.Actor{}, invalidToken(fmt.Sprintf("the token has no %s claim", s.actorClaim))
	}
	// The claims as verified, for rules on actor.claims (PO-1): a JWT's
	// payload or an introspection answer holds no token, so neither does
	// the actor.
	actor := core.Actor{ID: id, Roles: s.roles(scopes(claims)), Claims: claims}
	if s.cfg.TenantClaim != "" {
		actor.Tenant = claimString(claims[s.cfg.TenantClaim])
	}
	return actor, nil
}

func (s *oauth) checkAudience(r *http.Request, aud []string) *Error {
	refused := invalidToken("the token was not issued for this resource")
	switch {
	case s.cfg.Audience.Any:
		return nil
	case len(s.cfg.Audience.Values) > 0:
		for _, a := range aud {
			if slices.Contains(s.cfg.Audience.Values, a) {
				return nil
			}
		}
		return refused
	default:
		resource, ok := ResourceFrom(r.Context())
		if !ok || !slices.Contains(aud, resource) {
			return refused
		}
		return nil
	}
}

// roles is the sorted, de-duplicated union of the roles the scopes confer.
func (s *oauth) roles(scopes []string) []string {
	var roles []string
	for _, sc := range scopes {
		roles = append(roles, s.cfg.RolesFromScopes[sc]...)
	}
	slices.Sort(roles)
	return slices.Compact(roles)
}

// scopes reads "scope" (space-separated, RFC 8693/9068) or else "scp" (a
// list); either spelling is accepted in either form, as issuers vary.
func scopes(claims map[string]any) []string {
	for _, name := range []string{"scope", "scp"} {
		switch v := claims[name].(type) {
		case string:
			return strings.Fields(v)
		case []any:
			return stringList(v)
		}
	}
	return nil
}

// stringList reads a claim that is a string or a list of strings.
func stringList(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case []string:
		return v
	}
	return nil
}

// claimString reads a string claim; numbers are accepted as their decimal
// form, since some issuers use numeric subject or tenant ids.
func claimString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case json.Number:
		return v.String()
	}
	return ""
}

// discoverJWKS finds the issuer's jwks_uri from its OpenID Connect discovery
// document, else its RFC 8414 authorization server metadata.
func discoverJWKS(ctx context.Context, client *http.Client, issuer string) (string, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return "", fmt.Errorf("auth: oauth issuer %q: %w", issuer, err)
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	root := u.Scheme + "://" + u.Host
	candidates := []string{
		root + path + "/.well-known/openid-configuration",
		root + "/.well-known/oauth-authorization-server" + path,
	}
	var errs []error
	for _, c := range candidates {
		jwks, err := fetchJWKSURI(ctx, client, c, issuer)
		if err == nil {
			return jwks, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("auth: oauth %s: discovering the JWKS URL: %w", issuer, errors.Join(errs...))
}

func fetchJWKSURI(ctx context.Context, client *http.Client, docURL, issuer string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, docURL, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", docURL, resp.Status)
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDocumentBytes)).Decode(&doc); err != nil {
		return "", fmt.Errorf("%s: %w", docURL, err)
	}
	switch {
	case doc.Issuer != issuer:
		// OpenID Connect Discovery §4.3 and RFC 8414 §3.3: a document for
		// another issuer must not be used.
		return "", fmt.Errorf("%s: issuer %q does not match", docURL, doc.Issuer)
	case doc.JWKSURI == "":
		return "", fmt.Errorf("%s: no jwks_uri", docURL)
	}
	if err := checkAbsoluteURL("jwks_uri", doc.JWKSURI); err != nil {
		return "", fmt.Errorf("%s: %w", docURL, err)
	}
	return doc.JWKSURI, nil
}
