package admin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/waittest"
)

// TestMain fails the run if a goroutine outlives the package's tests: an
// event stream must end with its client or its server.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testKeyAlice = "unit-admin-key-alice-5d1c9e"
	testKeyBob   = "unit-admin-key-bob-0a7f3b22"
	stepWait     = 20 * time.Second
)

// fakeBackend is a gateway reduced to a bus, a console that records the
// operator of each action and canned lists.
type fakeBackend struct {
	bus *core.Bus

	mu   sync.Mutex
	acts []string // "operator action target"
	// sub, when set, is what Subscribe returns instead of a bus
	// subscription.
	sub core.Subscription
}

func (b *fakeBackend) ConsoleAs(op string) core.Console { return &fakeConsole{b: b, op: op} }
func (b *fakeBackend) Snapshot() core.Snapshot          { return b.bus.Snapshot() }
func (b *fakeBackend) Confirmations() []core.PendingConfirmation {
	return nil
}
func (b *fakeBackend) Sessions() []core.Session { return nil }
func (b *fakeBackend) Audit(context.Context, core.AuditQuery) ([]core.AuditRecord, error) {
	return nil, nil
}

func (b *fakeBackend) record(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.acts = append(b.acts, s)
}

func (b *fakeBackend) actions() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.acts...)
}

// fakeConsole answers the actions the tests use; the others are the nil
// interface's (they are not called).
type fakeConsole struct {
	core.Console
	b  *fakeBackend
	op string
}

func (c *fakeConsole) Subscribe(context.Context) (core.Snapshot, core.Subscription, error) {
	if c.b.sub != nil {
		return c.b.bus.Snapshot(), c.b.sub, nil
	}
	snap, sub := c.b.bus.Subscribe(0)
	return snap, fakeBusSub{sub}, nil
}

type fakeBusSub struct{ *core.BusSubscription }

func (s fakeBusSub) Resync(context.Context) (core.Snapshot, error) {
	return s.BusSubscription.Resync(), nil
}

func (c *fakeConsole) PlanRefresh(_ context.Context, upstream string) (core.RefreshPlan, error) {
	if upstream == "slow" {
		// An upstream slower than the server's write timeout.
		time.Sleep(300 * time.Millisecond)
		return core.RefreshPlan{ID: "p2", Diff: core.Diff{Upstream: upstream}}, nil
	}
	if upstream != "notes" {
		return core.RefreshPlan{}, fmt.Errorf("%w: %q", core.ErrUnknownUpstream, upstream)
	}
	c.b.record(c.op + " plan " + upstream)
	return core.RefreshPlan{ID: "p1", Diff: core.Diff{Upstream: upstream}}, nil
}

func (c *fakeConsole) RejectConfirmation(_ context.Context, id, by, reason string) error {
	c.b.record(c.op + " reject " + id + " by=" + by + " reason=" + reason)
	return nil
}

// logSink collects log lines and tells a waiter when one contains a text.
type logSink struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	waits map[string]chan struct{}
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for s, ch := range l.waits {
		if bytes.Contains(p, []byte(s)) {
			close(ch)
			delete(l.waits, s)
		}
	}
	return len(p), nil
}

// when returns a channel closed once a line containing s is logged.
func (l *logSink) when(s string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan struct{})
	if bytes.Contains(l.buf.Bytes(), []byte(s)) {
		close(ch)
		return ch
	}
	if l.waits == nil {
		l.waits = map[string]chan struct{}{}
	}
	l.waits[s] = ch
	return ch
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

type testServer struct {
	*Server
	b    *fakeBackend
	base string
	addr string
	logs *logSink
}

