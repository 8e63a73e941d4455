package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/lab/peers"
	"github.com/toolgate/toolgate/internal/oidctest"
)

// UI-2: a call whose client agreed to open the connect link waits for the
// person to sign in beyond the upstream's per-attempt timeout (here 2s;
// the person takes longer): the wait is the person's, bounded by the call,
// the link and ConnectWait, and the call then goes on.
func TestConnectWaitOutlastsTheAttemptTimeout(t *testing.T) {
	ctx := testCtx(t)
	issuer := oidctest.Start(t)
	up := upstreamGateway(t, issuer)
	port := peers.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	const attempt = 2 * time.Second
	yaml := strings.Replace(frontYAML(port, t.TempDir()+"/front.db", "http://"+up.Addr()+"/mcp", "", aliceOAuthKey, bobOAuthKey),
		"timeout: 20s", "timeout: "+attempt.String(), 1)
	front := newGateway(t, loadConfig(t, yaml), nil)
	if err := front.Start(ctx); err != nil {
		t.Fatal(err)
	}
	alice := connectURLClient(t, ctx, base+"/mcp", aliceOAuthKey)
	waitServed(t, ctx, alice.session, []string{"crm_connect"}, nil)
	done := callInBackground(ctx, alice, "crm_connect")
	asked := <-alice.asked
	// The person is slower at the provider than one attempt may last.
	time.Sleep(attempt + time.Second)
	select {
	case o := <-done:
		t.Fatalf("the call ended before the person signed in: %+v %v", o.res, o.err)
	default:
	}
	b := oidctest.Browser(t)
	if code, page := oidctest.Open(t, b, oidctest.SignIn(t, b, asked.URL, "alice")); code != http.StatusOK {
		t.Fatalf("callback %d: %s", code, page)
	}
	if o := <-done; o.err != nil || o.res.IsError || !strings.Contains(resultText(o.res), "connected") {
		t.Fatalf("the call after signing in: %+v %v", o.res, o.err)
	}
}

// UI-2, SV-9: gateway Close does not wait for a person to sign in: a call
// waiting for its actor to connect is answered at once with the isError
// naming the link, as pending approvals are rejected, and Close ends
// cleanly well before its deadline cuts anything.
func TestCloseEndsConnectWait(t *testing.T) {
	ctx := testCtx(t)
	issuer := oidctest.Start(t)
	up := upstreamGateway(t, issuer)
	log := &transcript{}
	front, base := frontGateway(t, "http://"+up.Addr()+"/mcp", log)
	alice := connectURLClient(t, ctx, base+"/mcp", aliceOAuthKey)
	waitServed(t, ctx, alice.session, []string{"crm_connect"}, nil)
	done := make(chan *mcpgo.CallToolResult, 1)
	go func() {
		req := mcpgo.CallToolRequest{}
		req.Params.Name = "crm_connect"
		res, _ := alice.CallTool(ctx, req)
		done <- res
	}()
	asked := <-alice.asked
	select {
	case <-log.when("URL elicitation accepted"):
	case <-ctx.Done():
		t.Fatal("the gateway never took the client's accept")
	}
	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := front.Close(cctx); err != nil {
		t.Fatalf("Close while a call waited to connect: %v", err)
	}
	res := <-done
	if res == nil || !res.IsError || !strings.Contains(resultText(res), "shutting down") || !strings.Contains(resultText(res), asked.URL) {
		t.Fatalf("the waiting call at Close answered %+v, want the isError naming the link", res)
	}
	if strings.Contains(log.String(), "were cut") {
		t.Fatal("Close cut calls in flight")
	}
}

