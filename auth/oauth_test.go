package auth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/auth/authtest"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/waittest"
)

// oauthFixture is a real OpenID provider and a gateway with endpoints /a and
// /b verifying its tokens (default audience), /keys with API keys only, and
// /chain with a scope-checking custom strategy, API keys and OAuth.
type oauthFixture struct {
	idp   *authtest.Provider
	oauth auth.Strategy
	gw    *gateway
}

const gatewayKey = "gw-key-0123456789abcdef0123456789"

func newOAuthFixture(t *testing.T, mutate func(*auth.OAuthConfig)) *oauthFixture {
	t.Helper()
	idp := authtest.NewProvider(t)
	cfg := auth.OAuthConfig{
		Issuer:                 idp.Issuer(), // JWKS discovered from the issuer
		ScopesSupported:        []string{"openid", "tools"},
		RolesFromScopes:        map[string][]string{"tools": {"MEMBER"}, "tools.admin": {"ADMIN", "MEMBER"}},
		TenantClaim:            "org_id",
		Leeway:                 -1, // none: expiry tests need not wait out a skew allowance
		JWKSUnknownKIDInterval: time.Millisecond,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	oa := mustOAuth(t, cfg)
	keys := auth.APIKeys([]auth.APIKey{{Key: gatewayKey, Actor: core.Actor{ID: "gateway", Roles: []string{"SERVICE"}, Tenant: "acme"}}})
	// needsAdmin recognises tokens carrying "admin-request" in their sub and
	// refuses them: a stand-in for a custom policy strategy.
	needsAdmin := strategyFunc(func(r *http.Request, token string) (core.Actor, error) {
		if strings.HasPrefix(token, "custom-") {
			return core.Actor{}, &auth.Error{Status: http.StatusForbidden, Description: "tools.admin is required", Scope: "tools.admin"}
		}
		return core.Actor{}, auth.ErrNotMine
	})
	gw := newGateway(t,
		auth.EndpointAuth{Path: "/a", Strategy: oa},
		auth.EndpointAuth{Path: "/b", Strategy: oa},
		auth.EndpointAuth{Path: "/keys", Strategy: keys},
		auth.EndpointAuth{Path: "/chain", Strategy: auth.AnyOf(needsAdmin, keys, oa)},
	)
	return &oauthFixture{idp: idp, oauth: oa, gw: gw}
}

// token signs claims for endpoint path (aud = its resource URL) with sub
// alice and scope tools unless claims say otherwise.
func (f *oauthFixture) token(t *testing.T, path string, claims jwt.MapClaims) string {
	t.Helper()
	full := jwt.MapClaims{"sub": "alice", "aud": f.gw.URL + path, "scope": "tools", "org_id": "acme"}
	for k, v := range claims {
		full[k] = v
	}
	return f.idp.Token(t, full)
}

// TestOAuthNegativeMatrix pins status and exact challenge for every way a
// request can be refused (AU-1, AU-3, AU-4, SV-3).
func TestOAuthNegativeMatrix(t *testing.T) {
	f := newOAuthFixture(t, nil)
	gw := f.gw
	now := time.Now()

	t.Run("no token/AU-4", func(t *testing.T) {
		expect(t, gw.call(t, "/a", ""), http.StatusUnauthorized, gw.challengeFor("/a", ""))
	})
	t.Run("no token, API keys only: bare Bearer/AU-4", func(t *testing.T) {
		expect(t, gw.call(t, "/keys", ""), http.StatusUnauthorized, "Bearer")
	})
	t.Run("unknown API key/AU-1", func(t *testing.T) {
		expect(t, gw.call(t, "/keys", "gw-key-wrong"), http.StatusUnauthorized, "Bearer")
	})
	t.Run("unknown API key in a chain with OAuth/AU-2", func(t *testing.T) {
		expect(t, gw.call(t, "/chain", "gw-key-wrong"), http.StatusUnauthorized, gw.challengeFor("/chain", invalidTokenParam))
	})
	t.Run("expired/AU-1", func(t *testing.T) {
		tok := f.token(t, "/a", jwt.MapClaims{"exp": now.Add(-time.Minute).Unix(), "iat": now.Add(-time.Hour).Unix()})
		got := gw.call(t, "/a", tok)
		expect(t, got, http.StatusUnauthorized, gw.challengeFor("/a", invalidTokenParam))
		because(t, got, "expired")
	})
	t.Run("no exp/AU-1", func(t *testing.T) {
		tok := f.token(t, "/a", jwt.MapClaims{"exp": nil})
		got := gw.call(t, "/a", tok)
		expect(t, got, http.StatusUnauthorized, gw.challengeFor("/a", invalidTokenParam))
		because(t, got, "no expiry")
	})
	t.Run("not yet valid/AU-1", func(t *testing.T) {
		tok := f.token(t, "/a", jwt.MapClaims{"nbf": now.Add(time.Hour).Unix()})
		got := gw.call(t, "/a", tok)
		expect(t, got, http.StatusUnauthorized, gw.challengeFor("/a", invalidTokenParam))
		because(t, got, "not valid yet")
	})
	t.Run("wrong issuer/AU-1", func(t *testing.T) {
		other := authtest.NewProvider(t)
		tok := other.Token(t, jwt.MapClaims{"sub": "alice", "aud": gw.URL + "/a", "scope": "tools"})
		got := gw.call(t, "/a", tok)
		expect(t, got, http.StatusUnauthorized, gw.challengeFor("/a", invalidTokenParam))
		because(t, got, "issuer")
	})
	t.Run("issuer claim forged onto another provider's key/AU-1", func(t *testing.T) {
		other := authtest.NewProvider(t)
		tok := other.Token(t, jwt.MapClaims{"iss": f.idp.Issuer(), "sub": "alice", "aud": gw.URL + "/a"})
		got := gw.call(t, "/a", tok)
		expect(t, got, http.StatusUnauthorized, gw.challengeFor("/a", invalidTokenParam))
		because(t, got, "signature")
	})
	t.Run("wrong audience/AU-1", func(t *testing.T) {
		tok := f.token(t, "/a", jwt.MapClaims{"aud": "https://elsewhere.example/mcp"})
		got := gw.call(t, "/a", tok)
		expect(t, got, http.StatusUnauthorized, gw.challengeFor("/a", invalidTokenParam))
		because(t, got, "not issued for this resource")
	})
	t.Run("no audience/AU-1", func(t *testing.T) {
		tok := f.token(t, "/a", jwt.MapClaims{"aud": nil})
		got := gw.call(t, "/a", tok)
		expect(t, got, http.StatusUnauthorized, gw.challengeFor("/a", invalidTokenParam))
		because(t, got, "not issued for this resource")
	})
	t.Run("token for endpoint A used on B/SV-3", func(t *testing.T) {
		tok := f.token(t, "/a", nil)
		expect(t, gw.call(t, "/a", tok), http.StatusOK, "")
		expect(t, gw.call(t, "/b", tok), http.StatusUnauthorized, gw.challengeFor("/b", invalidTokenParam))
	})
	t.Run("alg none/AU-1", func(t *testing.T) {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{
			"iss": f.idp.Issuer(), "sub": "alice", "aud": gw.URL + "/a", "exp": now.Add(time.Hour).Unix(),
		}).SignedString(jwt.UnsafeAllowNoneSignatureType)
		if err != nil {
			t.Fatal(err)
		}
		got := gw.call(t, "/a", tok)
		expect(t, got, http.StatusUnauthorized, gw.challengeFor("/a", invalidTokenParam))
		because(t, got, "algorithm")
	})
	t.Run("HS256 keyed with the public key/AU-1", func(t *testing.T) {
		real := f.token(t, "/a", nil)
		forged := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
			"iss": f.idp.Issuer(), "sub": "mallory", "aud": gw.URL + "/a", "exp": now.Add(time.Hour).Unix(),
		})
		forged.Header["kid"] = headerOf(t, real)["kid"]
		tok, err := forged.SignedString(f.idp.PublicKeyPEM(t))
		if err != nil {
			t.Fatal(err)
		}
		got := gw.call(t, "/a", tok)
		expect(t, got, http.StatusUnauthorized, gw.challengeFor("/a", invalidTokenParam))
		because(t, got, "algorithm")
	})
	t.Run("bad signature/AU-1", func(t *testing.T) {
		parts := strings.Split(f.token(t, "/a", nil), ".")
		payload, _ := json.Marshal(map[string]any{
			"iss": f.idp.Issuer(), "sub": "mallory", "aud": gw.URL + "/a", "exp": now.Add(time.Hour).Unix(),
		})
		parts[1] = base64.RawURLEncoding.EncodeToString(payload)
		got := gw.call(t, "/a", strings.Join(parts, "."))
		expect(t, got, http.StatusUnauthorized, gw.challengeFor("/a", invalidTokenParam))
		because(t, got, "signature")
	})
	t.Run("no actor claim/AU-1", func(t *testing.T) {
		tok := f.token(t, "/a", jwt.MapClaims{"sub": nil})
		got := gw.call(t, "/a", tok)
		expect(t, got, http.StatusUnauthorized, gw.challengeFor("/a", invalidTokenParam))
		because(t, got, "no sub claim")
	})
	t.Run("not a JWT, no introspection/AU-9", func(t *testing.T) {
		got := gw.call(t, "/a", "opaque-token-value")
		expect(t, got, http.StatusUnauthorized, gw.challengeFor("/a", invalidTokenParam))
		because(t, got, "not a JWT")
	})
	t.Run("custom strategy refuses with 403/AU-2", func(t *testing.T) {
		expect(t, gw.call(t, "/chain", "custom-token"), http.StatusForbidden,
			gw.challengeFor("/chain", `error="insufficient_scope", scope="tools.admin"`))
	})
	t.Run("token in the query string is not read", func(t *testing.T) {
		tok := f.token(t, "/a", nil)
		expect(t, gw.call(t, "/a?access_token="+tok, ""), http.StatusUnauthorized, gw.challengeFor("/a", ""))
	})
	t.Run("key rotated out of the JWKS/AU-1", func(t *testing.T) {
		// A provider of its own, so rotating does not disturb the cases above.
		rf := newOAuthFixture(t, nil)
		old := rf.token(t, "/a", nil)
		expect(t, rf.gw.call(t, "/a", old), http.StatusOK, "")
		rf.idp.Rotate(t)
		// The new key's kid is unknown: the key set is fetched again, and
		// the old key leaves it.
		expect(t, rf.gw.call(t, "/a", rf.token(t, "/a", nil)), http.StatusOK, "")
		expect(t, rf.gw.call(t, "/a", old), http.StatusUnauthorized, rf.gw.challengeFor("/a", invalidTokenParam))
	})
	t.Run("key rotated out, found by the periodic refresh/AU-1", func(t *testing.T) {
		rf := newOAuthFixture(t, func(c *auth.OAuthConfig) {
			c.JWKSRefreshInterval = 100 * time.Millisecond
		})
		old := rf.token(t, "/a", nil)
		expect(t, rf.gw.call(t, "/a", old), http.StatusOK, "")
		rf.idp.Rotate(t)
		var last answer
		if !waittest.Poll(10*time.Second, func() bool {
			last = rf.gw.call(t, "/a", old)
			return last.status != http.StatusOK
		}) {
			t.Fatal("a token signed with a rotated-out key still verifies")
		}
		expect(t, last, http.StatusUnauthorized, rf.gw.challengeFor("/a", invalidTokenParam))
	})
	t.Run("token expires mid-session/AU-3", func(t *testing.T) {
		tok := f.token(t, "/a", jwt.MapClaims{"exp": time.Now().Add(3 * time.Second).Unix()})
		expect(t, gw.call(t, "/a", tok), http.StatusOK, "")
		var last answer
		if !waittest.Poll(15*time.Second, func() bool {
			last = gw.call(t, "/a", tok)
			return last.status != http.StatusOK
		}) {
			t.Fatal("an expired token still works")
		}
		expect(t, last, http.StatusUnauthorized, gw.challengeFor("/a", invalidTokenParam))
	})
}

