package upstreamoauth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/auth/upstreamoauth"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/oidctest"
	"github.com/toolgate/toolgate/internal/store/sqlite"
)

// exchangeFront is an endpoint taking the provider's JWTs, as the gateway's
// is: its handler asks m for the calling actor's token of upstream, with
// the request's context (where the verified token is).
func exchangeFront(t *testing.T, issuer string, m *upstreamoauth.Manager, upstream string) string {
	t.Helper()
	ln, base := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	strat, err := auth.OAuth(ctx, auth.OAuthConfig{Issuer: issuer, HTTPClient: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	ep := auth.EndpointAuth{Path: "/mcp", Strategy: strat, PublicURL: base}
	serve(t, ln, auth.Middleware(ep)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, _ := auth.ActorFrom(r.Context())
		if id := r.URL.Query().Get("refused"); id != "" {
			// As when the upstream answers 401 to that token.
			if err := m.Refused(r.Context(), upstream, a.ID, id); err != nil {
				_ = json.NewEncoder(w).Encode(map[string]string{"err": err.Error()})
				return
			}
		}
		tok, id, err := m.Token(r.Context(), upstream, a.ID)
		out := map[string]string{"token": tok, "id": id}
		if err != nil {
			out["err"] = err.Error()
			out["notConnected"] = boolText(errors.Is(err, core.ErrNotConnected))
		}
		_ = json.NewEncoder(w).Encode(out)
	})))
	return base + "/mcp"
}

func boolText(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// asActor calls the front with the actor's incoming token.
func asActor(t *testing.T, front, incoming string) map[string]string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, front, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+incoming)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("front answered %d: %v", resp.StatusCode, err)
	}
	return out
}

func claimsOf(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatal("not a JWT")
	}
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// exchangeManager is a manager of one tokenExchange upstream over a real
// store file; hc, if not nil, is its HTTP client.
func exchangeManager(t *testing.T, up upstreamoauth.Upstream, hc *http.Client, timeout time.Duration) (*upstreamoauth.Manager, *syncBuffer, *clock) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "toolgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	log, clk := &syncBuffer{}, &clock{}
	m, err := upstreamoauth.New(upstreamoauth.Options{PublicURL: "http://127.0.0.1:1", Key: testKey, Store: st, HTTPClient: hc, Timeout: timeout,
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})), Now: clk.now}, []upstreamoauth.Upstream{up})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m, log, clk
}

