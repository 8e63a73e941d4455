package upstreamoauth_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/auth/upstreamoauth"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/credentials"
	"github.com/toolgate/toolgate/internal/pgtest"
)

func crm(r *resource) upstreamoauth.Upstream {
	return upstreamoauth.Upstream{Name: "crm", URL: r.URL, Credentials: upstreamoauth.PerActor, Scopes: []string{"crm.read"}}
}

// UI-1, UI-2, UI-3: alice and bob each connect through the provider's
// login form (discovery from the upstream's 401, registration, PKCE,
// resource); each token reaches the upstream as its own person, bob never
// gets alice's, carol gets a connect URL, and the store file holds no
// token in clear.
func TestEachActorActsAsThemselves(t *testing.T) {
	iss := startAS(t)
	res := startResource(t, iss)
	g := startGateway(t, []upstreamoauth.Upstream{crm(res)}, gatewayOptions{})
	ctx := context.Background()

	connect(t, g, "crm", "alice", "alice")
	connect(t, g, "crm", "bob", "bob")

	tokens := map[string]string{}
	for _, actor := range []string{"alice", "bob"} {
		tok, id, err := g.M.Token(ctx, "crm", actor)
		if err != nil {
			t.Fatalf("Token(%s): %v", actor, err)
		}
		if who, code := res.whoAmI(t, tok); code != http.StatusOK || who != actor {
			t.Fatalf("%s's token reached the upstream as %q (HTTP %d)", actor, who, code)
		}
		c, err := g.Store.ConnectionByID(ctx, id)
		if err != nil || c.ActorID != actor || c.Upstream != "crm" {
			t.Fatalf("connection %s = %+v, %v", id, c, err)
		}
		tokens[actor] = tok
	}
	if tokens["alice"] == tokens["bob"] {
		t.Fatal("alice and bob got the same token")
	}

	var nc *upstreamoauth.NeedsConnect
	_, _, err := g.M.Token(ctx, "crm", "carol")
	if !errors.As(err, &nc) || !strings.HasPrefix(nc.URL, g.URL+upstreamoauth.Path+"/connect?t=") || nc.Reason != "not connected yet" {
		t.Fatalf("carol's Token = %v, want a connect URL", err)
	}

	db, err := os.ReadFile(g.Path)
	if err != nil {
		t.Fatal(err)
	}
	for actor, tok := range tokens {
		if strings.Contains(string(db), tok) || strings.Contains(string(db), tok[len(tok)-20:]) {
			t.Errorf("the store file holds %s's access token in clear", actor)
		}
	}
	assertNoLeak(t, g, tokens["alice"], tokens["bob"])
}

