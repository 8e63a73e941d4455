package auth_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/auth/authtest"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/waittest"
)

// introspectionFixture is an OAuth strategy whose opaque tokens are checked
// by a counting RFC 7662 endpoint on loopback.
type introspectionFixture struct {
	idp   *authtest.Provider
	in    *authtest.Introspector
	oauth auth.Strategy
	gw    *gateway
}

func newIntrospectionFixture(t *testing.T, ttl time.Duration) *introspectionFixture {
	t.Helper()
	idp := authtest.NewProvider(t)
	in := authtest.NewIntrospector(t, "toolgate", "s3cret:with/odd&chars")
	oa := mustOAuth(t, auth.OAuthConfig{
		Issuer:                idp.Issuer(),
		JWKSURL:               idp.JWKSURL(),
		RolesFromScopes:       map[string][]string{"tools": {"MEMBER"}},
		TenantClaim:           "org_id",
		IntrospectionURL:      in.URL(),
		ClientID:              in.ClientID,
		ClientSecret:          in.ClientSecret,
		IntrospectionCacheTTL: ttl,
	})
	gw := newGateway(t, auth.EndpointAuth{Path: "/mcp", Strategy: oa}, auth.EndpointAuth{Path: "/other", Strategy: oa})
	return &introspectionFixture{idp: idp, in: in, oauth: oa, gw: gw}
}

// activate makes token active for /mcp with scope tools.
func (f *introspectionFixture) activate(token string, extra map[string]any) {
	claims := map[string]any{
		"iss": f.idp.Issuer(), "sub": "erin", "aud": f.gw.URL + "/mcp", "scope": "tools", "org_id": "acme",
		"exp": float64(time.Now().Add(time.Hour).Unix()),
	}
	for k, v := range extra {
		if v == nil {
			delete(claims, k)
			continue
		}
		claims[k] = v
	}
	f.in.Activate(token, claims)
}

// TestIntrospectionCachesActive accepts an active opaque token and reuses
// the answer (AU-9).
func TestIntrospectionCachesActive(t *testing.T) {
	f := newIntrospectionFixture(t, time.Minute)
	const tok = "opaque-active-token-1"
	f.activate(tok, nil)

	got := f.gw.call(t, "/mcp", tok)
	expect(t, got, http.StatusOK, "")
	if d := cmp.Diff(core.Actor{ID: "erin", Roles: []string{"MEMBER"}, Tenant: "acme"}, got.actor); d != "" {
		t.Errorf("actor (-want +got):\n%s", d)
	}
	if n := f.in.Hits(); n != 1 {
		t.Fatalf("introspection hits = %d, want 1", n)
	}
	expect(t, f.gw.call(t, "/mcp", tok), http.StatusOK, "")
	if n := f.in.Hits(); n != 1 {
		t.Fatalf("introspection hits after a second request = %d, want 1 (cached)", n)
	}

	// The audience rule still applies to a cached answer (SV-3).
	got = f.gw.call(t, "/other", tok)
	expect(t, got, http.StatusUnauthorized, f.gw.challengeFor("/other", invalidTokenParam))
	because(t, got, "not issued for this resource")

	// The cache is keyed by a digest, never by the token.
	sum := sha256.Sum256([]byte(tok))
	keys := auth.IntrospectionCacheKeys(f.oauth)
	if d := cmp.Diff([]string{hex.EncodeToString(sum[:])}, keys); d != "" {
		t.Errorf("cache keys (-want +got):\n%s", d)
	}
	if slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, tok) }) {
		t.Error("a cache key contains the token")
	}
}

// TestIntrospectionInactive refuses an inactive token and does not cache
// the refusal (AU-9).
func TestIntrospectionInactive(t *testing.T) {
	f := newIntrospectionFixture(t, time.Minute)
	for i := 1; i <= 2; i++ {
		got := f.gw.call(t, "/mcp", "opaque-unknown-token")
		expect(t, got, http.StatusUnauthorized, f.gw.challengeFor("/mcp", invalidTokenParam))
		because(t, got, "not active")
		if n := f.in.Hits(); n != i {
			t.Fatalf("hits = %d, want %d: inactive answers must not be cached", n, i)
		}
	}
	if keys := auth.IntrospectionCacheKeys(f.oauth); len(keys) != 0 {
		t.Errorf("cache holds %v after inactive answers", keys)
	}
}

// TestIntrospectionRevocation sees a revocation once the cache entry ages
// out (AU-3, AU-9).
func TestIntrospectionRevocation(t *testing.T) {
	f := newIntrospectionFixture(t, 200*time.Millisecond)
	const tok = "opaque-revoked-later"
	f.activate(tok, nil)
	expect(t, f.gw.call(t, "/mcp", tok), http.StatusOK, "")
	f.in.Revoke(tok)
	var last answer
	if !waittest.Poll(10*time.Second, func() bool {
		last = f.gw.call(t, "/mcp", tok)
		return last.status != http.StatusOK
	}) {
		t.Fatal("a revoked token still works after the cache TTL")
	}
	expect(t, last, http.StatusUnauthorized, f.gw.challengeFor("/mcp", invalidTokenParam))
}

