// Package authtest runs real identity-provider parts on loopback for tests
// of code that sits behind package auth: an OpenID provider issuing signed
// JWTs (mockoidc) and an RFC 7662 introspection endpoint.
package authtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"
)

// Provider is an OpenID provider served over HTTP on 127.0.0.1 for one test.
// It publishes discovery and JWKS documents, runs the authorization code
// flow, and signs tokens with whatever claims a test needs. Its methods are
// safe for concurrent use.
type Provider struct {
	oidc *mockoidc.MockOIDC

	jwksFetches atomic.Int64

	// mu guards oidc.Keypair: Rotate swaps it while handlers read it.
	mu sync.RWMutex
}

// NewProvider starts a provider with a fresh RSA key; it stops when the test
// ends.
func NewProvider(tb testing.TB) *Provider {
	tb.Helper()
	key := newKey(tb)
	m, err := mockoidc.NewServer(key)
	if err != nil {
		tb.Fatalf("authtest: mockoidc: %v", err)
	}
	p := &Provider{oidc: m}
	if _, err := m.Keypair.KeyID(); err != nil { // computed now, never lazily under a handler
		tb.Fatalf("authtest: key id: %v", err)
	}
	err = m.AddMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == mockoidc.JWKSEndpoint {
				p.jwksFetches.Add(1)
			}
			p.mu.RLock()
			defer p.mu.RUnlock()
			next.ServeHTTP(w, r)
		})
	})
	if err != nil {
		tb.Fatalf("authtest: mockoidc middleware: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("authtest: listen: %v", err)
	}
	if err := m.Start(ln, nil); err != nil {
		tb.Fatalf("authtest: mockoidc start: %v", err)
	}
	tb.Cleanup(func() { _ = m.Shutdown() })
	return p
}

func newKey(tb testing.TB) *rsa.PrivateKey {
	tb.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatalf("authtest: rsa key: %v", err)
	}
	return key
}

// Issuer is the provider's issuer identifier (http://127.0.0.1:PORT/oidc).
func (p *Provider) Issuer() string { return p.oidc.Issuer() }

// JWKSURL is where the provider publishes its signing keys.
func (p *Provider) JWKSURL() string { return p.oidc.JWKSEndpoint() }

// ClientID is the one client the provider knows; its access tokens from
// Login carry it as their audience.
func (p *Provider) ClientID() string { return p.oidc.ClientID }

// JWKSFetches counts requests for the key set so far.
func (p *Provider) JWKSFetches() int { return int(p.jwksFetches.Load()) }

// Token signs claims with the provider's current key (RS256, with its kid).
// iss defaults to the issuer, iat to now and exp to five minutes from now;
// a claim set to nil is left out.
func (p *Provider) Token(tb testing.TB, claims jwt.MapClaims) string {
	tb.Helper()
	now := time.Now()
	full := jwt.MapClaims{
		"iss": p.Issuer(),
		"iat": now.Unix(),
		"exp": now.Add(5 * time.Minute).Unix(),
	}
	for k, v := range claims {
		if v == nil {
			delete(full, k)
			continue
		}
		full[k] = v
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	tok, err := p.oidc.Keypair.SignJWT(full)
	if err != nil {
		tb.Fatalf("authtest: sign: %v", err)
	}
	return tok
}

// Rotate replaces the signing key: the old key leaves the JWKS, and tokens
// signed with it stop verifying once a verifier refreshes its key set.
func (p *Provider) Rotate(tb testing.TB) {
	tb.Helper()
	kp, err := mockoidc.NewKeypair(newKey(tb))
	if err != nil {
		tb.Fatalf("authtest: keypair: %v", err)
	}
	if _, err := kp.KeyID(); err != nil {
		tb.Fatalf("authtest: key id: %v", err)
	}
	p.mu.Lock()
	p.oidc.Keypair = kp
	p.mu.Unlock()
}

// PublicKeyPEM is the current signing key's public half, PEM-encoded, as an
// attacker would find it (for algorithm-confusion tests).
func (p *Provider) PublicKeyPEM(tb testing.TB) []byte {
	tb.Helper()
	p.mu.RLock()
	defer p.mu.RUnlock()
	der, err := x509.MarshalPKIXPublicKey(p.oidc.Keypair.PublicKey)
	if err != nil {
		tb.Fatalf("authtest: public key: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// Login runs the authorization code flow over HTTP, as a client would, and
// returns the access token the provider issued (audience: ClientID, subject:
// subject).
func (p *Provider) Login(tb testing.TB, subject string) string {
	tb.Helper()
	p.oidc.QueueUser(&mockoidc.MockUser{Subject: subject})
	const redirect = "http://127.0.0.1/callback"
	client := &http.Client{
		Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	q := url.Values{
		"client_id":     {p.oidc.ClientID},
		"response_type": {"code"},
		"scope":         {"openid"},
		"state":         {"s"},
		"redirect_uri":  {redirect},
	}
	resp, err := client.Get(p.oidc.AuthorizationEndpoint() + "?" + q.Encode())
	if err != nil {
		tb.Fatalf("authtest: authorize: %v", err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		tb.Fatalf("authtest: authorize: %s, Location %q", resp.Status, resp.Header.Get("Location"))
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {loc.Query().Get("code")},
		"client_id":     {p.oidc.ClientID},
		"client_secret": {p.oidc.ClientSecret},
		"redirect_uri":  {redirect},
	}
	resp, err = client.Post(p.oidc.TokenEndpoint(), "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		tb.Fatalf("authtest: token: %v", err)
	}
	defer resp.Body.Close()
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil || resp.StatusCode != http.StatusOK || tr.AccessToken == "" {
		tb.Fatalf("authtest: token: %s, %v", resp.Status, err)
	}
	return tr.AccessToken
}
