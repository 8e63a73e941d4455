package auth

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/core"
)

// MaxTokenBytes bounds a bearer token. Longer ones are refused with 401
// invalid_token before any strategy sees them, so garbage never reaches an
// issuer's introspection endpoint. 8 KiB is what common proxies allow a whole
// header line (nginx, Apache), and well above real JWTs.
const MaxTokenBytes = 8 << 10

var tokenTooLong = "the token is longer than " + strconv.Itoa(MaxTokenBytes) + " bytes"

// EndpointAuth is how one endpoint authenticates.
type EndpointAuth struct {
	// Path is the endpoint's path, e.g. "/mcp": part of its resource URL.
	Path string
	// Strategy verifies bearer tokens. When both Strategy and Actor are nil
	// the endpoint fails closed: every request is a 401 (AU-8). When both are
	// set, Strategy wins.
	Strategy Strategy
	// Actor, with no Strategy, is open mode (AU-7): every request runs as
	// this actor without any check. Refusing open mode on non-loopback
	// addresses is the caller's job.
	Actor *core.Actor
	// PublicURL is the public origin (AU-6), already checked with
	// ValidatePublicURL. Empty: the request's scheme and Host.
	PublicURL string
	// ResourceName, when set, is the resource_name of the metadata document
	// (typically the endpoint's name); otherwise the strategy's.
	ResourceName string
	// OnRefusal, when set, is called with one of the Refused… reasons for
	// every request the middleware refuses (OP-7: metrics count them). It
	// never sees the request's credentials.
	OnRefusal func(reason string)
	// Revoked, when set, is asked about every request refused for its
	// credentials (no strategy, no token, or a token the strategy refused),
	// with the bearer token ("" for none). A non-empty answer replaces the
	// refusal's description: a session whose credentials a config reload
	// removed is told so (OP-8). The answer must never contain the token.
	Revoked func(r *http.Request, token string) string
}

// Refusal reasons passed to EndpointAuth.OnRefusal: a small fixed set, so
// they are safe as a metrics label whatever a client or a strategy sends.
const (
	RefusedUnconfigured      = "unconfigured"       // neither strategy nor actor (AU-8)
	RefusedMalformed         = "malformed"          // the Authorization header cannot be read
	RefusedMissingToken      = "missing_token"      // no bearer token
	RefusedTokenTooLong      = "token_too_long"     // longer than MaxTokenBytes
	RefusedInvalidToken      = "invalid_token"      // not recognised, expired, wrong audience …
	RefusedInsufficientScope = "insufficient_scope" // good token, not enough
	RefusedUnavailable       = "unavailable"        // could not be verified right now (503)
)

