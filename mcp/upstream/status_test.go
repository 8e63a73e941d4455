package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/upstreams"
)

// refusing answers one JSON-RPC method with an HTTP status and passes
// everything else to a real server: the status comes from a server that
// read the request, as a proxy or an auth layer in front of an MCP server
// answers.
type refusing struct {
	next   http.Handler
	method atomic.Value // string: the JSON-RPC method refused; "" none
	code   atomic.Int32
}

func newRefusing(next http.Handler) *refusing {
	r := &refusing{next: next}
	r.method.Store("")
	return r
}

func (f *refusing) refuse(method string, code int) {
	f.code.Store(int32(code))
	f.method.Store(method)
}

func (f *refusing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var rpc struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &rpc)
		if m := f.method.Load().(string); m != "" && rpc.Method == m {
			http.Error(w, "refused by the test", int(f.code.Load()))
			return
		}
	}
	f.next.ServeHTTP(w, r)
}

// refusedCodes are statuses a server answers with: a refusal (403), a
// nonsense answer (418), a gateway in front that lost its backend (502),
// and the other transient ones of IM-27.
var refusedCodes = []int{403, 418, 500, 502, 503}

// checkStatusErr: a status answer is a *core.StatusError with that code,
// transient exactly for 500/502/503 (IM-27), never ErrNotSent (IM-29), and
// its text says the upstream answered, never that nothing was sent.
func checkStatusErr(t *testing.T, what string, err error, code int) {
	t.Helper()
	var se *core.StatusError
	switch {
	case err == nil:
		t.Errorf("%s: no error", what)
	case !errors.As(err, &se) || se.Code != code:
		t.Errorf("%s: %v: want a status error %d", what, err, code)
	case errors.Is(err, core.ErrNotSent):
		t.Errorf("%s: %v: marked not sent, yet the server answered (IM-29)", what, err)
	case core.Transient(err) != (code == 500 || code == 502 || code == 503):
		t.Errorf("%s: %v: transient=%v (IM-27)", what, err, core.Transient(err))
	case strings.Contains(err.Error(), core.ErrNotSent.Error()):
		t.Errorf("%s: %q says the request was not sent", what, err)
	case !strings.Contains(err.Error(), fmt.Sprintf("HTTP %d", code)):
		t.Errorf("%s: %q does not name the status", what, err)
	}
}

// IM-27, IM-29: an upstream that answered initialize or tools/call with an
// HTTP status failed with that status — transient or not by its code —
// and is never "not sent", over every transport.
func TestStatusAnswerIsNeverNotSentIM29(t *testing.T) {
	servers := []struct {
		transport, path string
		handler         http.Handler
	}{
		{"http", "/mcp", server.NewStreamableHTTPServer(newToolServer())},
		{"sse", "/sse", server.NewSSEServer(newToolServer())},
		{"auto", "/mcp", server.NewStreamableHTTPServer(newToolServer())},
	}
	for _, s := range servers {
		f := newRefusing(s.handler)
		ts := startServer(t, f)
		for _, code := range refusedCodes {
			what := fmt.Sprintf("%s, initialize answered %d", s.transport, code)
			f.refuse("initialize", code)
			u, err := New(Options{Name: "refusing", URL: ts.URL + s.path, Transport: s.transport})
			if err != nil {
				t.Fatal(err)
			}
			// auto then tries SSE against a Streamable HTTP server, whose
			// GET stream never sends an endpoint: that wait is bounded.
			u.(*httpUpstream).endpointWait = 100 * time.Millisecond
			start := time.Now()
			_, err = u.Connect(ctxT(t, 20*time.Second))
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("%s: Connect took %v", what, d)
			}
			checkStatusErr(t, what, err, code)
			_ = u.Close()

			what = fmt.Sprintf("%s, tools/call answered %d", s.transport, code)
			f.refuse("tools/call", code)
			u = connect(t, Options{Name: "refusing", URL: ts.URL + s.path, Transport: s.transport})
			_, err = u.CallTool(ctxT(t, 5*time.Second), "t0", nil)
			checkStatusErr(t, what, err, code)
			_ = u.Close()
		}
	}
}

