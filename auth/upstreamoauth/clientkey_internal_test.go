package upstreamoauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"net/url"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// UI-1: a private_key_jwt assertion names the authorization server's
// issuer as its audience by default, and with AudienceEndpoint the URL of
// the endpoint it is posted to (token, revocation), as Okta and Entra ID
// require; the rest of its claims are the same either way. An unknown
// audience setting is refused.
func TestClientAssertionAudience(t *testing.T) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewClientKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), "kid-1")
	if err != nil {
		t.Fatal(err)
	}
	const issuer, token, revoke = "https://as.example", "https://as.example/token", "https://as.example/revoke"
	aud := func(k *ClientKey, endpoint string) []string {
		t.Helper()
		form := url.Values{}
		if _, err := (clientIdentity{ID: "toolgate", key: k, audience: issuer}).authenticate(form, endpoint); err != nil {
			t.Fatal(err)
		}
		var claims jwt.RegisteredClaims
		if _, _, err := jwt.NewParser().ParseUnverified(form.Get("client_assertion"), &claims); err != nil {
			t.Fatal(err)
		}
		if claims.Issuer != "toolgate" || claims.Subject != "toolgate" || claims.ID == "" {
			t.Errorf("claims %+v", claims)
		}
		return claims.Audience
	}
	byEndpoint, err := k.WithAudience(AudienceEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key      *ClientKey
		endpoint string
		want     string
	}{
		{k, token, issuer}, {k, revoke, issuer},
		{byEndpoint, token, token}, {byEndpoint, revoke, revoke},
	} {
		if got := aud(tc.key, tc.endpoint); len(got) != 1 || got[0] != tc.want {
			t.Errorf("endpointAudience=%v at %s: aud %v, want %s", tc.key.endpointAudience, tc.endpoint, got, tc.want)
		}
	}
	if k.Equal(byEndpoint) {
		t.Error("a key with another audience is the same key: a reload would not notice the change")
	}
	if _, err := k.WithAudience("tokenEndpoint"); err == nil {
		t.Error("an unknown audience setting was taken")
	}
}