// UI-1, UI-3: past its expiry the token is refreshed with the refresh
// token, which is replaced; a refresh token the server refuses breaks the
// connection, and the next call gets a new connect URL with the reason.
func TestRefreshAndBrokenConnection(t *testing.T) {
	iss := startAS(t)
	res := startResource(t, iss)
	g := startGateway(t, []upstreamoauth.Upstream{crm(res)}, gatewayOptions{})
	ctx := context.Background()
	connect(t, g, "crm", "alice", "alice")

	first, id, err := g.M.Token(ctx, "crm", "alice")
	if err != nil {
		t.Fatal(err)
	}
	before, _ := g.Store.ConnectionByID(ctx, id)
	if again, _, _ := g.M.Token(ctx, "crm", "alice"); again != first {
		t.Fatal("a fresh token was refreshed")
	}
	g.clock.advance(2 * time.Hour) // past the provider's one-hour tokens
	second, _, err := g.M.Token(ctx, "crm", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if second == first {
		t.Fatal("an expired token was not refreshed")
	}
	if who, code := res.whoAmI(t, second); who != "alice" || code != http.StatusOK {
		t.Fatalf("the refreshed token reached the upstream as %q (HTTP %d)", who, code)
	}
	after, _ := g.Store.ConnectionByID(ctx, id)
	if after.Version <= before.Version || !after.Expiry.After(before.Expiry) {
		t.Fatalf("the refresh was not stored: version %d→%d, expiry %v→%v", before.Version, after.Version, before.Expiry, after.Expiry)
	}

	// The refresh token is used once: a gateway still holding the old
	// sealed record (a replica restored from a copy) is refused by the
	// server and breaks the connection.
	if ok, err := g.Store.UpdateConnection(ctx, before, after.Version); !ok || err != nil {
		t.Fatalf("restoring the old record: %v %v", ok, err)
	}
	g.clock.advance(2 * time.Hour)
	_, _, err = g.M.Token(ctx, "crm", "alice")
	var nc *upstreamoauth.NeedsConnect
	if !errors.As(err, &nc) || !strings.Contains(nc.Reason, "invalid_grant") || nc.URL == "" {
		t.Fatalf("Token with a spent refresh token = %v, want a connect URL with invalid_grant", err)
	}
	c, _ := g.Store.ConnectionByID(ctx, id)
	if c.Broken == "" {
		t.Fatal("the connection is not marked broken")
	}
	if _, _, err := g.M.Token(ctx, "crm", "alice"); !errors.As(err, &nc) || !strings.Contains(nc.Reason, "invalid_grant") {
		t.Fatalf("the next call = %v, want the reason again", err)
	}
	// Connecting again replaces the broken connection.
	connect(t, g, "crm", "alice", "alice")
	tok, _, err := g.M.Token(ctx, "crm", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if who, _ := res.whoAmI(t, tok); who != "alice" {
		t.Fatalf("after reconnecting the upstream saw %q", who)
	}
	// The upstream refusing a fresh token (HTTP 401) has it refreshed at
	// once.
	_, id, _ = g.M.Token(ctx, "crm", "alice")
	if err := g.M.Refused(ctx, "crm", "alice", id); err != nil {
		t.Fatalf("Refused: %v", err)
	}
	forced, _, err := g.M.Token(ctx, "crm", "alice")
	if err != nil || forced == tok {
		t.Fatalf("after Refused: %v (same token: %v)", err, forced == tok)
	}
	if who, _ := res.whoAmI(t, forced); who != "alice" {
		t.Fatalf("the token refreshed after a 401 reached the upstream as %q", who)
	}
	if err := g.M.Refused(ctx, "crm", "alice", "conn_gone"); !errors.As(err, &nc) {
		t.Fatalf("Refused for a revoked connection: %v", err)
	}
	assertNoLeak(t, g, first, second, tok, forced)
}

// UI-3: a revoked connection (operator) or a disconnected one (the actor,
// through the disconnect route) is gone, and the next call prompts a
// reconnect.
func TestRevokeAndDisconnect(t *testing.T) {
	iss := startAS(t)
	res := startResource(t, iss)
	g := startGateway(t, []upstreamoauth.Upstream{crm(res)}, gatewayOptions{})
	ctx := context.Background()
	connect(t, g, "crm", "alice", "alice")
	connect(t, g, "crm", "bob", "bob")

	_, id, err := g.M.Token(ctx, "crm", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := g.M.Revoke(ctx, id, "revoked"); err != nil || c.ActorID != "alice" || c.Sealed != nil {
		t.Fatalf("Revoke = %+v, %v", c, err)
	}
	var nc *upstreamoauth.NeedsConnect
	if _, _, err := g.M.Token(ctx, "crm", "alice"); !errors.As(err, &nc) {
		t.Fatalf("after revoke: %v, want a connect URL", err)
	}
	if _, err := g.M.Revoke(ctx, id, "revoked"); !errors.Is(err, core.ErrNoConnection) {
		t.Fatalf("second Revoke: %v", err)
	}

	req, _ := http.NewRequest(http.MethodPost, g.URL+upstreamoauth.Path+"/disconnect?upstream=crm", nil)
	req.Header.Set("X-Test-Actor", "bob")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("disconnect answered %d", resp.StatusCode)
	}
	if _, _, err := g.M.Token(ctx, "crm", "bob"); !errors.As(err, &nc) {
		t.Fatalf("after disconnect: %v, want a connect URL", err)
	}
	req, _ = http.NewRequest(http.MethodPost, g.URL+upstreamoauth.Path+"/disconnect?upstream=crm", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("disconnect without an actor answered %d", resp.StatusCode)
	}
	if list, _ := g.M.Connections(ctx); len(list) != 0 {
		t.Fatalf("connections left: %+v", list)
	}
}

// UI-1, UI-2: each kind of bad input to the connect and callback routes is
// refused with a page naming it; nothing is stored and the gateway keeps
// serving.
func TestBadInputRefused(t *testing.T) {
	iss := startAS(t)
	res := startResource(t, iss)
	g := startGateway(t, []upstreamoauth.Upstream{crm(res)}, gatewayOptions{})
	other := startGateway(t, []upstreamoauth.Upstream{crm(res)}, gatewayOptions{key: []byte(strings.Repeat("o", 32))})

	refused := func(t *testing.T, code int, page string, wantCode int, want string) {
		t.Helper()
		if code != wantCode || !strings.Contains(page, want) {
			t.Fatalf("answered %d %q, want %d with %q", code, page, wantCode, want)
		}
		if list, _ := g.M.Connections(context.Background()); len(list) != 0 {
			t.Fatalf("stored after a refusal: %+v", list)
		}
		if code, _ := open(t, http.DefaultClient, g.URL+upstreamoauth.Path+"/client.json"); code != http.StatusOK {
			t.Fatalf("the gateway stopped serving: %d", code)
		}
	}
	html := func(err error) string { return strings.ReplaceAll(err.Error(), "'", "&#39;") }

	t.Run("foreign connect URL", func(t *testing.T) {
		u := strings.Replace(other.M.ConnectURL("crm", "alice"), other.URL, g.URL, 1)
		code, page := open(t, browser(t), u)
		refused(t, code, page, http.StatusBadRequest, html(upstreamoauth.ErrConnectLink))
	})
	t.Run("connect URL moved to another actor", func(t *testing.T) {
		u := g.M.ConnectURL("crm", "alice")
		body, sig, _ := strings.Cut(strings.SplitN(u, "t=", 2)[1], ".")
		p, _ := base64.RawURLEncoding.DecodeString(body)
		forged := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(p), `"a":"alice"`, `"a":"bob"`, 1)))
		code, page := open(t, browser(t), strings.Replace(u, body+"."+sig, forged+"."+sig, 1))
		refused(t, code, page, http.StatusBadRequest, html(upstreamoauth.ErrConnectLink))
	})
	t.Run("expired connect URL", func(t *testing.T) {
		u := g.M.ConnectURL("crm", "alice")
		g.clock.advance(11 * time.Minute)
		defer g.clock.advance(-11 * time.Minute)
		code, page := open(t, browser(t), u)
		refused(t, code, page, http.StatusBadRequest, html(upstreamoauth.ErrConnectExpired))
	})
	t.Run("used connect URL", func(t *testing.T) {
		u := g.M.ConnectURL("crm", "alice")
		_ = signIn(t, browser(t), u, "alice")
		code, page := open(t, browser(t), u)
		refused(t, code, page, http.StatusBadRequest, html(upstreamoauth.ErrConnectUsed))
	})
	t.Run("altered state", func(t *testing.T) {
		b := browser(t)
		cb := signIn(t, b, g.M.ConnectURL("crm", "alice"), "alice")
		code, page := open(t, b, strings.Replace(cb, "state=", "state=x", 1))
		refused(t, code, page, http.StatusBadRequest, "the state is not one this gateway issued")
	})
	t.Run("callback for another actor", func(t *testing.T) {
		alice, bob := browser(t), browser(t)
		cb := signIn(t, alice, g.M.ConnectURL("crm", "alice"), "alice")
		_ = signIn(t, bob, g.M.ConnectURL("crm", "bob"), "bob") // bob has a flow cookie of his own
		code, page := open(t, bob, cb)
		refused(t, code, page, http.StatusBadRequest, html(upstreamoauth.ErrOtherBrowser))
	})
	t.Run("mismatched iss", func(t *testing.T) {
		b := browser(t)
		cb := signIn(t, b, g.M.ConnectURL("crm", "alice"), "alice")
		code, page := open(t, b, strings.Replace(cb, "iss=", "iss=https%3A%2F%2Fevil.example.com&was=", 1))
		refused(t, code, page, http.StatusBadRequest, html(upstreamoauth.ErrIssuerMismatch))
	})
	t.Run("missing iss", func(t *testing.T) {
		b := browser(t)
		cb := signIn(t, b, g.M.ConnectURL("crm", "alice"), "alice")
		code, page := open(t, b, strings.Replace(cb, "iss=", "was=", 1))
		refused(t, code, page, http.StatusBadRequest, html(upstreamoauth.ErrIssuerMissing))
	})
	t.Run("reused state and replayed code", func(t *testing.T) {
		b := browser(t)
		cb := signIn(t, b, g.M.ConnectURL("crm", "alice"), "alice")
		code, page := open(t, b, strings.Replace(cb, "iss=", "iss=https%3A%2F%2Fevil.example.com&was=", 1))
		refused(t, code, page, http.StatusBadRequest, html(upstreamoauth.ErrIssuerMismatch))
		// The state was spent by the refused callback.
		code, page = open(t, b, cb)
		refused(t, code, page, http.StatusBadRequest, html(upstreamoauth.ErrStateUsed))
		// The code, carried into a flow of the attacker's own, is refused
		// by the provider (bound to another verifier, or spent).
		mallory := browser(t)
		own := signIn(t, mallory, g.M.ConnectURL("crm", "mallory"), "mallory")
		stolen, _ := urlParam(cb, "code")
		mine, _ := urlParam(own, "code")
		code, page = open(t, mallory, strings.Replace(own, "code="+mine, "code="+stolen, 1))
		refused(t, code, page, http.StatusBadRequest, "invalid_grant")
	})
	t.Run("error from the provider", func(t *testing.T) {
		b := browser(t)
		cb := signIn(t, b, g.M.ConnectURL("crm", "alice"), "alice")
		mine, _ := urlParam(cb, "code")
		code, page := open(t, b, strings.Replace(cb, "code="+mine, "error=access_denied&error_description=no%0Athanks", 1))
		refused(t, code, page, http.StatusBadGateway, "the authorization server refused: access_denied: no thanks")
	})
	assertNoLeak(t, g)
}

