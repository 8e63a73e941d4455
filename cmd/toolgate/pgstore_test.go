package main

import (
	"fmt"
	"strings"
	"testing"
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
