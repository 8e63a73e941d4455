package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/upstreamtest"
	"github.com/toolgate/toolgate/mcp/upstream"
)

// fakeTokens hands out a token per connected actor; the others get an
// error wrapping core.ErrNotConnected, as the real manager's does.
type fakeTokens struct {
	mu    sync.Mutex
	order []string
	tok   map[string]string
}

func (f *fakeTokens) connect(actor string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.order = append(f.order, actor)
	f.tok[actor] = "tok-" + actor
}

func (f *fakeTokens) revoke(actor string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.order = slices.DeleteFunc(f.order, func(a string) bool { return a == actor })
	delete(f.tok, actor)
}

func (f *fakeTokens) Token(_ context.Context, upstream, actor string) (string, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.tok[actor]; ok {
		return t, "conn-" + actor, nil
	}
	return "", "", fmt.Errorf("%s: open https://gw.example.com/connect-%s: %w", upstream, actor, core.ErrNotConnected)
}

// Refused gives a refused actor a new token once; a second refusal ends
// the connection.
func (f *fakeTokens) Refused(_ context.Context, upstream, actor, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.tok[actor]; ok && !strings.HasSuffix(t, "-2") {
		f.tok[actor] = t + "-2"
		return nil
	}
	delete(f.tok, actor)
	return fmt.Errorf("%s: refused, connect again: %w", upstream, core.ErrNotConnected)
}

func (f *fakeTokens) CatalogActor(context.Context, string) (string, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.order) == 0 {
		return "", false, nil
	}
	return f.order[0], true, nil
}

// bearerRecorder proxies to target and records each request's bearer.
type bearerRecorder struct {
	mu   sync.Mutex
	seen []string
	// refuse are tokens answered with HTTP 401.
	refuse map[string]bool
}

func (b *bearerRecorder) count(tok string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, s := range b.seen {
		if s == tok {
			n++
		}
	}
	return n
}

func serveRecorded(t *testing.T, target string) (string, *bearerRecorder) {
	t.Helper()
	u, _ := url.Parse(target)
	u.Path = ""
	rec := &bearerRecorder{refuse: map[string]bool{}}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		rec.mu.Lock()
		rec.seen = append(rec.seen, tok)
		refused := rec.refuse[tok]
		rec.mu.Unlock()
		if refused {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "revoked", http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	})}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return "http://" + ln.Addr().String() + "/mcp", rec
}

func callAs(ctx context.Context, actor string) context.Context {
	return core.WithCall(ctx, core.Call{Actor: core.Actor{ID: actor}})
}

