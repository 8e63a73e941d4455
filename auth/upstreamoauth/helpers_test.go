package upstreamoauth_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/auth/upstreamoauth"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/oidctest"
	"github.com/toolgate/toolgate/internal/store/postgres"
	"github.com/toolgate/toolgate/internal/store/sqlite"
)

func startAS(t *testing.T, env ...string) string { return oidctest.Start(t, env...) }

func browser(t *testing.T) *http.Client { return oidctest.Browser(t) }

func signIn(t *testing.T, b *http.Client, connectURL, user string) string {
	t.Helper()
	return oidctest.SignIn(t, b, connectURL, user)
}

// connectThrough opens a connect URL and continues on the gateway's page,
// returning where that ended: the provider's login page or a refusal.
func connectThrough(t *testing.T, b *http.Client, connectURL string) (int, string) {
	t.Helper()
	resp, body := oidctest.Connect(t, b, connectURL)
	return resp.StatusCode, string(body)
}

func open(t *testing.T, b *http.Client, u string) (int, string) {
	t.Helper()
	return oidctest.Open(t, b, u)
}

// serve serves h on a loopback listener until the test ends.
func serve(t *testing.T, ln net.Listener, h http.Handler) {
	t.Helper()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = srv.Close()
		<-done
	})
}

func listen(t *testing.T) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln, "http://" + ln.Addr().String()
}

// resource is an MCP-like upstream that really checks who calls: the
// auth package's JWT verification against the provider, audience its own
// URL, with its RFC 9728 metadata. It answers the actor it saw.
type resource struct {
	URL string
	mu  sync.Mutex
	// seen holds every actor a request authenticated as.
	seen []string
}

func startResource(t *testing.T, issuer string) *resource {
	t.Helper()
	ln, base := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	strat, err := auth.OAuth(ctx, auth.OAuthConfig{Issuer: issuer, HTTPClient: http.DefaultClient, ScopesSupported: []string{"crm.read", "crm.write"}})
	if err != nil {
		t.Fatal(err)
	}
	ep := auth.EndpointAuth{Path: "/mcp", Strategy: strat, PublicURL: base}
	r := &resource{URL: base + "/mcp"}
	mux := http.NewServeMux()
	mux.Handle(auth.MetadataPath("/mcp"), auth.MetadataHandler(ep))
	mux.Handle("/mcp", auth.Middleware(ep)(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		a, _ := auth.ActorFrom(req.Context())
		r.mu.Lock()
		r.seen = append(r.seen, a.ID)
		r.mu.Unlock()
		fmt.Fprint(w, a.ID)
	})))
	serve(t, ln, mux)
	return r
}

// whoAmI calls the resource with token and returns the actor it saw.
func (r *resource) whoAmI(t *testing.T, token string) (string, int) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.URL, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode
}

// gateway is a Manager served on loopback, with a real store file, its
// log and events captured for leak checks.
type gateway struct {
	URL   string
	M     *upstreamoauth.Manager
	Store upstreamoauth.Store
	Path  string
	Log   *syncBuffer
	clock *clock

	mu     sync.Mutex
	events []core.EventData
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// clock is the manager's time: tests move it instead of waiting.
type clock struct {
	mu sync.Mutex
	d  time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.d)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.d += d
	c.mu.Unlock()
}

var testKey = bytes.Repeat([]byte("k"), 32)

type gatewayOptions struct {
	key, previous []byte
	timeout       time.Duration
	store         string       // a store file to share; "" for a new one
	pg            string       // a PostgreSQL store's DSN instead of a file
	ln            net.Listener // the gateway's listener, made beforehand; nil for a new one
}

func startGateway(t *testing.T, ups []upstreamoauth.Upstream, o gatewayOptions) *gateway {
	t.Helper()
	if o.key == nil {
		o.key = testKey
	}
	path := o.store
	if path == "" {
		path = filepath.Join(t.TempDir(), "toolgate.db")
	}
	var st interface {
		upstreamoauth.Store
		Close() error
	}
	var err error
	if o.pg != "" {
		st, err = postgres.Open(context.Background(), o.pg)
	} else {
		st, err = sqlite.Open(context.Background(), path)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ln, base := o.ln, ""
	if ln == nil {
		ln, base = listen(t)
	} else {
		base = "http://" + ln.Addr().String()
	}
	g := &gateway{URL: base, Store: st, Path: path, Log: &syncBuffer{}, clock: &clock{}}
	m, err := upstreamoauth.New(upstreamoauth.Options{
		PublicURL: base, Key: o.key, Previous: o.previous, Store: st, Timeout: o.timeout,
		Logger: slog.New(slog.NewTextHandler(g.Log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:    g.clock.now,
		Publish: func(e core.EventData) {
			g.mu.Lock()
			g.events = append(g.events, e)
			g.mu.Unlock()
		},
	}, ups)
	if err != nil {
		t.Fatal(err)
	}
	g.M = m
	t.Cleanup(m.Close)
	// disconnect runs as the actor named in X-Test-Actor, standing in for
	// an endpoint's authentication.
	h := m.Handler()
	serve(t, ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("X-Test-Actor"); a != "" {
			r = r.WithContext(auth.WithActor(r.Context(), core.Actor{ID: a}))
		}
		h.ServeHTTP(w, r)
	}))
	return g
}

func (g *gateway) eventText() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return fmt.Sprintf("%+v", g.events)
}

// connect runs a whole connect for user as actor and fails the test unless
// it ends connected.
func connect(t *testing.T, g *gateway, upstream, actor, user string) {
	t.Helper()
	b := browser(t)
	cb := signIn(t, b, g.M.ConnectURL(upstream, actor), user)
	if code, page := open(t, b, cb); code != http.StatusOK || !strings.Contains(page, "Connected") {
		t.Fatalf("callback answered %d: %s", code, page)
	}
}
