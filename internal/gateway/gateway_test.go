package gateway_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/store/memory"
)

var notesTools = []string{"notes_create_note", "notes_list_notes", "notes_search", "notes_side_effects"}

// SV-1, SV-2, AU-1, IM-7, SV-9, OP-5: the whole lifecycle over a real
// upstream and store. New binds the listener but serves nothing; Start
// serves and imports; an MCP client behind an API key initializes, lists
// and calls; Close stops serving, ends the upstream connections and closes
// the store, leaving no goroutine behind, and a second Close is a no-op.
func TestLifecycle(t *testing.T) {
	ctx := testCtx(t)
	notes := serveDemo(t, "notes")
	store := filepath.Join(t.TempDir(), "toolgate.db")
	cfg := loadConfig(t, gatewayYAML(store, upstreamYAML("notes", notes, true)))
	baseline := goroutineBaseline()

	g, err := gateway.New(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			closeGateway(t, g)
		}
	})
	addr := g.Addr()
	if host, port, err := net.SplitHostPort(addr); err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("Addr() = %q (%v), want the bound 127.0.0.1 port", addr, err)
	}
	if g.Handler() == nil || g.Ready() {
		t.Fatalf("after New: handler %v, ready %v", g.Handler() != nil, g.Ready())
	}
	if len(g.Registry().Names("notes")) != 0 {
		t.Fatalf("New imported already: %q", g.Registry().Names("notes"))
	}

	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	base := "http://" + addr
	if !g.Ready() {
		t.Error("not ready after Start")
	}
	if code, body := httpGet(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, r := readyz(t, base); code != http.StatusOK || !r.Ready || !r.Imported || len(r.Waiting) != 0 {
		t.Errorf("/readyz after Start: %d %+v", code, r)
	}

	// AU-4: no credential, no session.
	resp, err := http.Post(base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("no credential: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}

	s := connect(t, ctx, base+"/mcp", testKey)
	if s.init.ServerInfo.Name != "toolgate test" || s.init.ServerInfo.Version != "1.0.0" || s.GetSessionId() == "" {
		t.Errorf("initialize: %+v, session %q", s.init.ServerInfo, s.GetSessionId())
	}
	names := waitServed(t, ctx, s, notesTools, nil)
	slices.Sort(names)
	if !slices.Equal(names, notesTools) {
		t.Errorf("tools/list = %q, want %q", names, notesTools)
	}
	if res := call(t, ctx, s, "notes_search", map[string]any{"query": "toolgate"}); res.IsError || resultText(res) != "1: Welcome to toolgate." {
		t.Errorf("notes_search: %q isError=%v", resultText(res), res.IsError)
	}
	// CF-1: the confirm gate New built from the secret stands in front of
	// the action: a preview, and nothing ran.
	preview := call(t, ctx, s, "notes_create_note", map[string]any{"text": "not yet"})
	if sc, _ := preview.StructuredContent.(map[string]any); preview.IsError || sc["confirmToken"] == nil {
		t.Errorf("notes_create_note without confirm: %+v", preview)
	}
	if res := call(t, ctx, s, "notes_side_effects", nil); resultText(res) != "0" {
		t.Errorf("side effects after a preview: %q", resultText(res))
	}
	if got := g.Sessions().List(); len(got) != 1 || got[0].Actor.ID != "alice" {
		t.Errorf("sessions: %+v", got)
	}

	closeGateway(t, g)
	closed = true
	// SV-2, SV-9: shutdown ends every session before Close returns.
	if got := g.Sessions().List(); len(got) != 0 {
		t.Errorf("sessions after Close: %+v", got)
	}
	// SV-2: shutdown ended the session; the port is no longer served.
	if _, err := s.ListTools(ctx, mcpgo.ListToolsRequest{}); err == nil {
		t.Error("tools/list after Close succeeded")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Close", addr)
	}
	s.end()
	cctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	if err := g.Close(cctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if st := g.Importer().Statuses(); st[0].State != core.StateDisconnected {
		t.Errorf("upstream after Close: %+v", st[0])
	}
	assertGoroutinesSettle(t, baseline)
	assertStoreReleased(t, store)
}

// /healthz answers from New on; /readyz is 503 until the first import is
// done — while an upstream is still being listed it is not ready — and 200
// after (IM-7). Handler serves without the gateway's listener (NewHandler).
func TestReadyOnlyAfterFirstImport(t *testing.T) {
	ctx := testCtx(t)
	slow := serveGatedDemo(t, "echo")
	cfg := loadConfig(t, gatewayYAML(filepath.Join(t.TempDir(), "toolgate.db"), upstreamYAML("echo", slow.URL, true)))
	g := newHandlerGateway(t, cfg, nil)
	if g.Addr() != "" {
		t.Fatalf("NewHandler bound %q", g.Addr())
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)

	if code, body := httpGet(t, srv.URL+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz before Start: %d %q", code, body)
	}
	if code, r := readyz(t, srv.URL); code != http.StatusServiceUnavailable || r.Ready || r.Imported {
		t.Errorf("/readyz before Start: %d %+v", code, r)
	}

	started := make(chan error, 1)
	go func() { started <- g.Start(ctx) }()
	select {
	case <-slow.arrived:
	case err := <-started:
		t.Fatalf("Start returned before the upstream was asked: %v", err)
	case <-ctx.Done():
		t.Fatal("the gateway never reached the upstream")
	}
	if code, r := readyz(t, srv.URL); code != http.StatusServiceUnavailable || r.Ready || r.Imported {
		t.Errorf("/readyz mid-import: %d %+v", code, r)
	}
	if code, _ := httpGet(t, srv.URL+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz mid-import: %d", code)
	}
	slow.open()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Start did not return")
	}
	if code, r := readyz(t, srv.URL); code != http.StatusOK || !r.Ready || !r.Imported {
		t.Errorf("/readyz after Start: %d %+v", code, r)
	}
	s := connect(t, ctx, srv.URL+"/mcp", testKey)
	waitServed(t, ctx, s, []string{"echo_echo"}, nil)
	if res := call(t, ctx, s, "echo_echo", map[string]any{"message": "through Handler"}); resultText(res) != "through Handler" {
		t.Errorf("echo_echo: %q", resultText(res))
	}
}

// IM-8: a required upstream that is down fails Start, naming it, and keeps
// /readyz at 503 listing it; /healthz still answers. An optional one that
// is down is skipped and does not hold readiness back.
func TestRequiredUpstreamDownNotReady(t *testing.T) {
	ctx := testCtx(t)
	echo := serveDemo(t, "echo")
	down := closedURL(t, "/mcp")

	t.Run("required", func(t *testing.T) {
		cfg := loadConfig(t, gatewayYAML(filepath.Join(t.TempDir(), "toolgate.db"),
			upstreamYAML("echo", echo, false), upstreamYAML("vital", down, true)))
		g := newHandlerGateway(t, cfg, nil)
		srv := httptest.NewServer(g.Handler())
		t.Cleanup(srv.Close)
		err := g.Start(ctx)
		if err == nil || !strings.Contains(err.Error(), `required upstream "vital"`) {
			t.Fatalf("Start with a required upstream down: %v", err)
		}
		if g.Ready() {
			t.Error("Ready after a failed Start")
		}
		code, r := readyz(t, srv.URL)
		if code != http.StatusServiceUnavailable || r.Ready || len(r.Waiting) != 1 || r.Waiting[0].Name != "vital" || r.Waiting[0].State != string(core.StateFailed) {
			t.Errorf("/readyz: %d %+v", code, r)
		}
		if code, _ := httpGet(t, srv.URL+"/healthz"); code != http.StatusOK {
			t.Errorf("/healthz: %d", code)
		}
	})

	t.Run("optional", func(t *testing.T) {
		cfg := loadConfig(t, gatewayYAML(filepath.Join(t.TempDir(), "toolgate.db"),
			upstreamYAML("echo", echo, true), upstreamYAML("offline", down, false)))
		g := newHandlerGateway(t, cfg, nil)
		srv := httptest.NewServer(g.Handler())
		t.Cleanup(srv.Close)
		if err := g.Start(ctx); err != nil {
			t.Fatalf("Start with an optional upstream down: %v", err)
		}
		if code, r := readyz(t, srv.URL); code != http.StatusOK || !r.Ready {
			t.Errorf("/readyz: %d %+v", code, r)
		}
		s := connect(t, ctx, srv.URL+"/mcp", testKey)
		if names := waitServed(t, ctx, s, []string{"echo_echo"}, nil); !slices.Equal(names, []string{"echo_echo"}) {
			t.Errorf("tools/list = %q", names)
		}
	})
}

// NewImporter (check, tools, policy test, review) builds review, registry
// and importer and nothing that serves: no listener — the configured port,
// taken here, is never tried — and, with ReviewsInMemory or
// ReviewsIfStored and no store yet, no store file. ReviewsStored creates
// the store and records the decisions, which ReviewsIfStored reads back.
func TestImporter(t *testing.T) {
	ctx := testCtx(t)
	echo := serveDemo(t, "echo")
	dir := t.TempDir()
	store := filepath.Join(dir, "toolgate.db")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := loadConfig(t, gatewayYAML(store, upstreamYAML("echo", echo, true)))
	cfg.Gateway.Listen = taken.Addr().String()
	baseline := goroutineBaseline()

	// open imports once through a new importer and returns it with echo's
	// tool; the importer is closed at cleanup.
	open := func(reviews gateway.ReviewStore) (*gateway.Importer, core.ToolInfo) {
		t.Helper()
		im, err := gateway.NewImporter(ctx, cfg, &gateway.ImporterOptions{Reviews: reviews})
		if err != nil {
			t.Fatalf("NewImporter(%d): %v", reviews, err)
		}
		t.Cleanup(func() { _ = im.Close(context.Background()) })
		if err := im.Start(ctx); err != nil {
			t.Fatalf("Start: %v", err)
		}
		if names := im.Registry().Names("echo"); !slices.Equal(names, []string{"echo_echo"}) {
			t.Fatalf("imported %q", names)
		}
		tool, _ := im.Registry().Get("echo_echo")
		return im, tool.Info()
	}
	closeImporter := func(im *gateway.Importer) {
		t.Helper()
		cctx, cancel := context.WithTimeout(context.Background(), closeWait)
		defer cancel()
		if err := im.Close(cctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	storeFiles := func() []os.DirEntry {
		t.Helper()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return entries
	}

	for _, reviews := range []gateway.ReviewStore{gateway.ReviewsInMemory, gateway.ReviewsIfStored} {
		im, tool := open(reviews)
		if err := im.Reviewer().Approve(ctx, tool, "alice"); err != nil {
			t.Fatalf("approve in memory: %v", err)
		}
		closeImporter(im)
		if entries := storeFiles(); len(entries) != 0 {
			t.Errorf("importer (%d) wrote to the store's directory: %v", reviews, entries)
		}
	}

	im, tool := open(gateway.ReviewsStored)
	if got := im.Reviewer().State(tool); got == core.ReviewApproved {
		t.Fatalf("a decision made in memory reached the store: %s", got)
	}
	if err := im.Reviewer().Approve(ctx, tool, "alice"); err != nil {
		t.Fatalf("approve in the store: %v", err)
	}
	closeImporter(im)
	assertStoreReleased(t, store)
	for _, tc := range []struct {
		reviews gateway.ReviewStore
		want    core.ReviewState
	}{{gateway.ReviewsIfStored, core.ReviewApproved}, {gateway.ReviewsInMemory, core.ReviewNew}} {
		im, tool := open(tc.reviews)
		if got := im.Reviewer().State(tool); got != tc.want {
			t.Errorf("importer (%d) after a stored approval: %s, want %s", tc.reviews, got, tc.want)
		}
		closeImporter(im)
	}
	assertStoreReleased(t, store)
	assertGoroutinesSettle(t, baseline)

	if im, err := gateway.NewImporter(ctx, cfg, &gateway.ImporterOptions{Reviews: 99}); err == nil {
		_ = im.Close(context.Background())
		t.Error("NewImporter with an unknown review store succeeded")
	}
}

// Close before Start releases what New built, listener and store included,
// and is idempotent.
func TestCloseWithoutStart(t *testing.T) {
	store := filepath.Join(t.TempDir(), "toolgate.db")
	cfg := loadConfig(t, gatewayYAML(store, upstreamYAML("echo", serveDemo(t, "echo"), true)))
	baseline := goroutineBaseline()
	g, err := gateway.New(testCtx(t), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := g.Addr()
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), closeWait)
		if err := g.Close(ctx); err != nil {
			t.Errorf("Close #%d: %v", i+1, err)
		}
		cancel()
	}
	// The port is free again: another listener can have it.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("%s after Close: %v", addr, err)
	}
	ln.Close()
	assertGoroutinesSettle(t, baseline)
	assertStoreReleased(t, store)
}

// SV-2, SV-9: Close returns once every session is ended — ending them is
// part of Close, not left running behind it. A gateway with nothing else to
// close (no upstream, a store it does not own) returns from Close at once,
// so a shutdown that only started the endpoints' close would be caught.
func TestCloseEndsSessionsFirst(t *testing.T) {
	ctx := testCtx(t)
	cfg := loadConfig(t, gatewayYAML(""))
	g := newGateway(t, cfg, &gateway.Options{Store: memory.NewMemStore()})
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	const sessions = 8
	for range sessions {
		connect(t, ctx, "http://"+g.Addr()+"/mcp", testKey)
	}
	if n := len(g.Sessions().List()); n != sessions {
		t.Fatalf("%d sessions, want %d", n, sessions)
	}
	closeGateway(t, g)
	if got := g.Sessions().List(); len(got) != 0 {
		t.Errorf("%d of %d sessions still live when Close returned", len(got), sessions)
	}
}
