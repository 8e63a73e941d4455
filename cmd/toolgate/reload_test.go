//go:build linux

package main

// OP-8 against a real `toolgate serve`: the config file rewritten on disk,
// a real SIGHUP (what `systemctl reload` sends), real MCP sessions over
// HTTP on 127.0.0.1.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/internal/waittest"
)

// Distinctive API keys of the reload tests: never in serve's logs.
const (
	reloadAliceKey = "reload-SECRET-alice-key-1b9d7f5c3a"
	reloadBobKey   = "reload-SECRET-bob-key-2c8e6a4f0d"
)

const reloadWait = 60 * time.Second // one reload seen end to end

// reloadConfig is a config with an API-key endpoint /mcp for the named
// actors (alice, bob) and stdio demo upstreams of the named kinds, with
// extra lines added under gateway:.
func reloadConfig(gatewayExtra string, actors []string, upstreams ...string) string {
	var b strings.Builder
	b.WriteString("gateway:\n  confirm:\n    secret: ${TOOLGATE_CONFIRM_SECRET}\n" + gatewayExtra)
	b.WriteString("endpoints:\n  - path: /mcp\n    auth:\n      apiKeys:\n")
	for _, a := range actors {
		key := map[string]string{"alice": "${ALICE_KEY}", "bob": "${BOB_KEY}"}[a]
		fmt.Fprintf(&b, "        - key: %s\n          actor: {id: %s, roles: [MEMBER]}\n", key, a)
	}
	b.WriteString("upstreams:\n")
	for _, u := range upstreams {
		fmt.Fprintf(&b, "  - name: %s\n    command: ${TOOLGATE_SELF}\n    args: [demo-upstream, %s]\n    timeout: 20s\n", u, u)
	}
	return b.String()
}

func reloadEnv() map[string]string {
	return map[string]string{"TOOLGATE_CONFIRM_SECRET": serveConfirmSecret, "ALICE_KEY": reloadAliceKey, "BOB_KEY": reloadBobKey}
}

// rewrite replaces the config file's content, as an operator's editor does.
func rewrite(t *testing.T, path, yaml string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
}

// hup sends SIGHUP and waits (bounded) until serve has logged the n-th
// completed reload ("config reloaded…") or refusal.
func (g *servedGateway) hup(t *testing.T, n int) {
	t.Helper()
	if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	g.waitReloads(t, n)
}

// waitReloads waits until serve has logged n reloads that ended, applied
// or refused.
func (g *servedGateway) waitReloads(t *testing.T, n int) {
	t.Helper()
	g.waitLog(t, func(log string) bool {
		return strings.Count(log, `"msg":"config reloaded`)+strings.Count(log, `"msg":"config reload refused`) >= n
	})
}

// waitLog polls serve's log (bounded) until ok says so; it fails if serve
// exits meanwhile.
func (g *servedGateway) waitLog(t *testing.T, ok func(string) bool) {
	t.Helper()
	if !waittest.Poll(reloadWait, func() bool {
		select {
		case <-g.exited:
			t.Fatalf("toolgate serve exited (%v)\n%s", g.cmd.ProcessState, g.stderr)
		default:
		}
		return ok(g.stderr.String())
	}) {
		t.Fatalf("the awaited log record did not come within %v\n%s", reloadWait, g.stderr)
	}
}

