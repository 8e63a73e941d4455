//go:build linux

package main

// Tests of `toolgate serve` as a real process: the built binary serving
// testdata/serve.yaml (or a config written by the test) on 127.0.0.1,
// driven over HTTP. The process table is read from /proc.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/toolgate/toolgate/auth/authtest"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/lab/peers"
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/demo"
)

// Distinctive secrets: none of them may ever appear in serve's logs.
const (
	serveGatewayKey    = "serve-SECRET-gateway-key-5c1e0f7a9b3d"
	serveConfirmSecret = "serve-SECRET-confirm-8e2b6d4f0a1c3e5b7d9f1a3c5e7b9d1f"
)

const (
	serveBootWait  = 30 * time.Second // process start to /readyz 200
	serveExitWait  = 15 * time.Second // SIGTERM to exit (shutdownGrace is 10 s)
	serveHTTPWait  = 20 * time.Second // one HTTP exchange
	serveProcsWait = 5 * time.Second  // upstream children gone after exit
)

// serveLog is a process's captured output, safe to read while it runs.
type serveLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *serveLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *serveLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// servedGateway is one running `toolgate serve`.
type servedGateway struct {
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:PORT
	port   int
	stderr *serveLog
	exited chan struct{}
	// upstreamGroups are the process groups of the gateway's children (its
	// supervised stdio upstreams), recorded once it was ready.
	upstreamGroups []int
	// leader and upstreamLeaders hold those groups for the kills at
	// cleanup.
	leader          groupLeader
	upstreamLeaders []groupLeader
}

// serveEnv is what testdata/serve.yaml needs besides OIDC_ISSUER.
func serveEnv(issuer string) map[string]string {
	return map[string]string{
		"GATEWAY_KEY":             serveGatewayKey,
		"TOOLGATE_CONFIRM_SECRET": serveConfirmSecret,
		"OIDC_ISSUER":             issuer,
	}
}

