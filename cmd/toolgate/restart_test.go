//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/gateway"
)

const restartConfig = `gateway:
  confirm:
    secret: ${TOOLGATE_CONFIRM_SECRET}
  review:
    mode: pin
endpoints:
  - path: /mcp
    auth:
      apiKeys:
        - key: ${GATEWAY_KEY}
          actor: {id: gateway, roles: [MEMBER]}
upstreams:
  - name: notes
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, notes]
    required: true
`

// CF-4, RV-4, OP-5: used confirm tokens and review decisions live in the
// store file, so a gateway restarted on the same file still refuses a
// replayed token and still withholds a rejected tool.
func TestRestartKeepsLedgerAndApprovals(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "toolgate.db")
	cfg := writeServeConfig(t, restartConfig)
	env := map[string]string{
		"GATEWAY_KEY": serveGatewayKey, "TOOLGATE_CONFIRM_SECRET": serveConfirmSecret,
		"TOOLGATE_GATEWAY_STORE": store,
	}

	g1 := startServe(t, cfg, env)
	url := g1.base + "/mcp"
	c := serveOpen(t, url, serveGatewayKey)
	preview := serveRaw(t, c,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notes_create_note","arguments":{"text":"kept"}}}`)
	var sc struct {
		ConfirmToken string `json:"confirmToken"`
	}
	_ = json.Unmarshal(serveCallResult(t, preview).StructuredContent, &sc)
	token := sc.ConfirmToken
	if token == "" {
		t.Fatalf("no confirm token: %s", preview.Body)
	}
	confirm := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"notes_create_note","arguments":{"text":"kept","confirm":true,"confirmToken":%q}}}`, token)
	if text, isErr := serveCallText(t, serveRaw(t, c, confirm)); isErr || !strings.Contains(text, "note created") {
		t.Fatalf("confirm: %q isError=%v", text, isErr)
	}

	// A review decision made with the CLI against the same store file.
	t.Setenv(gateway.SelfEnv, toolgateBinary(t))
	t.Setenv("TOOLGATE_GATEWAY_STORE", store)
	t.Setenv("TOOLGATE_CONFIRM_SECRET", serveConfirmSecret)
	t.Setenv("GATEWAY_KEY", serveGatewayKey)
	if code, out, errOut := runCLI(t, "review", "reject", "--config", cfg, "notes_search"); code != 0 {
		t.Fatalf("review reject: %d\n%s\n%s", code, out, errOut)
	}
	if code := g1.terminate(t); code != 0 {
		t.Fatalf("first gateway exited %d", code)
	}

	g2 := startServe(t, cfg, env)
	url = g2.base + "/mcp"
	c = serveOpen(t, url, serveGatewayKey)
	text, isErr := serveCallText(t, serveRaw(t, c, confirm))
	if !isErr || !strings.Contains(text, "already used") {
		t.Fatalf("replay after restart: %q isError=%v", text, isErr)
	}
	names := serveToolNames(t, c)
	if slices.Contains(names, "notes_search") || !slices.Contains(names, "notes_list_notes") {
		t.Fatalf("after restart the rejected tool is listed or others are missing: %v", names)
	}
}
