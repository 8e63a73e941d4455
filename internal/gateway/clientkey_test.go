package gateway_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/lab/peers"
	"github.com/toolgate/toolgate/internal/oidctest"
)

// UI-1: a perActor upstream whose pre-registered client authenticates by
// private_key_jwt, configured as an operator would (clientId,
// clientKeyFile relative to the config file, clientKeyId), against the real
// provider holding only the key's public half: alice connects through the
// isError link, her calls reach the upstream — a second toolgate checking
// the provider's JWTs — as alice, each call past the first refreshing her
// thirty-second token with a new assertion, and her disconnect revokes at
// the provider with one too. The key never shows in the log.
func TestPrivateKeyJWTThroughConfig(t *testing.T) {
	ctx := testCtx(t)
	key := oidctest.NewClientKey(t, "EC", "ec-1")
	port := peers.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	issuer := oidctest.Start(t, "ACCESS_TTL=30", oidctest.PKJWTEnv(key), "PRE_REDIRECTS="+base+oidctest.CallbackPath)
	up := upstreamGateway(t, issuer)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "client.pem"), key.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := frontYAML(port, dir+"/front.db", "http://"+up.Addr()+"/mcp",
		"      clientId: "+oidctest.PKJWTClient+"\n      clientKeyFile: client.pem\n      clientKeyId: ec-1\n", aliceOAuthKey, bobOAuthKey)
	cfgPath := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	log := &transcript{}
	front := newGateway(t, loadConfigFile(t, cfgPath), &gateway.Options{Logger: slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err := front.Start(ctx); err != nil {
		t.Fatal(err)
	}
	const tool, upTool = "crm_notes_list_notes", "notes_list_notes"

	alice := connect(t, ctx, base+"/mcp", aliceOAuthKey)
	waitServed(t, ctx, alice, []string{"crm_connect"}, nil)
	connectAs(t, resultText(call(t, ctx, alice, "crm_connect", nil)), "alice")
	call(t, ctx, alice, "crm_connect", nil)
	waitServed(t, ctx, alice, []string{tool}, []string{"crm_connect"})
	cs := front.Store().(core.ConnectionStore)
	before, err := cs.ConnectionFor(ctx, "crm", "alice")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if res := call(t, ctx, alice, tool, nil); res.IsError {
			t.Fatalf("alice's call: %q", resultText(res))
		}
	}
	if got := auditActors(t, up, upTool); strings.Join(got, ",") != "alice,alice" {
		t.Fatalf("the upstream audited %q, want alice twice", got)
	}
	after, err := cs.ConnectionFor(ctx, "crm", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if after.Version < before.Version+2 {
		t.Fatalf("the connection was refreshed %d times over two calls with 30 s tokens, want at least 2", after.Version-before.Version)
	}
	if code, page := disconnect(t, base, aliceOAuthKey); code != http.StatusOK || !strings.Contains(page, "Disconnected") {
		t.Fatalf("alice's disconnect answered %d: %s", code, page)
	}
	log.mu.Lock()
	text := log.buf.String()
	log.mu.Unlock()
	if strings.Contains(text, "revoking at the authorization server failed") {
		t.Fatal("the provider refused the revocation's client assertion")
	}
	if strings.Contains(text, strings.Split(string(key.PEM), "\n")[1]) {
		t.Fatal("the log holds the client key")
	}
}

// loadConfigFile is loadConfig for a file the test wrote, so paths in it
// are relative to its directory.
func loadConfigFile(t *testing.T, path string) *config.Config {
	t.Helper()
	cfg, _, err := config.Load(path, config.LoadOptions{
		Environ: func() []string { return testEnv }, HomeDir: t.TempDir(), Version: "test",
	})
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}