// serve runs a Server over a fake backend on 127.0.0.1 until the test ends.
func serve(t *testing.T, opts Options) *testServer {
	t.Helper()
	b := &fakeBackend{bus: core.NewBus()}
	logs := &logSink{}
	opts.Backend = b
	opts.Keys = []Key{{Key: testKeyAlice, Operator: "alice"}, {Key: testKeyBob, Operator: "bob"}}
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v (a stream did not end)", err)
			_ = hs.Close()
		}
		<-done
		b.bus.Close()
		if leaked := []string{testKeyAlice, testKeyBob}; strings.Contains(logs.String(), leaked[0]) || strings.Contains(logs.String(), leaked[1]) {
			t.Errorf("an admin key is in the log:\n%s", logs)
		}
	})
	return &testServer{Server: s, b: b, base: "http://" + ln.Addr().String(), addr: ln.Addr().String(), logs: logs}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// do sends a request with key and returns the response, its body read.
func do(t *testing.T, ctx context.Context, method, url, key string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: stepWait}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// wantError asserts an ErrorBody answer with status and code.
func wantError(t *testing.T, resp *http.Response, body []byte, status int, code string) *Error {
	t.Helper()
	var eb ErrorBody
	if err := json.Unmarshal(body, &eb); err != nil || eb.Error == nil {
		t.Fatalf("%d: not an ErrorBody (%v): %s", resp.StatusCode, err, body)
	}
	if resp.StatusCode != status || eb.Error.Status != status || eb.Error.Code != code || eb.Error.Message == "" ||
		resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("got %d %s %+v, want %d %s", resp.StatusCode, resp.Header.Get("Content-Type"), eb.Error, status, code)
	}
	return eb.Error
}

