package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolgate/toolgate/core"
)

// The unit tests of the client speak to fakeAdmin: an http.Handler that
// answers the routes of api.go the way the contract says, with a key, and
// whose event streams the test drives frame by frame. Tests against the
// real server live with the command line's tests.

const fakeKey = "fake-SECRET-admin-key-0123456789"

// fakeAdmin serves the contract. Each GET /v1/events is handed to the test
// as a fakeConn on conns after its snapshot frame is written.
type fakeAdmin struct {
	t     testing.TB
	conns chan *fakeConn

	mu sync.Mutex
	// snapSeq is the Seq of the snapshot the next stream opens with.
	snapSeq uint64
	// refuse answers /v1/events with 503 while set.
	refuse bool
	// heartbeat, when set, is how often a stream sends a comment.
	heartbeat time.Duration
	// opened counts event streams opened.
	opened int
	// handlers overrides routes ("GET /v1/whoami" → handler).
	handlers map[string]http.HandlerFunc
}

type fakeConn struct {
	n      int // 1-based: which stream of the server this is
	frames chan string
	kill   chan struct{}
	once   sync.Once
	gone   chan struct{} // closed when the handler returned
}

// send writes one raw frame (without the blank line that ends it).
func (c *fakeConn) send(frame string) { c.frames <- frame + "\n\n" }

// event writes one event frame.
func (c *fakeConn) event(t testing.TB, seq uint64, d core.EventData) {
	t.Helper()
	b, err := EncodeEvent(core.Event{Seq: seq, Time: time.Unix(int64(seq), 0).UTC(), Data: d})
	if err != nil {
		t.Fatal(err)
	}
	c.send(fmt.Sprintf("event: %s\nid: %d\ndata: %s", FrameEvent, seq, b))
}

func (c *fakeConn) snapshot(t testing.TB, snap core.Snapshot) {
	t.Helper()
	b, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	c.send("event: " + FrameSnapshot + "\ndata: " + string(b))
}

// drop ends the stream abruptly, as a dying server does.
func (c *fakeConn) drop() { c.once.Do(func() { close(c.kill) }) }

func newFakeAdmin(t testing.TB) *fakeAdmin {
	return &fakeAdmin{t: t, conns: make(chan *fakeConn, 64), handlers: map[string]http.HandlerFunc{}}
}

func writeErr(w http.ResponseWriter, e *Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(ErrorBody{Error: e})
}

func (f *fakeAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+fakeKey {
		writeErr(w, &Error{Status: 401, Code: CodeUnauthorized, Message: ErrUnauthorized.Error()})
		return
	}
	mux := http.NewServeMux()
	f.mu.Lock()
	for pat, h := range f.handlers {
		mux.HandleFunc(pat, h)
	}
	f.mu.Unlock()
	if _, pat := mux.Handler(r); pat != "" {
		mux.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodGet && r.URL.Path == "/v1/events" {
		f.events(w, r)
		return
	}
	writeErr(w, &Error{Status: 404, Code: CodeNotFound, Message: "no route " + r.Method + " " + r.URL.Path})
}

func (f *fakeAdmin) handle(pattern string, h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers[pattern] = h
}

func (f *fakeAdmin) setRefuse(v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuse = v
}

func (f *fakeAdmin) setSnapSeq(seq uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snapSeq = seq
}

func (f *fakeAdmin) streams() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opened
}

func (f *fakeAdmin) events(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	if f.refuse {
		f.mu.Unlock()
		writeErr(w, &Error{Status: 503, Code: CodeShuttingDown, Message: "the gateway is shutting down"})
		return
	}
	f.opened++
	c := &fakeConn{n: f.opened, frames: make(chan string, 1024), kill: make(chan struct{}), gone: make(chan struct{})}
	seq, hb := f.snapSeq, f.heartbeat
	f.mu.Unlock()
	defer close(c.gone)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	b, _ := json.Marshal(core.Snapshot{Seq: seq, Upstreams: []core.UpstreamStatus{{Name: fmt.Sprintf("stream-%d", c.n)}}})
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", FrameSnapshot, b)
	w.(http.Flusher).Flush()
	f.conns <- c
	var tick <-chan time.Time
	if hb > 0 {
		tk := time.NewTicker(hb)
		defer tk.Stop()
		tick = tk.C
	}
	for {
		select {
		case fr := <-c.frames:
			if _, err := io.WriteString(w, fr); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		case <-tick:
			if _, err := io.WriteString(w, ": heartbeat\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		case <-c.kill:
			// Abruptly: hijack and close, so the client sees the TCP
			// connection go, not a clean end of the body.
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
				}
			}
			return
		case <-r.Context().Done():
			return
		}
	}
}

// nextConn waits (bounded) for the next event stream to open.
func (f *fakeAdmin) nextConn(t testing.TB) *fakeConn {
	t.Helper()
	select {
	case c := <-f.conns:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no event stream was opened")
		return nil
	}
}

// startFake serves f on loopback and returns a client of it; everything is
// closed at cleanup, and no goroutine may outlive the test.
func startFake(t *testing.T, f *fakeAdmin, o *ClientOptions) (*httptest.Server, *Client) {
	t.Helper()
	noLeaks(t)
	srv := httptest.NewServer(f)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	c, err := NewClient(srv.URL, fakeKey, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return srv, c
}

// noLeaks registers, first, the cleanup that runs last: nothing the test
// started may still run.
func noLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		goleak.VerifyNone(t)
	})
}

// recv reads the next event of sub, bounded.
func recv(t *testing.T, sub core.Subscription) core.Event {
	t.Helper()
	select {
	case ev, ok := <-sub.C():
		if !ok {
			t.Fatal("the subscription's channel closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	return core.Event{}
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func bg(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