// serveConfigFile is testdata/serve.yaml, absolute.
func serveConfigFile(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "serve.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// writeServeConfig writes a config for one test and returns its path.
func writeServeConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "serve.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startServe runs `toolgate serve --config cfg --listen 127.0.0.1:0` in a
// process group of its own, with env added to the environment, learns its
// address from the "serving" log record and waits (bounded) until /healthz
// answers and /readyz says ready. The kernel picks the port: a port picked
// by the test and passed in can be taken by another process meanwhile (and
// then another gateway answers the health checks). At cleanup the gateway's
// group and its upstreams' groups are killed and the gateway is reaped.
func startServe(t *testing.T, cfg string, env map[string]string) *servedGateway {
	t.Helper()
	g := launchServe(t, cfg, env)
	g.waitStarted(t)
	return g
}

// launchServe is startServe without the wait: several gateways can boot at
// once, then each is waited for (waitStarted).
func launchServe(t *testing.T, cfg string, env map[string]string) *servedGateway {
	t.Helper()
	bin := toolgateBinary(t)
	cmd := exec.Command(bin, "serve", "--config", cfg, "--listen", "127.0.0.1:0")
	// Each gateway gets its own store file, never the user's.
	cmd.Env = append(os.Environ(), gateway.SelfEnv+"="+bin, "TOOLGATE_GATEWAY_STORE="+filepath.Join(t.TempDir(), "toolgate.db"))
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	g := &servedGateway{cmd: cmd, stderr: &serveLog{}, exited: make(chan struct{})}
	cmd.Stdout = g.stderr // serve writes nothing to stdout; keep whatever it does
	cmd.Stderr = g.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g.leader = holdLeader(cmd.Process.Pid)
	go func() {
		_ = cmd.Wait()
		close(g.exited)
	}()
	t.Cleanup(func() {
		g.killGroups()
		select {
		case <-g.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("toolgate serve (pid %d) not reaped 10 s after SIGKILL", g.leader.pid)
		}
		g.leader.release()
		for _, l := range g.upstreamLeaders {
			l.release()
		}
	})
	return g
}

// waitStarted waits for the address, then readiness, and records the
// upstreams' groups.
func (g *servedGateway) waitStarted(t *testing.T) {
	t.Helper()
	g.waitServing(t)
	g.waitReady(t)
	g.upstreamGroups = serveChildGroups(g.leader.pid)
	for _, pg := range g.upstreamGroups {
		g.upstreamLeaders = append(g.upstreamLeaders, holdLeader(pg))
	}
}

// killGroups sends SIGKILL to the gateway's group and to its upstreams'
// groups, each only while its number still names that group.
func (g *servedGateway) killGroups() {
	leaders := g.upstreamLeaders
	if !g.leader.exited() {
		// Children started after ready, or restarted since.
		for _, pg := range serveChildGroups(g.leader.pid) {
			leaders = append(leaders, holdLeader(pg))
		}
	}
	g.leader.killGroup()
	for _, l := range leaders {
		l.killGroup()
	}
}

// waitServing waits (bounded) for the "serving" log record and takes the
// gateway's address from it.
func (g *servedGateway) waitServing(t *testing.T) {
	t.Helper()
	if !waittest.Poll(serveBootWait, func() bool {
		for _, line := range strings.Split(g.stderr.String(), "\n") {
			var rec struct {
				Msg    string `json:"msg"`
				Listen string `json:"listen"`
			}
			if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "serving" {
				continue
			}
			addr, err := net.ResolveTCPAddr("tcp", rec.Listen)
			if err != nil {
				t.Fatalf("serving on %q: %v", rec.Listen, err)
			}
			g.base, g.port = "http://"+rec.Listen, addr.Port
			return true
		}
		select {
		case <-g.exited:
			t.Fatalf("toolgate serve exited (%v) before serving\n%s", g.cmd.ProcessState, g.stderr)
		default:
		}
		return false
	}) {
		t.Fatalf("no \"serving\" log record within %v\n%s", serveBootWait, g.stderr)
	}
}

// waitReady polls /healthz, then /readyz, until both answer 200, then waits
// for the "ready" log record: /readyz answers 200 once the required
// upstreams are connected, which can be before their tools are registered.
func (g *servedGateway) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(serveBootWait)
	client := &http.Client{Timeout: 2 * time.Second}
	for _, path := range []string{"/healthz", "/readyz"} {
		var err error
		if !waittest.Poll(time.Until(deadline), func() bool {
			var resp *http.Response
			if resp, err = client.Get(g.base + path); err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					if path == "/readyz" && !strings.Contains(string(body), `"ready":true`) {
						t.Fatalf("/readyz 200 with %s", body)
					}
					return true
				}
			}
			select {
			case <-g.exited:
				t.Fatalf("toolgate serve exited (%v) before %s answered 200\n%s", g.cmd.ProcessState, path, g.stderr)
			default:
			}
			return false
		}) {
			t.Fatalf("%s not 200 within %v (last: %v)\n%s", path, serveBootWait, err, g.stderr)
		}
	}
	if !waittest.Poll(time.Until(deadline), func() bool {
		if strings.Contains(g.stderr.String(), `"msg":"ready"`) {
			return true
		}
		select {
		case <-g.exited:
			t.Fatalf("toolgate serve exited (%v) before it was ready\n%s", g.cmd.ProcessState, g.stderr)
		default:
		}
		return false
	}) {
		t.Fatalf("no \"ready\" log record within %v\n%s", serveBootWait, g.stderr)
	}
}

// terminate sends SIGTERM and waits (bounded) for the exit status.
func (g *servedGateway) terminate(t *testing.T) int {
	t.Helper()
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	return g.waitExit(t)
}

func (g *servedGateway) waitExit(t *testing.T) int {
	t.Helper()
	select {
	case <-g.exited:
		return g.cmd.ProcessState.ExitCode()
	case <-time.After(serveExitWait):
		t.Fatalf("toolgate serve still runs %v after SIGTERM\n%s", serveExitWait, g.stderr)
	}
	return -1
}

// serveFreePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func serveFreePort(t *testing.T) int {
	t.Helper()
	return peers.FreePort(t)
}

// serveStat reads parent and process group from /proc/PID/stat; zombies
// count as gone.
func serveStat(pid int) (ppid, pgid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')') // the command name may hold anything
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 || f[0] == "Z" {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	pgid, _ = strconv.Atoi(f[2])
	return ppid, pgid, true
}

// serveProcs lists the live processes for which keep holds.
func serveProcs(keep func(ppid, pgid int) bool) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, pgid, ok := serveStat(pid); ok && keep(ppid, pgid) {
			out = append(out, pid)
		}
	}
	return out
}