// IM-2, IM-29: auto over an SSE-only server whose initialize is refused
// reports the Streamable HTTP error (the spec's rule when both fail); that
// one is a status answer too.
func TestAutoRefusedOverSSEIsStatusIM2(t *testing.T) {
	f := newRefusing(server.NewSSEServer(newToolServer()))
	f.refuse("initialize", 502)
	ts := startServer(t, f)
	u, err := New(Options{Name: "refusing", URL: ts.URL + "/sse", Transport: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	_, err = u.Connect(ctxT(t, 5*time.Second))
	var se *core.StatusError
	if !errors.As(err, &se) || errors.Is(err, core.ErrNotSent) || !strings.HasPrefix(err.Error(), "streamable HTTP") {
		t.Fatalf("auto over SSE, initialize refused: %v", err)
	}
}

// IM-9, IM-29: what the operator sees of an upstream whose initialize was
// answered with a status — its state's error and a call's error — says the
// upstream answered, and a call that could not connect is a definite
// failure: the action was not sent, so its outcome is known.
func TestImporterReportsStatusAnswerIM29(t *testing.T) {
	for _, code := range []int{403, 418, 502} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			f := newRefusing(server.NewStreamableHTTPServer(newToolServer()))
			ts := startServer(t, f)
			up, err := New(Options{Name: "net", URL: ts.URL + "/mcp", Transport: "http"})
			if err != nil {
				t.Fatal(err)
			}
			reg := core.NewRegistry(nil)
			im := upstreams.NewImporter(reg, []upstreams.UpstreamSpec{{
				Name: "net", Prefix: "net", Transport: "http", Actions: []string{"t0"}, Timeout: 5 * time.Second, Upstream: up,
			}}, &upstreams.ImporterOptions{Attempts: 2, Backoff: func(int) time.Duration { return time.Millisecond }})
			t.Cleanup(func() { _ = im.Close() })

			f.refuse("initialize", code)
			if err := im.Start(ctxT(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			st := im.Statuses()[0]
			if st.State != core.StateFailed || strings.Contains(st.LastError, core.ErrNotSent.Error()) ||
				!strings.Contains(st.LastError, fmt.Sprintf("HTTP %d", code)) {
				t.Fatalf("status after a refused initialize: %s %q", st.State, st.LastError)
			}

			// Connected and imported; then the connection drops (a 503 on
			// a read) and the reconnect is refused.
			f.refuse("", 0)
			if _, err := im.Refresh(ctxT(t, 10*time.Second), "net"); err != nil {
				t.Fatal(err)
			}
			f.refuse("tools/list", 503)
			if _, err := im.Refresh(ctxT(t, 10*time.Second), "net"); err == nil {
				t.Fatal("refresh through a 503 succeeded")
			}
			f.refuse("initialize", code)
			_, err = reg.Invoke(ctxT(t, 10*time.Second), core.Actor{ID: "x"}, "net_t0", nil)
			if err == nil || errors.Is(err, core.ErrNotSent) || errors.Is(err, core.ErrOutcomeUnknown) ||
				strings.Contains(err.Error(), core.ErrNotSent.Error()) || !strings.Contains(err.Error(), fmt.Sprintf("HTTP %d", code)) {
				t.Fatalf("action call whose connect was refused: %v", err)
			}
			var se *core.StatusError
			if !errors.As(err, &se) || se.Code != code || core.Transient(err) != (code == 502) {
				t.Fatalf("action call whose connect was refused: %v (transient=%v)", err, core.Transient(err))
			}
			if st := im.Statuses()[0]; strings.Contains(st.LastError, core.ErrNotSent.Error()) {
				t.Fatalf("status after a refused reconnect: %q", st.LastError)
			}
		})
	}
}

// IM-9, IM-2: an upstream whose transport is auto shows the transport that
// answered once it is connected, and auto only before.
func TestAutoShowsResolvedTransportIM9(t *testing.T) {
	for _, s := range []struct {
		want, path string
		handler    http.Handler
	}{
		{"http", "/mcp", server.NewStreamableHTTPServer(newToolServer())},
		{"sse", "/sse", server.NewSSEServer(newToolServer())},
	} {
		ts := startServer(t, s.handler)
		up, err := New(Options{Name: "auto", URL: ts.URL + s.path})
		if err != nil {
			t.Fatal(err)
		}
		if got := up.(core.TransportReporter).Transport(); got != "" {
			t.Errorf("%s: transport %q before connecting", s.want, got)
		}
		reg := core.NewRegistry(nil)
		im := upstreams.NewImporter(reg, []upstreams.UpstreamSpec{{Name: "auto", Prefix: "auto", Transport: "auto", Upstream: up}}, nil)
		t.Cleanup(func() { _ = im.Close() })
		if got := im.Statuses()[0].Transport; got != "auto" {
			t.Errorf("%s: status shows %q before connecting, want auto", s.want, got)
		}
		if err := im.Start(ctxT(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		st := im.Statuses()[0]
		if st.State != core.StateConnected || st.Transport != s.want {
			t.Errorf("connected over %s: status shows %s over %q", s.want, st.State, st.Transport)
		}
		// The console and check read the bus's snapshot.
		if snap := reg.Bus().Snapshot(); len(snap.Upstreams) != 1 || snap.Upstreams[0].Transport != s.want {
			t.Errorf("connected over %s: snapshot shows %+v", s.want, snap.Upstreams)
		}
	}
}