// UI-2: with the real provider, alice's and bob's incoming tokens (meant
// for the front endpoint) are exchanged for tokens of their own whose
// audience is the upstream, which accepts each as that person; a token is
// reused while fresh and exchanged again shortly before it expires; a call
// without a verified OAuth token gets a clear error. No token is logged.
func TestTokenExchange(t *testing.T) {
	issuer := startAS(t, oidctest.RedirectEnv)
	res := startResource(t, issuer)
	m, log, clk := exchangeManager(t, upstreamoauth.Upstream{Name: "crm", URL: res.URL, Credentials: upstreamoauth.PerActor,
		ClientID: oidctest.ExchangeClient, ClientSecret: oidctest.ExchangeClientSecret, TokenExchange: true}, nil, 0)
	front := exchangeFront(t, issuer, m, "crm")
	aliceIn := oidctest.AccessToken(t, issuer, "alice", front)
	bobIn := oidctest.AccessToken(t, issuer, "bob", front)
	if who, code := res.whoAmI(t, aliceIn); code != http.StatusUnauthorized {
		t.Fatalf("the upstream took the incoming token itself: %d %q", code, who)
	}

	a1 := asActor(t, front, aliceIn)
	if a1["err"] != "" || a1["token"] == "" || a1["token"] == aliceIn || !strings.HasPrefix(a1["id"], "xchg_") {
		t.Fatalf("alice's exchange: %+v", a1["err"])
	}
	if aud := claimsOf(t, a1["token"])["aud"]; aud != res.URL {
		t.Fatalf("the exchanged token's audience is %v, want %s", aud, res.URL)
	}
	if who, code := res.whoAmI(t, a1["token"]); code != http.StatusOK || who != "alice" {
		t.Fatalf("the upstream saw %q (%d), want alice", who, code)
	}
	if again := asActor(t, front, aliceIn); again["token"] != a1["token"] || again["id"] != a1["id"] {
		t.Fatal("a fresh exchanged token was not reused")
	}
	b1 := asActor(t, front, bobIn)
	if b1["err"] != "" || b1["token"] == a1["token"] {
		t.Fatalf("bob's exchange: %q", b1["err"])
	}
	if who, _ := res.whoAmI(t, b1["token"]); who != "bob" {
		t.Fatalf("the upstream saw %q, want bob", who)
	}
	if a, ok, err := m.CatalogActor(context.Background(), "crm"); err != nil || !ok || (a != "alice" && a != "bob") {
		t.Fatalf("CatalogActor = %q %v %v", a, ok, err)
	}

	// Without a verified token (a catalog listing, not a call) the cached
	// token serves; an actor with none gets the reason.
	if tok, _, err := m.Token(context.Background(), "crm", "alice"); err != nil || tok != a1["token"] {
		t.Fatalf("alice's cached token without a call: %v", err)
	}
	_, _, err := m.Token(context.Background(), "crm", "carol")
	if !errors.Is(err, core.ErrNotConnected) || !strings.Contains(err.Error(), "an API key cannot be exchanged") {
		t.Fatalf("carol: %v", err)
	}

	// Shortly before it expires, the next call exchanges again.
	clk.advance(time.Hour - 30*time.Second)
	a2 := asActor(t, front, aliceIn)
	if a2["err"] != "" || a2["token"] == a1["token"] || a2["id"] == a1["id"] {
		t.Fatalf("alice's token near expiry was not exchanged again: %q", a2["err"])
	}
	if who, _ := res.whoAmI(t, a2["token"]); who != "alice" {
		t.Fatalf("the upstream saw %q, want alice", who)
	}
	// A token the upstream refuses is exchanged again at once.
	a3 := asActor(t, front+"?refused="+a2["id"], aliceIn)
	if a3["err"] != "" || a3["token"] == a2["token"] || a3["id"] == a2["id"] {
		t.Fatalf("a refused token was not exchanged again: %q", a3["err"])
	}
	if who, _ := res.whoAmI(t, a3["token"]); who != "alice" {
		t.Fatalf("the upstream saw %q, want alice", who)
	}
	for _, s := range []string{aliceIn, bobIn, a1["token"], a2["token"], a3["token"], b1["token"], oidctest.ExchangeClientSecret} {
		if strings.Contains(log.String(), s) {
			t.Fatal("the log holds a token or the client secret")
		}
	}
}

// tokenEndpointTo sends the requests for the provider's token endpoint to
// a loopback server of the test's instead: the provider serves discovery,
// the test what the exchange gets back.
type tokenEndpointTo struct {
	target atomic.Value // string: host:port
	base   http.RoundTripper
}

func (t *tokenEndpointTo) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == "/token" {
		r = r.Clone(r.Context())
		r.URL.Host = t.target.Load().(string)
		r.Host = r.URL.Host
	}
	return t.base.RoundTrip(r)
}

