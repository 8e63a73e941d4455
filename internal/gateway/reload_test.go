package gateway_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/internal/waittest"
)

// Second key of the reload tests' configs: bob's.
const bobKey = "gateway-test-bob-key-8d6e4c2a0f1b"

// reloadYAML is a config with an endpoint /mcp taking the given API keys
// (alice's is ${KEY}, bob's bobKey) and the given upstreams.
func reloadYAML(store string, keys []string, upstreams ...string) string {
	var auth strings.Builder
	for _, k := range keys {
		switch k {
		case "alice":
			auth.WriteString("        - key: ${KEY}\n          actor: {id: alice, roles: [MEMBER]}\n")
		case "bob":
			fmt.Fprintf(&auth, "        - key: %s\n          actor: {id: bob, roles: [MEMBER]}\n", bobKey)
		}
	}
	return fmt.Sprintf(`gateway:
  listen: 127.0.0.1:0
  store: %q
  confirm:
    secret: ${SECRET}
endpoints:
  - path: /mcp
    name: toolgate test
    version: 1.0.0
    auth:
      apiKeys:
%supstreams:
%s`, store, auth.String(), strings.Join(upstreams, ""))
}

// startReloadable builds and starts a gateway of yaml logging to log.
func startReloadable(t *testing.T, yaml string, log *logBuffer) (*gateway.Gateway, string) {
	t.Helper()
	g := newGateway(t, loadConfig(t, yaml), &gateway.Options{Logger: slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err := g.Start(testCtx(t)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return g, "http://" + g.Addr() + "/mcp"
}

// OP-8: a reload adds an upstream and removes another while a client's
// session stays open: the session is told through
// notifications/tools/list_changed each time, lists the new upstream's
// tools, calls one, and no longer lists the removed one's.
func TestReloadUpstreamsOP8(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	echo, weather := serveDemo(t, "echo"), serveDemo(t, "weather")
	log := &logBuffer{}
	g, url := startReloadable(t, reloadYAML(store, []string{"alice"}, upstreamYAML("echo", echo, true)), log)
	s := connect(t, ctx, url, testKey)
	waitServed(t, ctx, s, []string{"echo_echo"}, nil)
	session := s.GetSessionId()

	rep, err := g.Reload(ctx, loadConfig(t, reloadYAML(store, []string{"alice"}, upstreamYAML("echo", echo, true), upstreamYAML("weather", weather, false))))
	if err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if !slices.Equal(rep.UpstreamsAdded, []string{"weather"}) || len(rep.UpstreamsRemoved)+len(rep.UpstreamsChanged) != 0 || len(rep.Restart) != 0 {
		t.Errorf("report: %+v", rep)
	}
	select {
	case <-s.listChanged:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed after the reload added an upstream")
	}
	waitServed(t, ctx, s, []string{"echo_echo", "weather_forecast"}, nil)
	if res := call(t, ctx, s, "weather_forecast", map[string]any{"city": "Lyon"}); res.IsError || !strings.Contains(resultText(res), "Lyon") {
		t.Errorf("weather_forecast after the reload: %+v", res)
	}

	rep, err = g.Reload(ctx, loadConfig(t, reloadYAML(store, []string{"alice"}, upstreamYAML("weather", weather, false))))
	if err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if !slices.Equal(rep.UpstreamsRemoved, []string{"echo"}) || len(rep.Diffs) != 1 || len(rep.Diffs[0].Removed) != 1 {
		t.Errorf("report: %+v", rep)
	}
	waitServed(t, ctx, s, []string{"weather_forecast"}, []string{"echo_echo"})
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "echo_echo", map[string]any{"message": "hi"}
	if res, err := s.CallTool(ctx, req); err == nil && !res.IsError || err != nil && !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("a removed upstream's tool: %+v %v, want unknown tool", res, err)
	}
	if s.GetSessionId() != session || len(g.Sessions().List()) != 1 {
		t.Errorf("the session did not survive the reloads: %q → %q, %d live", session, s.GetSessionId(), len(g.Sessions().List()))
	}
	for _, want := range []string{`"msg":"config reloaded"`, `"upstreamsAdded":["weather"]`, `"upstreamsRemoved":["echo"]`, `"msg":"tools imported","upstream":"weather"`} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %s\n%s", want, log)
		}
	}
}

