package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/report"
	"github.com/toolgate/toolgate/mcp/demo"
)

// pgPassword is the password of the PostgreSQL URLs below: it must never
// be printed (IM-5).
const pgPassword = "cli-SECRET-pg-Passw0rd"

// pgConfig is a config whose store is a PostgreSQL server at addr.
func pgConfig(t *testing.T, addr string) string {
	t.Helper()
	return writeServeConfig(t, fmt.Sprintf(`gateway:
  listen: 127.0.0.1:0
  store: postgres://tg:%s@%s/toolgate?sslmode=disable
endpoints:
  - path: /mcp
    name: pg test
    version: 1.0.0
    actor: {id: dev, roles: [ADMIN]}
`, pgPassword, addr))
}

// OP-5, OP-3: toolgate serve with its PostgreSQL store down at start exits
// non-zero, saying the store cannot be reached at host:port, and never
// showing the password.
func TestServePostgresDownAtStartOP5(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", closedPort(t))
	code, out, errOut := runToolgate(t, "serve", "--config", pgConfig(t, addr))
	if code == 0 {
		t.Fatalf("serve exited 0 with PostgreSQL down\nstderr: %s", errOut)
	}
	if !strings.Contains(errOut, addr) || !strings.Contains(errOut, "cannot reach the server") {
		t.Errorf("serve's error does not say the store at %s is unreachable:\n%s", addr, errOut)
	}
	assertNoSecrets(t, out, errOut)
}

// OP-5, IM-5: check --offline (and check --json) over a config with a
// PostgreSQL store: the config is valid, and the password is printed
// nowhere.
func TestCheckPostgresStoreOfflineIM5(t *testing.T) {
	cfg := pgConfig(t, fmt.Sprintf("127.0.0.1:%d", closedPort(t)))
	for _, args := range [][]string{
		{"check", "--offline", "--config", cfg},
		{"check", "--offline", "--json", "--config", cfg},
	} {
		code, out, errOut := runCLI(t, args...)
		if code != 0 {
			t.Errorf("toolgate %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
		}
		assertNoSecrets(t, out, errOut)
	}
}

// RV-3, OP-3, OP-5: check and tools read the review decisions from a
// PostgreSQL store, as they do from the file: a tool approved in the
// database shows as approved. Over a database that holds no toolgate
// schema yet they show every tool as new and create nothing.
func TestCheckAndToolsReadPostgresApprovalsRV3(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	dsn := pgtest.Start(t, nil).NewDatabase(t)
	echo, err := demo.New("echo", demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(server.NewStreamableHTTPServer(echo))
	t.Cleanup(up.Close)
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	yaml := "gateway:\n  store: " + dsn + "\n  review: {mode: require}\n" +
		"endpoints:\n  - path: /mcp\n    actor: {id: test, roles: [ADMIN]}\n" +
		"upstreams:\n  - name: echo\n    url: " + up.URL + "/mcp\n    defaultKind: read\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	states := func(cmd string) map[string]string {
		t.Helper()
		code, out, errOut := runCLI(t, cmd, "--json", "--config", path)
		if code != 0 {
			t.Fatalf("toolgate %s: exit %d\nstdout: %s\nstderr: %s", cmd, code, out, errOut)
		}
		var tools []report.Tool
		if cmd == "check" {
			var c report.Check
			err = json.Unmarshal([]byte(out), &c)
			tools = c.Tools
		} else {
			err = json.Unmarshal([]byte(out), &tools)
		}
		if err != nil {
			t.Fatalf("toolgate %s --json: %v\n%s", cmd, err, out)
		}
		got := map[string]string{}
		for _, tl := range tools {
			got[tl.Name] = tl.ReviewState
		}
		return got
	}
	schemaExists := func() bool {
		t.Helper()
		conn, err := pgx.Connect(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var ok bool
		if err := conn.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'toolgate')`).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}

	for _, cmd := range []string{"tools", "check"} {
		if got := states(cmd)["echo_echo"]; got != string(core.ReviewNew) {
			t.Errorf("%s over an empty database: echo_echo is %q, want %q", cmd, got, core.ReviewNew)
		}
	}
	if schemaExists() {
		t.Fatal("check or tools created the store's schema")
	}
	if code, out, errOut := runCLI(t, "review", "approve", "echo_echo", "--config", path); code != 0 {
		t.Fatalf("review approve: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, cmd := range []string{"tools", "check"} {
		if got := states(cmd)["echo_echo"]; got != string(core.ReviewApproved) {
			t.Errorf("%s after the approval in PostgreSQL: echo_echo is %q, want %q", cmd, got, core.ReviewApproved)
		}
	}
}
