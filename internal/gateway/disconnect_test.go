package gateway_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/lab/peers"
	"github.com/toolgate/toolgate/internal/oidctest"
)

// disconnect posts the actor-disconnect route with key as the bearer and
// returns the status and page.
func disconnect(t *testing.T, base, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/upstream-oauth/disconnect?upstream=crm", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// UI-2, OP-8: the route by which an actor disconnects their own upstream
// account authenticates with the endpoint's authentication in force, not
// the one the gateway started with: after a reload removes alice's API
// key, her key no longer disconnects anything (her connection stays, for
// an operator to revoke), while bob, whose key stayed, disconnects his own
// connection and only his.
func TestDisconnectFollowsReloadedAuth(t *testing.T) {
	ctx := testCtx(t)
	issuer := oidctest.Start(t)
	up := upstreamGateway(t, issuer)
	upURL := "http://" + up.Addr() + "/mcp"
	port := peers.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	store := t.TempDir() + "/front.db"
	log := &transcript{}
	front := newGateway(t, loadConfig(t, frontYAML(port, store, upURL, "", aliceOAuthKey, bobOAuthKey)),
		&gateway.Options{Logger: slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err := front.Start(ctx); err != nil {
		t.Fatal(err)
	}
	m := front.UpstreamOAuth()
	for _, who := range []string{"alice", "bob"} {
		b := oidctest.Browser(t)
		cb := oidctest.SignIn(t, b, m.ConnectURL("crm", who), who)
		if code, page := oidctest.Open(t, b, cb); code != http.StatusOK || !strings.Contains(page, "Connected") {
			t.Fatalf("%s's callback answered %d: %s", who, code, page)
		}
	}

	rep, err := front.Reload(ctx, loadConfig(t, frontYAML(port, store, upURL, "", "", bobOAuthKey)))
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if len(rep.Restart) > 0 {
		t.Fatalf("the reload asks for a restart: %v", rep.Restart)
	}
	if code, page := disconnect(t, base, aliceOAuthKey); code != http.StatusUnauthorized {
		t.Fatalf("a key the reload removed disconnected: %d %s", code, page)
	}
	cs := front.Store().(core.ConnectionStore)
	if _, err := cs.ConnectionFor(ctx, "crm", "alice"); err != nil {
		t.Fatalf("alice's connection after a refused disconnect: %v", err)
	}
	if code, page := disconnect(t, base, bobOAuthKey); code != http.StatusOK || !strings.Contains(page, "Disconnected") {
		t.Fatalf("bob's disconnect answered %d: %s", code, page)
	}
	if _, err := cs.ConnectionFor(ctx, "crm", "bob"); !errors.Is(err, core.ErrNoConnection) {
		t.Fatalf("bob's connection after his disconnect: %v", err)
	}
	if _, err := cs.ConnectionFor(ctx, "crm", "alice"); err != nil {
		t.Fatalf("bob's disconnect took alice's connection: %v", err)
	}
}