// serveChildGroups are the process groups of pid's live children.
func serveChildGroups(pid int) []int {
	var groups []int
	for _, c := range serveProcs(func(ppid, _ int) bool { return ppid == pid }) {
		if _, pg, ok := serveStat(c); ok && !slices.Contains(groups, pg) {
			groups = append(groups, pg)
		}
	}
	return groups
}

// serveClient is an MCP client of url with token as its bearer ("" sends
// none); every exchange is bounded by serveHTTPWait.
func serveClient(url, token string) *mcptest.Client {
	opts := &mcptest.Options{HTTPClient: &http.Client{Timeout: serveHTTPWait}, ClientName: "serve-test", ClientVersion: "1.0.0"}
	if token != "" {
		opts.Authorization = "Bearer " + token
	}
	return mcptest.New(url, opts)
}

// serveOpen opens a session on url (initialize, then
// notifications/initialized, answered 202) and returns its client.
func serveOpen(t *testing.T, url, token string) *mcptest.Client {
	t.Helper()
	c := serveClient(url, token)
	if _, err := c.Initialize(t.Context()); err != nil || c.Session() == "" {
		t.Fatalf("initialize at %s: session %q: %v", url, c.Session(), err)
	}
	return c
}

// serveOn is a client of url with token on an existing session id.
func serveOn(url, token, session string) *mcptest.Client {
	c := serveClient(url, token)
	c.SetSession(session, "")
	return c
}

// serveRaw posts body as it is on c (its session, if it has one) and
// returns the answer, whatever its status.
func serveRaw(t *testing.T, c *mcptest.Client, body string) mcptest.Response {
	t.Helper()
	resp, err := c.Post(t.Context(), []byte(body), nil)
	if err != nil {
		t.Fatalf("POST %s: %v", c.URL(), err)
	}
	return resp
}

const serveInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"serve-test","version":"1.0.0"}}}`

// serveInitialized reports whether an answer to serveInitialize is a
// success: 200 with a result.
func serveInitialized(resp mcptest.Response) bool {
	res, _, err := resp.Result()
	return resp.Status == http.StatusOK && err == nil && res != nil
}

// serveToolNames lists the names c's session is served, sorted.
func serveToolNames(t *testing.T, c *mcptest.Client) []string {
	t.Helper()
	tools, err := c.ListTools(t.Context())
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// serveCallResult is a tools/call answer's result; anything else fails the
// test.
func serveCallResult(t *testing.T, resp mcptest.Response) mcptest.ToolResult {
	t.Helper()
	raw, _, err := resp.Result()
	var res mcptest.ToolResult
	if resp.Status != http.StatusOK || err != nil || json.Unmarshal(raw, &res) != nil {
		t.Fatalf("tools/call: HTTP %d: %s", resp.Status, resp.Body)
	}
	return res
}

// serveCallText is the first text of a tools/call answer and its isError
// flag.
func serveCallText(t *testing.T, resp mcptest.Response) (string, bool) {
	t.Helper()
	res := serveCallResult(t, resp)
	if len(res.Content) == 0 {
		t.Fatalf("tools/call: HTTP %d: %s", resp.Status, resp.Body)
	}
	return res.Text(), res.IsError
}

// serveExchange, servePost and serveSession are the raw sessions of
// transparency_test.go, kept (over mcptest) until it speaks mcptest itself.
type serveExchange struct {
	status  int
	header  http.Header
	body    []byte
	message map[string]any // the JSON-RPC response, when there is one
}

func servePost(t *testing.T, url, token, session, body string) serveExchange {
	t.Helper()
	resp := serveRaw(t, serveOn(url, token, session), body)
	x := serveExchange{status: resp.Status, header: resp.Header, body: resp.Body}
	msgs, _ := resp.Messages()
	for _, m := range msgs {
		if m.IsResponse() {
			_ = json.Unmarshal(m.Raw, &x.message)
			break
		}
	}
	return x
}

func serveSession(t *testing.T, url, token string) string {
	t.Helper()
	return serveOpen(t, url, token).Session()
}

// startServeYAML starts testdata/serve.yaml with its own OpenID provider.
func startServeYAML(t *testing.T, extra map[string]string) (*servedGateway, *authtest.Provider) {
	t.Helper()
	p := authtest.NewProvider(t)
	env := serveEnv(p.Issuer())
	for k, v := range extra {
		env[k] = v
	}
	return startServe(t, serveConfigFile(t), env), p
}

// serveToken is an access token of p for the resource at audience.
func serveToken(t *testing.T, p *authtest.Provider, audience, subject string) string {
	return p.Token(t, jwt.MapClaims{"sub": subject, "aud": audience, "scope": "openid tools", "org_id": "acme"})
}

// AU-4, AU-5, SV-3 against the real binary: refusals carry the challenge
// with the endpoint's metadata URL, a token for one endpoint is refused by
// another, and the metadata documents are public with CORS.
func TestServeRefusalsAndMetadataAU4AU5SV3(t *testing.T) {
	g, p := startServeYAML(t, nil)
	mcpURL, adminURL := g.base+"/mcp", g.base+"/admin"
	mcpMeta := g.base + "/.well-known/oauth-protected-resource/mcp"
	adminMeta := g.base + "/.well-known/oauth-protected-resource/admin"
	mcpToken := serveToken(t, p, mcpURL, "alice")

	cases := []struct {
		name, url, token string
		wantStatus       int
		wantChallenge    string
	}{
		{"no token", mcpURL, "", 401, `Bearer resource_metadata="` + mcpMeta + `"`},
		{"wrong API key", mcpURL, "serve-wrong-key-0000000000000000", 401, `Bearer resource_metadata="` + mcpMeta + `", error="invalid_token"`},
		{"token of another issuer", mcpURL, authtest.NewProvider(t).Token(t, jwt.MapClaims{"sub": "eve", "aud": mcpURL}), 401, `Bearer resource_metadata="` + mcpMeta + `", error="invalid_token"`},
		{"/mcp token on /admin", adminURL, mcpToken, 401, `Bearer resource_metadata="` + adminMeta + `", error="invalid_token"`},
		{"API key on the OAuth-only /admin", adminURL, serveGatewayKey, 401, `Bearer resource_metadata="` + adminMeta + `", error="invalid_token"`},
		{"no token on /admin", adminURL, "", 401, `Bearer resource_metadata="` + adminMeta + `"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := serveRaw(t, serveClient(c.url, c.token), serveInitialize)
			if x.Status != c.wantStatus || x.Header.Get("WWW-Authenticate") != c.wantChallenge {
				t.Fatalf("HTTP %d, WWW-Authenticate %q; want %d, %q\n%s", x.Status, x.Header.Get("WWW-Authenticate"), c.wantStatus, c.wantChallenge, x.Body)
			}
			if c.token != "" && bytes.Contains(x.Body, []byte(c.token)) {
				t.Fatalf("the refusal echoes the token: %s", x.Body)
			}
		})
	}

	// The same credentials are accepted where they belong.
	for _, ok := range []struct{ url, token string }{
		{mcpURL, serveGatewayKey},
		{mcpURL, mcpToken},
		{adminURL, serveToken(t, p, adminURL, "alice")},
	} {
		if x := serveRaw(t, serveClient(ok.url, ok.token), serveInitialize); !serveInitialized(x) {
			t.Errorf("initialize at %s: HTTP %d: %s", ok.url, x.Status, x.Body)
		}
	}

	for _, m := range []struct{ url, resource, name string }{
		{mcpMeta, mcpURL, "toolgate serve"},
		{adminMeta, adminURL, "toolgate admin"},
	} {
		// A plain GET of a JSON document, read through the client's Do.
		req, _ := http.NewRequest(http.MethodGet, m.url, nil)
		req.Header.Set("Origin", "https://client.example")
		x, err := serveClient(m.url, "").Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", m.url, err)
		}
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			ScopesSupported      []string `json:"scopes_supported"`
			BearerMethods        []string `json:"bearer_methods_supported"`
			ResourceName         string   `json:"resource_name"`
		}
		if x.Status != http.StatusOK || json.Unmarshal(x.Body, &doc) != nil {
			t.Fatalf("GET %s: HTTP %d: %s", m.url, x.Status, x.Body)
		}
		if got := x.Header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("GET %s: Access-Control-Allow-Origin %q, want *", m.url, got)
		}
		if doc.Resource != m.resource || !slices.Equal(doc.AuthorizationServers, []string{p.Issuer()}) ||
			!slices.Equal(doc.ScopesSupported, []string{"openid", "tools"}) || !slices.Equal(doc.BearerMethods, []string{"header"}) || doc.ResourceName != m.name {
			t.Errorf("GET %s: %s", m.url, x.Body)
		}
	}
}

