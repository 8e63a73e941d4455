package upstreamoauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/toolgate/toolgate/auth/upstreamoauth"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/credentials"
	"github.com/toolgate/toolgate/internal/oidctest"
)

// UI-1: a pre-registered client that authenticates with private_key_jwt
// (RFC 7523), once with an RSA key (RS256) and once with an EC P-256 key
// (ES256), at the real provider that holds only their public keys: the
// code exchange, the refresh and the revocation each carry a signed
// assertion the provider accepts (it has no secret to accept instead).
// The refresh token the revocation sent is dead afterwards. A key the
// provider does not know is refused at the callback, and nothing is
// stored.
func TestPrivateKeyJWTClient(t *testing.T) {
	rsaKey := oidctest.NewClientKey(t, "RSA", "rsa-1")
	ecKey := oidctest.NewClientKey(t, "EC", "ec-1")
	stranger := oidctest.NewClientKey(t, "EC", "ec-1") // same kid, unknown key
	lnRSA, rsaURL := listen(t)
	lnEC, ecURL := listen(t)
	lnBad, badURL := listen(t)
	iss := startAS(t, oidctest.PKJWTEnv(rsaKey, ecKey),
		"PRE_REDIRECTS="+strings.Join([]string{rsaURL + oidctest.CallbackPath, ecURL + oidctest.CallbackPath, badURL + oidctest.CallbackPath}, ","))
	res := startResource(t, iss)
	ctx := context.Background()

	upstream := func(k oidctest.ClientKey, kid, audience string) upstreamoauth.Upstream {
		ck, err := upstreamoauth.NewClientKey(k.PEM, kid)
		if err != nil {
			t.Fatal(err)
		}
		if ck, err = ck.WithAudience(audience); err != nil {
			t.Fatal(err)
		}
		u := crm(res)
		u.ClientID, u.ClientKey = oidctest.PKJWTClient, ck
		return u
	}
	cases := []struct {
		name, alg string
		key       oidctest.ClientKey
		kid       string
		g         *gateway
	}{
		{name: "RSA", alg: "RS256", key: rsaKey, kid: "rsa-1"},
		{name: "EC", alg: "ES256", key: ecKey, kid: "ec-1"},
	}
	// The EC client names each endpoint's URL as the assertions' audience
	// (clientAssertionAudience: endpoint), the RSA one the issuer.
	cases[0].g = startGateway(t, []upstreamoauth.Upstream{upstream(rsaKey, "rsa-1", upstreamoauth.AudienceIssuer)}, gatewayOptions{ln: lnRSA})
	cases[1].g = startGateway(t, []upstreamoauth.Upstream{upstream(ecKey, "ec-1", upstreamoauth.AudienceEndpoint)}, gatewayOptions{ln: lnEC})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.g
			if u, _ := g.M.Upstream("crm"); u.ClientKey.Alg() != tc.alg {
				t.Fatalf("the key signs with %s, want %s", u.ClientKey.Alg(), tc.alg)
			}
			connect(t, g, "crm", "alice", "alice")
			first, id, err := g.M.Token(ctx, "crm", "alice")
			if err != nil {
				t.Fatal(err)
			}
			if who, code := res.whoAmI(t, first); who != "alice" || code != http.StatusOK {
				t.Fatalf("the token reached the upstream as %q (HTTP %d)", who, code)
			}
			g.clock.advance(2 * time.Hour) // past the provider's one-hour tokens
			second, _, err := g.M.Token(ctx, "crm", "alice")
			if err != nil {
				t.Fatalf("refreshing with a client assertion: %v", err)
			}
			if second == first {
				t.Fatal("an expired token was not refreshed")
			}
			if who, code := res.whoAmI(t, second); who != "alice" || code != http.StatusOK {
				t.Fatalf("the refreshed token reached the upstream as %q (HTTP %d)", who, code)
			}

			refresh := sealedRefreshToken(t, g, id)
			if _, err := g.M.Revoke(ctx, id, "revoked"); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(g.Log.String(), "revoking at the authorization server failed") {
				t.Fatalf("the revocation was refused: %s", g.Log.String())
			}
			// The provider revoked it: a refresh of our own, with a valid
			// assertion, is refused.
			if code := refreshByHand(t, iss, tc.key, tc.kid, refresh); code != "invalid_grant" {
				t.Fatalf("a refresh with the revoked refresh token answered %q, want invalid_grant", code)
			}
			assertNoLeak(t, g, first, second, refresh, string(tc.key.PEM))
		})
	}

	// A key the provider does not hold: the code exchange is refused as
	// invalid_client, and no connection is stored.
	bad := startGateway(t, []upstreamoauth.Upstream{upstream(stranger, "ec-1", "")}, gatewayOptions{ln: lnBad})
	b := browser(t)
	cb := signIn(t, b, bad.M.ConnectURL("crm", "alice"), "alice")
	code, page := open(t, b, cb)
	if code != http.StatusBadGateway || !strings.Contains(page, "invalid_client") {
		t.Fatalf("the callback with an unknown key answered %d: %s", code, page)
	}
	if _, _, err := bad.M.Token(ctx, "crm", "alice"); !errors.Is(err, core.ErrNotConnected) {
		t.Fatalf("after a refused exchange Token = %v, want not connected", err)
	}
	assertNoLeak(t, bad, string(stranger.PEM))
}