// Middleware authenticates every request to the endpoint (AU-3) and passes
// it on with the actor in its context (ActorFrom). Refusals carry an RFC 6750
// challenge (AU-4) and a JSON body {"error", "error_description"} that never
// contains the presented credentials.
func Middleware(ep EndpointAuth) func(http.Handler) http.Handler {
	var open *core.Actor
	if ep.Strategy == nil && ep.Actor != nil {
		a := *ep.Actor
		a.Roles = slices.Clone(a.Roles)
		open = &a
	}
	_, hasMetadata := MetadataOf(ep.Strategy)
	refused := func(string) {}
	if ep.OnRefusal != nil {
		refused = ep.OnRefusal
	}
	revoked := func(_ *http.Request, _ string, description string) string { return description }
	if ep.Revoked != nil {
		revoked = func(r *http.Request, token, description string) string {
			if d := ep.Revoked(r, token); d != "" {
				return d
			}
			return description
		}
	}

	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if open != nil {
				next.ServeHTTP(w, r.WithContext(WithActor(r.Context(), *open)))
				return
			}
			ch := challenge{}
			if hasMetadata {
				ch.metadataURL = metadataURL(r, ep.PublicURL, ep.Path)
			}
			if ep.Strategy == nil {
				refused(RefusedUnconfigured)
				token, _ := bearerToken(r)
				ch.refuse(w, http.StatusUnauthorized, "", codeUnauthorized, revoked(r, token, "no authentication is configured for this endpoint"))
				return
			}

			token, err := bearerToken(r)
			if err != nil {
				refused(RefusedMalformed)
				ch.refuse(w, http.StatusBadRequest, codeInvalidRequest, codeInvalidRequest, err.Error())
				return
			}
			if token == "" {
				refused(RefusedMissingToken)
				ch.refuse(w, http.StatusUnauthorized, "", codeUnauthorized, revoked(r, "", "a bearer token is required"))
				return
			}
			if len(token) > MaxTokenBytes {
				refused(RefusedTokenTooLong)
				ch.refuse(w, http.StatusUnauthorized, codeInvalidToken, codeInvalidToken, tokenTooLong)
				return
			}

			ctx := withSubjectSlot(WithResource(r.Context(), ResourceURL(r, ep.PublicURL, ep.Path)))
			r = r.WithContext(ctx)
			actor, err := ep.Strategy.Authenticate(r, token)
			if err == nil && actor.ID == "" {
				err = invalidToken("the token names no actor")
			}
			if err != nil {
				refusal, ok := errors.AsType[*Error](err)
				if !ok {
					refusal = invalidToken(notMineReason(err))
				}
				ch.scope = refusal.Scope
				code := refusal.code()
				bodyCode := code
				if code == "" {
					bodyCode = codeUnauthorized
					if refusal.status() == http.StatusServiceUnavailable {
						bodyCode = codeUnavailable
					}
				}
				refused(refusalReason(refusal.status(), code))
				description := refusal.Description
				if refusal.status() == http.StatusUnauthorized {
					// Not a 503: an issuer that cannot answer revokes nothing.
					description = revoked(r, token, description)
				}
				ch.refuse(w, refusal.status(), code, bodyCode, description)
				return
			}
			next.ServeHTTP(w, r.WithContext(WithActor(ctx, actor)))
		})
	}
}

// refusalReason maps a strategy's refusal onto the fixed reasons; its Code
// is the strategy's own text and could be anything.
func refusalReason(status int, code string) string {
	switch {
	case status == http.StatusServiceUnavailable:
		return RefusedUnavailable
	case code == codeInsufficientScope:
		return RefusedInsufficientScope
	}
	return RefusedInvalidToken
}

// notMineReason is the client-safe reason behind a "not mine" answer: only
// reasons this package wrote itself are passed on.
func notMineReason(err error) string {
	var nm notMine
	if errors.As(err, &nm) {
		return nm.reason
	}
	return "the token was not recognised"
}

var errMultipleAuthorization = errors.New("more than one Authorization header")

// bearerToken reads the token of an "Authorization: Bearer" header. It
// returns "" without error when there is no such header or it uses another
// scheme: per RFC 6750 §3.1 that is a request without credentials. The query
// string is never looked at.
func bearerToken(r *http.Request) (string, error) {
	vals := r.Header.Values("Authorization")
	switch len(vals) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", errMultipleAuthorization
	}
	scheme, rest, ok := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", nil
	}
	return strings.TrimSpace(rest), nil
}

// challenge builds the WWW-Authenticate header of a refusal.
type challenge struct {
	// metadataURL is empty when the strategy exposes no OAuth metadata: the
	// challenge is then a bare "Bearer" (AU-4).
	metadataURL string
	scope       string
}

func (c challenge) header(code string) string {
	if c.metadataURL == "" {
		return "Bearer"
	}
	var b strings.Builder
	b.WriteString("Bearer resource_metadata=")
	b.WriteString(quote(c.metadataURL))
	if code != "" {
		b.WriteString(", error=")
		b.WriteString(quote(code))
	}
	if code == codeInsufficientScope && c.scope != "" {
		b.WriteString(", scope=")
		b.WriteString(quote(c.scope))
	}
	return b.String()
}

// refuse writes the refusal: code goes into the challenge (may be empty),
// bodyCode and description into the JSON body.
func (c challenge) refuse(w http.ResponseWriter, status int, code, bodyCode, description string) {
	h := w.Header()
	h.Set("WWW-Authenticate", c.header(code))
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "5")
	}
	body, _ := json.Marshal(struct {
		Error       string `json:"error"`
		Description string `json:"error_description,omitempty"`
	}{bodyCode, description})
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// quote makes an RFC 9110 quoted-string, dropping control characters.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