func urlParam(u, name string) (string, bool) {
	_, q, _ := strings.Cut(u, "?")
	for _, kv := range strings.Split(q, "&") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// UI-1: an upstream whose authorization server answers garbage, or hangs,
// fails the connect with a message naming it; nothing is stored, the
// gateway keeps serving.
func TestBadAuthorizationServer(t *testing.T) {
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	ln, base := listen(t)
	mux := http.NewServeMux()
	challenge := func(w http.ResponseWriter, md string) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+md+`"`)
		w.WriteHeader(http.StatusUnauthorized)
	}
	prm := func(path, as string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"resource":"` + base + strings.TrimPrefix(path, "/prm") + `","authorization_servers":["` + base + as + `"]}`))
		})
	}
	mux.HandleFunc("/garbage", func(w http.ResponseWriter, r *http.Request) { challenge(w, base+"/prm/garbage") })
	prm("/prm/garbage", "/as-garbage")
	mux.HandleFunc("/.well-known/openid-configuration/as-garbage", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"issuer": [1, 2`))
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) { challenge(w, base+"/prm/hang") })
	prm("/prm/hang", "/as-hang")
	mux.HandleFunc("/.well-known/oauth-authorization-server/as-hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	})
	mux.HandleFunc("/mixup", func(w http.ResponseWriter, r *http.Request) { challenge(w, base+"/prm/mixup") })
	prm("/prm/mixup", "/as-mixup")
	mux.HandleFunc("/.well-known/oauth-authorization-server/as-mixup", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"issuer":"https://evil.example.com","authorization_endpoint":"https://evil.example.com/a","token_endpoint":"https://evil.example.com/t","code_challenge_methods_supported":["S256"]}`))
	})
	mux.HandleFunc("/wrong-resource", func(w http.ResponseWriter, r *http.Request) { challenge(w, base+"/prm/elsewhere") })
	prm("/prm/elsewhere", "/as-garbage")
	serve(t, ln, mux)

	ups := []upstreamoauth.Upstream{}
	for _, n := range []string{"garbage", "hang", "mixup", "wrong-resource"} {
		ups = append(ups, upstreamoauth.Upstream{Name: n, URL: base + "/" + n, Credentials: upstreamoauth.PerActor})
	}
	g := startGateway(t, ups, gatewayOptions{timeout: 2 * time.Second})
	for _, tc := range []struct{ name, want string }{
		{"garbage", "answered JSON that is not the expected object"},
		{"hang", "authorization server metadata of " + base + "/as-hang"},
		{"mixup", `names issuer &#34;https://evil.example.com&#34;`},
		{"wrong-resource", "not the upstream&#39;s URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, page := connectThrough(t, browser(t), g.M.ConnectURL(tc.name, "alice"))
			if code != http.StatusBadGateway || !strings.Contains(page, tc.want) || !strings.Contains(page, "discovering the upstream") {
				t.Fatalf("answered %d %q, want 502 with %q", code, page, tc.want)
			}
			if list, _ := g.M.Connections(context.Background()); len(list) != 0 {
				t.Fatalf("stored: %+v", list)
			}
			if code, _ := open(t, http.DefaultClient, g.URL+upstreamoauth.Path+"/client.json"); code != http.StatusOK {
				t.Fatalf("the gateway stopped serving: %d", code)
			}
		})
	}
}