// OP-8, AU-3: a reload that removes alice's API key ends her session at
// its next request with an error saying her credentials are no longer
// accepted; bob's session carries on, and alice's key opens nothing any
// more. Neither key appears in the log (IM-5).
func TestReloadRevokedKeyOP8(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	echo := serveDemo(t, "echo")
	log := &logBuffer{}
	g, url := startReloadable(t, reloadYAML(store, []string{"alice", "bob"}, upstreamYAML("echo", echo, true)), log)
	alice := mcptest.New(url, &mcptest.Options{Authorization: "Bearer " + testKey})
	bob := mcptest.New(url, &mcptest.Options{Authorization: "Bearer " + bobKey})
	for _, c := range []*mcptest.Client{alice, bob} {
		if _, err := c.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alice.ListTools(ctx); err != nil {
		t.Fatal(err)
	}

	rep, err := g.Reload(ctx, loadConfig(t, reloadYAML(store, []string{"bob"}, upstreamYAML("echo", echo, true))))
	if err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if !slices.Equal(rep.EndpointsChanged, []string{"/mcp"}) || len(rep.UpstreamsChanged) != 0 {
		t.Errorf("report: %+v", rep)
	}
	if len(g.Sessions().List()) != 2 {
		t.Errorf("the reload itself ended sessions: %d live", len(g.Sessions().List()))
	}

	_, err = alice.ListTools(ctx)
	var se *mcptest.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusUnauthorized || !strings.Contains(string(se.Body), "no longer accepted") {
		t.Fatalf("alice's next request: %v, want 401 saying her credentials are no longer accepted", err)
	}
	if tools, err := bob.ListTools(ctx); err != nil || len(tools) == 0 {
		t.Errorf("bob's session after the reload: %v %v", tools, err)
	}
	live := g.Sessions().List()
	if len(live) != 1 || live[0].Actor.ID != "bob" {
		t.Errorf("live sessions: %+v, want bob's alone", live)
	}
	// Her session is gone: the same request again is an ordinary refusal.
	_, err = alice.ListTools(ctx)
	if !errors.As(err, &se) || se.Status != http.StatusUnauthorized || strings.Contains(string(se.Body), "no longer accepted") {
		t.Errorf("alice again: %v", err)
	}
	fresh := mcptest.New(url, &mcptest.Options{Authorization: "Bearer " + testKey})
	if _, err := fresh.Initialize(ctx); !errors.As(err, &se) || se.Status != http.StatusUnauthorized {
		t.Errorf("a new session with the removed key: %v", err)
	}
	for _, secret := range []string{testKey, bobKey} {
		if strings.Contains(log.String(), secret) {
			t.Errorf("the log holds a key (IM-5)\n%s", log)
		}
	}
	if !strings.Contains(log.String(), "credentials are no longer accepted") {
		t.Errorf("the ended session is not logged\n%s", log)
	}
}

// OP-8: a reload changing keys that need a restart applies the rest, names
// those keys, keeps their running values, and names them again at the
// next reload; an endpoint gone from the config refuses every request.
func TestReloadRestartKeysOP8(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	echo := serveDemo(t, "echo")
	log := &logBuffer{}
	base := reloadYAML(store, []string{"alice"}, upstreamYAML("echo", echo, true))
	g, url := startReloadable(t, strings.Replace(base, "endpoints:\n", "endpoints:\n  - path: /dev\n    actor: {id: dev}\n", 1), log)
	listen := g.Config().Gateway.Listen

	next := strings.Replace(base, "  listen: 127.0.0.1:0\n", "  listen: 127.0.0.1:1\n  maxSessions: 7\n  review: {mode: require}\n", 1)
	next = strings.Replace(next, "name: toolgate test", "name: renamed", 1)
	for range 2 {
		rep, err := g.Reload(ctx, loadConfig(t, next))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"gateway.listen", "gateway.maxSessions", "endpoints[0].name", "endpoints: /dev removed"} {
			if !slices.ContainsFunc(rep.Restart, func(k string) bool { return strings.HasPrefix(k, want) }) {
				t.Errorf("restart keys %q lack %s", rep.Restart, want)
			}
		}
		if g.Config().Gateway.Listen != listen || g.Config().Gateway.MaxSessions == 7 || g.Config().Endpoints[1].Name != "toolgate test" {
			t.Errorf("a restart-only value was taken: %+v", g.Config().Gateway)
		}
	}
	if g.Reviewer().Mode() != "require" || g.Config().Gateway.Review.Mode != "require" {
		t.Errorf("review mode %s: the live key was not applied", g.Reviewer().Mode())
	}
	dev := mcptest.New(strings.TrimSuffix(url, "/mcp")+"/dev", nil)
	if _, err := dev.Initialize(ctx); err == nil {
		t.Error("the removed endpoint still serves")
	}
	if !strings.Contains(log.String(), "take effect at the next restart") || !strings.Contains(log.String(), "gateway.listen") {
		t.Errorf("the restart keys are not logged\n%s", log)
	}
}

