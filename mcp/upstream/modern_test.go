package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/upstreams"
	"github.com/toolgate/toolgate/internal/upstreamtest"
	"github.com/toolgate/toolgate/internal/waittest"
)

// newModernHTTP is a modern-only test server checking authOptions'
// credentials (IM-4).
func newModernHTTP() *upstreamtest.ModernHTTP {
	return upstreamtest.NewModernHTTP(upstreamtest.CheckAuth(VerifySignature))
}

// serveOn serves h on addr (":0" for any port) until the test ends or
// the returned stop is called; it returns the address.
func serveOn(t *testing.T, addr string, h http.Handler) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = hs.Close()
			<-done
		})
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// modernOptions are authOptions against a modern server at addr.
func modernOptions(addr string) Options {
	o := authOptions("http://"+addr+"/mcp", "http")
	o.Name = "modern"
	return o
}

// IM-2, IM-4, IM-17, IM-25, IM-32: an upstream that serves only the
// stateless revision over Streamable HTTP is found by server/discover
// after it refuses initialize, and is listed raw, called, pinged and heard
// from through subscriptions/listen, every request signed and carrying the
// revision's _meta and headers. An elicitation it asks for with no client
// session to ask is declined.
func TestModernOnlyUpstreamHTTP(t *testing.T) {
	leakCheck(t)
	m := newModernHTTP()
	addr, _ := serveOn(t, "127.0.0.1:0", m)
	u, err := New(modernOptions(addr))
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 16)
	u.(core.ToolsChangedNotifier).OnToolsChanged(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	info, err := u.Connect(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer u.Close()
	if info.Protocol != ModernProtocolVersion || info.Name != "modern-http" || info.Version != "7.0.0" {
		t.Errorf("server info = %+v", info)
	}
	if got := u.(core.TransportReporter).Transport(); got != "http" {
		t.Errorf("transport = %q", got)
	}
	checkModernUpstream(t, u, changed)
	if err := u.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	methods, bad := m.Seen()
	for _, p := range bad {
		t.Error(p)
	}
	want := []string{"legacy POST initialize", "server/discover", "subscriptions/listen"}
	if len(methods) < 3 || strings.Join(methods[:3], ",") != strings.Join(want, ",") {
		t.Errorf("requests began %q, want %q", methods, want)
	}
	for _, m := range methods[1:] {
		if strings.HasPrefix(m, "legacy") {
			t.Errorf("a legacy request after discovery: %s", m)
		}
	}
}

// checkModernUpstream runs what both transports must do against a
// connected modern upstream with the addModernTools tools.
func checkModernUpstream(t *testing.T, u core.Upstream, changed <-chan struct{}) {
	t.Helper()
	tools, err := u.ListTools(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]core.RemoteTool{}
	for _, tl := range tools {
		names[tl.Name] = tl
	}
	if tr, ok := names["tricky"]; !ok || string(tr.InputSchema) != compact(t, trickySchema) {
		t.Errorf("tricky's schema = %s", tr.InputSchema)
	}
	if _, ok := names["grown1"]; ok {
		t.Fatal("grown1 listed before it was grown")
	}
	r, err := u.CallTool(ctxT(t, 5*time.Second), "echo", json.RawMessage(`{"text":"hi"}`))
	if err != nil || resultText(t, r) != "hi" || r.IsError {
		t.Fatalf("echo: %s %v", r.JSON, err)
	}
	// The result is the server's, passed on whole (IM-32).
	if !bytes.Contains(r.JSON, []byte(`"resultType":"complete"`)) {
		t.Errorf("echo's result lost the server's members: %s", r.JSON)
	}
	if err := u.Ping(ctxT(t, 5*time.Second)); err != nil {
		t.Errorf("Ping: %v", err)
	}
	r, err = u.CallTool(ctxT(t, 5*time.Second), "ask", nil)
	if err != nil || resultText(t, r) != "action=decline state=st-1" {
		t.Errorf("ask with no session to ask: %s %v", r.JSON, err)
	}
	// Connect returned once the subscription was acknowledged, so the
	// change is heard without retrying.
	for len(changed) > 0 {
		<-changed
	}
	if _, err := u.CallTool(ctxT(t, 5*time.Second), "grow", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-ctxT(t, 10*time.Second).Done():
		t.Fatal("no list_changed through subscriptions/listen")
	}
	tools, err = u.ListTools(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range tools {
		found = found || tl.Name == "grown1"
	}
	if !found {
		t.Error("grown1 not listed after list_changed")
	}
	// The revision answers a method the server lacks with HTTP 404 and
	// -32601: that is an answer, not an ended session.
	var rpc *core.RPCError
	if _, err := u.(core.CatalogUpstream).ListPrompts(ctxT(t, 5*time.Second)); !errors.As(err, &rpc) || rpc.Code != -32601 || core.Transient(err) {
		t.Errorf("prompts/list of a server without prompts: %v", err)
	}
	// A tool the server does not have is the server's definite answer.
	if _, err := u.CallTool(ctxT(t, 5*time.Second), "nope", nil); err == nil || core.Transient(err) {
		t.Errorf("unknown tool: %v", err)
	}
}

// IM-27, IM-29, IM-37: imported through the importer, a modern HTTP
// upstream's action whose answer was lost is not sent again; when the
// server restarts, the lost subscription asks for a refresh, and the next
// call reconnects and runs.
func TestModernOnlyUpstreamHTTPNeverTwiceAndReconnect(t *testing.T) {
	leakCheck(t)
	m := newModernHTTP()
	addr, stopServer := serveOn(t, "127.0.0.1:0", m)
	up, err := New(modernOptions(addr))
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(nil)
	im := upstreams.NewImporter(reg, []upstreams.UpstreamSpec{{
		Name: "modern", Prefix: "m", Transport: "http", Actions: []string{"drop", "counted"},
		Timeout: 5 * time.Second, Upstream: up,
	}}, &upstreams.ImporterOptions{Attempts: 3, Backoff: func(int) time.Duration { return time.Millisecond }})
	defer im.Close()
	if err := im.Start(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if st := im.Statuses()[0]; st.State != core.StateConnected || st.Server.Protocol != ModernProtocolVersion {
		t.Fatalf("status = %+v", st)
	}
	actor := core.Actor{ID: "x"}
	_, err = reg.Invoke(ctxT(t, 10*time.Second), actor, "m_drop", nil)
	if !errors.Is(err, core.ErrOutcomeUnknown) {
		t.Errorf("action whose answer was lost: %v", err)
	}
	if n := m.Drops.Load(); n != 1 {
		t.Errorf("the action reached the server %d times", n)
	}

	// The server goes away and comes back on the same address with a
	// fresh state.
	stopServer()
	m2 := newModernHTTP()
	serveOn(t, addr, m2)
	r, err := reg.Invoke(ctxT(t, 10*time.Second), actor, "m_counted", nil)
	if err != nil || resultText(t, r) != "1" {
		t.Fatalf("call after the restart: %s %v", r.JSON, err)
	}
	if n := m2.Counted.Load(); n != 1 {
		t.Errorf("counted ran %d times on the restarted server", n)
	}
	// The new connection listens again: a change on the restarted server
	// is imported.
	if _, err := reg.Invoke(ctxT(t, 10*time.Second), actor, "m_grow", nil); err != nil {
		t.Fatal(err)
	}
	waittest.Eventually(t, 10*time.Second, "m_grown1 imported after list_changed", func() bool {
		_, ok := reg.Get("m_grown1")
		return ok
	})
	methods, bad := m2.Seen()
	for _, p := range bad {
		t.Error(p)
	}
	if !slices.Contains(methods, "subscriptions/listen") {
		t.Errorf("no subscriptions/listen on the restarted server: %q", methods)
	}
}

// IM-2, IM-3, IM-25, IM-29: a stdio child that serves only the stateless
// revision is found by server/discover, listed, called and heard from
// through subscriptions/listen; a call whose child dies before answering
// is ambiguous, never "not sent"; a fresh Connect starts a new child.
func TestModernOnlyUpstreamStdio(t *testing.T) {
	leakCheck(t)
	opts := stdioOptions(t)
	opts.Args = []string{modernStdioServerArg}
	u, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	changed := make(chan struct{}, 16)
	u.(core.ToolsChangedNotifier).OnToolsChanged(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	info, err := u.Connect(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatalf("Connect: %v (stderr: %s)", err, u.(StderrReporter).Stderr())
	}
	if info.Protocol != ModernProtocolVersion || info.Name != "modern-stdio" {
		t.Errorf("server info = %+v", info)
	}
	checkModernUpstream(t, u, changed)
	r, err := u.CallTool(ctxT(t, 5*time.Second), "problems", nil)
	if err != nil || resultText(t, r) != "initialize refused" {
		t.Errorf("what the child saw: %s %v", r.JSON, err)
	}

	_, err = u.CallTool(ctxT(t, 5*time.Second), "crash", nil)
	if err == nil || errors.Is(err, core.ErrNotSent) || !core.Transient(err) {
		t.Errorf("call whose child died: %v", err)
	}
	if _, err := u.Connect(ctxT(t, 20*time.Second)); err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	if r, err := u.CallTool(ctxT(t, 5*time.Second), "counted", nil); err != nil || resultText(t, r) != "1" {
		t.Errorf("call on the new child: %s %v", r.JSON, err)
	}
	if err := u.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// IM-2: with transport auto, a modern-only server is reached over
// Streamable HTTP after its refusal of initialize, before any SSE attempt.
func TestModernOnlyUpstreamAuto(t *testing.T) {
	leakCheck(t)
	m := newModernHTTP()
	addr, _ := serveOn(t, "127.0.0.1:0", m)
	o := modernOptions(addr)
	o.Transport = "auto"
	u := connect(t, o)
	if got := u.(core.TransportReporter).Transport(); got != "http" {
		t.Errorf("transport = %q", got)
	}
	if r, err := u.CallTool(ctxT(t, 5*time.Second), "echo", json.RawMessage(`{"text":"auto"}`)); err != nil || resultText(t, r) != "auto" {
		t.Errorf("echo: %s %v", r.JSON, err)
	}
	if err := u.Close(); err != nil {
		t.Error(err)
	}
	methods, bad := m.Seen()
	for _, p := range bad {
		t.Error(p)
	}
	for _, m := range methods {
		if strings.HasPrefix(m, "legacy GET") {
			t.Errorf("an SSE attempt: %q", methods)
		}
	}
}

// IM-27, IM-29, IM-37: imported through the importer, a modern stdio
// upstream's action whose child died before answering is not sent again,
// and the next call starts a new child and runs.
func TestModernOnlyUpstreamStdioNeverTwiceAndReconnect(t *testing.T) {
	leakCheck(t)
	marks := t.TempDir()
	opts := stdioOptions(t)
	opts.Args = []string{modernStdioServerArg}
	opts.Env = map[string]string{"MODERN_MARKS": marks}
	up, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(nil)
	im := upstreams.NewImporter(reg, []upstreams.UpstreamSpec{{
		Name: "modern", Prefix: "m", Actions: []string{"crash", "counted"}, Timeout: 10 * time.Second, Upstream: up,
	}}, &upstreams.ImporterOptions{Attempts: 3, Backoff: func(int) time.Duration { return time.Millisecond }})
	defer im.Close()
	if err := im.Start(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if st := im.Statuses()[0]; st.State != core.StateConnected || st.Server.Protocol != ModernProtocolVersion {
		t.Fatalf("status = %+v", st)
	}
	actor := core.Actor{ID: "x"}
	if _, err := reg.Invoke(ctxT(t, 20*time.Second), actor, "m_crash", nil); !errors.Is(err, core.ErrOutcomeUnknown) {
		t.Errorf("action whose child died: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(marks, "crash"))
	if err != nil || string(b) != "ran\n" {
		t.Errorf("crash ran %q times (%v), want once", b, err)
	}
	r, err := reg.Invoke(ctxT(t, 20*time.Second), actor, "m_counted", nil)
	if err != nil || resultText(t, r) != "1" {
		t.Errorf("call on the new child: %s %v", r.JSON, err)
	}
}
