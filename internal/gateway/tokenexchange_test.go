package gateway_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/lab/peers"
	"github.com/toolgate/toolgate/internal/oidctest"
)

const carolAPIKey = "carol-key-0123456789abcdef0123456789"

// bearerRecorder is a loopback reverse proxy in front of an upstream that
// keeps every bearer token sent through it.
type bearerRecorder struct {
	mu      sync.Mutex
	tokens  []string
	headers []string // every header line of every request
}

func (b *bearerRecorder) headerText() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.headers, "\n")
}

func (b *bearerRecorder) seen() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.tokens)
}

func recordBearers(t *testing.T, target string) (*bearerRecorder, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rec := &bearerRecorder{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			rec.tokens = append(rec.tokens, tok)
		}
		for k, vs := range r.Header {
			for _, v := range vs {
				rec.headers = append(rec.headers, k+": "+v)
			}
		}
		rec.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return rec, srv.URL
}

func jwtClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// UI-2: the endpoint takes the provider's JWTs (and carol's API key); crm
// trusts the same provider and has tokenExchange. alice and bob each reach
// it as themselves with no browser step, each with their own exchanged
// token, whose audience is the upstream; their incoming tokens never go
// upstream. carol, by API key, has nothing to exchange and gets a clear
// isError; an exchange the provider refuses (crmbad's client secret is
// wrong) is a clear isError with nothing sent upstream, and the gateway
// goes on serving. No token is in any answer or log line.
func TestTokenExchangeActsAsEachPerson(t *testing.T) {
	ctx := testCtx(t)
	issuer := oidctest.Start(t, oidctest.RedirectEnv)
	up := upstreamGateway(t, issuer)
	rec, proxied := recordBearers(t, "http://"+up.Addr())
	upURL := proxied + "/mcp"
	port := peers.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	log := &transcript{}
	cfg := loadConfig(t, fmt.Sprintf(`gateway:
  listen: 127.0.0.1:%d
  publicUrl: %s
  credentialsKey: %s
  store: %q
  review: {mode: "off"}
  confirm:
    secret: ${SECRET}
endpoints:
  - path: /mcp
    auth:
      anyOf:
        - oauth:
            issuer: %s
        - apiKeys:
            - key: %s
              actor: {id: carol}
upstreams:
  - name: crm
    url: %s
    transport: http
    timeout: 20s
    defaultKind: read
    oauth:
      credentials: perActor
      clientId: %s
      clientSecret: %s
      tokenExchange: true
  - name: crmbad
    url: %s
    transport: http
    timeout: 20s
    defaultKind: read
    oauth:
      credentials: perActor
      clientId: %s
      clientSecret: not-the-secret-of-this-client
      tokenExchange: true
`, port, base, credentialsKey, t.TempDir()+"/front.db", issuer, carolAPIKey, upURL,
		oidctest.ExchangeClient, oidctest.ExchangeClientSecret, upURL, oidctest.ExchangeClient))
	front := newGateway(t, cfg, &gateway.Options{Logger: slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err := front.Start(ctx); err != nil {
		t.Fatal(err)
	}
	const tool, upTool = "crm_notes_list_notes", "notes_list_notes"
	aliceTok := oidctest.AccessToken(t, issuer, "alice", base+"/mcp")
	bobTok := oidctest.AccessToken(t, issuer, "bob", base+"/mcp")

	alice := connect(t, ctx, base+"/mcp", aliceTok)
	waitServed(t, ctx, alice, []string{"crm_connect", "crmbad_connect"}, nil)
	res := call(t, ctx, alice, "crm_connect", nil)
	if res.IsError {
		t.Fatalf("crm_connect: %q", resultText(res))
	}
	waitServed(t, ctx, alice, []string{tool}, []string{"crm_connect"})
	if res = call(t, ctx, alice, tool, nil); res.IsError {
		t.Fatalf("alice's call: %q", resultText(res))
	}
	bob := connect(t, ctx, base+"/mcp", bobTok)
	waitServed(t, ctx, bob, []string{tool}, nil)
	if res = call(t, ctx, bob, tool, nil); res.IsError {
		t.Fatalf("bob's call: %q", resultText(res))
	}
	if got := auditActors(t, up, upTool); strings.Join(got, ",") != "alice,bob" {
		t.Fatalf("the upstream audited %q, want alice, bob", got)
	}

	carol := connect(t, ctx, base+"/mcp", carolAPIKey)
	waitServed(t, ctx, carol, []string{tool}, nil)
	res = call(t, ctx, carol, tool, nil)
	if !res.IsError || !strings.Contains(resultText(res), "an API key cannot be exchanged") {
		t.Fatalf("carol's call: %v %q", res.IsError, resultText(res))
	}
	sentBefore := len(rec.seen())
	res = call(t, ctx, alice, "crmbad_connect", nil)
	if !res.IsError || !strings.Contains(resultText(res), "token exchange, which failed") || !strings.Contains(resultText(res), "invalid_client") {
		t.Fatalf("the refused exchange: %v %q", res.IsError, resultText(res))
	}
	if n := len(rec.seen()); n != sentBefore {
		t.Fatalf("a refused exchange sent %d requests upstream", n-sentBefore)
	}
	if res = call(t, ctx, alice, tool, nil); res.IsError {
		t.Fatalf("alice's call after the refused exchange: %q", resultText(res))
	}
	if got := auditActors(t, up, upTool); strings.Join(got, ",") != "alice,bob,alice" {
		t.Fatalf("the upstream audited %q, want alice, bob, alice", got)
	}

	// What went upstream: only exchanged tokens, for alice and bob, each
	// with the upstream as audience; never an incoming token.
	if h := rec.headerText(); strings.Contains(h, aliceTok) || strings.Contains(h, bobTok) {
		t.Fatal("an incoming token went upstream in a header")
	}
	subs := map[string]string{}
	for _, tok := range rec.seen() {
		if tok == aliceTok || tok == bobTok {
			t.Fatal("an incoming token went upstream")
		}
		c := jwtClaims(t, tok)
		if aud := fmt.Sprint(c["aud"]); aud != upURL {
			t.Fatalf("a token went upstream with audience %q, want %q", aud, upURL)
		}
		sub := fmt.Sprint(c["sub"])
		if prev, ok := subs[sub]; ok && prev != tok {
			t.Fatalf("%s's exchanged token was not reused while fresh", sub)
		}
		subs[sub] = tok
	}
	if len(subs) != 2 || subs["alice"] == "" || subs["bob"] == "" || subs["alice"] == subs["bob"] {
		t.Fatalf("the upstream saw tokens of %v, want one each for alice and bob", slices.Collect(maps.Keys(subs)))
	}
	// The gateway's audit names the exchange each call went with.
	recs, err := front.Store().Audit(ctx, core.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Tool == tool && (r.ActorID == "alice" || r.ActorID == "bob") && !strings.HasPrefix(r.Connection, "xchg_") {
			t.Fatalf("%s's call was audited with connection %q", r.ActorID, r.Connection)
		}
	}
	for _, tok := range []string{aliceTok, bobTok, subs["alice"], subs["bob"], oidctest.ExchangeClientSecret} {
		if strings.Contains(log.String(), tok) {
			t.Fatal("the gateway's log holds a token or the client secret")
		}
	}
	if code, _ := readyz(t, "http://"+front.Addr()); code != http.StatusOK {
		t.Fatalf("/readyz: %d", code)
	}

}