func headerOf(t *testing.T, token string) map[string]any {
	t.Helper()
	seg, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(seg, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestOAuthValidToken maps claims and scopes to the actor (AU-1).
func TestOAuthValidToken(t *testing.T) {
	f := newOAuthFixture(t, nil)
	tests := []struct {
		name   string
		claims jwt.MapClaims
		want   core.Actor
	}{
		{"scope string", jwt.MapClaims{"scope": "openid tools"}, core.Actor{ID: "alice", Roles: []string{"MEMBER"}, Tenant: "acme"}},
		{"scp list, roles unioned and sorted", jwt.MapClaims{"scope": nil, "scp": []string{"tools.admin", "tools"}}, core.Actor{ID: "alice", Roles: []string{"ADMIN", "MEMBER"}, Tenant: "acme"}},
		{"no scopes, no tenant", jwt.MapClaims{"scope": nil, "org_id": nil}, core.Actor{ID: "alice"}},
		{"aud list containing the resource", jwt.MapClaims{"aud": []string{"https://other.example", f.gw.URL + "/a"}}, core.Actor{ID: "alice", Roles: []string{"MEMBER"}, Tenant: "acme"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := f.gw.call(t, "/a", f.token(t, "/a", tt.claims))
			expect(t, got, http.StatusOK, "")
			if d := cmp.Diff(tt.want, got.actor); d != "" {
				t.Errorf("actor (-want +got):\n%s", d)
			}
		})
	}
}

// TestOAuthVerifiesEveryRequest re-derives the actor each time (AU-3).
func TestOAuthVerifiesEveryRequest(t *testing.T) {
	f := newOAuthFixture(t, nil)
	first := f.gw.call(t, "/a", f.token(t, "/a", jwt.MapClaims{"sub": "alice"}))
	second := f.gw.call(t, "/a", f.token(t, "/a", jwt.MapClaims{"sub": "bob", "scope": "tools.admin"}))
	if first.actor.ID != "alice" || second.actor.ID != "bob" || !second.actor.HasRole("ADMIN") {
		t.Fatalf("actors = %+v, %+v", first.actor, second.actor)
	}
}

// TestOAuthProviderLogin verifies an access token the provider issued
// through the authorization code flow (AU-1, audience list).
func TestOAuthProviderLogin(t *testing.T) {
	idp := authtest.NewProvider(t)
	oa := mustOAuth(t, auth.OAuthConfig{
		Issuer:   idp.Issuer(),
		JWKSURL:  idp.JWKSURL(),
		Audience: auth.AudienceRule{Values: []string{idp.ClientID()}},
	})
	gw := newGateway(t, auth.EndpointAuth{Path: "/mcp", Strategy: oa})
	got := gw.call(t, "/mcp", idp.Login(t, "carol"))
	expect(t, got, http.StatusOK, "")
	if got.actor.ID != "carol" {
		t.Fatalf("actor = %+v", got.actor)
	}
}

// TestOAuthAudienceRules covers audience: any and an explicit list (AU-1).
func TestOAuthAudienceRules(t *testing.T) {
	t.Run("any", func(t *testing.T) {
		f := newOAuthFixture(t, func(c *auth.OAuthConfig) { c.Audience = auth.AudienceRule{Any: true} })
		expect(t, f.gw.call(t, "/a", f.token(t, "/a", jwt.MapClaims{"aud": "https://elsewhere.example"})), http.StatusOK, "")
		expect(t, f.gw.call(t, "/a", f.token(t, "/a", jwt.MapClaims{"aud": nil})), http.StatusOK, "")
	})
	t.Run("list", func(t *testing.T) {
		f := newOAuthFixture(t, func(c *auth.OAuthConfig) {
			c.Audience = auth.AudienceRule{Values: []string{"api://tools", "api://other"}}
		})
		expect(t, f.gw.call(t, "/a", f.token(t, "/a", jwt.MapClaims{"aud": []string{"x", "api://other"}})), http.StatusOK, "")
		// Under a list the resource URL itself is not enough.
		expect(t, f.gw.call(t, "/a", f.token(t, "/a", nil)), http.StatusUnauthorized, f.gw.challengeFor("/a", invalidTokenParam))
	})
	t.Run("custom actor claim", func(t *testing.T) {
		f := newOAuthFixture(t, func(c *auth.OAuthConfig) { c.ActorClaim = "email" })
		got := f.gw.call(t, "/a", f.token(t, "/a", jwt.MapClaims{"email": "alice@example.com"}))
		expect(t, got, http.StatusOK, "")
		if got.actor.ID != "alice@example.com" {
			t.Fatalf("actor = %+v", got.actor)
		}
	})
}

// TestOAuthLeeway accepts a token expired within the allowed skew (AU-1).
func TestOAuthLeeway(t *testing.T) {
	f := newOAuthFixture(t, func(c *auth.OAuthConfig) { c.Leeway = time.Hour })
	tok := f.token(t, "/a", jwt.MapClaims{"exp": time.Now().Add(-time.Minute).Unix()})
	expect(t, f.gw.call(t, "/a", tok), http.StatusOK, "")
}

// TestOAuthDiscovery finds the JWKS through RFC 8414 metadata when there is
// no OpenID discovery document, and refuses a document naming another
// issuer (AU-1).
func TestOAuthDiscovery(t *testing.T) {
	idp := authtest.NewProvider(t)
	var issuer string
	asDoc := func(iss string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": iss, "jwks_uri": idp.JWKSURL()})
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server/tenant1", func(w http.ResponseWriter, r *http.Request) { asDoc(issuer)(w, r) })
	mux.HandleFunc("/.well-known/oauth-authorization-server/liar", asDoc("https://someone-else.example"))
	as := httptest.NewServer(mux)
	t.Cleanup(as.Close)
	issuer = as.URL + "/tenant1"

	oa := mustOAuth(t, auth.OAuthConfig{Issuer: issuer})
	gw := newGateway(t, auth.EndpointAuth{Path: "/mcp", Strategy: oa})
	tok := idp.Token(t, jwt.MapClaims{"iss": issuer, "sub": "dave", "aud": gw.URL + "/mcp"})
	expect(t, gw.call(t, "/mcp", tok), http.StatusOK, "")

	if _, err := auth.OAuth(t.Context(), auth.OAuthConfig{Issuer: as.URL + "/liar"}); err == nil {
		t.Error("OAuth accepted a discovery document for another issuer")
	}
	if _, err := auth.OAuth(t.Context(), auth.OAuthConfig{Issuer: as.URL + "/nothing-here"}); err == nil {
		t.Error("OAuth succeeded without any discovery document")
	}
	if _, err := auth.OAuth(t.Context(), auth.OAuthConfig{Issuer: "not a url"}); err == nil {
		t.Error("OAuth accepted a malformed issuer")
	}
}

// TestOAuthMetadata exposes the issuer and scopes (AU-5).
func TestOAuthMetadata(t *testing.T) {
	f := newOAuthFixture(t, nil)
	md, ok := auth.MetadataOf(f.oauth)
	if !ok {
		t.Fatal("OAuth exposes no metadata")
	}
	want := auth.ProtectedResourceMetadata{AuthorizationServers: []string{f.idp.Issuer()}, ScopesSupported: []string{"openid", "tools"}}
	if d := cmp.Diff(want, md); d != "" {
		t.Errorf("metadata (-want +got):\n%s", d)
	}
}

// TestOAuthOutsideMiddleware fails closed under the default audience rule
// when no resource URL is in the context.
func TestOAuthOutsideMiddleware(t *testing.T) {
	f := newOAuthFixture(t, nil)
	r := httptest.NewRequest(http.MethodGet, "/a", nil)
	_, err := f.oauth.Authenticate(r, f.token(t, "/a", nil))
	if _, ok := err.(*auth.Error); !ok {
		t.Fatalf("err = %v, want *auth.Error", err)
	}
}

// TestOAuthStopsWithContext ends the key set's refresh goroutine when the
// strategy's context ends.
func TestOAuthStopsWithContext(t *testing.T) {
	idp := authtest.NewProvider(t)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := auth.OAuth(ctx, auth.OAuthConfig{Issuer: idp.Issuer(), JWKSRefreshInterval: time.Hour}); err != nil {
		t.Fatal(err)
	}
	const refresher = "jwkset.NewStorageFromHTTP"
	if !strings.Contains(allStacks(), refresher) {
		t.Fatal("no refresh goroutine found: the check below would prove nothing")
	}
	cancel()
	if !waittest.Poll(5*time.Second, func() bool { return !strings.Contains(allStacks(), refresher) }) {
		t.Fatal("the JWKS refresh goroutine outlived its context")
	}
}

func allStacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}
