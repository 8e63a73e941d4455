package gateway_test

import (
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/pgtest"
)

// storeDownText is what the confirm gate answers while the store's server
// cannot be reached.
const storeDownText = "could not reach its store"

// OP-5: PostgreSQL down at start: New fails naming the server's host:port,
// never the DSN's password, and binds nothing.
func TestPostgresDownAtStartOP5(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const pw = "pg-down-Passw0rd"
	cfg := loadConfig(t, gatewayYAML("postgres://tg:"+pw+"@"+addr+"/toolgate?sslmode=disable", upstreamYAML("notes", closedURL(t, "/mcp"), false)))
	start := time.Now()
	g, err := gateway.New(testCtx(t), cfg, nil)
	if err == nil {
		closeGateway(t, g)
		t.Fatal("New succeeded with PostgreSQL down")
	}
	if !errors.Is(err, core.ErrStoreUnavailable) || !strings.Contains(err.Error(), addr) || strings.Contains(err.Error(), pw) {
		t.Errorf("New = %v; want core.ErrStoreUnavailable naming %s and not the password", err, addr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("New took %v to fail", d)
	}
}

// CF-3, CF-4, OP-5: PostgreSQL goes away while the gateway serves. A
// confirmation is refused at once with a clear error and nothing runs
// without its ledger row; read tools keep working. Once the server is back
// the pool reconnects by itself: the refused confirmation, never spent,
// now runs once, and a replay of it is refused.
func TestPostgresUnreachableWhileServingCF3(t *testing.T) {
	ctx := testCtx(t)
	srv := pgtest.Start(t, nil)
	notes := serveDemo(t, "notes")
	g := newGateway(t, loadConfig(t, gatewayYAML(srv.NewDatabase(t), upstreamYAML("notes", notes, true))), nil)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s := connect(t, ctx, "http://"+g.Addr()+"/mcp", testKey)
	waitServed(t, ctx, s, notesTools, nil)
	if res := call(t, ctx, s, "notes_create_note", confirmArgs(previewToken(t, ctx, s, "first"), "first")); res.IsError {
		t.Fatalf("confirm with PostgreSQL up: %q", resultText(res))
	}
	pending := confirmArgs(previewToken(t, ctx, s, "pending"), "pending")

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res := call(t, ctx, s, "notes_create_note", pending)
	if !res.IsError || !strings.Contains(resultText(res), storeDownText) {
		t.Errorf("confirm with PostgreSQL down: %q isError=%v; want a refusal saying the store cannot be reached", resultText(res), res.IsError)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the refusal took %v", d)
	}
	if res := call(t, ctx, s, "notes_search", map[string]any{"query": "first"}); res.IsError || !strings.Contains(resultText(res), "first") {
		t.Errorf("a read with PostgreSQL down: %q isError=%v; want it served", resultText(res), res.IsError)
	}
	wantEffects(t, ctx, s, "1")

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if res := call(t, ctx, s, "notes_create_note", pending); res.IsError {
		t.Fatalf("the refused confirmation after PostgreSQL is back: %q; want it run (it was never spent)", resultText(res))
	}
	if res := call(t, ctx, s, "notes_create_note", pending); !res.IsError || !strings.Contains(resultText(res), "already used") {
		t.Errorf("replay: %q isError=%v; want already used", resultText(res), res.IsError)
	}
	wantEffects(t, ctx, s, "2")
}

// CF-4, OP-5: two gateways on one database share the ledger: a preview
// made on one is confirmed on the other and runs once; its replay on the
// first is refused as used.
func TestPostgresSharedLedgerTwoGatewaysCF4(t *testing.T) {
	ctx := testCtx(t)
	dsn := pgtest.Start(t, nil).NewDatabase(t)
	notes := serveDemo(t, "notes")
	yaml := gatewayYAML(dsn, upstreamYAML("notes", notes, true))
	var sessions []*session
	for range 2 {
		g := newGateway(t, loadConfig(t, yaml), nil)
		if err := g.Start(ctx); err != nil {
			t.Fatal(err)
		}
		s := connect(t, ctx, "http://"+g.Addr()+"/mcp", testKey)
		waitServed(t, ctx, s, notesTools, nil)
		sessions = append(sessions, s)
	}
	a, b := sessions[0], sessions[1]
	args := confirmArgs(previewToken(t, ctx, a, "shared"), "shared")
	if res := call(t, ctx, b, "notes_create_note", args); res.IsError {
		t.Fatalf("confirm on the other gateway: %q", resultText(res))
	}
	if res := call(t, ctx, a, "notes_create_note", args); !res.IsError || !strings.Contains(resultText(res), "already used") {
		t.Errorf("replay on the first gateway: %q isError=%v; want already used", resultText(res), res.IsError)
	}
	wantEffects(t, ctx, a, "1")
}

// CF-3: a gateway whose confirm secret differs from the one the gateways
// already sharing its store use is refused at start, before it can issue a
// token they would refuse; one with the same secret starts. Both for
// PostgreSQL replicas and for processes sharing one SQLite file.
func TestConfirmSecretMismatchRefusedCF3(t *testing.T) {
	stores := map[string]func(t *testing.T) string{
		"postgres": func(t *testing.T) string { return pgtest.Start(t, nil).NewDatabase(t) },
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "toolgate.db") },
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			yaml := gatewayYAML(store(t), upstreamYAML("notes", closedURL(t, "/mcp"), false))
			newGateway(t, loadConfig(t, yaml), nil)
			other := strings.Replace(yaml, "${SECRET}", "another-confirm-secret-0123456789abcdef-xyz", 1)
			g, err := gateway.New(testCtx(t), loadConfig(t, other), nil)
			if err == nil {
				closeGateway(t, g)
				t.Fatal("a gateway with another confirm secret started on the shared store")
			}
			if !errors.Is(err, core.ErrConfirmSecretMismatch) || !strings.Contains(err.Error(), "gateway.confirm.secret") {
				t.Errorf("New with another secret = %v; want core.ErrConfirmSecretMismatch naming gateway.confirm.secret", err)
			}
			if strings.Contains(err.Error(), testSecret) || strings.Contains(err.Error(), "another-confirm-secret") {
				t.Errorf("the error shows a secret: %v", err)
			}
			newGateway(t, loadConfig(t, yaml), nil) // the same secret: a replica like the first
		})
	}
}