// TestIntrospectionRules applies issuer, audience, expiry and actor rules to
// introspection answers (AU-9).
func TestIntrospectionRules(t *testing.T) {
	f := newIntrospectionFixture(t, time.Minute)
	tests := []struct {
		name  string
		extra map[string]any
		why   string
	}{
		{"other issuer", map[string]any{"iss": "https://other.example"}, "issuer"},
		{"other audience", map[string]any{"aud": []any{"https://other.example/mcp"}}, "not issued for this resource"},
		{"no audience", map[string]any{"aud": nil}, "not issued for this resource"},
		{"expired", map[string]any{"exp": float64(time.Now().Add(-time.Hour).Unix())}, "expired"},
		{"not yet valid", map[string]any{"nbf": float64(time.Now().Add(time.Hour).Unix())}, "not valid yet"},
		{"no subject", map[string]any{"sub": nil}, "no sub claim"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := "opaque-rule-" + string(rune('a'+i))
			f.activate(tok, tt.extra)
			got := f.gw.call(t, "/mcp", tok)
			expect(t, got, http.StatusUnauthorized, f.gw.challengeFor("/mcp", invalidTokenParam))
			because(t, got, tt.why)
		})
	}
	t.Run("iss absent is the issuer's own answer", func(t *testing.T) {
		f.activate("opaque-no-iss", map[string]any{"iss": nil})
		expect(t, f.gw.call(t, "/mcp", "opaque-no-iss"), http.StatusOK, "")
	})
}

// TestIntrospectionUnavailable answers 503 when the issuer cannot be asked,
// whether it is down or refuses toolgate's client credentials.
func TestIntrospectionUnavailable(t *testing.T) {
	t.Run("bad client credentials", func(t *testing.T) {
		idp := authtest.NewProvider(t)
		in := authtest.NewIntrospector(t, "toolgate", "right")
		oa := mustOAuth(t, auth.OAuthConfig{
			Issuer: idp.Issuer(), JWKSURL: idp.JWKSURL(),
			IntrospectionURL: in.URL(), ClientID: "toolgate", ClientSecret: "wrong",
		})
		gw := newGateway(t, auth.EndpointAuth{Path: "/mcp", Strategy: oa})
		got := gw.call(t, "/mcp", "opaque-any")
		expect(t, got, http.StatusServiceUnavailable, gw.challengeFor("/mcp", ""))
		if got.header.Get("Retry-After") == "" {
			t.Error("503 without Retry-After")
		}
	})
	t.Run("issuer down", func(t *testing.T) {
		idp := authtest.NewProvider(t)
		in := authtest.NewIntrospector(t, "toolgate", "s")
		oa := mustOAuth(t, auth.OAuthConfig{
			Issuer: idp.Issuer(), JWKSURL: idp.JWKSURL(),
			IntrospectionURL: in.URL(), ClientID: "toolgate", ClientSecret: "s",
			HTTPClient: &http.Client{Timeout: 2 * time.Second},
		})
		gw := newGateway(t, auth.EndpointAuth{Path: "/mcp", Strategy: oa})
		in.Close()
		expect(t, gw.call(t, "/mcp", "opaque-any"), http.StatusServiceUnavailable, gw.challengeFor("/mcp", ""))
	})
}

// TestIntrospectionCacheTTLCapped never caches longer than 60 s, nor past
// the token's exp (AU-9).
func TestIntrospectionCacheTTLCapped(t *testing.T) {
	idp := authtest.NewProvider(t)
	in := authtest.NewIntrospector(t, "c", "s")
	oa := mustOAuth(t, auth.OAuthConfig{
		Issuer: idp.Issuer(), JWKSURL: idp.JWKSURL(), Audience: auth.AudienceRule{Any: true},
		IntrospectionURL: in.URL(), ClientID: "c", ClientSecret: "s",
		IntrospectionCacheTTL: time.Hour,
	})
	if got := auth.IntrospectionCacheTTL(oa); got != 60*time.Second {
		t.Errorf("cache TTL = %v, want 60s", got)
	}
	gw := newGateway(t, auth.EndpointAuth{Path: "/mcp", Strategy: oa})
	// Expiring in five seconds: cached at most until then.
	exp := time.Unix(time.Now().Add(5*time.Second).Unix(), 0)
	in.Activate("opaque-short", map[string]any{"sub": "x", "exp": float64(exp.Unix())})
	expect(t, gw.call(t, "/mcp", "opaque-short"), http.StatusOK, "")
	until, ok := auth.IntrospectionCachedUntil(oa, "opaque-short")
	if !ok || until.After(exp) {
		t.Errorf("cached until %v (%v), want at most the token's exp %v", until, ok, exp)
	}

	noCache := mustOAuth(t, auth.OAuthConfig{
		Issuer: idp.Issuer(), JWKSURL: idp.JWKSURL(), Audience: auth.AudienceRule{Any: true},
		IntrospectionURL: in.URL(), ClientID: "c", ClientSecret: "s",
		IntrospectionCacheTTL: -1,
	})
	gw2 := newGateway(t, auth.EndpointAuth{Path: "/mcp", Strategy: noCache})
	in.Activate("opaque-long", map[string]any{"sub": "x"})
	before := in.Hits()
	expect(t, gw2.call(t, "/mcp", "opaque-long"), http.StatusOK, "")
	expect(t, gw2.call(t, "/mcp", "opaque-long"), http.StatusOK, "")
	if n := in.Hits() - before; n != 2 {
		t.Errorf("hits with the cache off = %d, want 2", n)
	}
}