// CO-9: the operator of an action is the key's, never the body's; 404, 405, 413
// and malformed bodies answer in the ErrorBody shape.
func TestServerRequests(t *testing.T) {
	ctx := testCtx(t)
	ts := serve(t, Options{})

	resp, b := do(t, ctx, "GET", ts.base+"/v1/whoami", testKeyBob, nil)
	if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != `{"operator":"bob"}` {
		t.Fatalf("whoami: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, ctx, "POST", ts.base+"/v1/confirmations/c%2F1/reject", testKeyAlice, strings.NewReader(`{"reason":"no","by":"mallory","operator":"mallory"}`))
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("reject: %d %s", resp.StatusCode, b)
	}
	if got := ts.b.actions(); len(got) != 1 || got[0] != "alice reject c/1 by=alice reason=no" {
		t.Errorf("actions: %q, want alice's rejection of c/1 (the body names no operator)", got)
	}
	// An empty body is a rejection without a reason.
	resp, _ = do(t, ctx, "POST", ts.base+"/v1/confirmations/c2/reject", testKeyAlice, nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("reject without a body: %d", resp.StatusCode)
	}

	resp, b = do(t, ctx, "POST", ts.base+"/v1/refresh/plans", testKeyAlice, strings.NewReader(`{"upstream":"notes"}`))
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"id":"p1"`) {
		t.Fatalf("plan: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, ctx, "POST", ts.base+"/v1/refresh/plans", testKeyAlice, strings.NewReader(`{"upstream":"nope"}`))
	if e := wantError(t, resp, b, 404, CodeUnknownUpstream); !errors.Is(e, core.ErrUnknownUpstream) {
		t.Errorf("unknown upstream: %+v does not unwrap to its sentinel", e)
	}

	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code, msg                string
	}{
		{"malformed JSON", "POST", "/v1/refresh/plans", `{"upstream":`, 400, CodeBadRequest, "malformed JSON"},
		{"wrong type", "POST", "/v1/refresh/plans", `{"upstream":7}`, 400, CodeBadRequest, "malformed JSON"},
		{"trailing data", "POST", "/v1/refresh/plans", `{"upstream":"notes"} {}`, 400, CodeBadRequest, "data after"},
		{"no body", "POST", "/v1/refresh/plans", ``, 400, CodeBadRequest, "body is required"},
		{"no upstream", "POST", "/v1/refresh/plans", `{}`, 400, CodeBadRequest, "upstream is required"},
		{"malformed reject", "POST", "/v1/confirmations/c1/reject", `{"reason":`, 400, CodeBadRequest, "malformed JSON"},
		{"oversized", "POST", "/v1/refresh/plans", `{"upstream":"` + strings.Repeat("x", MaxBodyBytes) + `"}`, 413, CodeTooLarge, "larger than"},
		{"unknown route", "GET", "/v1/nope", ``, 404, CodeNotFound, "no route GET /v1/nope"},
		{"unversioned", "GET", "/whoami", ``, 404, CodeNotFound, "no route"},
		{"wrong method", "DELETE", "/v1/whoami", ``, 405, CodeMethodNotAllowed, "not allowed"},
		{"bad since", "GET", "/v1/audit?since=yesterday", ``, 400, CodeBadRequest, "since"},
		{"bad limit", "GET", "/v1/audit?limit=-1", ``, 400, CodeBadRequest, "limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := do(t, ctx, tc.method, ts.base+tc.path, testKeyAlice, strings.NewReader(tc.body))
			e := wantError(t, resp, b, tc.status, tc.code)
			if !strings.Contains(e.Message, tc.msg) {
				t.Errorf("message %q does not say %q", e.Message, tc.msg)
			}
			if tc.status == 405 && resp.Header.Get("Allow") == "" {
				t.Error("405 without Allow")
			}
		})
	}
	// An oversized body sent in chunks (no Content-Length) is cut at the
	// limit too.
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte(`{"upstream":"`))
		chunk := bytes.Repeat([]byte("x"), 4096)
		for range MaxBodyBytes/len(chunk) + 2 {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		_ = pw.Close()
	}()
	resp, b = do(t, ctx, "POST", ts.base+"/v1/refresh/plans", testKeyAlice, pr)
	_ = pr.Close()
	wantError(t, resp, b, 413, CodeTooLarge)
}

// AU-1, CO-9: no key, a wrong one, a prefix of a right one, another
// scheme: 401 with WWW-Authenticate: Bearer, before routing.
func TestServerAuth(t *testing.T) {
	ctx := testCtx(t)
	ts := serve(t, Options{})
	for _, h := range []string{"", "Bearer", "Bearer ", "Bearer wrong", "Bearer " + testKeyAlice[:10], "Basic " + testKeyAlice, "Bearer " + testKeyAlice + testKeyBob} {
		for _, path := range []string{"/v1/whoami", "/v1/events", "/v1/nope"} {
			req, _ := http.NewRequestWithContext(ctx, "GET", ts.base+path, nil)
			if h != "" {
				req.Header.Set("Authorization", h)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			e := wantError(t, resp, b, 401, CodeUnauthorized)
			if resp.Header.Get("WWW-Authenticate") != "Bearer" || !errors.Is(e, ErrUnauthorized) {
				t.Errorf("%q %s: WWW-Authenticate %q, %v", h, path, resp.Header.Get("WWW-Authenticate"), e)
			}
		}
	}
	http.DefaultClient.CloseIdleConnections()
	// The scheme is case-insensitive (RFC 9110).
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.base+"/v1/whoami", nil)
	req.Header.Set("Authorization", "bearer "+testKeyAlice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if resp.StatusCode != 200 {
		t.Errorf("lower-case bearer: %d", resp.StatusCode)
	}
}

// frameReader reads SSE frames from r.
type frameReader struct{ sc *bufio.Scanner }

type testFrame struct{ event, id, data, comment string }

func newFrameReader(r io.Reader) *frameReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	return &frameReader{sc: sc}
}

func (fr *frameReader) next() (testFrame, error) {
	var f testFrame
	for fr.sc.Scan() {
		line := fr.sc.Text()
		switch {
		case line == "":
			if f != (testFrame{}) {
				return f, nil
			}
		case strings.HasPrefix(line, ": "):
			f.comment = line[2:]
		case strings.HasPrefix(line, "event: "):
			f.event = line[7:]
		case strings.HasPrefix(line, "id: "):
			f.id = line[4:]
		case strings.HasPrefix(line, "data: "):
			f.data += line[6:]
		default:
			return f, fmt.Errorf("unexpected line %q", line)
		}
	}
	if err := fr.sc.Err(); err != nil {
		return f, err
	}
	return f, io.EOF
}

// openStream opens GET /v1/events and returns its frames; the body closes
// at cleanup.
func openStream(t *testing.T, ctx context.Context, ts *testServer) (*frameReader, *http.Response) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.base+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+testKeyAlice)
	tr := &http.Transport{}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close(); tr.CloseIdleConnections() })
	return newFrameReader(resp.Body), resp
}

