//go:build linux

package main

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/toolgate/toolgate/internal/mcptest"
)

// UI-3: a goroutine dump of a running `serve` — SIGQUIT, what an operator
// sends a gateway that seems stuck, with every goroutine printed — holds
// none of its secrets: not the credentials key (as text, or as the words
// a stack frame would print of its bytes), an upstream's OAuth client
// secret, the confirm secret or an API key.
func TestServeDumpHoldsNoSecret(t *testing.T) {
	rawKey := []byte("dump-SECRET-credentials-key-32by")
	credKey := base64.StdEncoding.EncodeToString(rawKey)
	const clientSecret = "dump-SECRET-client-secret-5c1e9a7b"
	yaml := reloadConfig("  publicUrl: http://127.0.0.1:9\n  credentialsKey: ${TOOLGATE_CREDENTIALS_KEY}\n", []string{"alice"}, "echo") +
		"  - name: crm\n    url: http://127.0.0.1:9/mcp\n    oauth:\n      credentials: perActor\n      clientId: toolgate\n      clientSecret: ${CRM_CLIENT_SECRET}\n"
	env := reloadEnv()
	env["TOOLGATE_CREDENTIALS_KEY"] = credKey
	env["CRM_CLIENT_SECRET"] = clientSecret
	env["GOTRACEBACK"] = "all"
	g := startServe(t, writeServeConfig(t, yaml), env)

	ctx, cancel := context.WithTimeout(context.Background(), 2*reloadWait)
	defer cancel()
	c := mcptest.New(g.base+"/mcp", &mcptest.Options{Authorization: "Bearer " + reloadAliceKey})
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if res, rpcErr, err := c.CallTool(ctx, "echo_echo", map[string]any{"message": "hello"}); err != nil || rpcErr != nil || res.IsError {
		t.Fatalf("echo_echo: %+v %v %v", res, rpcErr, err)
	}
	// The oauth upstream's connect tool mints alice's link under a key
	// derived from the credentials key: the key is in use when dumped.
	if _, rpcErr, err := c.CallTool(ctx, "crm_connect", map[string]any{}); err != nil || rpcErr != nil {
		t.Fatalf("crm_connect: %v %v", rpcErr, err)
	}

	if err := g.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	g.waitExit(t)
	dump := g.stderr.String()
	if !strings.Contains(dump, "SIGQUIT") || strings.Count(dump, "\ngoroutine ") < 5 {
		t.Fatalf("no goroutine dump after SIGQUIT:\n%s", dump)
	}
	secrets := map[string]string{
		"credentials key": credKey, "its bytes": string(rawKey), "client secret": clientSecret,
		"confirm secret": serveConfirmSecret, "API key": reloadAliceKey,
	}
	for i := 0; i+8 <= len(rawKey); i += 8 {
		secrets[fmt.Sprintf("word %d of the key", i/8)] = fmt.Sprintf("0x%x", binary.LittleEndian.Uint64(rawKey[i:]))
	}
	for what, s := range secrets {
		if strings.Contains(dump, s) {
			t.Errorf("the dump holds the %s", what)
		}
	}
}