// OP-8: a config whose new parts cannot be built (an OAuth issuer that
// cannot be discovered) is refused whole: the upstream added beside it is
// not added, the keys stay, the gateway keeps serving.
func TestReloadRefusedOP8(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	echo, weather := serveDemo(t, "echo"), serveDemo(t, "weather")
	g, url := startReloadable(t, reloadYAML(store, []string{"alice"}, upstreamYAML("echo", echo, true)), &logBuffer{})
	c := mcptest.New(url, &mcptest.Options{Authorization: "Bearer " + testKey})
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	bad := reloadYAML(store, nil, upstreamYAML("echo", echo, true), upstreamYAML("weather", weather, false))
	bad = strings.Replace(bad, "      apiKeys:\n", "      oauth:\n        issuer: "+strings.TrimSuffix(closedURL(t, ""), "/")+"\n", 1)
	if _, err := g.Reload(ctx, loadConfig(t, bad)); err == nil || !strings.Contains(err.Error(), "endpoints[0]") {
		t.Fatalf("Reload of an undiscoverable issuer: %v", err)
	}
	if names := g.Registry().Names("weather"); len(names) != 0 {
		t.Errorf("the refused config's upstream was added: %q", names)
	}
	if tools, err := c.ListTools(ctx); err != nil || len(tools) == 0 {
		t.Errorf("the session after a refused reload: %v %v", tools, err)
	}
	if _, err := g.Reload(ctx, nil); err == nil {
		t.Error("Reload(nil) accepted")
	}
	var invalid config.Config
	if _, err := g.Reload(ctx, &invalid); err == nil {
		t.Error("Reload of an invalid config accepted")
	}
}

// OP-8, RV-3: a reload that changes the review mode changes the prompts and
// resources served at once, as it does the tools: under require the
// undecided ones are withheld, and pin serves them again.
func TestReloadReviewModeCatalogOP8(t *testing.T) {
	ctx := testCtx(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	notes := serveDemo(t, "notes")
	base := reloadYAML(store, []string{"alice"}, upstreamYAML("notes", notes, true))
	g, url := startReloadable(t, base, &logBuffer{})
	prompts := func() []string {
		t.Helper()
		c := mcptest.New(url, &mcptest.Options{Authorization: "Bearer " + testKey})
		if _, err := c.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		res, rpcErr, err := c.Call(ctx, "prompts/list", map[string]any{})
		if err != nil || rpcErr != nil {
			t.Fatalf("prompts/list: %v %v", rpcErr, err)
		}
		var pl struct {
			Prompts []struct {
				Name string `json:"name"`
			} `json:"prompts"`
		}
		if err := json.Unmarshal(res, &pl); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range pl.Prompts {
			names = append(names, p.Name)
		}
		return names
	}
	// The endpoint learns of the first import's prompts from the bus: await
	// them; each reload's effect below is checked at once.
	waittest.Succeeds(t, 10*time.Second, "the first import's prompts", func() error {
		if got := prompts(); !slices.Equal(got, []string{"notes_summarize"}) {
			return fmt.Errorf("prompts under pin: %q", got)
		}
		return nil
	})
	require := strings.Replace(base, "  confirm:\n", "  review: {mode: require}\n  confirm:\n", 1)
	if _, err := g.Reload(ctx, loadConfig(t, require)); err != nil {
		t.Fatal(err)
	}
	if got := prompts(); len(got) != 0 {
		t.Errorf("prompts under require, none approved: %q", got)
	}
	if _, err := g.Reload(ctx, loadConfig(t, base)); err != nil {
		t.Fatal(err)
	}
	if got := prompts(); !slices.Equal(got, []string{"notes_summarize"}) {
		t.Errorf("prompts back under pin: %q", got)
	}
}