// sealedRefreshToken opens connection id's sealed tokens with the test key.
func sealedRefreshToken(t *testing.T, g *gateway, id string) string {
	t.Helper()
	c, err := g.Store.ConnectionByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := credentials.NewKeyring(testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := kr.Open(c)
	if err != nil {
		t.Fatal(err)
	}
	var ts struct {
		RefreshToken string `json:"refresh_token"`
	}
	if err := json.Unmarshal(p, &ts); err != nil || ts.RefreshToken == "" {
		t.Fatalf("the connection holds no refresh token: %v", err)
	}
	return ts.RefreshToken
}

// refreshByHand posts a refresh grant as the private_key_jwt client with an
// assertion the test signs, and returns the OAuth error code ("" if it
// succeeded).
func refreshByHand(t *testing.T, iss string, k oidctest.ClientKey, kid, refresh string) string {
	t.Helper()
	method := jwt.SigningMethodES256.Alg()
	if _, ok := k.JWK["n"]; ok {
		method = jwt.SigningMethodRS256.Alg()
	}
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(method), jwt.RegisteredClaims{Issuer: oidctest.PKJWTClient, Subject: oidctest.PKJWTClient,
		Audience: jwt.ClaimStrings{iss}, ID: "by-hand-" + now.Format(time.RFC3339Nano), IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute))})
	tok.Header["kid"] = kid
	a, err := tok.SignedString(k.Signer)
	if err != nil {
		t.Fatal(err)
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {oidctest.PKJWTClient},
		"client_assertion_type": {upstreamoauth.ClientAssertionType}, "client_assertion": {a}}
	resp, err := http.PostForm(iss+"/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return out.Error
}

// UI-1, UI-2: the token exchange (RFC 8693) authenticates the client with
// its key as well: the provider's private_key_jwt client, which has no
// secret, exchanges alice's incoming token for one the upstream takes as
// alice.
func TestTokenExchangeWithClientKey(t *testing.T) {
	k := oidctest.NewClientKey(t, "RSA", "rsa-x")
	issuer := startAS(t, oidctest.RedirectEnv, oidctest.PKJWTEnv(k))
	res := startResource(t, issuer)
	ck, err := upstreamoauth.NewClientKey(k.PEM, "rsa-x")
	if err != nil {
		t.Fatal(err)
	}
	m, log, _ := exchangeManager(t, upstreamoauth.Upstream{Name: "crm", URL: res.URL, Credentials: upstreamoauth.PerActor,
		ClientID: oidctest.PKJWTClient, ClientKey: ck, TokenExchange: true}, nil, 0)
	front := exchangeFront(t, issuer, m, "crm")
	aliceIn := oidctest.AccessToken(t, issuer, "alice", front)
	a := asActor(t, front, aliceIn)
	if a["err"] != "" || a["token"] == "" || a["token"] == aliceIn {
		t.Fatalf("alice's exchange with a client key: %q", a["err"])
	}
	if who, code := res.whoAmI(t, a["token"]); code != http.StatusOK || who != "alice" {
		t.Fatalf("the upstream saw %q (%d), want alice", who, code)
	}
	for _, s := range []string{aliceIn, a["token"], string(k.PEM)} {
		if strings.Contains(log.String(), s) {
			t.Fatal("the log holds a token or the client key")
		}
	}
}

// UI-1: an authorization server whose metadata lists the token endpoint's
// authentication methods without private_key_jwt is refused at connect,
// before the browser is sent there, with a message naming it; nothing is
// stored.
func TestClientKeyServerWithoutPrivateKeyJWT(t *testing.T) {
	ln, base := listen(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/prm"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	mux.HandleFunc("/prm", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"resource":"` + base + `/mcp","authorization_servers":["` + base + `/as"]}`))
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server/as", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"issuer":"` + base + `/as","authorization_endpoint":"` + base + `/as/auth","token_endpoint":"` + base + `/as/token",
			"code_challenge_methods_supported":["S256"],"token_endpoint_auth_methods_supported":["client_secret_basic","none"]}`))
	})
	serve(t, ln, mux)
	ck, err := upstreamoauth.NewClientKey(oidctest.NewClientKey(t, "EC", "").PEM, "")
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, []upstreamoauth.Upstream{{Name: "crm", URL: base + "/mcp", Credentials: upstreamoauth.PerActor,
		ClientID: "toolgate", ClientKey: ck}}, gatewayOptions{})
	code, page := connectThrough(t, browser(t), g.M.ConnectURL("crm", "alice"))
	if code != http.StatusBadGateway || !strings.Contains(page, "does not take private_key_jwt") {
		t.Fatalf("answered %d %q, want 502 naming private_key_jwt", code, page)
	}
	if list, _ := g.M.Connections(context.Background()); len(list) != 0 {
		t.Fatalf("stored: %+v", list)
	}
}