// listChanges follows a session's GET stream and signals each
// notifications/tools/list_changed on the returned channel.
func listChanges(t *testing.T, ctx context.Context, c *mcptest.Client) <-chan struct{} {
	t.Helper()
	st, err := c.Listen(ctx)
	if err != nil || st.Status != http.StatusOK {
		t.Fatalf("GET stream: %v %v", st, err)
	}
	out := make(chan struct{}, 16)
	go func() {
		defer st.Close()
		for {
			m, err := st.Next()
			if err != nil {
				return
			}
			if m.Method == "notifications/tools/list_changed" {
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out
}

// awaitList waits on changes for a list_changed after which the session
// lists every name of want and none of gone.
func awaitList(t *testing.T, ctx context.Context, c *mcptest.Client, changes <-chan struct{}, want, gone []string) {
	t.Helper()
	for {
		select {
		case <-changes:
		case <-ctx.Done():
			t.Fatalf("no notifications/tools/list_changed with %q listed and %q not", want, gone)
		}
		tools, err := c.ListTools(ctx)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		var names []string
		for _, tl := range tools {
			names = append(names, tl.Name)
		}
		if !slices.ContainsFunc(want, func(n string) bool { return !slices.Contains(names, n) }) &&
			!slices.ContainsFunc(gone, func(n string) bool { return slices.Contains(names, n) }) {
			return
		}
	}
}

func assertNoKeys(t *testing.T, log string) {
	t.Helper()
	for _, k := range []string{reloadAliceKey, reloadBobKey, serveConfirmSecret} {
		if strings.Contains(log, k) {
			t.Errorf("serve's log holds a secret (IM-5)\n%s", log)
		}
	}
}

// OP-8: a session stays open across a SIGHUP reload that adds an upstream:
// it is sent notifications/tools/list_changed, lists the new upstream's
// tools and calls one; a second reload removes an upstream, whose tools
// leave the list (with list_changed again) while the session carries on.
func TestServeReloadUpstreamsOP8(t *testing.T) {
	path := writeServeConfig(t, reloadConfig("", []string{"alice"}, "echo"))
	g := startServe(t, path, reloadEnv())
	ctx, cancel := context.WithTimeout(context.Background(), 2*reloadWait)
	defer cancel()
	c := mcptest.New(g.base+"/mcp", &mcptest.Options{Authorization: "Bearer " + reloadAliceKey})
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	session := c.Session()
	changes := listChanges(t, ctx, c)

	rewrite(t, path, reloadConfig("", []string{"alice"}, "echo", "weather"))
	g.hup(t, 1)
	awaitList(t, ctx, c, changes, []string{"echo_echo", "weather_forecast"}, nil)
	res, rpcErr, err := c.CallTool(ctx, "weather_forecast", map[string]any{"city": "Oslo"})
	if err != nil || rpcErr != nil || res.IsError || !strings.Contains(res.Text(), "Oslo") {
		t.Fatalf("weather_forecast after the reload: %+v %v %v", res, rpcErr, err)
	}

	rewrite(t, path, reloadConfig("", []string{"alice"}, "weather"))
	g.hup(t, 2)
	awaitList(t, ctx, c, changes, []string{"weather_forecast"}, []string{"echo_echo"})
	if res, rpcErr, err := c.CallTool(ctx, "weather_forecast", map[string]any{"city": "Rome"}); err != nil || rpcErr != nil || res.IsError {
		t.Fatalf("the session after the upstream was removed: %+v %v %v", res, rpcErr, err)
	}
	if c.Session() != session {
		t.Errorf("the session changed: %s → %s", session, c.Session())
	}
	log := g.stderr.String()
	for _, want := range []string{`"upstreamsAdded":["weather"]`, `"upstreamsRemoved":["echo"]`, `"msg":"tools imported","upstream":"weather"`, `"reason":"SIGHUP"`} {
		if !strings.Contains(log, want) {
			t.Errorf("serve's log lacks %s\n%s", want, log)
		}
	}
	assertNoKeys(t, log)
	if code := g.terminate(t); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0", code)
	}
}

// OP-8, AU-3: a reload that removes alice's API key: her session's next
// request fails with an error saying her credentials are no longer
// accepted, and her session has ended; bob's session carries on. No key is
// logged.
func TestServeReloadRevokedKeyOP8(t *testing.T) {
	path := writeServeConfig(t, reloadConfig("", []string{"alice", "bob"}, "echo"))
	g := startServe(t, path, reloadEnv())
	ctx, cancel := context.WithTimeout(context.Background(), 2*reloadWait)
	defer cancel()
	alice := mcptest.New(g.base+"/mcp", &mcptest.Options{Authorization: "Bearer " + reloadAliceKey})
	bob := mcptest.New(g.base+"/mcp", &mcptest.Options{Authorization: "Bearer " + reloadBobKey})
	for _, c := range []*mcptest.Client{alice, bob} {
		if _, err := c.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
	}

	rewrite(t, path, reloadConfig("", []string{"bob"}, "echo"))
	g.hup(t, 1)
	_, err := alice.ListTools(ctx)
	var se *mcptest.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusUnauthorized || !strings.Contains(string(se.Body), "no longer accepted") {
		t.Fatalf("alice's next request after her key was removed: %v", err)
	}
	if tools, err := bob.ListTools(ctx); err != nil || len(tools) == 0 {
		t.Errorf("bob's session: %v %v", tools, err)
	}
	if res, rpcErr, err := bob.CallTool(ctx, "echo_echo", map[string]any{"message": "still here"}); err != nil || rpcErr != nil || res.Text() != "still here" {
		t.Errorf("bob's call: %+v %v %v", res, rpcErr, err)
	}
	g.waitLog(t, func(log string) bool { return strings.Contains(log, "credentials are no longer accepted") })
	assertNoKeys(t, g.stderr.String())
}

// OP-8, OP-1: a config that does not load on SIGHUP (an unknown key, an
// unset ${VAR}, a syntax error) is refused, logged at ERROR with its key
// path or position, and the running config keeps serving; a valid one then
// applies.
func TestServeReloadInvalidOP8(t *testing.T) {
	good := reloadConfig("", []string{"alice"}, "echo")
	path := writeServeConfig(t, good)
	g := startServe(t, path, reloadEnv())
	ctx, cancel := context.WithTimeout(context.Background(), 2*reloadWait)
	defer cancel()
	c := mcptest.New(g.base+"/mcp", &mcptest.Options{Authorization: "Bearer " + reloadAliceKey})
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	bad := []struct{ yaml, want string }{
		{strings.Replace(good, "    timeout: 20s\n", "    timeout: 20s\n    bogus: 1\n", 1), `upstreams[0]: unknown key \"bogus\"`},
		{strings.Replace(good, "${ALICE_KEY}", "${RELOAD_UNSET_VAR}", 1), "RELOAD_UNSET_VAR"},
		{good + "  - name: [\n", "config " + path + ":"},
		{strings.Replace(good, "  confirm:\n", "  sessionIdleTimeout: soon\n  confirm:\n", 1), "gateway.sessionIdleTimeout"},
	}
	for i, b := range bad {
		rewrite(t, path, b.yaml)
		g.hup(t, i+1)
		lines := strings.Split(g.stderr.String(), "\n")
		last := ""
		for _, l := range lines {
			if strings.Contains(l, `"msg":"config reload refused`) {
				last = l
			}
		}
		if !strings.Contains(last, `"level":"ERROR"`) || !strings.Contains(last, b.want) {
			t.Errorf("refusal %d: want an ERROR record naming %s\n%s", i, b.want, last)
		}
		if tools, err := c.ListTools(ctx); err != nil || len(tools) == 0 {
			t.Fatalf("the session after refused reload %d: %v %v", i, tools, err)
		}
	}
	if strings.Contains(g.stderr.String(), `"msg":"config reloaded`) {
		t.Errorf("a refused config was applied\n%s", g.stderr)
	}
	rewrite(t, path, reloadConfig("", []string{"alice"}, "echo", "weather"))
	g.hup(t, len(bad)+1)
	if !strings.Contains(g.stderr.String(), `"upstreamsAdded":["weather"]`) {
		t.Errorf("the valid config after the refusals was not applied\n%s", g.stderr)
	}
	assertNoKeys(t, g.stderr.String())
}

// OP-8: with gateway.watchConfig on, one write of the file is one reload,
// with no signal; its new upstream is served.
func TestServeWatchConfigOP8(t *testing.T) {
	const watch = "  watchConfig: true\n"
	path := writeServeConfig(t, reloadConfig(watch, []string{"alice"}, "echo"))
	g := startServe(t, path, reloadEnv())
	g.waitLog(t, func(log string) bool { return strings.Contains(log, "watching the config file for changes") })
	ctx, cancel := context.WithTimeout(context.Background(), 2*reloadWait)
	defer cancel()
	c := mcptest.New(g.base+"/mcp", &mcptest.Options{Authorization: "Bearer " + reloadAliceKey})
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	changes := listChanges(t, ctx, c)

	rewrite(t, path, reloadConfig(watch, []string{"alice"}, "echo", "weather"))
	g.waitReloads(t, 1)
	awaitList(t, ctx, c, changes, []string{"weather_forecast"}, nil)
	// A SIGHUP after it is the second reload; the write was one.
	g.hup(t, 2)
	log := g.stderr.String()
	if n := strings.Count(log, `"msg":"config reload","reason":"config file changed"`); n != 1 {
		t.Errorf("%d reloads for one write of the file, want 1\n%s", n, log)
	}
	if n := strings.Count(log, `"upstreamsAdded":["weather"]`); n != 1 {
		t.Errorf("the upstream was added %d times\n%s", n, log)
	}
}
