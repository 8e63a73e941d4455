package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/admin"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/lab/peers"
	"github.com/toolgate/toolgate/internal/oidctest"
)

const (
	aliceOAuthKey  = "alice-key-0123456789abcdef0123456789"
	bobOAuthKey    = "bob-key-0123456789abcdef0123456789ab"
	credentialsKey = "Y3JlZGVudGlhbHMta2V5LTAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes
)

var connectURLRE = regexp.MustCompile(`https?://[^\s]+/upstream-oauth/connect\?t=[A-Za-z0-9_.-]+`)

// upstreamGateway is a second toolgate whose endpoint takes the provider's
// JWTs with its own URL as their audience, importing the notes demo: an
// upstream that checks who calls, and audits it.
func upstreamGateway(t *testing.T, issuer string) *gateway.Gateway {
	t.Helper()
	cfg := loadConfig(t, fmt.Sprintf(`gateway:
  listen: 127.0.0.1:0
  store: %q
  review: {mode: "off"}
  confirm:
    secret: ${SECRET}
endpoints:
  - path: /mcp
    auth:
      oauth:
        issuer: %s
        scopesSupported: [crm.read, crm.write]
upstreams:
%s`, t.TempDir()+"/up.db", issuer, upstreamYAML("notes", serveDemo(t, "notes"), true)))
	up := newGateway(t, cfg, nil)
	if err := up.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return up
}

