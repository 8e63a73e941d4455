package auth_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/core"
)

// claimsGateway serves s on /mcp, answering with the authenticated actor's
// claims as JSON.
func claimsGateway(t *testing.T, s auth.Strategy) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/mcp", auth.Middleware(auth.EndpointAuth{Path: "/mcp", Strategy: s})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, _ := auth.ActorFrom(r.Context())
		_ = json.NewEncoder(w).Encode(a.Claims)
	})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func claimsOf(t *testing.T, url, token string) (int, map[string]any, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&raw)
	var claims map[string]any
	_ = json.Unmarshal(raw, &claims)
	return resp.StatusCode, claims, string(raw)
}

// A verified JWT's claims reach the actor (for rules on actor.claims,
// PO-1) as signed, nested values included; the token itself does not.
func TestOAuthActorCarriesClaims(t *testing.T) {
	f := newOAuthFixture(t, nil)
	url := claimsGateway(t, f.oauth)
	tok := f.idp.Token(t, jwt.MapClaims{"sub": "alice", "aud": url + "/mcp", "scope": "tools",
		"department": "finance", "level": 3, "groups": []string{"a", "b"}, "org": map[string]any{"id": "acme"}})
	status, claims, raw := claimsOf(t, url, tok)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, raw)
	}
	if claims["department"] != "finance" || claims["level"] != float64(3) || claims["sub"] != "alice" {
		t.Fatalf("claims = %s", raw)
	}
	if g, _ := claims["groups"].([]any); len(g) != 2 {
		t.Fatalf("claims.groups = %v", claims["groups"])
	}
	if o, _ := claims["org"].(map[string]any); o["id"] != "acme" {
		t.Fatalf("claims.org = %v", claims["org"])
	}
	if strings.Contains(raw, tok) || strings.Contains(raw, strings.Split(tok, ".")[2]) {
		t.Fatal("the actor's claims carry the token or its signature")
	}

	// A refused token gives no claims to anything.
	forged := tok[:len(tok)-4] + "AAAA"
	if status, _, _ := claimsOf(t, url, forged); status != http.StatusUnauthorized {
		t.Fatalf("a forged signature: status %d", status)
	}
}

// An opaque token's introspection answer is its claims (AU-9, PO-1).
func TestIntrospectionActorCarriesClaims(t *testing.T) {
	f := newIntrospectionFixture(t, 0)
	url := claimsGateway(t, f.oauth)
	const tok = "opaque-SECRET-claims-token-31f9c2"
	f.activate(tok, map[string]any{"aud": url + "/mcp", "department": "sales"})
	status, claims, raw := claimsOf(t, url, tok)
	if status != http.StatusOK || claims["department"] != "sales" || claims["sub"] != "erin" {
		t.Fatalf("status %d, claims %s", status, raw)
	}
	if strings.Contains(raw, tok) {
		t.Fatal("the actor's claims carry the token")
	}
}

// PO-1, AU-1: An API key's actor carries the claims its config gives, and none when
// it gives none.
func TestAPIKeyActorCarriesConfiguredClaims(t *testing.T) {
	keys := auth.APIKeys([]auth.APIKey{
		{Key: "key-with-claims-0123456789abcdef", Actor: core.Actor{ID: "a", Claims: map[string]any{"department": "finance"}}},
		{Key: "key-without-claims-0123456789abc", Actor: core.Actor{ID: "b"}},
	})
	url := claimsGateway(t, keys)
	if _, claims, raw := claimsOf(t, url, "key-with-claims-0123456789abcdef"); claims["department"] != "finance" {
		t.Fatalf("claims = %s", raw)
	}
	if _, claims, raw := claimsOf(t, url, "key-without-claims-0123456789abc"); len(claims) != 0 {
		t.Fatalf("claims = %s; want none", raw)
	}
}