// disconnectAs posts the actor-disconnect route as a browser or a client
// would: key as the bearer ("" none), host the Host header ("" the
// listener's), site the browser's Sec-Fetch-Site and origin its Origin
// ("" none).
func disconnectAs(t *testing.T, base, key, host, site, origin string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/upstream-oauth/disconnect?upstream=crm", strings.NewReader("x=1"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if site != "" {
		req.Header.Set("Sec-Fetch-Site", site)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// UI-2: the actor-disconnect route revokes, so a web page the person
// visits cannot have it done: a cross-site form POST is refused even with
// credentials, a DNS-rebound name is refused on a loopback listener as
// /mcp refuses it, and an open endpoint (no credentials: nobody is
// authenticated) refuses disconnecting at all, saying so. An actor's own
// same-origin request still disconnects.
func TestDisconnectRefusesCrossSiteRebindingAndOpenEndpoints(t *testing.T) {
	ctx := testCtx(t)
	issuer := oidctest.Start(t)
	up := upstreamGateway(t, issuer)
	upURL := "http://" + up.Addr() + "/mcp"
	connectAlice := func(t *testing.T, m interface{ ConnectURL(string, string) string }) {
		t.Helper()
		b := oidctest.Browser(t)
		if code, page := oidctest.Open(t, b, oidctest.SignIn(t, b, m.ConnectURL("crm", "alice"), "alice")); code != http.StatusOK {
			t.Fatalf("callback %d: %s", code, page)
		}
	}
	stays := func(t *testing.T, cs core.ConnectionStore, what string, code int, page string) {
		t.Helper()
		if code != http.StatusForbidden {
			t.Errorf("%s: answered %d %s, want 403", what, code, page)
		}
		if _, err := cs.ConnectionFor(ctx, "crm", "alice"); errors.Is(err, core.ErrNoConnection) {
			t.Fatalf("%s disconnected alice: %d %s", what, code, page)
		}
	}

	t.Run("open endpoint", func(t *testing.T) {
		port := peers.FreePort(t)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		yaml := frontYAML(port, t.TempDir()+"/front.db", upURL, "", aliceOAuthKey, "")
		yaml = strings.Replace(yaml, "    auth:\n      apiKeys:\n        - key: "+aliceOAuthKey+"\n          actor: {id: alice}\n", "    actor: {id: alice}\n", 1)
		front := newGateway(t, loadConfig(t, yaml), nil)
		if err := front.Start(ctx); err != nil {
			t.Fatal(err)
		}
		cs := front.Store().(core.ConnectionStore)
		connectAlice(t, front.UpstreamOAuth())
		code, page := disconnectAs(t, base, "", "", "cross-site", "https://evil.example")
		stays(t, cs, "a cross-site form POST", code, page)
		code, page = disconnectAs(t, base, "", "rebound.evil.example", "", "")
		stays(t, cs, "a DNS-rebound Host", code, page)
		code, page = disconnectAs(t, base, "", "", "", "")
		stays(t, cs, "a plain POST to an open endpoint", code, page)
		if !strings.Contains(page, "open") || !strings.Contains(page, "revoke") {
			t.Errorf("the open endpoint's refusal %q does not say why and what to do", page)
		}
	})

	t.Run("api keys", func(t *testing.T) {
		port := peers.FreePort(t)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		front := newGateway(t, loadConfig(t, frontYAML(port, t.TempDir()+"/front.db", upURL, "", aliceOAuthKey, "")), nil)
		if err := front.Start(ctx); err != nil {
			t.Fatal(err)
		}
		cs := front.Store().(core.ConnectionStore)
		connectAlice(t, front.UpstreamOAuth())
		code, page := disconnectAs(t, base, aliceOAuthKey, "", "cross-site", "https://evil.example")
		stays(t, cs, "a cross-site POST with alice's key", code, page)
		code, page = disconnectAs(t, base, aliceOAuthKey, "", "", "https://evil.example")
		stays(t, cs, "a POST from another Origin with alice's key", code, page)
		code, page = disconnectAs(t, base, aliceOAuthKey, "rebound.evil.example", "", "")
		stays(t, cs, "a DNS-rebound Host with alice's key", code, page)
		if code, page := disconnectAs(t, base, aliceOAuthKey, "", "same-origin", base); code != http.StatusOK || !strings.Contains(page, "Disconnected") {
			t.Fatalf("alice's own same-origin disconnect: %d %s", code, page)
		}
		if _, err := cs.ConnectionFor(ctx, "crm", "alice"); !errors.Is(err, core.ErrNoConnection) {
			t.Fatalf("alice's connection after her disconnect: %v", err)
		}
	})
}