// CO-9: the stream: a snapshot, events with their seq as id, heartbeats when idle,
// and on a resync marker a resync frame and a fresh snapshot. Close ends
// it, after the events already delivered.
func TestServerEventStream(t *testing.T) {
	ctx := testCtx(t)
	ts := serve(t, Options{HeartbeatInterval: 20 * time.Millisecond})
	// Unbuffered: a send returns once the handler has taken the event.
	ch := make(chan core.Event)
	ts.b.sub = &chanSub{ch: ch, resync: func() core.Snapshot { return core.Snapshot{Seq: 99} }}
	fr, resp := openStream(t, ctx, ts)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	f, err := fr.next()
	if err != nil || f.event != FrameSnapshot || !strings.HasPrefix(f.data, `{"seq":`) {
		t.Fatalf("first frame %+v %v", f, err)
	}
	// Idle: heartbeats.
	if f, err = fr.next(); err != nil || f.comment != "heartbeat" || f.event != "" {
		t.Fatalf("idle frame %+v %v", f, err)
	}
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ch <- core.Event{Seq: 7, Time: at, Data: core.Warning{Message: "line one\nline two"}}
	ch <- core.Event{Seq: 8, Time: at, Data: core.Resync{}}
	ch <- core.Event{Seq: 100, Time: at, Data: core.OperatorAction{Operator: "bob", Action: core.ActionPing}}
	want := []struct{ event, id string }{{FrameEvent, "7"}, {FrameResync, ""}, {FrameSnapshot, ""}, {FrameEvent, "100"}}
	for i := 0; i < len(want); {
		f, err := fr.next()
		if err != nil {
			t.Fatal(err)
		}
		if f.comment == "heartbeat" {
			continue
		}
		if f.event != want[i].event || f.id != want[i].id {
			t.Fatalf("frame %d: %+v, want %+v", i, f, want[i])
		}
		switch f.event {
		case FrameEvent:
			ev, err := DecodeEvent([]byte(f.data))
			if err != nil || fmt.Sprint(ev.Seq) != f.id {
				t.Fatalf("event frame %s: %v", f.data, err)
			}
			if w, ok := ev.Data.(core.Warning); ok && w.Message != "line one\nline two" {
				t.Errorf("a newline did not survive: %q", w.Message)
			}
		case FrameSnapshot:
			if f.data != `{"seq":99,"tools":null,"collisions":null,"upstreams":null,"dropped":null,"sessions":null,"pending":null}` {
				t.Errorf("resync snapshot %s", f.data)
			}
		case FrameResync:
			if f.data != "{}" {
				t.Errorf("resync data %q", f.data)
			}
		}
		i++
	}
	// Close: the events delivered before are sent, then the stream ends.
	select {
	case ch <- core.Event{Seq: 101, Time: at, Data: core.Warning{Message: "last"}}: // the handler has it
	case <-ctx.Done():
		t.Fatal("the handler never took the last event")
	}
	ts.Close()
	for {
		f, err := fr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("after Close: %v", err)
		}
		if f.event == FrameEvent && f.id != "101" {
			t.Errorf("after Close: %+v", f)
		}
	}
	// Closed: new requests are refused as shutting down.
	resp, b := do(t, ctx, "GET", ts.base+"/v1/whoami", testKeyAlice, nil)
	wantError(t, resp, b, 503, CodeShuttingDown)
}

// chanSub is a subscription the test feeds by hand.
type chanSub struct {
	ch     chan core.Event
	resync func() core.Snapshot
}

func (s *chanSub) C() <-chan core.Event { return s.ch }
func (s *chanSub) Resync(context.Context) (core.Snapshot, error) {
	return s.resync(), nil
}
func (s *chanSub) Close() {}

