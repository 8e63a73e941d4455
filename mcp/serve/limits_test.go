package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/mcp/serve"
	"github.com/toolgate/toolgate/mcp/session"
)

// inProcess sends requests straight to h, without a network, so a
// synctest bubble can hold the whole exchange. Only for requests whose
// answer is complete when the handler returns.
type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// bubbleEndpoint builds an endpoint inside the current synctest bubble and
// a client maker that reaches it in process.
func bubbleEndpoint(t *testing.T, opts serve.EndpointOptions) (*serve.Endpoint, *core.Sessions, func(actor string) *mcptest.Client) {
	t.Helper()
	reg := core.NewRegistry(nil)
	sessions := core.NewSessions(reg.Bus())
	if err := reg.Register(core.Tool{Name: "ping", Kind: core.KindRead, Description: "Pings.",
		Handler: func(context.Context, json.RawMessage) (core.Result, error) { return core.TextResult("pong"), nil }}); err != nil {
		t.Fatal(err)
	}
	opts.Registry, opts.Sessions, opts.Actor, opts.Path = reg, sessions, testActor, "/mcp"
	ep, err := serve.NewEndpoint(opts)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: inProcess{testAuth(ep)}}
	return ep, sessions, func(actor string) *mcptest.Client {
		o := testOptions(actor, "MEMBER")
		o.HTTPClient = hc
		return mcptest.New("http://gateway.test/mcp", o)
	}
}

// SV-2: a session with no request for sessionIdleTimeout ends on its own:
// it leaves the console's table, its id is unknown (404), and the endpoint
// keeps nothing of it. A session in use stays. The sweeper stops on Close
// (the bubble would not end with it running).
func TestSessionsExpireWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ep, sessions, client := bubbleEndpoint(t, serve.EndpointOptions{SessionIdleTimeout: time.Minute})
		defer ep.Close(context.Background())
		idle, busy := client("a"), client("b")
		initialize(t, idle)
		initialize(t, busy)
		if n := len(sessions.List()); n != 2 {
			t.Fatalf("%d sessions, want 2", n)
		}
		// busy keeps working every 30s; idle never does.
		for range 4 {
			time.Sleep(30 * time.Second)
			if _, rpcErr := rpc(t, busy, "tools/list", nil); rpcErr != nil {
				t.Fatalf("tools/list on a session in use: %v", rpcErr)
			}
		}
		synctest.Wait()
		if got := sessionIDs(sessions); len(got) != 1 || got[0] != busy.Session() {
			t.Fatalf("after 2m, sessions %v, want only the busy one %s", got, busy.Session())
		}
		if resp := post(t, idle, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`); resp.Status != http.StatusNotFound {
			t.Fatalf("expired session answered %d, want 404", resp.Status)
		}
		// Once busy stops too, it goes the same way: a timeout and at most
		// one sweep interval later.
		time.Sleep(time.Minute + time.Minute/4)
		synctest.Wait()
		if n := len(sessions.List()); n != 0 {
			t.Fatalf("%d sessions left, want 0", n)
		}
		if n := ep.KnownSessionsForTest(); n != 0 {
			t.Fatalf("the endpoint still keeps %d session entries", n)
		}
	})
}

func sessionIDs(s *core.Sessions) []string {
	var ids []string
	for _, sess := range s.List() {
		ids = append(ids, sess.ID)
	}
	return ids
}

// SV-2: 2,000 sessions opened and abandoned (no DELETE) expire, and the
// heap returns near where it was before they were opened (it
// grew by ~15 KB a session and stayed).
func TestAbandonedSessionsReturnHeap(t *testing.T) {
	const n = 2000
	synctest.Test(t, func(t *testing.T) {
		ep, sessions, client := bubbleEndpoint(t, serve.EndpointOptions{
			SessionIdleTimeout: time.Minute, Limits: session.NewLimits(n+1, n)})
		defer ep.Close(context.Background())
		// One session first, so what is measured is per session, not the
		// first use of every code path.
		initialize(t, client("warm-up"))
		baseline := heapAfterGC()
		for i := range n {
			c := client(fmt.Sprintf("actor-%d", i%50))
			initialize(t, c)
		}
		if got := len(sessions.List()); got != n+1 {
			t.Fatalf("%d sessions open, want %d", got, n+1)
		}
		open := heapAfterGC()
		time.Sleep(time.Minute + time.Minute/4)
		synctest.Wait()
		if got := len(sessions.List()); got != 0 {
			t.Fatalf("%d sessions left after the idle timeout, want 0", got)
		}
		if got := ep.KnownSessionsForTest(); got != 0 {
			t.Fatalf("the endpoint still keeps %d session entries", got)
		}
		after := heapAfterGC()
		grown := int64(open) - int64(baseline)
		left := int64(after) - int64(baseline)
		t.Logf("heap: baseline %d KiB, %d sessions open %d KiB, after expiry %d KiB", baseline>>10, n, open>>10, after>>10)
		// What stays is within a tenth of what the sessions took, and
		// under 1 MiB in any case.
		if left > max(grown/10, 0) && left > 1<<20 {
			t.Fatalf("heap %d KiB above baseline after expiry (the sessions took %d KiB)", left>>10, grown>>10)
		}
	})
}

func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// SV-2: sessions are capped per actor and in all. The initialize that
// would pass a cap is refused with a JSON-RPC error naming it, 429 for the
// actor's own cap and 503 for the gateway's, and mints no session; ending
// a session frees its place.
func TestSessionCaps(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{Limits: session.NewLimits(3, 2)})
	a1, a2, a3 := testClient(s.url, "a", "MEMBER"), testClient(s.url, "a", "MEMBER"), testClient(s.url, "a", "MEMBER")
	initialize(t, a1)
	initialize(t, a2)
	refused := func(c *mcptest.Client, status int, key string) {
		t.Helper()
		resp := post(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		if resp.Status != status {
			t.Fatalf("initialize over the cap: HTTP %d, want %d: %s", resp.Status, status, resp.Body)
		}
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			t.Fatalf("a refused initialize minted session %s", id)
		}
		_, rpcErr, err := resp.Result()
		if err != nil || rpcErr == nil {
			t.Fatalf("want a JSON-RPC error, got %v / %s", err, resp.Body)
		}
		if !strings.Contains(rpcErr.Message, key) || !strings.Contains(rpcErr.Message, "too many sessions") {
			t.Fatalf("error %q does not name %s", rpcErr.Message, key)
		}
	}
	refused(a3, http.StatusTooManyRequests, "gateway.maxSessionsPerActor")
	b := testClient(s.url, "b", "MEMBER")
	initialize(t, b)
	refused(testClient(s.url, "c", "MEMBER"), http.StatusServiceUnavailable, "gateway.maxSessions")
	if n := len(s.sessions.List()); n != 3 {
		t.Fatalf("%d sessions, want 3", n)
	}
	if _, err := a1.Delete(t.Context()); err != nil {
		t.Fatal(err)
	}
	initialize(t, a3)
	// An operator's end frees a place as the client's DELETE does.
	if err := s.sessions.End(b.Session()); err != nil {
		t.Fatal(err)
	}
	initialize(t, testClient(s.url, "c", "MEMBER"))
}

// SV-2: an initialize carrying a live session's id opens another session,
// and is held to the caps as any other: it used to pass them.
func TestInitializeOnASessionIsCapped(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{Limits: session.NewLimits(0, 1)})
	a := testClient(s.url, "a", "MEMBER")
	initialize(t, a)
	resp := post(t, a, `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if id := resp.Header.Get("Mcp-Session-Id"); resp.Status != http.StatusTooManyRequests || id != "" {
		t.Fatalf("initialize on a session at the actor's cap: HTTP %d, session %q: %s", resp.Status, id, resp.Body)
	}
	if n := len(s.sessions.List()); n != 1 {
		t.Fatalf("%d sessions, want 1", n)
	}
}

