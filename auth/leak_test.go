package auth_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/auth/authtest"
	"github.com/toolgate/toolgate/core"
)

const leakMarker = "ZZLEAKMARKERZZ"

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestNoSecretsLeak sends credentials carrying a marker through every kind
// of refusal and checks that no response, header, error or log line
// contains them.
func TestNoSecretsLeak(t *testing.T) {
	idp := authtest.NewProvider(t)
	in := authtest.NewIntrospector(t, "toolgate", "client-secret-"+leakMarker)
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := auth.OAuthConfig{
		Issuer: idp.Issuer(), JWKSURL: idp.JWKSURL(),
		IntrospectionURL: in.URL(), ClientID: in.ClientID, ClientSecret: in.ClientSecret,
		Logger: logger,
	}
	oa := mustOAuth(t, cfg)
	down := authtest.NewIntrospector(t, "toolgate", "x")
	downCfg := cfg
	downCfg.IntrospectionURL = down.URL()
	oaDown := mustOAuth(t, downCfg)
	down.Close()

	apiKey := "apikey-" + leakMarker + "-0123456789"
	keys := auth.APIKeys([]auth.APIKey{{Key: apiKey, Actor: core.Actor{ID: "svc"}}})
	gw := newGateway(t,
		auth.EndpointAuth{Path: "/keys", Strategy: keys},
		auth.EndpointAuth{Path: "/chain", Strategy: auth.AnyOf(keys, oa)},
		auth.EndpointAuth{Path: "/down", Strategy: oaDown},
		auth.EndpointAuth{Path: "/closed"},
	)

	now := time.Now()
	jwtWith := func(claims jwt.MapClaims) string {
		full := jwt.MapClaims{"sub": leakMarker, "aud": gw.URL + "/chain", "kid-note": leakMarker}
		for k, v := range claims {
			full[k] = v
		}
		return idp.Token(t, full)
	}
	secrets := []string{leakMarker, apiKey, in.ClientSecret}
	cases := []struct{ path, token string }{
		{"/keys", apiKey + "x"},
		{"/keys", "wrong-" + leakMarker},
		{"/chain", "opaque-" + leakMarker},
		{"/chain", jwtWith(jwt.MapClaims{"exp": now.Add(-time.Hour).Unix()})},
		{"/chain", jwtWith(jwt.MapClaims{"aud": "https://" + leakMarker + ".example"})},
		{"/chain", jwtWith(jwt.MapClaims{"sub": nil})},
		{"/chain", jwtWith(nil) + leakMarker},
		{"/chain", "a." + leakMarker + ".b"},
		{"/down", "opaque-" + leakMarker},
		{"/closed", "opaque-" + leakMarker},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%d%s", i, c.path), func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, gw.URL+c.path+"?q="+leakMarker, nil)
			req.Header.Set("Authorization", "Bearer "+c.token)
			got := gw.do(t, req)
			if got.status == http.StatusOK {
				t.Fatalf("accepted %q", c.token)
			}
			var seen strings.Builder
			fmt.Fprintf(&seen, "%d\n", got.status)
			for k, vs := range got.header {
				fmt.Fprintf(&seen, "%s: %s\n", k, strings.Join(vs, ", "))
			}
			seen.WriteString(got.body)
			for _, s := range append(secrets, c.token) {
				if strings.Contains(seen.String(), s) {
					t.Errorf("response contains a secret %q:\n%s", s, seen.String())
				}
			}
		})
	}

	// The strategies' own errors.
	r := httptest.NewRequest(http.MethodGet, "/chain", nil)
	r = r.WithContext(auth.WithResource(r.Context(), gw.URL+"/chain"))
	for _, c := range cases {
		for _, s := range []auth.Strategy{keys, oa, oaDown, auth.AnyOf(keys, oa)} {
			_, err := s.Authenticate(r, c.token)
			if err == nil {
				t.Fatalf("accepted %q", c.token)
			}
			for _, sec := range append(secrets, c.token) {
				if strings.Contains(err.Error(), sec) {
					t.Errorf("error %q contains a secret", err)
				}
			}
		}
	}

	if logs.String() == "" {
		t.Error("nothing logged: the outage case did not run")
	}
	for _, sec := range secrets {
		if strings.Contains(logs.String(), sec) {
			t.Errorf("logs contain a secret %q:\n%s", sec, logs.String())
		}
	}
}

// TestKeysFirstNeverReachTheIssuer: with API keys ahead of an introspecting
// OAuth strategy, a valid key is never sent to the issuer (AU-2, AU-9).
func TestKeysFirstNeverReachTheIssuer(t *testing.T) {
	idp := authtest.NewProvider(t)
	in := authtest.NewIntrospector(t, "c", "s")
	oa := mustOAuth(t, auth.OAuthConfig{
		Issuer: idp.Issuer(), JWKSURL: idp.JWKSURL(),
		IntrospectionURL: in.URL(), ClientID: "c", ClientSecret: "s",
	})
	keys := auth.APIKeys([]auth.APIKey{{Key: "key-" + leakMarker, Actor: core.Actor{ID: "svc"}}})
	gw := newGateway(t, auth.EndpointAuth{Path: "/mcp", Strategy: auth.AnyOf(keys, oa)})
	expect(t, gw.call(t, "/mcp", "key-"+leakMarker), http.StatusOK, "")
	if in.Hits() != 0 {
		t.Errorf("the API key was sent for introspection (%d hits)", in.Hits())
	}
}