// frontGateway is the gateway under test: alice and bob by API key, and
// the upstream gateway as the perActor OAuth upstream crm.
func frontGateway(t *testing.T, upstreamURL string, log *transcript) (*gateway.Gateway, string) {
	t.Helper()
	port := peers.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg := loadConfig(t, frontYAML(port, t.TempDir()+"/front.db", upstreamURL, "", aliceOAuthKey, bobOAuthKey))
	g := newGateway(t, cfg, &gateway.Options{Logger: slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err := g.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return g, base
}

// frontYAML is frontGateway's config: keys are alice's and bob's API keys,
// "" for one that is not accepted; oauthExtra adds lines to crm's oauth
// block.
func frontYAML(port int, store, upstreamURL, oauthExtra, aliceKey, bobKey string) string {
	keys := ""
	for _, k := range []struct{ key, actor string }{{aliceKey, "alice"}, {bobKey, "bob"}} {
		if k.key != "" {
			keys += fmt.Sprintf("        - key: %s\n          actor: {id: %s}\n", k.key, k.actor)
		}
	}
	return withAdmin(fmt.Sprintf(`gateway:
  listen: 127.0.0.1:%d
  publicUrl: http://127.0.0.1:%d
  credentialsKey: %s
  store: %q
  review: {mode: "off"}
  confirm:
    secret: ${SECRET}
endpoints:
  - path: /mcp
    auth:
      apiKeys:
%supstreams:
  - name: crm
    url: %s
    transport: http
    timeout: 20s
    defaultKind: read
    oauth:
      credentials: perActor
%s`, port, port, credentialsKey, store, keys, upstreamURL, oauthExtra))
}

// connectAs follows the connect URL an isError result names, signing in
// at the provider as user.
func connectAs(t *testing.T, text, user string) {
	t.Helper()
	u := connectURLRE.FindString(text)
	if u == "" {
		t.Fatalf("no connect URL in %q", text)
	}
	b := oidctest.Browser(t)
	cb := oidctest.SignIn(t, b, u, user)
	if code, page := oidctest.Open(t, b, cb); code != http.StatusOK || !strings.Contains(page, "Connected") {
		t.Fatalf("callback answered %d: %s", code, page)
	}
}

// auditActors lists the actors of the upstream gateway's audit records of
// a tool, oldest first.
func auditActors(t *testing.T, g *gateway.Gateway, tool string) []string {
	t.Helper()
	recs, err := g.Store().Audit(context.Background(), core.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		if r.Tool == tool {
			out = append(out, r.ActorID)
		}
	}
	return out
}

// UI-1, UI-2, UI-3: two people use one perActor upstream through one
// gateway. Until an account is connected the upstream lists crm_connect,
// whose call answers a connect URL; after alice connects, the real tools
// replace it (list_changed) and her calls reach the upstream — a second
// toolgate checking the provider's JWTs — as alice. bob's call does not
// ride alice's token: he gets his own connect URL, and after connecting
// reaches the upstream as bob. A revoked connection prompts a reconnect.
func TestPerActorUpstreamActsAsEachPerson(t *testing.T) {
	ctx := testCtx(t)
	issuer := oidctest.Start(t)
	up := upstreamGateway(t, issuer)
	log := &transcript{}
	front, base := frontGateway(t, "http://"+up.Addr()+"/mcp", log)
	const tool, upTool = "crm_notes_list_notes", "notes_list_notes"

	alice := connect(t, ctx, base+"/mcp", aliceOAuthKey)
	waitServed(t, ctx, alice, []string{"crm_connect"}, nil)
	res := call(t, ctx, alice, "crm_connect", nil)
	if !res.IsError || !strings.Contains(resultText(res), "needs your account connected (not connected yet)") {
		t.Fatalf("crm_connect answered %v %q", res.IsError, resultText(res))
	}
	connectAs(t, resultText(res), "alice")
	res = call(t, ctx, alice, "crm_connect", nil)
	if res.IsError {
		t.Fatalf("crm_connect after connecting: %q", resultText(res))
	}
	waitServed(t, ctx, alice, []string{tool}, []string{"crm_connect"})
	res = call(t, ctx, alice, tool, nil)
	if res.IsError {
		t.Fatalf("alice's call: %q", resultText(res))
	}
	if got := auditActors(t, up, upTool); len(got) != 1 || got[0] != "alice" {
		t.Fatalf("the upstream audited %q, want alice", got)
	}

	bob := connect(t, ctx, base+"/mcp", bobOAuthKey)
	waitServed(t, ctx, bob, []string{tool}, nil)
	res = call(t, ctx, bob, tool, nil)
	if !res.IsError || !strings.Contains(resultText(res), "needs your account connected") {
		t.Fatalf("bob's call before connecting: %v %q", res.IsError, resultText(res))
	}
	if got := auditActors(t, up, upTool); len(got) != 1 {
		t.Fatalf("bob's call reached the upstream: %q", got)
	}
	connectAs(t, resultText(res), "bob")
	if res = call(t, ctx, bob, tool, nil); res.IsError {
		t.Fatalf("bob's call: %q", resultText(res))
	}
	if res = call(t, ctx, alice, tool, nil); res.IsError {
		t.Fatalf("alice's second call: %q", resultText(res))
	}
	if got := auditActors(t, up, upTool); strings.Join(got, ",") != "alice,bob,alice" {
		t.Fatalf("the upstream audited %q, want alice, bob, alice", got)
	}

	// The operator lists and revokes through the admin API; the list
	// carries no token.
	m := front.UpstreamOAuth()
	var tokens []string
	for _, actor := range []string{"alice", "bob"} {
		tok, _, err := m.Token(ctx, "crm", actor)
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, tok)
	}
	op, err := admin.NewClient("http://"+front.AdminAddr(), adminAliceKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	conns, err := op.Connections(ctx)
	if err != nil || len(conns) != 2 || conns[0].ActorID != "alice" || conns[1].ActorID != "bob" || conns[0].Sealed != nil {
		t.Fatalf("connections: %+v, %v", conns, err)
	}
	if _, err := op.RevokeConnection(ctx, "conn_nope"); err == nil || !strings.Contains(err.Error(), "no such upstream connection") {
		t.Fatalf("revoking an unknown connection: %v", err)
	}
	if c, err := op.RevokeConnection(ctx, conns[0].ID); err != nil || c.ActorID != "alice" {
		t.Fatalf("revoke: %+v, %v", c, err)
	}
	if got := auditActors(t, front, "revoke_connection"); len(got) != 2 || got[1] != "alice" {
		t.Fatalf("the revokes were audited as %q", got)
	}
	res = call(t, ctx, alice, tool, nil)
	if !res.IsError || connectURLRE.FindString(resultText(res)) == "" {
		t.Fatalf("alice's call after revoke: %v %q", res.IsError, resultText(res))
	}
	if res = call(t, ctx, bob, tool, nil); res.IsError {
		t.Fatalf("bob's call after alice's revoke: %q", resultText(res))
	}
	if got := auditActors(t, up, upTool); strings.Join(got, ",") != "alice,bob,alice,bob" {
		t.Fatalf("the upstream audited %q", got)
	}
	if _, _, err := m.Token(ctx, "crm", "alice"); !errors.Is(err, core.ErrNotConnected) {
		t.Fatalf("alice's token after revoke: %v", err)
	}
	// The gateway's own audit names the connection each call went with.
	recs, err := front.Store().Audit(ctx, core.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var used []string
	for _, r := range recs {
		if r.Tool == tool {
			used = append(used, r.ActorID+"="+r.Connection)
		}
	}
	want := []string{"alice=" + conns[0].ID, "bob=", "bob=" + conns[1].ID, "alice=" + conns[0].ID, "alice=", "bob=" + conns[1].ID}
	if strings.Join(used, " ") != strings.Join(want, " ") {
		t.Fatalf("the audit's connections are %q, want %q", used, want)
	}
	for _, tok := range append(tokens, credentialsKey) {
		if strings.Contains(log.String(), tok) {
			t.Fatal("the gateway's log holds a token or the credentials key")
		}
	}
}

// UI-2: a shared upstream is one account for everyone, connected by an
// operator through the link `toolgate connect` prints (the admin API's
// POST /v1/upstreams/NAME/connect): until then it is not connected; after,
// every actor's call reaches the upstream as that account.
func TestSharedUpstreamConnectedByOperator(t *testing.T) {
	ctx := testCtx(t)
	issuer := oidctest.Start(t)
	up := upstreamGateway(t, issuer)
	port := peers.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg := loadConfig(t, withAdmin(fmt.Sprintf(`gateway:
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
      apiKeys:
        - key: %s
          actor: {id: alice}
        - key: %s
          actor: {id: bob}
upstreams:
  - name: crm
    url: %s
    transport: http
    timeout: 20s
    defaultKind: read
    reconnect: {initialDelay: 100ms, maxDelay: 500ms}
    oauth:
      credentials: shared
      scopes: [crm.read]
`, port, base, credentialsKey, t.TempDir()+"/front.db", aliceOAuthKey, bobOAuthKey, "http://"+up.Addr()+"/mcp")))
	front := newGateway(t, cfg, nil)
	if err := front.Start(ctx); err != nil {
		t.Fatal(err)
	}
	const tool, upTool = "crm_notes_list_notes", "notes_list_notes"
	op, err := admin.NewClient("http://"+front.AdminAddr(), adminAliceKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	link, err := op.SharedConnectURL(ctx, "crm")
	if err != nil {
		t.Fatal(err)
	}
	b := oidctest.Browser(t)
	cb := oidctest.SignIn(t, b, link, "service-account")
	if code, page := oidctest.Open(t, b, cb); code != http.StatusOK || !strings.Contains(page, "Connected") {
		t.Fatalf("callback answered %d: %s", code, page)
	}
	for _, key := range []string{aliceOAuthKey, bobOAuthKey} {
		s := connect(t, ctx, base+"/mcp", key)
		waitServed(t, ctx, s, []string{tool}, nil)
		if res := call(t, ctx, s, tool, nil); res.IsError {
			t.Fatalf("call: %q", resultText(res))
		}
	}
	if got := auditActors(t, up, upTool); strings.Join(got, ",") != "service-account,service-account" {
		t.Fatalf("the upstream audited %q, want the shared account twice", got)
	}
	conns, err := op.Connections(ctx)
	if err != nil || len(conns) != 1 || conns[0].ActorID != core.SharedActor {
		t.Fatalf("connections: %+v, %v", conns, err)
	}
}

// UI-1: a reload cannot add the first oauth upstream (its routes are
// mounted at start); it fails naming what to do, and the gateway keeps
// serving what it served.
func TestReloadCannotAddOAuthUpstream(t *testing.T) {
	ctx := testCtx(t)
	store := t.TempDir() + "/gw.db"
	notes := serveDemo(t, "notes")
	g := newGateway(t, loadConfig(t, gatewayYAML(store, upstreamYAML("notes", notes, true))), nil)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	next := loadConfig(t, strings.Replace(gatewayYAML(store, upstreamYAML("notes", notes, true)), "gateway:\n", fmt.Sprintf("gateway:\n  publicUrl: https://tools.example.com\n  credentialsKey: %s\n", credentialsKey), 1)+
		"  - name: crm\n    url: https://crm.example.com/mcp\n    oauth: {credentials: perActor}\n")
	if _, err := g.Reload(ctx, next); err == nil || !strings.Contains(err.Error(), "the first oauth upstream needs a restart") {
		t.Fatalf("Reload: %v", err)
	}
	if code, _ := readyz(t, "http://"+g.Addr()); code != http.StatusOK {
		t.Fatalf("/readyz after the refused reload: %d", code)
	}
}