// SV-2: initialize mints a session id; DELETE ends the session and its id
// then answers 404, as does an id never minted and another actor's session.
func TestServeSessionsSV2(t *testing.T) {
	g, p := startServeYAML(t, nil)
	url := g.base + "/mcp"
	c := serveOpen(t, url, serveGatewayKey)
	id := c.Session()

	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if got, want := serveToolNames(t, c), []string{"echo_echo", "notes_create_note", "notes_list_notes", "notes_search", "notes_side_effects"}; !slices.Equal(got, want) {
		t.Fatalf("tools/list: %q, want %q", got, want)
	}
	// The session belongs to the actor that opened it.
	if x := serveRaw(t, serveOn(url, serveToken(t, p, url, "mallory"), id), list); x.Status != http.StatusNotFound {
		t.Errorf("another actor on the session: HTTP %d, want 404: %s", x.Status, x.Body)
	}
	if x := serveRaw(t, serveOn(url, serveGatewayKey, "0123456789abcdef0123456789abcdef"), list); x.Status != http.StatusNotFound {
		t.Errorf("unknown session id: HTTP %d, want 404: %s", x.Status, x.Body)
	}

	if x, err := c.Delete(t.Context()); err != nil || x.Status != http.StatusOK {
		t.Fatalf("DELETE: HTTP %d: %s (%v)", x.Status, x.Body, err)
	}
	if x := serveRaw(t, c, list); x.Status != http.StatusNotFound {
		t.Errorf("after DELETE: HTTP %d, want 404: %s", x.Status, x.Body)
	}
	// A DELETE needs auth like any request.
	if x, err := serveOn(url, "", serveOpen(t, url, serveGatewayKey).Session()).Delete(t.Context()); err != nil || x.Status != http.StatusUnauthorized {
		t.Errorf("DELETE without a token: HTTP %d, want 401 (%v)", x.Status, err)
	}
}

// SV-8, QB-3: with gateway.maxRequestBytes at 65536 (set through its
// environment override) a larger body is refused with 413, with or without
// a Content-Length; a body under the limit is served.
func TestServeBodyLimitSV8(t *testing.T) {
	const limit = 65536
	g, _ := startServeYAML(t, map[string]string{"TOOLGATE_GATEWAY_MAXREQUESTBYTES": strconv.Itoa(limit)})
	url := g.base + "/mcp"
	c := serveOpen(t, url, serveGatewayKey)

	// A tools/call of echo_echo whose message pads the body to n bytes.
	const head, tail = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo_echo","arguments":{"message":"`, `"}}}`
	padding := func(n int) string { return strings.Repeat("x", n-len(head)-len(tail)) }
	call := func(n int) string { return head + padding(n) + tail }
	if got, isErr := serveCallText(t, serveRaw(t, c, call(limit))); isErr || got != padding(limit) {
		t.Fatalf("a body of exactly %d bytes: isError %v, %d bytes back, want %d", limit, isErr, len(got), len(padding(limit)))
	}

	if x := serveRaw(t, c, call(limit+1)); x.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body of %d bytes: HTTP %d, want 413: %.200s", limit+1, x.Status, x.Body)
	}
	// Without Content-Length (chunked), the limit holds while reading.
	req, err := c.NewRequest(t.Context(), http.MethodPost, io.MultiReader(strings.NewReader(call(4*limit))))
	if err != nil {
		t.Fatal(err)
	}
	if req.ContentLength != 0 {
		t.Fatalf("the request has a Content-Length (%d); it should be chunked", req.ContentLength)
	}
	if x, err := c.Do(req); err != nil || x.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("a chunked body of %d bytes: HTTP %d, want 413: %.200s (%v)", 4*limit, x.Status, x.Body, err)
	}
	// The session still works afterwards.
	if got, isErr := serveCallText(t, serveRaw(t, c, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo_echo","arguments":{"message":"still here"}}}`)); got != "still here" || isErr {
		t.Errorf("after the refusals: %q isError=%v", got, isErr)
	}
}

// serveFlakyConfig is an open-mode endpoint over the flaky demo upstream.
const serveFlakyConfig = `gateway:
  confirm:
    secret: ${TOOLGATE_CONFIRM_SECRET}
endpoints:
  - path: /mcp
    actor: {id: dev, roles: [ADMIN]}
upstreams:
  - name: flaky
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, flaky]
    required: true
  - name: echo
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, echo]
    required: true
`