// assertNoLeak fails if a token or the credentials key shows in the
// gateway's log or events (UI-3).
func assertNoLeak(t *testing.T, g *gateway, tokens ...string) {
	t.Helper()
	secrets := append([]string{string(testKey), base64.StdEncoding.EncodeToString(testKey)}, tokens...)
	for where, text := range map[string]string{"log": g.Log.String(), "events": g.eventText()} {
		for _, s := range secrets {
			if s != "" && strings.Contains(text, s) {
				t.Errorf("the %s holds a secret", where)
			}
		}
	}
}

// UI-3: replicas on one PostgreSQL store share connections: alice connects
// through one and the other calls as her; a refresh on one is the token the
// other uses next.
func TestReplicasShareConnections(t *testing.T) {
	ctx := context.Background()
	iss := startAS(t)
	res := startResource(t, iss)
	dsn := pgtest.Shared(t).NewDatabase(t)
	a := startGateway(t, []upstreamoauth.Upstream{crm(res)}, gatewayOptions{pg: dsn})
	b := startGateway(t, []upstreamoauth.Upstream{crm(res)}, gatewayOptions{pg: dsn})
	connect(t, a, "crm", "alice", "alice")

	tok, _, err := b.M.Token(ctx, "crm", "alice")
	if err != nil {
		t.Fatalf("the other replica: %v", err)
	}
	if who, _ := res.whoAmI(t, tok); who != "alice" {
		t.Fatalf("the other replica's token reached the upstream as %q", who)
	}
	b.clock.advance(2 * time.Hour)
	refreshed, _, err := b.M.Token(ctx, "crm", "alice")
	if err != nil || refreshed == tok {
		t.Fatalf("refresh on the other replica: %v (same token: %v)", err, refreshed == tok)
	}
	a.clock.advance(2 * time.Hour)
	if got, _, err := a.M.Token(ctx, "crm", "alice"); err != nil || got != refreshed {
		t.Fatalf("the first replica after the other's refresh: %v (its token: %v)", err, got == refreshed)
	}
	if who, _ := res.whoAmI(t, refreshed); who != "alice" {
		t.Fatalf("the refreshed token reached the upstream as %q", who)
	}
}

