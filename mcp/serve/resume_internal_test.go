package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/mcp/session"
)

// SV-2: a woken session has the client's capabilities it was
// opened with, so asking the client (elicitation) still works; a session
// whose capabilities were too large for its id is never parked.
func TestWokenSessionKeepsCapabilitiesSV2(t *testing.T) {
	reg := core.NewRegistry(nil)
	e, err := NewEndpoint(EndpointOptions{Path: "/mcp", Registry: reg, SessionKey: []byte("0123456789abcdef0123456789abcdef"),
		SessionParkAfter: time.Hour, Actor: func(ctx context.Context) (core.Actor, bool) {
			return core.Actor{ID: "a"}, true
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	srv := httptest.NewServer(e)
	defer srv.Close()
	open := func(caps string) *mcptest.Client {
		c := mcptest.New(srv.URL+"/mcp", &mcptest.Options{Capabilities: json.RawMessage(caps)})
		if _, err := c.Initialize(t.Context()); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Well past the 1 KiB of capabilities a sealed id carries.
	large := `{"elicitation":{},"experimental":{"x":"` + strings.Repeat("x", 4096) + `"}}`
	small, big := open(`{"elicitation":{}}`), open(large)
	later := time.Now().Add(time.Hour)
	if n := e.ids.ParkIdle(later); n != 1 || e.ids.Lookup(small.Session()).Phase.State != session.Parked {
		t.Fatalf("parked %d, small parked: %v; want only the session whose id holds its capabilities", n, e.ids.Lookup(small.Session()).Phase.State == session.Parked)
	}
	if _, rpcErr, err := small.Call(t.Context(), "ping", nil); err != nil || rpcErr != nil {
		t.Fatalf("ping on the parked session: %v %v", rpcErr, err)
	}
	if s := e.ids.Lookup(small.Session()).Conn; s == nil || s.GetClientCapabilities().Elicitation == nil {
		t.Errorf("the woken session lost the client's elicitation capability")
	}
	later = time.Now().Add(time.Hour)
	if e.ids.ParkIdle(later) != 1 || e.ids.ParkIdle(later) != 0 || e.ids.Lookup(big.Session()).Phase.State == session.Parked {
		t.Error("the woken session is not parked again once, or the large one is parked")
	}
}

// BenchmarkWakeParkedSession is one ping on a session parked before it:
// what a request pays for the session having been parked,
// beside BenchmarkPingAwake.
func BenchmarkWakeParkedSession(b *testing.B) { benchmarkPing(b, true) }

func BenchmarkPingAwake(b *testing.B) { benchmarkPing(b, false) }

func benchmarkPing(b *testing.B, parked bool) {
	e, err := NewEndpoint(EndpointOptions{Path: "/mcp", Registry: core.NewRegistry(nil), SessionKey: []byte("0123456789abcdef0123456789abcdef"),
		SessionParkAfter: time.Hour, Actor: func(ctx context.Context) (core.Actor, bool) { return core.Actor{ID: "a"}, true }})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(context.Background())
	srv := httptest.NewServer(e)
	defer srv.Close()
	c := mcptest.New(srv.URL+"/mcp", nil)
	if _, err := c.Initialize(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if parked {
			b.StopTimer()
			if e.ids.ParkIdle(time.Now().Add(2*time.Hour)) != 1 {
				b.Fatal("not parked")
			}
			b.StartTimer()
		}
		if _, rpcErr, err := c.Call(b.Context(), "ping", nil); err != nil || rpcErr != nil {
			b.Fatal(rpcErr, err)
		}
	}
}

// recorderTransport serves requests with h in process.
type recorderTransport struct{ h http.Handler }

func (t recorderTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// SV-2: a parked session costs the endpoint a small fraction of the
// ≈6 KiB it costs while held: here at most 4 KiB of heap each (under
// 1 KiB measured), over 400 sessions.
func TestParkedSessionHeapSV2(t *testing.T) {
	sessions := core.NewSessions(core.NewRegistry(nil).Bus())
	e, err := NewEndpoint(EndpointOptions{Path: "/mcp", Registry: core.NewRegistry(nil), Sessions: sessions,
		Limits: session.NewLimits(1000, 1000), SessionKey: []byte("0123456789abcdef0123456789abcdef"), SessionParkAfter: time.Hour,
		Actor: func(ctx context.Context) (core.Actor, bool) { return core.Actor{ID: "a"}, true }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	hc := &http.Client{Transport: recorderTransport{e}}
	open := func() string {
		c := mcptest.New("http://localhost/mcp", &mcptest.Options{HTTPClient: hc})
		if _, err := c.Initialize(t.Context()); err != nil {
			t.Fatal(err)
		}
		return c.Session()
	}
	open() // warm up
	e.ids.ParkIdle(time.Now().Add(2 * time.Hour))
	const n = 400
	ids := make([]string, 0, n)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	for range n {
		ids = append(ids, open())
	}
	if got := e.ids.ParkIdle(time.Now().Add(2 * time.Hour)); got != n {
		t.Fatalf("parked %d of %d", got, n)
	}
	after := heap()
	each := (int64(after) - int64(before)) / n
	t.Logf("%d B of heap per parked session", each)
	if each > 4<<10 {
		t.Errorf("a parked session costs %d B of heap, want at most 4 KiB", each)
	}
	runtime.KeepAlive(ids)
}

// TestSessionParkAfterSettingSV2: gateway.sessionParkAfter reaches the
// endpoint as given; 0 is the default, and a negative value, or no session
// key to wake a session from, turns parking off.
func TestSessionParkAfterSettingSV2(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	actor := func(context.Context) (core.Actor, bool) { return core.Actor{ID: "a"}, true }
	for _, tc := range []struct {
		name  string
		after time.Duration
		key   []byte
		parks bool
	}{
		{"default", 0, key, true}, {"set", 5 * time.Second, key, true}, {"negative", -time.Second, key, false}, {"no key", 0, nil, false},
	} {
		e, err := NewEndpoint(EndpointOptions{Path: "/mcp", Registry: core.NewRegistry(nil), SessionKey: tc.key, SessionParkAfter: tc.after, Actor: actor})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.ids.Parks(); got != tc.parks {
			t.Errorf("%s: parks = %v, want %v", tc.name, got, tc.parks)
		}
		if tc.name == "default" && e.opts.SessionParkAfter != DefaultSessionParkAfter {
			t.Errorf("default park delay %v, want %v", e.opts.SessionParkAfter, DefaultSessionParkAfter)
		}
		_ = e.Close(context.Background())
	}
}