// SV-9, OP-3: SIGTERM while a call is in flight. The gateway stops
// accepting connections, lets the call finish with its result, exits 0, and
// leaves none of its upstream processes behind.
func TestServeGracefulShutdownSV9(t *testing.T) {
	state := t.TempDir() // the flaky upstream marks a stall there
	cfg := strings.Replace(serveFlakyConfig, "    args: [demo-upstream, flaky]\n",
		fmt.Sprintf("    args: [demo-upstream, flaky]\n    env: {%s: %q}\n", demo.StateEnv, state), 1)
	g := startServe(t, writeServeConfig(t, cfg), map[string]string{"TOOLGATE_CONFIRM_SECRET": serveConfirmSecret})
	pid := g.cmd.Process.Pid
	if len(g.upstreamGroups) != 2 {
		t.Fatalf("gateway %d has upstream process groups %v, want 2 (flaky, echo)", pid, g.upstreamGroups)
	}
	url := g.base + "/mcp"
	c := serveOpen(t, url, "")

	const stall = 3 * time.Second
	type answer struct {
		x   mcptest.Response
		err error
	}
	done := make(chan answer, 1)
	go func() {
		x, err := c.Post(t.Context(), fmt.Appendf(nil,
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"flaky_stall","arguments":{"seconds":%g}}}`, stall.Seconds()), nil)
		done <- answer{x: x, err: err}
	}()
	// The call has reached the upstream once it marks its stall.
	waittest.Eventually(t, serveHTTPWait, "the call reaching the upstream", func() bool {
		_, err := os.Stat(filepath.Join(state, "stalling"))
		return err == nil
	})
	sent := time.Now()
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}

	// Stop accepting: new connections are refused while the call runs.
	refused := false
	for time.Since(sent) < stall/2 {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", g.port), 200*time.Millisecond)
		if err != nil {
			refused = true
			break
		}
		_ = c.Close()
		time.Sleep(20 * time.Millisecond)
	}
	if !refused {
		t.Errorf("new connections still accepted %v after SIGTERM", stall/2)
	}

	var a answer
	select {
	case a = <-done:
	case <-time.After(serveHTTPWait + time.Second):
		t.Fatal("the in-flight call never answered")
	}
	if a.err != nil {
		t.Fatalf("the in-flight call failed: %v\n%s", a.err, g.stderr)
	}
	if got, isErr := serveCallText(t, a.x); got != "done stalling" || isErr {
		t.Fatalf("the in-flight call answered %q (isError %v), want its result", got, isErr)
	}
	code := g.waitExit(t)
	took := time.Since(sent)
	if code != 0 {
		t.Fatalf("exit status %d after SIGTERM, want 0\n%s", code, g.stderr)
	}
	if took < stall/2 {
		t.Errorf("exited %v after SIGTERM: it cannot have waited for the call", took)
	}
	t.Logf("exited 0 %v after SIGTERM", took.Round(time.Millisecond))

	// Its upstreams, supervisors and servers alike, are gone.
	var left []int
	if !waittest.Poll(serveProcsWait, func() bool {
		left = serveProcs(func(ppid, pgid int) bool { return ppid == pid || slices.Contains(g.upstreamGroups, pgid) })
		return len(left) == 0
	}) {
		t.Fatalf("%v after exit, processes %v of the gateway's upstreams (groups %v) still run", serveProcsWait, left, g.upstreamGroups)
	}

	// JSON logs on stderr, telling the shutdown.
	logs := serveLogRecords(t, g.stderr.String())
	for _, msg := range []string{"serving", "ready", "shutting down", "stopped"} {
		if !slices.ContainsFunc(logs, func(r map[string]any) bool { return r["msg"] == msg }) {
			t.Errorf("no %q log record in\n%s", msg, g.stderr)
		}
	}
}

// serveLogRecords parses serve's stderr: every line must be a JSON object
// with time, level and msg.
func serveLogRecords(t *testing.T, stderr string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(stderr) {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil || r["time"] == nil || r["level"] == nil || r["msg"] == nil {
			t.Errorf("stderr line is not a JSON log record: %q", line)
			continue
		}
		out = append(out, r)
	}
	return out
}

// serveRun runs the binary to completion (bounded) and returns its exit
// status and stderr.
func serveRun(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	bin := toolgateBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), serveBootWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	// Each gateway gets its own store file, never the user's.
	cmd.Env = append(os.Environ(), gateway.SelfEnv+"="+bin, "TOOLGATE_GATEWAY_STORE="+filepath.Join(t.TempDir(), "toolgate.db"))
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errOut, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("toolgate %q still ran after %v\n%s", args, serveBootWait, errOut.String())
	}
	if _, ok := errors.AsType[*exec.ExitError](err); err != nil && !ok {
		t.Fatalf("toolgate %q: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), errOut.String()
}

// AU-7: open mode on a non-loopback address is refused (exit 1, a message
// naming the open endpoint and the flag) before anything is bound or
// spawned. Only the refusal is tested: nothing here listens beyond
// loopback.
func TestServeOpenModeRefusedOffLoopbackAU7(t *testing.T) {
	cfg := writeServeConfig(t, `gateway:
  confirm:
    secret: ${TOOLGATE_CONFIRM_SECRET}
endpoints:
  - path: /mcp
    auth:
      apiKeys:
        - key: ${GATEWAY_KEY}
          actor: {id: gateway}
  - path: /dev
    actor: {id: dev, roles: [ADMIN]}
upstreams:
  - name: echo
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, echo]
`)
	env := map[string]string{"TOOLGATE_CONFIRM_SECRET": serveConfirmSecret, "GATEWAY_KEY": serveGatewayKey}
	port := strconv.Itoa(serveFreePort(t))
	for _, listen := range []string{"0.0.0.0:" + port, ":" + port, "[::]:" + port} {
		t.Run(listen, func(t *testing.T) {
			code, stderr := serveRun(t, env, "serve", "--config", cfg, "--listen", listen)
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%s", code, stderr)
			}
			logs := serveLogRecords(t, stderr)
			if len(logs) != 1 || logs[0]["level"] != "ERROR" || !strings.Contains(logs[0]["msg"].(string), "--insecure-open") ||
				fmt.Sprint(logs[0]["endpoints"]) != "[/dev]" || logs[0]["listen"] != listen {
				t.Fatalf("want one error naming /dev, %s and --insecure-open:\n%s", listen, stderr)
			}
		})
	}
}

// Secrets never reach serve's logs: the API key, the OAuth client secret
// used for introspection, upstream headers, bearer and env, and the confirm
// secret, through start-up, refused and accepted requests, an unreachable
// upstream and shutdown.
func TestServeLogsNoSecrets(t *testing.T) {
	secrets := map[string]string{
		"GATEWAY_KEY":             serveGatewayKey,
		"TOOLGATE_CONFIRM_SECRET": serveConfirmSecret,
		"OAUTH_CLIENT_SECRET":     "serve-SECRET-oauth-client-4b8d2f6a0c",
		"HEADER_SECRET":           "serve-SECRET-header-9a7c5e3b1d",
		"UPSTREAM_BEARER":         "serve-SECRET-upstream-bearer-2e4f6a8c0b",
		"UPSTREAM_ENV_SECRET":     "serve-SECRET-upstream-env-7d5b3f1e9c",
	}
	opaque := "serve-SECRET-opaque-token-3c5e7a9b1d"
	p := authtest.NewProvider(t)
	in := authtest.NewIntrospector(t, "serve-client", secrets["OAUTH_CLIENT_SECRET"])
	env := map[string]string{"OIDC_ISSUER": p.Issuer(), "INTROSPECTION_URL": in.URL()}
	for k, v := range secrets {
		env[k] = v
	}
	cfg := writeServeConfig(t, fmt.Sprintf(`gateway:
  confirm:
    secret: ${TOOLGATE_CONFIRM_SECRET}
endpoints:
  - path: /mcp
    auth:
      anyOf:
        - apiKeys:
            - key: ${GATEWAY_KEY}
              actor: {id: gateway}
        - oauth:
            issuer: ${OIDC_ISSUER}
            introspectionUrl: ${INTROSPECTION_URL}
            clientId: serve-client
            clientSecret: ${OAUTH_CLIENT_SECRET}
upstreams:
  - name: echo
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, echo]
    env: {ECHO_SECRET: "${UPSTREAM_ENV_SECRET}"}
    required: true
  - name: remote
    url: http://127.0.0.1:%d/mcp
    transport: http
    headers: {X-Api-Key: "${HEADER_SECRET}"}
    authorization: ${UPSTREAM_BEARER}
    timeout: 2s
