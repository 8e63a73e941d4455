package upstreamoauth_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/auth/upstreamoauth"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/sqlitestore"
	"github.com/toolgate/toolgate/mcp/peers"
)

// startAS runs panva's oidc-provider (testdata/peers/oidc-as.mjs) on
// loopback and returns its issuer. It dies with the test.
func startAS(t *testing.T, env ...string) string {
	t.Helper()
	dir := peers.Dir(t)
	cmd := exec.Command(peers.Node(t), filepath.Join(dir, "oidc-as.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	p := peers.Start(t, cmd)
	t.Cleanup(func() { _ = stdin.Close() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "LISTENING ") {
				lines <- strings.TrimPrefix(l, "LISTENING ")
			}
		}
		close(lines)
	}()
	select {
	case iss, ok := <-lines:
		if !ok {
			t.Fatalf("oidc-provider ended before listening: %s", stderr.String())
		}
		return iss
	case <-p.Done():
		t.Fatalf("oidc-provider exited: %v\n%s", p.Err(), stderr.String())
	}
	return ""
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
	Store *sqlitestore.Store
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
	key     []byte
	timeout time.Duration
	store   string // a store file to share; "" for a new one
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
	st, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ln, base := listen(t)
	g := &gateway{URL: base, Store: st, Path: path, Log: &syncBuffer{}, clock: &clock{}}
	m, err := upstreamoauth.New(upstreamoauth.Options{
		PublicURL: base, Key: o.key, Store: st, Timeout: o.timeout,
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

// browser is one person's browser: its own cookies, redirects followed
// except the one back to the gateway's callback, which tests open
// themselves.
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Jar: jar, Transport: tr, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Path == upstreamoauth.Path+"/callback" {
			return http.ErrUseLastResponse
		}
		if len(via) > 20 {
			return errors.New("too many redirects")
		}
		return nil
	}}
}

var (
	formAction = regexp.MustCompile(`<form[^>]*action="([^"]+)"`)
	hiddenIn   = regexp.MustCompile(`<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"`)
)

// signIn opens a connect URL in b, signs in at the provider's login form
// as user and returns the callback URL the provider redirects to, not yet
// opened.
func signIn(t *testing.T, b *http.Client, connectURL, user string) string {
	t.Helper()
	resp, err := b.Get(connectURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("connect URL answered %d: %s", resp.StatusCode, body)
	}
	for range 3 {
		m := formAction.FindSubmatch(body)
		if m == nil {
			t.Fatalf("no form on the provider's page (%s):\n%s", resp.Request.URL, body)
		}
		action, _ := resp.Request.URL.Parse(string(m[1]))
		form := url.Values{"login": {user}, "password": {"any"}}
		for _, h := range hiddenIn.FindAllSubmatch(body, -1) {
			form.Set(string(h[1]), string(h[2]))
		}
		resp, err = b.PostForm(action.String(), form)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusSeeOther || resp.StatusCode == http.StatusFound {
			loc, _ := resp.Request.URL.Parse(resp.Header.Get("Location"))
			if loc.Path != upstreamoauth.Path+"/callback" {
				t.Fatalf("provider redirected to %s, not the callback", loc)
			}
			return loc.String()
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("provider answered %d at %s:\n%s", resp.StatusCode, resp.Request.URL, body)
		}
	}
	t.Fatalf("the provider never redirected to the callback")
	return ""
}

// open GETs u in b and returns the status and page.
func open(t *testing.T, b *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := b.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
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
