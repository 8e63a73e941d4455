package gateway_test

// Helpers of the admin API's tests: a gateway with gateway.admin on
// 127.0.0.1, a JSON client of its API and an event-stream reader.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/admin"
	"github.com/toolgate/toolgate/internal/gateway"
)

// Admin keys of the tests' configs: distinctive, so a leak is greppable.
const (
	aliceKey = "admin-key-alice-7c4e19d2b8a65f30"
	bobKey   = "admin-key-bob-e83a5c06d1f94b72"
)

// withAdmin adds gateway.admin with operators alice and bob to a config of
// gatewayYAML.
func withAdmin(yaml string) string {
	return strings.Replace(yaml, "gateway:\n", `gateway:
  admin:
    listen: 127.0.0.1:0
    keys:
      - key: `+aliceKey+`
        operator: alice
      - key: `+bobKey+`
        operator: bob
`, 1)
}

// adminClient calls the admin API with one key.
type adminClient struct {
	t    *testing.T
	base string
	key  string
	hc   *http.Client
}

func newAdminClient(t *testing.T, g *gateway.Gateway, key string) *adminClient {
	t.Helper()
	if g.AdminAddr() == "" {
		t.Fatal("the gateway has no admin listener")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &adminClient{t: t, base: "http://" + g.AdminAddr(), key: key, hc: &http.Client{Transport: tr, Timeout: stepWait}}
}

// do sends one request (body: nil, a string sent as is, or a value sent as
// JSON) and returns the status and body.
func (c *adminClient) do(ctx context.Context, method, path string, body any) (int, []byte) {
	c.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: reading: %v", method, path, err)
	}
	return resp.StatusCode, b
}

// ok sends a request that must answer want, and decodes its body into out
// (when not nil).
func (c *adminClient) ok(ctx context.Context, method, path string, body any, want int, out any) {
	c.t.Helper()
	code, b := c.do(ctx, method, path, body)
	if code != want {
		c.t.Fatalf("%s %s: %d %s, want %d", method, path, code, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: %v\n%s", method, path, err, b)
		}
	}
}

// fails sends a request that must fail with status and code, and returns
// the error.
func (c *adminClient) fails(ctx context.Context, method, path string, body any, status int, code string) *admin.Error {
	c.t.Helper()
	got, b := c.do(ctx, method, path, body)
	var eb admin.ErrorBody
	if err := json.Unmarshal(b, &eb); err != nil || eb.Error == nil {
		c.t.Fatalf("%s %s: %d, body not an ErrorBody (%v): %s", method, path, got, err, b)
	}
	if got != status || eb.Error.Code != code || eb.Error.Status != status || eb.Error.Message == "" {
		c.t.Fatalf("%s %s: %d %+v, want %d %s with a message", method, path, got, eb.Error, status, code)
	}
	return eb.Error
}

// sseFrame is one frame of the event stream.
type sseFrame struct {
	Event string
	ID    string
	Data  string
	// Comment is a comment line's text (": heartbeat").
	Comment string
}

// eventStream reads GET /v1/events frame by frame.
type eventStream struct {
	t      *testing.T
	frames chan sseFrame
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	err    error
}

// openEvents opens the event stream with c's key; it is closed at cleanup.
func (c *adminClient) openEvents(ctx context.Context) *eventStream {
	c.t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/events", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	hc := &http.Client{Transport: c.hc.Transport} // no timeout: it streams
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		c.t.Fatalf("GET /v1/events: %v", err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		c.t.Fatalf("GET /v1/events: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	es := &eventStream{t: c.t, frames: make(chan sseFrame, 1024), cancel: cancel, done: make(chan struct{})}
	go es.read(resp.Body)
	c.t.Cleanup(es.close)
	return es
}

func (es *eventStream) read(body io.ReadCloser) {
	defer close(es.done)
	defer close(es.frames)
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var f sseFrame
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if f != (sseFrame{}) {
				es.frames <- f
			}
			f = sseFrame{}
		case strings.HasPrefix(line, ":"):
			f.Comment = strings.TrimSpace(line[1:])
		case strings.HasPrefix(line, "event: "):
			f.Event = line[len("event: "):]
		case strings.HasPrefix(line, "id: "):
			f.ID = line[len("id: "):]
		case strings.HasPrefix(line, "data: "):
			f.Data += line[len("data: "):]
		}
	}
	es.mu.Lock()
	es.err = sc.Err()
	es.mu.Unlock()
}

func (es *eventStream) close() {
	es.cancel()
	<-es.done
}

// next returns the next frame; ok is false when the stream ended.
func (es *eventStream) next(ctx context.Context) (sseFrame, bool) {
	es.t.Helper()
	select {
	case f, ok := <-es.frames:
		return f, ok
	case <-ctx.Done():
		es.t.Fatalf("no frame on the event stream: %v", ctx.Err())
		return sseFrame{}, false
	}
}

// snapshot reads the next frame, which must be a snapshot.
func (es *eventStream) snapshot(ctx context.Context) core.Snapshot {
	es.t.Helper()
	f, ok := es.next(ctx)
	if !ok || f.Event != admin.FrameSnapshot {
		es.t.Fatalf("want a snapshot frame, got %+v (stream open: %v)", f, ok)
	}
	var s core.Snapshot
	if err := json.Unmarshal([]byte(f.Data), &s); err != nil {
		es.t.Fatalf("snapshot frame: %v", err)
	}
	return s
}

// waitEvent reads event frames until one's data satisfies match; the
// frames before it are skipped.
func (es *eventStream) waitEvent(ctx context.Context, what string, match func(core.EventData) bool) core.Event {
	es.t.Helper()
	for {
		f, ok := es.next(ctx)
		if !ok {
			es.t.Fatalf("the event stream ended waiting for %s", what)
		}
		if f.Event != admin.FrameEvent {
			continue
		}
		ev, err := admin.DecodeEvent([]byte(f.Data))
		if err != nil {
			es.t.Fatalf("event frame %s: %v", f.Data, err)
		}
		if f.ID == "" || f.ID != jsonUint(ev.Seq) {
			es.t.Errorf("event frame id %q, seq %d", f.ID, ev.Seq)
		}
		if match(ev.Data) {
			return ev
		}
	}
}

func jsonUint(n uint64) string { b, _ := json.Marshal(n); return string(b) }
