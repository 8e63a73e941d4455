package gateway_test

// Helpers of the gateway's tests: real parts only. Upstreams are the
// built-in demo servers over Streamable HTTP in this process, the store is
// a SQLite file in t.TempDir(), and clients talk HTTP on 127.0.0.1.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/store/sqlite"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/demo"
)

// Distinctive secrets of the tests' configs.
const (
	testKey    = "gateway-test-key-3f1a9c7e5b2d"
	testSecret = "gateway-test-confirm-secret-0123456789abcdef"
)

// testEnv is the whole environment the tests' configs are loaded with, so
// no TOOLGATE_… variable of the machine running them changes a config.
var testEnv = []string{"KEY=" + testKey, "SECRET=" + testSecret}

const (
	closeWait = 10 * time.Second // Close's grace for calls in flight (SV-9)
	stepWait  = 30 * time.Second // one start, call or refresh
	leakWait  = 10 * time.Second // goroutines back to their baseline
)

// testCtx is a context bounded for one test.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// serveDemo serves the named built-in upstream over Streamable HTTP on
// 127.0.0.1 until the test ends, as `toolgate demo-upstream NAME --http`
// does, and returns its URL.
func serveDemo(t *testing.T, name string) string {
	t.Helper()
	return serveDemoWith(t, name, demo.Options{})
}

// serveDemoWith is serveDemo with the demo's options (its state directory).
func serveDemoWith(t *testing.T, name string, opts demo.Options) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveDemoOn(t, name, opts, ln)
}