// UI-3: rotating the credentials key: a gateway with the new key and the
// old as previous opens the old records and re-seals them on use; then the
// new key alone opens them; a gateway with neither key refuses clearly,
// never quoting a key or a token.
func TestKeyRotation(t *testing.T) {
	ctx := context.Background()
	iss := startAS(t)
	res := startResource(t, iss)
	oldKey, newKey := bytes.Repeat([]byte("1"), 32), bytes.Repeat([]byte("2"), 32)
	first := startGateway(t, []upstreamoauth.Upstream{crm(res)}, gatewayOptions{key: oldKey})
	connect(t, first, "crm", "alice", "alice")
	_, id, err := first.M.Token(ctx, "crm", "alice")
	if err != nil {
		t.Fatal(err)
	}

	rotating := startGateway(t, []upstreamoauth.Upstream{crm(res)}, gatewayOptions{key: newKey, previous: oldKey, store: first.Path})
	tok, _, err := rotating.M.Token(ctx, "crm", "alice")
	if err != nil {
		t.Fatalf("with the old key as previous: %v", err)
	}
	if who, _ := res.whoAmI(t, tok); who != "alice" {
		t.Fatalf("upstream saw %q", who)
	}
	c, _ := rotating.Store.ConnectionByID(ctx, id)
	if c.KeyID != credentials.KeyID(newKey) {
		t.Fatal("the record was not re-sealed with the new key on use")
	}
	after := startGateway(t, []upstreamoauth.Upstream{crm(res)}, gatewayOptions{key: newKey, store: first.Path})
	if got, _, err := after.M.Token(ctx, "crm", "alice"); err != nil || got != tok {
		t.Fatalf("with the new key alone: %v", err)
	}
	wrong := startGateway(t, []upstreamoauth.Upstream{crm(res)}, gatewayOptions{key: bytes.Repeat([]byte("3"), 32), store: first.Path})
	_, _, err = wrong.M.Token(ctx, "crm", "alice")
	if !errors.Is(err, credentials.ErrUnsealable) || strings.Contains(err.Error(), tok) || strings.Contains(err.Error(), string(newKey)) {
		t.Fatalf("with another key: %v", err)
	}
}