// SV-2: a session has at most MaxStreamsPerSession GET streams open; the
// next is refused with 429 and a text saying why, and a closed stream
// frees its place (1,000 were accepted).
func TestGetStreamsPerSessionCapped(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{MaxStreamsPerSession: 2})
	c := testClient(s.url, "a", "MEMBER")
	initialize(t, c)
	listen := func() *mcptest.Stream {
		t.Helper()
		st, err := c.Listen(t.Context())
		if err != nil {
			t.Fatalf("GET stream: %v", err)
		}
		return st
	}
	var open []*mcptest.Stream
	for range 2 {
		st := listen()
		if st.Status != http.StatusOK {
			t.Fatalf("GET stream: HTTP %d", st.Status)
		}
		open = append(open, st)
	}
	// Bounded: before the cap, this stream was accepted and never ended.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, err := c.NewRequest(ctx, http.MethodGet, nil)
	if err != nil {
		t.Fatal(err)
	}
	third, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(third.Body, 4096))
	third.Body.Close()
	if third.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "too many GET streams") {
		t.Fatalf("third GET stream: HTTP %d %q, want 429 too many GET streams", third.StatusCode, body)
	}
	open[0].Close()
	// The endpoint notices a closed stream when its handler returns, a
	// moment after the client closed it: retry, boundedly.
	freed := false
	for range 200 {
		st := listen()
		st.Close()
		if freed = st.Status == http.StatusOK; freed {
			break
		}
	}
	if !freed {
		t.Fatal("a closed stream did not free its place")
	}
	open[1].Close()
}