// serveDemoOn is serveDemoWith on a listener of the caller's.
func serveDemoOn(t *testing.T, name string, opts demo.Options, ln net.Listener) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- demo.ServeHTTP(ctx, name, opts, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("demo %s: %v", name, err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("demo %s did not stop within 5s", name)
		}
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// gatedDemo serves the named demo upstream like serveDemo, except that each
// request waits until release is closed; arrived is closed when the first
// request is in, so a test knows the gateway is mid-import.
type gatedDemo struct {
	URL     string
	arrived chan struct{}
	release chan struct{}
}

func serveGatedDemo(t *testing.T, name string) *gatedDemo {
	t.Helper()
	s, err := demo.New(name, demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedDemo{arrived: make(chan struct{}), release: make(chan struct{})}
	mcpHandler := server.NewStreamableHTTPServer(s)
	first := make(chan struct{}, 1)
	first <- struct{}{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-first:
			close(g.arrived)
		default:
		}
		select {
		case <-g.release:
		case <-r.Context().Done():
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() { defer close(served); _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		g.open()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		<-served
	})
	g.URL = "http://" + ln.Addr().String() + "/mcp"
	return g
}

// open lets every request through, once.
func (g *gatedDemo) open() {
	select {
	case <-g.release:
	default:
		close(g.release)
	}
}

// closedURL is an MCP URL on a 127.0.0.1 port nothing listens on (it was
// free a moment ago).
func closedURL(t *testing.T, path string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr + path
}

// loadConfig writes yaml to a file and loads it as toolgate does (OP-1),
// with testEnv as the only environment.
func loadConfig(t *testing.T, yaml string) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(path, config.LoadOptions{
		Environ: func() []string { return testEnv }, HomeDir: t.TempDir(), Version: "test",
	})
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	return cfg
}

// upstreamYAML is one network upstream of a config.
func upstreamYAML(name, url string, required bool) string {
	return fmt.Sprintf("  - name: %s\n    url: %s\n    transport: http\n    timeout: 20s\n    required: %v\n", name, url, required)
}

// gatewayYAML is a config listening on a free 127.0.0.1 port, with the
// store at store, the confirm secret, one API-key endpoint /mcp for alice
// and the given upstreams.
func gatewayYAML(store string, upstreams ...string) string {
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
        - key: ${KEY}
          actor: {id: alice, roles: [MEMBER]}
upstreams:
%s`, store, strings.Join(upstreams, ""))
}

// newGateway runs gateway.New and closes the gateway at cleanup.
func newGateway(t *testing.T, cfg *config.Config, opts *gateway.Options) *gateway.Gateway {
	t.Helper()
	g, err := gateway.New(testCtx(t), cfg, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { closeGateway(t, g) })
	return g
}

// newHandlerGateway runs gateway.NewHandler, which binds nothing, and
// closes the gateway at cleanup.
func newHandlerGateway(t *testing.T, cfg *config.Config, opts *gateway.Options) *gateway.Gateway {
	t.Helper()
	g, err := gateway.NewHandler(testCtx(t), cfg, opts)
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	t.Cleanup(func() { closeGateway(t, g) })
	return g
}

func closeGateway(t *testing.T, g *gateway.Gateway) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	if err := g.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// httpGet fetches url and returns its status and body.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	hc := &http.Client{Timeout: stepWait}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// readiness is what /readyz answers.
type readiness struct {
	Ready    bool `json:"ready"`
	Imported bool `json:"imported"`
	Waiting  []struct {
		Name  string `json:"name"`
		State string `json:"state"`
	} `json:"waiting"`
}

func readyz(t *testing.T, base string) (int, readiness) {
	t.Helper()
	code, body := httpGet(t, base+"/readyz")
	var r readiness
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("/readyz: %v\n%s", err, body)
	}
	return code, r
}

// testProtocol is a revision SV-1 names, one with sessions (SV-2).
const testProtocol = mcpgo.ProtocolVersion20250618

// session is one MCP client session; end closes it and empties its
// connection pool, at most once.
type session struct {
	*client.Client
	init *mcpgo.InitializeResult
	end  func()
	// listChanged holds a signal when the endpoint sent
	// notifications/tools/list_changed since it was last read.
	listChanged chan struct{}
}

// connect opens an MCP session on url with mcp-go's Streamable HTTP client,
// with key as its bearer (AU-1), initializes it (SV-1, SV-2) and waits until
// its standalone GET stream is open, so the endpoint's notifications reach
// it. The session ends at cleanup unless the test ends it first.
func connect(t *testing.T, ctx context.Context, url, key string) *session {
	t.Helper()
	return connectWith(t, ctx, url, map[string]string{"Authorization": "Bearer " + key})
}

// connectWith is connect with the headers every request carries.
func connectWith(t *testing.T, ctx context.Context, url string, headers map[string]string) *session {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	streaming := make(chan struct{})
	signal := sync.OnceFunc(func() { close(streaming) })
	st, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPBasicClient(&http.Client{Transport: streamSignal{next: tr, opened: signal}}),
		transport.WithHTTPHeaders(headers),
		transport.WithContinuousListening(),
		// Ending a session on a gateway the test closed fails by design.
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(st, client.WithProtocolVersion(testProtocol))
	s := &session{Client: c, listChanged: make(chan struct{}, 1), end: sync.OnceFunc(func() {
		_ = c.Close()
		tr.CloseIdleConnections()
	})}
	t.Cleanup(s.end)
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method == mcpgo.MethodNotificationToolsListChanged {
			select {
			case s.listChanged <- struct{}{}:
			default:
			}
		}
	})
	if err := c.Start(ctx); err != nil {
		t.Fatalf("%s: start: %v", url, err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = testProtocol
	init.Params.ClientInfo = mcpgo.Implementation{Name: "toolgate-gateway-test", Version: "1.0.0"}
	if s.init, err = c.Initialize(ctx, init); err != nil {
		t.Fatalf("%s: initialize: %v", url, err)
	}
	select {
	case <-streaming:
	case <-ctx.Done():
		t.Fatalf("%s: the GET stream did not open: %v", url, ctx.Err())
	}
	return s
}

// streamSignal calls opened when a GET answers 200 with an event stream:
// the client's standalone stream is connected.
type streamSignal struct {
	next   http.RoundTripper
	opened func()
}

func (s streamSignal) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodGet && resp.StatusCode == http.StatusOK &&
		strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		s.opened()
	}
	return resp, err
}

// toolNames lists the session's tools by name.
func toolNames(t *testing.T, ctx context.Context, c *session) []string {
	t.Helper()
	res, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// waitServed waits until the session's tools/list has each name in want
// and none in gone. An endpoint mirrors the registry from the gateway's
// event bus, so just after Start, a refresh or a review decision it may
// lag the registry by a few events; it sends list_changed when it catches
// up, so each list after the first waits for one (SV-1, IM-25).
func waitServed(t *testing.T, ctx context.Context, s *session, want, gone []string) []string {
	t.Helper()
	for {
		names := toolNames(t, ctx, s)
		if !slices.ContainsFunc(want, func(n string) bool { return !slices.Contains(names, n) }) &&
			!slices.ContainsFunc(gone, func(n string) bool { return slices.Contains(names, n) }) {
			return names
		}
		select {
		case <-s.listChanged:
		case <-ctx.Done():
			t.Fatalf("tools/list is %q; want %q in it and %q not: %v", names, want, gone, ctx.Err())
		}
	}
}

// call calls a tool and returns its result.
func call(t *testing.T, ctx context.Context, c *session, name string, args map[string]any) *mcpgo.CallToolResult {
	t.Helper()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// resultText is the text of a result's content blocks.
func resultText(res *mcpgo.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcpgo.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// goroutineBaseline is the number of goroutines before a test builds a
// gateway; settle waits until it is back there.
func goroutineBaseline() int {
	runtime.GC()
	return runtime.NumGoroutine()
}

// assertGoroutinesSettle fails unless the goroutine count returns to
// baseline within leakWait. Idle keep-alive connections of the shared
// default transport are closed first: they belong to the process's pool,
// not to whatever last used them, and would otherwise idle for 90 s.
func assertGoroutinesSettle(t *testing.T, baseline int) {
	t.Helper()
	if !waittest.Poll(leakWait, func() bool {
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		return runtime.NumGoroutine() <= baseline
	}) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%d goroutines %v after Close, %d before:\n%s", runtime.NumGoroutine(), leakWait, baseline, buf)
	}
}

// assertStoreReleased opens the store file with another store, as a second
// gateway or the CLI would (OP-5), and checks the gateway's connections
// are gone: SQLite removes the write-ahead log when the last connection to
// the file closes.
func assertStoreReleased(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s-wal is still there (%v): a connection to the store is still open", path, err)
	}
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("reopening the store: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("closing the reopened store: %v", err)
	}
}
