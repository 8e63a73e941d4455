package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/admin"
)

// connBackend is an admin backend with two connections, one broken; the
// rest of the Backend is never called by these commands.
type connBackend struct {
	admin.Backend
	revoked []string
}

var testConns = []core.Connection{
	{ID: "conn_a", Upstream: "crm", ActorID: "alice", Scopes: []string{"crm.read"}, Expiry: time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC), CreatedAt: time.Now()},
	{ID: "conn_b", Upstream: "crm", ActorID: "bob", Broken: "the authorization server refused the refresh token (invalid_grant): connect again", CreatedAt: time.Now()},
	{ID: "conn_s", Upstream: "docs", ActorID: core.SharedActor, CreatedAt: time.Now()},
}

func (b *connBackend) Connections(context.Context) ([]core.Connection, error) { return testConns, nil }

func (b *connBackend) RevokeConnection(_ context.Context, id, _ string) (core.Connection, error) {
	for _, c := range testConns {
		if c.ID == id {
			b.revoked = append(b.revoked, id)
			return c, nil
		}
	}
	return core.Connection{}, core.ErrNoConnection
}

func (b *connBackend) SharedConnectURL(_ context.Context, upstream, _ string) (string, error) {
	if upstream != "docs" {
		return "", core.ErrUnknownUpstream
	}
	return "https://tools.example.com/upstream-oauth/connect?t=x.y", nil
}

func (b *connBackend) RekeyConnections(context.Context, string) (admin.RekeyResult, error) {
	return admin.RekeyResult{Resealed: 2, Current: 1}, nil
}

func serveAdmin(t *testing.T, b admin.Backend) string {
	t.Helper()
	s, err := admin.NewServer(admin.Options{Backend: b, Keys: []admin.Key{{Key: "op-key-0123456789", Operator: "carol"}}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { s.Close(); _ = srv.Close(); <-done })
	return "http://" + ln.Addr().String()
}

// UI-2, UI-3: the connections and connect verbs over the admin API: the
// list with each connection's state, a revoke, a rekey, a shared upstream's
// connect link, and the refusals, each exit status saying so.
func TestConnectionsCommands(t *testing.T) {
	b := &connBackend{}
	t.Setenv(admin.EnvAttach, serveAdmin(t, b))
	t.Setenv(admin.EnvAdminKey, "op-key-0123456789")

	code, out, errOut := runCLI(t, "connections")
	if code != 0 || !strings.Contains(out, "conn_a  crm") || !strings.Contains(out, "broken: the authorization server refused") ||
		!strings.Contains(out, "(shared)") {
		t.Fatalf("connections: %d %q %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, "connections", "--json")
	if code != 0 || !strings.Contains(out, `"id": "conn_b"`) || strings.Contains(out, "sealed") {
		t.Fatalf("connections --json: %d %q", code, out)
	}
	code, out, _ = runCLI(t, "connections", "revoke", "conn_a")
	if code != 0 || !strings.Contains(out, "revoked connection conn_a of alice on crm") || len(b.revoked) != 1 {
		t.Fatalf("revoke: %d %q", code, out)
	}
	code, _, errOut = runCLI(t, "connections", "revoke", "conn_x")
	if code != 1 || !strings.Contains(errOut, "no such upstream connection (HTTP 404)") {
		t.Fatalf("revoke of an unknown id: %d %q", code, errOut)
	}
	code, out, _ = runCLI(t, "connections", "rekey")
	if code != 0 || !strings.Contains(out, "re-sealed 2 connections") {
		t.Fatalf("rekey: %d %q", code, out)
	}
	code, out, _ = runCLI(t, "connect", "docs")
	if code != 0 || !strings.Contains(out, "https://tools.example.com/upstream-oauth/connect?t=x.y") {
		t.Fatalf("connect: %d %q", code, out)
	}
	code, _, errOut = runCLI(t, "connect", "crm")
	if code != 1 || !strings.Contains(errOut, "unknown upstream (HTTP 404)") {
		t.Fatalf("connect of a perActor upstream: %d %q", code, errOut)
	}
	for _, args := range [][]string{{"connections", "bogus"}, {"connections", "revoke"}, {"connect"}} {
		if code, _, errOut := runCLI(t, args...); code != 2 || errOut == "" {
			t.Errorf("toolgate %s: exit %d %q, want 2", strings.Join(args, " "), code, errOut)
		}
	}

	t.Setenv(admin.EnvAttach, serveAdmin(t, struct{ admin.Backend }{}))
	code, _, errOut = runCLI(t, "connections")
	if code != 1 || !strings.Contains(errOut, "this gateway has no oauth upstream (HTTP 404)") {
		t.Fatalf("connections without oauth: %d %q", code, errOut)
	}
}