// AU-1, AU-4, AU-9: a 100 KB garbage bearer token is refused locally — 401
// invalid_token with the challenge — without asking the issuer, whose
// introspection endpoint would answer 400 to a request that size.
func TestOversizedTokenRefusedLocallyAU4AU9(t *testing.T) {
	f := newIntrospectionFixture(t, time.Minute)
	f.in.LimitBody(16 << 10)
	garbage := strings.Repeat("x9-_~+/", 100<<10/7)
	got := f.gw.call(t, "/mcp", garbage)
	expect(t, got, http.StatusUnauthorized, f.gw.challengeFor("/mcp", invalidTokenParam))
	because(t, got, "longer than 8192 bytes")
	if strings.Contains(got.body, garbage[:64]) {
		t.Error("the refusal quotes the token")
	}
	if n := f.in.Hits(); n != 0 {
		t.Errorf("the oversized token was sent to introspection (%d requests)", n)
	}

	// The bound is inclusive: a token of exactly auth.MaxTokenBytes is
	// verified as usual.
	edge := strings.Repeat("t", auth.MaxTokenBytes)
	f.activate(edge, nil)
	expect(t, f.gw.call(t, "/mcp", edge), http.StatusOK, "")
	expect(t, f.gw.call(t, "/mcp", edge+"t"), http.StatusUnauthorized, f.gw.challengeFor("/mcp", invalidTokenParam))
}

// AU-9, AU-4: an introspection endpoint that answers 4xx about the token
// (400 invalid_request here: the request is too large for it) has refused
// the token — 401 invalid_token, not 503 "try again" — while a 5xx is still
// an outage.
func TestIntrospection4xxIsRefusalAU9(t *testing.T) {
	f := newIntrospectionFixture(t, time.Minute)
	f.in.LimitBody(1 << 10)
	token := strings.Repeat("o", 4<<10) // within MaxTokenBytes, over the endpoint's limit
	got := f.gw.call(t, "/mcp", token)
	expect(t, got, http.StatusUnauthorized, f.gw.challengeFor("/mcp", invalidTokenParam))
	if got.header.Get("Retry-After") != "" {
		t.Error("a refusal tells the client to retry")
	}
	because(t, got, "the issuer refused the token")
	if f.in.Hits() != 1 {
		t.Errorf("introspection requests = %d, want 1", f.in.Hits())
	}

	// AU-2: the refusal is not the last word of an anyOf: a later strategy
	// that knows the token still verifies it.
	keys := auth.APIKeys([]auth.APIKey{{Key: token, Actor: core.Actor{ID: "ci"}}})
	gw := newGateway(t, auth.EndpointAuth{Path: "/mcp", Strategy: auth.AnyOf(f.oauth, keys)})
	if got := gw.call(t, "/mcp", token); got.status != http.StatusOK || got.actor.ID != "ci" {
		t.Errorf("anyOf(oauth, apiKeys) = %d %+v, want the API key's actor", got.status, got.actor)
	}

	t.Run("5xx is unavailable", func(t *testing.T) {
		idp := authtest.NewProvider(t)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "overloaded", http.StatusBadGateway)
		}))
		t.Cleanup(srv.Close)
		oa := mustOAuth(t, auth.OAuthConfig{Issuer: idp.Issuer(), JWKSURL: idp.JWKSURL(), IntrospectionURL: srv.URL})
		gw := newGateway(t, auth.EndpointAuth{Path: "/mcp", Strategy: oa})
		got := gw.call(t, "/mcp", "opaque-any")
		expect(t, got, http.StatusServiceUnavailable, gw.challengeFor("/mcp", ""))
		if got.header.Get("Retry-After") == "" {
			t.Error("503 without Retry-After")
		}
	})
}