// CO-9: at most MaxStreams streams at once; the next is 503 too_many_streams, and
// a slot frees when a stream ends.
func TestServerStreamCap(t *testing.T) {
	ctx := testCtx(t)
	ts := serve(t, Options{MaxStreams: 2})
	sctx, cancel := context.WithCancel(ctx)
	fr1, _ := openStream(t, sctx, ts)
	fr2, _ := openStream(t, ctx, ts)
	for _, fr := range []*frameReader{fr1, fr2} {
		if f, err := fr.next(); err != nil || f.event != FrameSnapshot {
			t.Fatalf("%+v %v", f, err)
		}
	}
	resp, b := do(t, ctx, "GET", ts.base+"/v1/events", testKeyAlice, nil)
	if e := wantError(t, resp, b, 503, CodeTooManyStreams); !errors.Is(e, ErrTooManyStreams) {
		t.Errorf("%+v does not unwrap to ErrTooManyStreams", e)
	}
	// A client that leaves ends its stream with no log line: poll the slot.
	cancel()
	waittest.Succeeds(t, 10*time.Second, "the slot of an ended stream to be freed", func() error {
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.base+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+testKeyAlice)
		tr := &http.Transport{}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		code := resp.StatusCode
		resp.Body.Close()
		tr.CloseIdleConnections()
		if code != 200 {
			return fmt.Errorf("GET /v1/events: %d", code)
		}
		return nil
	})
}

// CO-9: A client that never reads does not block the bus or the server: the bus
// drops its events, the frame it cannot take ends the stream at the write
// deadline, and its slot and goroutines are released (TestMain's goleak),
// while other requests are answered meanwhile.
func TestServerNeverReadingClient(t *testing.T) {
	ctx := testCtx(t)
	ts := serve(t, Options{WriteTimeout: 200 * time.Millisecond, MaxStreams: 1})
	conn, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A small window fills sooner; the test does not depend on it.
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /v1/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", ts.addr, testKeyAlice)

	ended := ts.logs.when("admin event stream ended")
	big := strings.Repeat("x", 4096)
	// The stream ends once one frame's write has been stuck for the write
	// deadline: publishing can outrun that on an idle machine, so each batch
	// waits a moment for the end, within an overall bound.
	published := 0
	giveUp := time.After(30 * time.Second)
	for done := false; !done; {
		for range 500 {
			ts.b.bus.Publish(core.Warning{Message: big})
			published++
		}
		// The server answers while the stream is stuck.
		resp, _ := do(t, ctx, "GET", ts.base+"/v1/whoami", testKeyBob, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("whoami during the stuck stream: %d", resp.StatusCode)
		}
		select {
		case <-ended:
			done = true
		case <-giveUp:
			t.Fatalf("the stream did not end within 30 s (%d events of 4 KiB published)", published)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Logf("the stream ended after %d events", published)
	if !strings.Contains(ts.logs.String(), "timeout") {
		t.Errorf("the stream ended, but not at its write deadline:\n%s", ts.logs)
	}
	// The slot is free again: a reading client gets its stream.
	fr, resp := openStream(t, ctx, ts)
	if resp.StatusCode != 200 {
		t.Fatalf("a new stream after the stuck one: %d", resp.StatusCode)
	}
	if f, err := fr.next(); err != nil || f.event != FrameSnapshot {
		t.Fatalf("%+v %v", f, err)
	}
}

// CO-9: the write timeout bounds writing an answer, not the action before it: a
// refresh slower than it still answers.
func TestServerSlowAction(t *testing.T) {
	ctx := testCtx(t)
	ts := serve(t, Options{WriteTimeout: 100 * time.Millisecond})
	resp, b := do(t, ctx, "POST", ts.base+"/v1/refresh/plans", testKeyAlice, strings.NewReader(`{"upstream":"slow"}`))
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"id":"p2"`) {
		t.Fatalf("a slow plan: %d %s", resp.StatusCode, b)
	}
}