// UI-2: a perActor upstream lists the connect tool until an actor is
// connected, answers an unconnected actor's call with their connect text
// without sending anything, sends each actor's calls with that actor's
// token, notes the connection for the audit, and moves its catalog to the
// next actor when the first one's connection goes.
func TestOAuthUpstreamPerActor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	target, rec := serveRecorded(t, upstreamtest.ServeDemo(t, "notes"))
	tokens := &fakeTokens{tok: map[string]string{}}
	up, err := upstream.NewOAuthUpstream(upstream.OAuthUpstreamOptions{Upstream: upstream.Options{Name: "crm", URL: target, Transport: "http"}, PerActor: true, Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	changed := make(chan struct{}, 8)
	up.OnToolsChanged(func() { changed <- struct{}{} })

	if _, err := up.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	tools, err := up.ListTools(ctx)
	if err != nil || len(tools) != 1 || tools[0].Name != upstream.ConnectTool {
		t.Fatalf("before any connection: %+v, %v", tools, err)
	}
	res, err := up.CallTool(callAs(ctx, "carol"), upstream.ConnectTool, nil)
	if err != nil || !res.IsError || !strings.Contains(string(res.JSON), "connect-carol") {
		t.Fatalf("carol's connect call: %s, %v", res.JSON, err)
	}
	if res, _ := up.CallTool(ctx, "list_notes", nil); !res.IsError || !strings.Contains(string(res.JSON), "no actor") {
		t.Fatalf("a call without an actor: %s", res.JSON)
	}

	tokens.connect("alice")
	res, err = up.CallTool(callAs(ctx, "alice"), upstream.ConnectTool, nil)
	if err != nil || res.IsError {
		t.Fatalf("alice's connect call once connected: %s, %v", res.JSON, err)
	}
	<-changed
	tools, err = up.ListTools(ctx)
	if err != nil || !slices.ContainsFunc(tools, func(rt core.RemoteTool) bool { return rt.Name == "list_notes" }) {
		t.Fatalf("after alice connected: %+v, %v", tools, err)
	}
	if rec.count("tok-alice") == 0 {
		t.Fatal("the catalog was not listed with alice's token")
	}

	before := len(rec.seen)
	res, err = up.CallTool(callAs(ctx, "bob"), "list_notes", nil)
	if err != nil || !res.IsError || !strings.Contains(string(res.JSON), "connect-bob") {
		t.Fatalf("bob's call before connecting: %s, %v", res.JSON, err)
	}
	if rec.mu.Lock(); len(rec.seen) != before {
		rec.mu.Unlock()
		t.Fatal("bob's call went upstream without a connection of his")
	}
	rec.mu.Unlock()

	tokens.connect("bob")
	cctx := callAs(ctx, "bob")
	if res, err := up.CallTool(cctx, "list_notes", nil); err != nil || res.IsError {
		t.Fatalf("bob's call: %s, %v", res.JSON, err)
	}
	if rec.count("tok-bob") == 0 {
		t.Fatal("bob's call did not carry his token")
	}
	if got := core.ConnectionUsed(cctx); got != "conn-bob" {
		t.Fatalf("the call noted connection %q", got)
	}

	// The upstream refuses bob's token: it is refreshed and the call sent
	// again; refused again, bob is asked to connect.
	rec.mu.Lock()
	rec.refuse["tok-bob"] = true
	rec.mu.Unlock()
	if res, err := up.CallTool(callAs(ctx, "bob"), "list_notes", nil); err != nil || res.IsError || rec.count("tok-bob-2") == 0 {
		t.Fatalf("bob's call after a 401: %s, %v", res.JSON, err)
	}
	rec.mu.Lock()
	rec.refuse["tok-bob-2"] = true
	rec.mu.Unlock()
	if res, err := up.CallTool(callAs(ctx, "bob"), "list_notes", nil); err != nil || !res.IsError || !strings.Contains(string(res.JSON), "connect again") {
		t.Fatalf("bob's call after a second 401: %s, %v", res.JSON, err)
	}
	tokens.connect("bob")
	rec.mu.Lock()
	clear(rec.refuse)
	rec.mu.Unlock()

	tokens.revoke("alice")
	up.ConnectionChanged("alice", "revoked")
	<-changed
	n := rec.count("tok-bob")
	if _, err := up.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	if rec.count("tok-bob") == n {
		t.Fatal("after alice's revoke the catalog was not listed through bob's connection")
	}
	if res, _ := up.CallTool(callAs(ctx, "alice"), "list_notes", nil); !res.IsError {
		t.Fatal("alice's call after her revoke was answered")
	}
}

// UI-2: a shared upstream nobody has connected yet says so, and how an
// operator connects it, whether it is listed or called; nothing is sent
// upstream.
func TestOAuthUpstreamSharedNotConnected(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	target, rec := serveRecorded(t, upstreamtest.ServeDemo(t, "notes"))
	up, err := upstream.NewOAuthUpstream(upstream.OAuthUpstreamOptions{Upstream: upstream.Options{Name: "crm", URL: target, Transport: "http"},
		Tokens: &fakeTokens{tok: map[string]string{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	_, _ = up.Connect(ctx)
	_, listErr := up.ListTools(ctx)
	_, callErr := up.CallTool(callAs(ctx, "alice"), "list_notes", nil)
	for what, err := range map[string]error{"list": listErr, "call": callErr} {
		if !errors.Is(err, core.ErrNotConnected) || !strings.Contains(fmt.Sprint(err), "toolgate connect crm") {
			t.Errorf("%s: %v", what, err)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if n := len(rec.seen); n != 0 {
		t.Errorf("%d requests went upstream with no connection", n)
	}
}