`, serveFreePort(t)))
	g := startServe(t, cfg, env)
	url := g.base + "/mcp"

	in.Activate(opaque, map[string]any{"sub": "opaque-user", "aud": url, "iss": p.Issuer(), "exp": time.Now().Add(time.Minute).Unix()})
	c := serveOpen(t, url, serveGatewayKey)
	if got, _ := serveCallText(t, serveRaw(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo_echo","arguments":{"message":"hello"}}}`)); got != "hello" {
		t.Fatalf("echo_echo: %q", got)
	}
	if x := serveRaw(t, serveClient(url, opaque), serveInitialize); x.Status != http.StatusOK {
		t.Fatalf("an active opaque token: HTTP %d: %s", x.Status, x.Body)
	}
	if in.Hits() == 0 {
		t.Fatal("the opaque token was never introspected, so the client secret was never used")
	}
	for _, bad := range []string{serveGatewayKey + "x", "serve-SECRET-inactive-opaque-1f3b"} {
		if x := serveRaw(t, serveClient(url, bad), serveInitialize); x.Status != http.StatusUnauthorized {
			t.Errorf("a bad token: HTTP %d", x.Status)
		}
	}
	if code := g.terminate(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, g.stderr)
	}
	logs := g.stderr.String()
	if !strings.Contains(logs, `"msg":"stopped"`) || !strings.Contains(logs, `"upstream":"remote"`) {
		t.Fatalf("the logs miss the shutdown or the unreachable upstream:\n%s", logs)
	}
	for name, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("%s leaked into serve's stderr", name)
		}
	}
	if strings.Contains(logs, "serve-SECRET-") {
		t.Errorf("a secret leaked into serve's stderr:\n%s", logs)
	}
}

