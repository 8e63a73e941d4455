package gateway_test

// Helpers of the admin API's tests: a gateway with gateway.admin on
// 127.0.0.1, a JSON client of its API, an event-stream reader, and a
// transcript of everything the API and the log said, for the tests that
// look for a leaked key.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/admin"
	"github.com/toolgate/toolgate/internal/gateway"
)

// Admin keys of the tests' configs: distinctive, so a leak is greppable.
const (
	aliceKey = "admin-key-alice-7c4e19d2b8a65f30"
	bobKey   = "admin-key-bob-e83a5c06d1f94b72"
)

// abuseFill is the text of the events a test floods the bus with; the
// transcript keeps them short.
var abuseFill = strings.Repeat("w", 4096)

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

// transcript collects what a test saw: log lines, answers, frames. It is
// an io.Writer for the gateway's logger, and tells a waiter when a text
// shows up.
type transcript struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	waits map[string]chan struct{}
}

func (tr *transcript) Write(p []byte) (int, error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.buf.Write(p)
	for s, ch := range tr.waits {
		if bytes.Contains(p, []byte(s)) {
			close(ch)
			delete(tr.waits, s)
		}
	}
	return len(p), nil
}

func (tr *transcript) add(parts ...string) {
	for _, p := range parts {
		_, _ = tr.Write([]byte(p + "\n"))
	}
}

// when returns a channel closed once a text containing s is written.
func (tr *transcript) when(s string) <-chan struct{} {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	ch := make(chan struct{})
	if bytes.Contains(tr.buf.Bytes(), []byte(s)) {
		close(ch)
		return ch
	}
	if tr.waits == nil {
		tr.waits = map[string]chan struct{}{}
	}
	tr.waits[s] = ch
	return ch
}

func (tr *transcript) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.buf.String()
}

// adminEnv is a started gateway with gateway.admin over the notes demo.
type adminEnv struct {
	g   *gateway.Gateway
	log *transcript
	// alice and bob are the two operators' clients.
	alice, bob *adminClient
}

// startAdminGateway starts a gateway over the notes demo with gateway.admin
// (extra is appended to the notes upstream's YAML; edit changes the
// config text), logging to the env's transcript.
func startAdminGateway(t *testing.T, opts *gateway.Options, extra string, edit func(string) string) *adminEnv {
	t.Helper()
	return startAdminGatewayOn(t, serveDemo(t, "notes"), opts, extra, edit)
}

// startAdminGatewayOn is startAdminGateway over the notes demo at notesURL.
func startAdminGatewayOn(t *testing.T, notesURL string, opts *gateway.Options, extra string, edit func(string) string) *adminEnv {
	t.Helper()
	ctx := testCtx(t)
	yaml := withAdmin(gatewayYAML(filepath.Join(t.TempDir(), "toolgate.db"), upstreamYAML("notes", notesURL, true)+extra))
	if edit != nil {
		yaml = edit(yaml)
	}
	env := &adminEnv{log: &transcript{}}
	o := gateway.Options{}
	if opts != nil {
		o = *opts
	}
	o.Logger = slog.New(slog.NewJSONHandler(env.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	env.g = newGateway(t, loadConfig(t, yaml), &o)
	if err := env.g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	env.alice = env.client(t, aliceKey)
	env.bob = env.client(t, bobKey)
	return env
}

func (env *adminEnv) client(t *testing.T, key string) *adminClient {
	t.Helper()
	if env.g.AdminAddr() == "" {
		t.Fatal("the gateway has no admin listener")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &adminClient{t: t, base: "http://" + env.g.AdminAddr(), key: key, hc: &http.Client{Transport: tr, Timeout: stepWait}, seen: env.log}
}

// mcpURL is the gateway's MCP endpoint.
func (env *adminEnv) mcpURL() string { return "http://" + env.g.Addr() + "/mcp" }

// adminClient calls the admin API with one key; every answer goes to seen.
type adminClient struct {
	t    *testing.T
	base string
	key  string
	hc   *http.Client
	seen *transcript
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
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: reading: %v", method, path, err)
	}
	c.seen.add(resp.Status, strings.Join(resp.Header.Values("WWW-Authenticate"), ","), string(b))
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
	// Comment is a comment line's text ("heartbeat").
	Comment string
}

// eventStream reads GET /v1/events frame by frame.
type eventStream struct {
	t      *testing.T
	frames chan sseFrame
	cancel context.CancelFunc
	done   chan struct{}
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
	es := &eventStream{t: c.t, frames: make(chan sseFrame, 4096), cancel: cancel, done: make(chan struct{})}
	go es.read(resp.Body, c.seen)
	c.t.Cleanup(es.close)
	return es
}

func (es *eventStream) read(body io.ReadCloser, seen *transcript) {
	defer close(es.done)
	defer close(es.frames)
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var f sseFrame
	for sc.Scan() {
		line := sc.Text()
		seen.add(strings.ReplaceAll(line, abuseFill, "…"))
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

// waitEvent reads frames until an event's data satisfies match; the frames
// before it are skipped. Each event frame's id must be its seq.
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
		if f.ID != strconv.FormatUint(ev.Seq, 10) {
			es.t.Errorf("event frame id %q, seq %d", f.ID, ev.Seq)
		}
		if match(ev.Data) {
			return ev
		}
	}
}

// waitAction waits for the OperatorAction of op's action on target.
func (es *eventStream) waitAction(ctx context.Context, op, action, target string) core.OperatorAction {
	es.t.Helper()
	return es.waitEvent(ctx, op+" "+action+" "+target, func(d core.EventData) bool {
		a, ok := d.(core.OperatorAction)
		return ok && a.Operator == op && a.Action == action && a.Target == target
	}).Data.(core.OperatorAction)
}

// pendingCall previews notes_create_note on s and sends the confirming
// call, which waits for an operator (CF-5); it returns the confirmation's
// id, read from es, and the channel the call's result arrives on.
func pendingCall(t *testing.T, ctx context.Context, s *session, es *eventStream, text string) (string, chan *mcpgo.CallToolResult) {
	t.Helper()
	args := map[string]any{"text": text}
	preview := call(t, ctx, s, "notes_create_note", args)
	sc, _ := preview.StructuredContent.(map[string]any)
	token, _ := sc["confirmToken"].(string)
	if token == "" {
		t.Fatalf("no confirm token in the preview: %+v", preview)
	}
	answered := make(chan *mcpgo.CallToolResult, 1)
	go func() {
		req := mcpgo.CallToolRequest{}
		req.Params.Name = "notes_create_note"
		req.Params.Arguments = map[string]any{"text": text, "confirm": true, "confirmToken": token}
		res, err := s.CallTool(ctx, req)
		if err != nil {
			res = &mcpgo.CallToolResult{IsError: true, Content: []mcpgo.Content{mcpgo.NewTextContent("transport error: " + err.Error())}}
		}
		answered <- res
	}()
	ev := es.waitEvent(ctx, "confirmation.pending", func(d core.EventData) bool {
		p, ok := d.(core.ConfirmationPending)
		return ok && strings.Contains(string(p.Pending.Arguments), text)
	})
	return ev.Data.(core.ConfirmationPending).Pending.ID, answered
}

// result waits for a pending call's result.
func result(t *testing.T, ctx context.Context, answered chan *mcpgo.CallToolResult) *mcpgo.CallToolResult {
	t.Helper()
	select {
	case res := <-answered:
		return res
	case <-ctx.Done():
		t.Fatalf("the waiting call did not answer: %v", ctx.Err())
		return nil
	}
}