// UI-2: an exchange that fails — refused, garbage, no token, the incoming
// token echoed, a server that hangs, another issuer — is an error matching
// core.ErrNotConnected that names why and holds no token; nothing is
// cached, so the next call tries again.
func TestTokenExchangeFailures(t *testing.T) {
	issuer := startAS(t, oidctest.RedirectEnv)
	res := startResource(t, issuer)
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	modes := make(chan string, 1) // what the next token request gets
	ln, base := listen(t)
	serve(t, ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var mode string
		select {
		case mode = <-modes:
		case <-r.Context().Done():
			return
		}
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		switch mode {
		case "ok":
			w.Write([]byte(`{"access_token":"exchanged-by-the-test","token_type":"Bearer","expires_in":3600}`))
		case "refused":
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_grant","error_description":"subject token revoked"}`))
		case "garbage":
			w.Write([]byte(`{"access_token": [1, 2`))
		case "empty":
			w.Write([]byte(`{"token_type":"Bearer"}`))
		case "echo":
			w.Write([]byte(`{"access_token":"` + r.PostForm.Get("subject_token") + `","token_type":"Bearer"}`))
		case "hang":
			select {
			case <-r.Context().Done():
			case <-hang:
			}
		}
	}))
	to := &tokenEndpointTo{base: http.DefaultTransport}
	to.target.Store(strings.TrimPrefix(base, "http://"))
	hc := &http.Client{Transport: to}
	m, log, clk := exchangeManager(t, upstreamoauth.Upstream{Name: "crm", URL: res.URL, Credentials: upstreamoauth.PerActor,
		ClientID: oidctest.ExchangeClient, ClientSecret: oidctest.ExchangeClientSecret, TokenExchange: true}, hc, 2*time.Second)
	front := exchangeFront(t, issuer, m, "crm")
	aliceIn := oidctest.AccessToken(t, issuer, "alice", front)
	for _, tc := range []struct{ mode, want string }{
		{"refused", "invalid_grant (subject token revoked)"},
		{"garbage", "not the expected object"},
		{"empty", "answered no access_token"},
		{"echo", "answered the incoming token itself"},
		{"hang", "did not answer within 2s"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			modes <- tc.mode
			out := asActor(t, front, aliceIn)
			if out["token"] != "" || out["notConnected"] != "yes" || !strings.Contains(out["err"], "token exchange, which failed") || !strings.Contains(out["err"], tc.want) {
				t.Fatalf("answered %+v, want an error with %q", out, tc.want)
			}
			if strings.Contains(out["err"], aliceIn) || strings.Contains(log.String(), aliceIn) {
				t.Fatal("the error or log holds the incoming token")
			}
		})
	}
	// A token endpoint nobody listens on.
	down, _ := listen(t)
	to.target.Store(down.Addr().String())
	_ = down.Close()
	out := asActor(t, front, aliceIn)
	if out["token"] != "" || out["notConnected"] != "yes" || !strings.Contains(out["err"], "token exchange, which failed: POST") {
		t.Fatalf("a server that is down: %+v", out)
	}
	if _, ok, _ := m.CatalogActor(context.Background(), "crm"); ok {
		t.Fatal("a failed exchange was cached")
	}

	// A failed exchange of a token about to expire keeps the current one
	// until it expires.
	to.target.Store(strings.TrimPrefix(base, "http://"))
	modes <- "ok"
	if out := asActor(t, front, aliceIn); out["token"] != "exchanged-by-the-test" {
		t.Fatalf("the exchange: %+v", out)
	}
	clk.advance(time.Hour - 30*time.Second)
	modes <- "refused"
	if out := asActor(t, front, aliceIn); out["token"] != "exchanged-by-the-test" {
		t.Fatalf("a failed exchange before expiry: %+v", out)
	}
	clk.advance(time.Minute)
	modes <- "refused"
	if out := asActor(t, front, aliceIn); out["token"] != "" || !strings.Contains(out["err"], "invalid_grant") {
		t.Fatalf("a failed exchange after expiry: %+v", out)
	}

	// An upstream whose authorization server is not the endpoint's issuer
	// never receives the incoming token.
	other := startAS(t)
	otherRes := startResource(t, other)
	m2, _, _ := exchangeManager(t, upstreamoauth.Upstream{Name: "elsewhere", URL: otherRes.URL, Credentials: upstreamoauth.PerActor,
		ClientID: oidctest.ExchangeClient, ClientSecret: oidctest.ExchangeClientSecret, TokenExchange: true}, nil, 0)
	front2 := exchangeFront(t, issuer, m2, "elsewhere")
	out = asActor(t, front2, oidctest.AccessToken(t, issuer, "alice", front2))
	if out["token"] != "" || !strings.Contains(out["err"], "not "+issuer+" that issued your token") {
		t.Fatalf("another issuer: %+v", out)
	}
}