// serveOperatorConfig is an open-mode endpoint over the notes demo, whose
// actions wait for an operator.
const serveOperatorConfig = `gateway:
  confirm:
    secret: ${TOOLGATE_CONFIRM_SECRET}
endpoints:
  - path: /mcp
    actor: {id: dev, roles: [ADMIN]}
upstreams:
  - name: notes
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, notes]
    required: true
    approval: operator
`

// SV-9, OP-3: SIGTERM while a call waits for an operator. The call is
// rejected at once with isError "the gateway is shutting down", and serve
// exits 0 without waiting out its grace (the call was cut with
// no answer and the process exited 1).
func TestServeShutdownRejectsPendingApprovalSV9(t *testing.T) {
	g := startServe(t, writeServeConfig(t, serveOperatorConfig), map[string]string{"TOOLGATE_CONFIRM_SECRET": serveConfirmSecret})
	c := serveOpen(t, g.base+"/mcp", "")
	preview := serveCallResult(t, serveRaw(t, c, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notes_create_note","arguments":{"text":"at shutdown"}}}`))
	var p struct {
		ConfirmToken string `json:"confirmToken"`
	}
	if json.Unmarshal(preview.StructuredContent, &p) != nil || p.ConfirmToken == "" {
		t.Fatalf("no confirm token in the preview: %s", preview.Raw)
	}
	// With a progress token the waiting call says so on its stream: that
	// is when it is pending.
	st, err := c.Send(t.Context(), fmt.Appendf(nil, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"notes_create_note","arguments":{"text":"at shutdown","confirm":true,"confirmToken":%q},"_meta":{"progressToken":"p"}}}`, p.ConfirmToken), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	first, err := st.Next()
	if err != nil || first.Method != "notifications/progress" {
		t.Fatalf("the confirming call did not wait for an operator: %+v %v\n%s", first, err, g.stderr)
	}
	sent := time.Now()
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var answer mcptest.Message
	for range 100 {
		m, err := st.Next()
		if err != nil {
			t.Fatalf("the waiting call got no answer after SIGTERM: %v\n%s", err, g.stderr)
		}
		if m.IsResponse() {
			answer = m
			break
		}
	}
	var res mcptest.ToolResult
	if json.Unmarshal(answer.Result, &res) != nil || !res.IsError || !strings.Contains(res.Text(), "the gateway is shutting down") {
		t.Fatalf("the waiting call answered %s, want isError saying the gateway is shutting down", answer.Raw)
	}
	if code := g.waitExit(t); code != 0 {
		t.Fatalf("exit status %d after SIGTERM, want 0\n%s", code, g.stderr)
	}
	if took := time.Since(sent); took > shutdownGrace/2 {
		t.Errorf("exited %v after SIGTERM: it waited for the approval instead of rejecting it", took)
	}
}
