package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp/downstream"
	"github.com/toolgate/toolgate/telemetry"
)

// Options is one upstream's connection settings (cmd fills it from
// config). Exactly one of Command and URL is set.
type Options struct {
	Name string

	// stdio (IM-3)
	Command string
	Args    []string
	Cwd     string
	// Env nil: the child gets a minimal default environment (PATH, HOME, …).
	// Non-nil: the gateway's environment with these entries merged over it.
	Env map[string]string
	// Supervisor, when set, runs the child under a supervisor process: the
	// adapter spawns Supervisor[0] with Supervisor[1:] followed by Command
	// (resolved on PATH first, so a missing program still fails at start)
	// and Args, e.g. {"/usr/bin/toolgate", "_supervise", "--"}. The
	// supervisor leads the child's process group, gets SIGTERM as its
	// parent-death signal and stops the whole group when the gateway dies,
	// even by SIGKILL, which the parent-death signal alone cannot carry
	// past the direct child (IM-10); see Supervise. Cwd and Env apply to
	// the supervisor, which passes them on unchanged. Used on Linux only;
	// elsewhere the command is started directly.
	Supervisor []string

	// network (IM-2, IM-4)
	URL string
	// Transport is "auto" (or empty), "http" or "sse".
	Transport string
	Headers   map[string]string
	// Authorization is a raw token, sent as "Authorization: Bearer <token>".
	Authorization string
	// Signing is nil for no request signing.
	Signing *HMACSigning
	// Token, when set, is asked for the bearer token of every request:
	// an OAuth upstream's, refreshed as it expires (UI-1). An error fails
	// the request before it is sent.
	Token func(ctx context.Context) (string, error)

	// StderrLimit bounds the kept stderr of a stdio child (default 64 KiB).
	StderrLimit int

	// Roots answer the upstream's roots/list: file:// URIs on the
	// gateway's side, from configuration (never the client's).
	Roots []string
	// Hub carries notifications/resources/updated to subscribed sessions;
	// nil drops them.
	Hub downstream.Hub
	// Logger is nil to discard.
	Logger *slog.Logger
}

// HMACSigning signs every request: the configured header carries Sign's
// value, a signed timestamp and hex(HMAC-SHA256(Secret, t "\n" METHOD "\n"
// URL "\n" body)).
type HMACSigning struct {
	Secret []byte
	Header string
}

// StderrReporter is implemented by the stdio upstream.
type StderrReporter interface {
	// Stderr returns the kept tail of the child's stderr, for diagnostics.
	Stderr() string
}

// ProtocolVersion is the MCP revision toolgate asks upstreams for. Pinning a
// revision that still uses initialize skips mcp-go's server/discover probe.
const ProtocolVersion = mcpgo.ProtocolVersion20250618

// DefaultStderrLimit is how much of a stdio child's stderr is kept.
const DefaultStderrLimit = 64 << 10

// maxListPages bounds tools/list pagination against a server that never
// stops handing out cursors.
const maxListPages = 1000

// New validates opts and returns an unconnected upstream.
func New(opts Options) (core.Upstream, error) {
	if err := validate(&opts); err != nil {
		return nil, fmt.Errorf("upstream %q: %w", opts.Name, err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("upstream", opts.Name)
	if opts.Command != "" {
		return newStdioUpstream(opts, log), nil
	}
	return newHTTPUpstream(opts, log), nil
}

func validate(o *Options) error {
	switch {
	case o.Command == "" && o.URL == "":
		return errors.New("needs a command or a url")
	case o.Command != "" && o.URL != "":
		return errors.New("has both a command and a url")
	case o.StderrLimit < 0:
		return errors.New("stderr limit is negative")
	}
	if o.StderrLimit == 0 {
		o.StderrLimit = DefaultStderrLimit
	}
	if len(o.Supervisor) > 0 && o.Supervisor[0] == "" {
		return errors.New("supervisor command is empty")
	}
	if o.Command != "" {
		if o.Transport != "" && o.Transport != "stdio" {
			return fmt.Errorf("transport %q does not apply to a command", o.Transport)
		}
		return nil
	}
	switch o.Transport {
	case "", "auto", "http", "sse":
	default:
		return fmt.Errorf("unknown transport %q (want auto, http or sse)", o.Transport)
	}
	u, err := url.Parse(o.URL)
	if err != nil {
		return errors.New("url does not parse")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("url needs an http or https scheme and a host")
	}
	for k := range o.Headers {
		if !validHeaderName(k) {
			return fmt.Errorf("invalid header name %q", k)
		}
	}
	if s := o.Signing; s != nil {
		if len(s.Secret) == 0 {
			return errors.New("signing secret is empty")
		}
		if !validHeaderName(s.Header) {
			return fmt.Errorf("invalid signing header name %q", s.Header)
		}
	}
	return nil
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}

// dialFunc makes one fresh connection: transport started and initialized.
type dialFunc func(ctx context.Context, onNote func(mcpgo.JSONRPCNotification)) (*session, core.ServerInfo, error)

// base is what every transport shares: the current session, raw requests,
// result conversion and the tools-changed callback.
type base struct {
	log   *slog.Logger
	dial  dialFunc
	scrub func(error) error
	roots []string
	hub   downstream.Hub
	fl    flights
	// mod is what a modern upstream keeps across its connections.
	mod modernState

	mu        sync.Mutex
	sess      *session
	onChanged func()
}

// session is one live connection. Its requests carry string ids, so they can
// never collide with the integer ids mcp-go's client uses for initialize.
type session struct {
	client *client.Client
	tr     transport.Interface
	// lost is done when the transport reported the connection gone.
	lost     context.Context
	markLost context.CancelFunc
	// stop ends the connection and releases everything it holds.
	stop func() error
	ids  atomic.Int64
	// exited reports whether a stdio child has exited; nil for network.
	exited func() bool
	// reply, when set, sends the gateway's answer to a request the server
	// made, instead of the transport (see handleRequest).
	reply func(ctx context.Context, resp *transport.JSONRPCResponse) error
	// post, when set, sends tools/call instead of the transport.
	post *poster
	// pipe, when set, sends tools/call to a stdio child instead of the
	// client.
	pipe *stdioPipe
	// modern is set when the upstream speaks the stateless revision: every
	// request carries its _meta and headers (see modern.go).
	modern *modernEra
	// listener holds a modern connection's subscriptions/listen; nil
	// without one.
	listener *listener
}

var errConnectionLost = errors.New("connection to upstream lost")

func (b *base) Connect(ctx context.Context) (core.ServerInfo, error) {
	_ = b.Close()
	s, info, err := b.dial(ctx, b.notification)
	if err != nil {
		return core.ServerInfo{}, b.scrub(err)
	}
	b.mu.Lock()
	b.sess = s
	b.mu.Unlock()
	b.modernConnected(ctx, s)
	b.log.Debug("connected", "server", info.Name, "protocol", info.Protocol)
	return info, nil
}

func (b *base) Close() error {
	b.mu.Lock()
	s := b.sess
	b.sess = nil
	b.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.stop()
}

func (b *base) OnToolsChanged(f func()) {
	b.mu.Lock()
	b.onChanged = f
	b.mu.Unlock()
}

func (b *base) notification(n mcpgo.JSONRPCNotification) {
	switch n.Method {
	case mcpgo.MethodNotificationToolsListChanged, mcpgo.MethodNotificationPromptsListChanged,
		mcpgo.MethodNotificationResourcesListChanged:
		// A refresh lists tools, prompts and resources alike (IM-25).
	default:
		b.relayNotification(n)
		return
	}
	b.mu.Lock()
	f := b.onChanged
	b.mu.Unlock()
	if f != nil {
		f()
	}
}

func (b *base) current() (*session, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sess == nil {
		return nil, fmt.Errorf("%w: not connected", core.ErrNotSent)
	}
	return b.sess, nil
}

func (b *base) Ping(ctx context.Context) error {
	s, err := b.current()
	if err != nil {
		return err
	}
	// Sent raw rather than through client.Ping, which sends nothing when the
	// server negotiated a stateless revision. That revision has no ping:
	// server/discover is its cheapest request.
	method := string(mcpgo.MethodPing)
	if s.modern != nil {
		method = string(mcpgo.MethodServerDiscover)
	}
	if _, err := s.request(ctx, method, nil); err != nil {
		return b.scrub(fmt.Errorf("ping: %w", err))
	}
	return nil
}

func (b *base) ListTools(ctx context.Context) ([]core.RemoteTool, error) {
	s, err := b.current()
	if err != nil {
		return nil, err
	}
	var tools []core.RemoteTool
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page == maxListPages {
			return nil, fmt.Errorf("tools/list: more than %d pages", maxListPages)
		}
		var params any
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		raw, err := s.request(ctx, string(mcpgo.MethodToolsList), params)
		if err != nil {
			return nil, b.scrub(fmt.Errorf("tools/list: %w", err))
		}
		next, err := parseToolsPage(raw, &tools)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		if next == "" {
			return b.modernTools(s, tools), nil
		}
		if seen[next] {
			return nil, fmt.Errorf("tools/list: cursor %q repeated", next)
		}
		seen[next] = true
		cursor = next
	}
}

// parseToolsPage appends one page's tools, keeping inputSchema and
// annotations as the exact bytes the server sent (IM-17).
func parseToolsPage(raw json.RawMessage, tools *[]core.RemoteTool) (string, error) {
	var page struct {
		Tools []struct {
			Name         string          `json:"name"`
			Description  *string         `json:"description"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
			Annotations  json.RawMessage `json:"annotations"`
			Title        string          `json:"title"`
			Icons        json.RawMessage `json:"icons"`
			Execution    json.RawMessage `json:"execution"`
			Meta         json.RawMessage `json:"_meta"`
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return "", fmt.Errorf("invalid result: %w", err)
	}
	for _, t := range page.Tools {
		*tools = append(*tools, core.RemoteTool{
			Name:         t.Name,
			Description:  t.Description,
			InputSchema:  nonNull(t.InputSchema),
			OutputSchema: nonNull(t.OutputSchema),
			Annotations:  nonNull(t.Annotations),
			Title:        t.Title,
			Icons:        nonNull(t.Icons),
			Execution:    nonNull(t.Execution),
			Meta:         nonNull(t.Meta),
		})
	}
	return page.NextCursor, nil
}

func nonNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

func (b *base) CallTool(ctx context.Context, remoteName string, args json.RawMessage) (core.Result, error) {
	s, err := b.current()
	if err != nil {
		return core.Result{}, err
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	if !json.Valid(args) {
		return core.Result{}, fmt.Errorf("tools/call %s: %w: arguments are not valid JSON", remoteName, core.ErrNotSent)
	}
	var meta callMeta
	if call, ok := core.CallFromContext(ctx); ok {
		// An upstream that deduplicates can recognise a repeat (SV-7).
		meta.IdempotencyKey = call.IdempotencyKey
	}
	// Stdio has no headers: the trace goes in _meta (OP-9).
	meta.Traceparent, meta.Tracestate = telemetry.Context(ctx)
	if d := downstream.From(ctx); d != nil {
		f := b.fl.start(d)
		defer b.fl.end(f)
		meta.ProgressToken = f.token
		defer lingerIfStreamed(ctx, d)
		if s.modern != nil {
			meta.LogLevel = modernLogLevel(d)
		}
	}
	// The params are written once, as bytes: the arguments go as the client
	// sent them, and over Streamable HTTP the request is sent as it is.
	params := callParamsJSON(remoteName, args, &meta)
	raw, err := s.request(ctx, string(mcpgo.MethodToolsCall), json.RawMessage(params))
	if err != nil && b.bindingsChanged(ctx, s, remoteName, err) {
		raw, err = s.request(ctx, string(mcpgo.MethodToolsCall), json.RawMessage(params))
	}
	if err == nil && s.modern != nil {
		raw, err = b.completeInput(ctx, s, params, raw)
	}
	if err != nil {
		return core.Result{}, b.scrub(fmt.Errorf("tools/call %s: %w", remoteName, err))
	}
	res, err := convertResult(raw)
	if err != nil {
		return core.Result{}, fmt.Errorf("tools/call %s: %w", remoteName, err)
	}
	return res, nil
}

// streamLinger is how long a call that streamed notifications stays open
// after its response, for notifications still on their way. A server may
// send a call's notifications on its standing GET stream rather than the
// call's own (mcp-go's does, whichever of its streams is free), and then the
// last one can arrive just after the response; without the wait it would
// belong to no call in flight and be lost.
const streamLinger = 25 * time.Millisecond

func lingerIfStreamed(ctx context.Context, d downstream.Downstream) {
	if !d.Streamed() {
		return
	}
	t := time.NewTimer(streamLinger)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

type callMeta struct {
	ProgressToken  string `json:"progressToken,omitempty"`
	IdempotencyKey string `json:"dev.toolgate/idempotencyKey,omitempty"`
	// LogLevel is the level a modern upstream logs the call at; "" for a
	// legacy one, whose level is the session's (see modernLogLevel).
	LogLevel    string `json:"io.modelcontextprotocol/logLevel,omitempty"`
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
}

// IdempotencyMetaKey names the per-call key the gateway sends upstream in a
// tools/call's _meta (SV-7): the same for every attempt of one call, so an
// upstream that deduplicates can tell a retried read from a new call.
const IdempotencyMetaKey = "dev.toolgate/idempotencyKey"

// convertResult passes a tools/call result through untouched, except the
// legacy shape (IM-32): a toolResult and no content blocks becomes one text
// block. Non-empty content always wins over toolResult.
func convertResult(raw json.RawMessage) (core.Result, error) {
	// Most results have no toolResult: one pass over the bytes decides,
	// without decoding what is passed on unread anyway.
	if isError, toolResult, ok := scanResult(raw); ok && !toolResult {
		return core.Result{JSON: raw, IsError: isError}, nil
	}
	var probe struct {
		Content    json.RawMessage `json:"content"`
		ToolResult json.RawMessage `json:"toolResult"`
		IsError    json.RawMessage `json:"isError"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return core.Result{}, fmt.Errorf("invalid result: %w", err)
	}
	isError := string(probe.IsError) == "true"
	if len(probe.ToolResult) == 0 || !emptyContent(probe.Content) {
		return core.Result{JSON: raw, IsError: isError}, nil
	}
	var text string
	if err := json.Unmarshal(probe.ToolResult, &text); err != nil {
		var buf bytes.Buffer
		if json.Compact(&buf, probe.ToolResult) != nil {
			return core.Result{}, errors.New("invalid result: bad toolResult")
		}
		text = buf.String()
	}
	type block struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	out, err := json.Marshal(struct {
		Content []block `json:"content"`
		IsError bool    `json:"isError"`
	}{[]block{{"text", text}}, isError})
	if err != nil {
		return core.Result{}, err
	}
	return core.Result{JSON: out, IsError: isError}, nil
}

// scanResult reads a result object's top-level isError and whether it has
// a toolResult member, in one pass that tracks only nesting and strings.
// ok is false for anything but an object; raw is known to be valid JSON
// (it was cut out of a decoded response).
func scanResult(raw []byte) (isError, toolResult, ok bool) {
	depth, keyStart := 0, -1
	var key []byte
	inString, wantKey, escaped := false, false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch c {
			case '\\':
				i++
				escaped = true
			case '"':
				inString = false
				if keyStart >= 0 {
					key, keyStart = raw[keyStart:i], -1
					if escaped {
						// "is\u0045rror" is isError to every client's decoder.
						var k string
						if json.Unmarshal(raw[i-len(key)-1:i+1], &k) != nil {
							return false, false, false
						}
						key = []byte(k)
					}
				}
			}
			continue
		}
		switch c {
		case '"':
			if depth == 0 {
				return false, false, false
			}
			inString, escaped = true, false
			if depth == 1 && wantKey {
				keyStart, wantKey = i+1, false
			}
		case '{', '[':
			if depth == 0 {
				if c != '{' {
					return false, false, false
				}
				wantKey = true
			}
			depth++
		case '}', ']':
			depth--
		case ',':
			wantKey = depth == 1
		case ':':
			if depth != 1 {
				continue
			}
			switch string(key) {
			case "isError":
				isError = bytes.HasPrefix(bytes.TrimLeft(raw[i+1:], " \t\r\n"), []byte("true"))
			case "toolResult":
				toolResult = true
			}
		default:
			if depth == 0 && c > ' ' {
				return false, false, false
			}
		}
	}
	return isError, toolResult, depth == 0
}

func emptyContent(raw json.RawMessage) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return true
	}
	var blocks []json.RawMessage
	return json.Unmarshal(raw, &blocks) == nil && len(blocks) == 0
}

// request sends one JSON-RPC request straight through the transport and
// returns the result untouched.
func (s *session) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if s.lost.Err() != nil {
		return nil, fmt.Errorf("%w: %w: %w", core.ErrNotSent, io.ErrUnexpectedEOF, errConnectionLost)
	}
	if method != string(mcpgo.MethodToolsCall) {
		// A call's params carry the trace context already (callParamsJSON).
		params = withTraceMeta(ctx, params)
	}
	var header http.Header
	if s.modern != nil {
		p, err := s.modern.params(params)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %w", method, core.ErrNotSent, err)
		}
		h, err := s.modern.header(method, p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %w", method, core.ErrNotSent, err)
		}
		params, header = p, h
	}
	if raw, ok := params.(json.RawMessage); ok && s.pipe != nil && method == string(mcpgo.MethodToolsCall) {
		return s.pipeCall(ctx, raw)
	}
	rec := &statusRecorder{}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopWatch := context.AfterFunc(s.lost, func() { cancel(errConnectionLost) })
	defer stopWatch()

	id := "tg-" + strconv.FormatInt(s.ids.Add(1), 10)
	req := transport.JSONRPCRequest{
		JSONRPC: mcpgo.JSONRPC_VERSION,
		ID:      mcpgo.NewRequestId(id),
		Method:  method,
		Params:  params,
		Header:  header,
	}
	var a *rpcAnswer
	var err error
	if raw, ok := params.(json.RawMessage); ok && s.post != nil && method == string(mcpgo.MethodToolsCall) {
		var code int
		a, code, err = s.post.call(ctx, callBody(id, raw))
		if code >= 400 {
			rec.code.Store(int32(code))
		}
	} else {
		// mcp-go's transport reports an error status through rec; the
		// poster returns it.
		var resp *transport.JSONRPCResponse
		sctx := context.WithValue(ctx, statusKey{}, rec)
		var eb *errorBody
		if s.modern != nil && s.pipe == nil {
			eb = &errorBody{}
			sctx = context.WithValue(sctx, errorBodyKey{}, eb)
		}
		if resp, err = s.tr.SendRequest(sctx, req); resp != nil {
			a = &rpcAnswer{Result: aliasRaw(resp.Result)}
			if resp.Error != nil {
				a.Error = &rpcErrorDetails{Code: resp.Error.Code, Message: resp.Error.Message}
			}
		} else if e := eb.rpcErrorOn(err); e != nil {
			a, err = &rpcAnswer{Error: e}, nil
		}
	}
	if err != nil && ctx.Err() != nil && !errors.Is(context.Cause(ctx), errConnectionLost) {
		s.cancelled(req.ID)
	}
	if err != nil {
		return nil, s.classify(ctx, err, rec)
	}
	if a == nil {
		return nil, s.classify(ctx, errors.New("no response"), rec)
	}
	return s.result(ctx, a, rec)
}

// result is a response's result, or its error as the importer's rules read
// it (IM-27, IM-29).
func (s *session) result(ctx context.Context, a *rpcAnswer, rec *statusRecorder) (json.RawMessage, error) {
	if a.Error != nil {
		return nil, &core.RPCError{Code: a.Error.Code, Message: a.Error.Message}
	}
	if len(a.Result) == 0 {
		// mcp-go hands back an error status whose body parsed as an empty
		// JSON-RPC message as a response with neither result nor error.
		return nil, s.classify(ctx, errors.New("response has no result"), rec)
	}
	return json.RawMessage(a.Result), nil
}

// pipeCall is request's tools/call to a stdio child, without the context
// layers the other transports need: the pipe watches the lost connection
// itself, and nothing on it reports an HTTP status (two cancel
// contexts, a value context and an AfterFunc per call were a tenth of the
// stdio client's CPU).
func (s *session) pipeCall(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	n := s.ids.Add(1)
	a, err := s.pipe.call(ctx, s.lost.Done(), n, params)
	switch {
	case errors.Is(err, errConnectionLost):
		return nil, fmt.Errorf("%w: %w", io.ErrUnexpectedEOF, errConnectionLost)
	case err != nil:
		if ctx.Err() != nil {
			s.cancelled(mcpgo.NewRequestId("tg-" + strconv.FormatInt(n, 10)))
		}
		return nil, s.classify(ctx, err, &statusRecorder{})
	}
	return s.result(ctx, a, &statusRecorder{})
}

// cancelled tells the upstream that the caller gave up on a request (the
// client cancelled, or its call's deadline passed), so the server can stop
// the work instead of finishing it for nobody.
func (s *session) cancelled(id mcpgo.RequestId) {
	if s.modern != nil && s.pipe == nil {
		// Over HTTP the stateless revision cancels by closing the
		// request's stream, which the call's context did.
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.tr.SendNotification(ctx, mcpgo.JSONRPCNotification{
		JSONRPC: mcpgo.JSONRPC_VERSION,
		Notification: mcpgo.Notification{
			Method: string(mcpgo.MethodNotificationCancelled),
			Params: mcpgo.NotificationParams{AdditionalFields: map[string]any{
				"requestId": id.Value(),
				"reason":    "the client cancelled the call",
			}},
		},
	})
}

// classify marks err for the importer's retry rules (IM-27, IM-29).
func (s *session) classify(ctx context.Context, err error, rec *statusRecorder) error {
	if errors.Is(context.Cause(ctx), errConnectionLost) {
		return fmt.Errorf("%w: %w", io.ErrUnexpectedEOF, errConnectionLost)
	}
	code := rec.code.Load()
	if _, sse := s.tr.(*transport.SSE); sse && (code == http.StatusBadRequest || code == http.StatusNotFound) &&
		strings.Contains(strings.ToLower(err.Error()), "session") {
		// The legacy SSE transport's session lives as long as its stream:
		// a server that no longer knows it dropped the stream, which the
		// client may not have noticed yet (IM-27).
		return fmt.Errorf("%w: %w: %w", io.ErrUnexpectedEOF, errConnectionLost, err)
	}
	if code >= 400 && !errors.Is(err, transport.ErrSessionTerminated) {
		return answered(int(code), err)
	}
	if s.exited != nil && s.exited() {
		return fmt.Errorf("%w: child process exited: %w", io.ErrUnexpectedEOF, err)
	}
	return classifyErr(err)
}

// classifyErr handles what does not depend on the session.
func classifyErr(err error) error {
	msg := err.Error()
	switch {
	case errors.Is(err, transport.ErrSessionTerminated):
		return fmt.Errorf("%w: %w", core.ErrSessionExpired, err)
	case notSent(err):
		return fmt.Errorf("%w: %w", core.ErrNotSent, err)
	case errors.Is(err, transport.ErrTransportClosed):
		// Returned by the stdio transport once the child's stdout ended.
		return fmt.Errorf("%w: %w", io.ErrUnexpectedEOF, err)
	case strings.Contains(msg, "unexpected nil response"),
		strings.Contains(msg, "connection has been closed"):
		// A response stream that ended without the response.
		return fmt.Errorf("%w: %w", io.ErrUnexpectedEOF, err)
	case strings.Contains(msg, "timeout waiting for SSE response"):
		return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	return err
}

// scrubbed is an error whose text had secrets replaced; matching still sees
// the original chain.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// redactor replaces secrets in text (IM-5): net/http quotes the request URL,
// whose userinfo or query may carry a token, and an upstream's error page may
// echo the request's headers back.
type redactor struct{ r *strings.Replacer }

// minRedacted is the shortest secret replaced: a two-letter header value
// would mangle every message it happens to occur in.
const minRedacted = 4

// newRedactor replaces each pair's secret with its safe text; secrets shorter
// than minRedacted are left alone.
func newRedactor(pairs ...[2]string) redactor {
	// Longer secrets first, so one that contains another is replaced whole.
	sort.Slice(pairs, func(i, j int) bool { return len(pairs[i][0]) > len(pairs[j][0]) })
	var args []string
	for _, p := range pairs {
		if len(p[0]) >= minRedacted && p[0] != p[1] {
			args = append(args, p[0], p[1])
		}
	}
	if len(args) == 0 {
		return redactor{}
	}
	return redactor{strings.NewReplacer(args...)}
}

func (rd redactor) text(s string) string {
	if rd.r == nil {
		return s
	}
	return rd.r.Replace(s)
}

// scrub returns err with secrets replaced in its text; errors.Is/As still
// see the original chain.
func (rd redactor) scrub(err error) error {
	if err == nil || rd.r == nil {
		return err
	}
	msg := rd.r.Replace(err.Error())
	if msg == err.Error() {
		return err
	}
	return &scrubbed{msg, err}
}

// connectionContext is what a connection lives on: none of the values of
// the request that opened it. A connection may be opened in a call's path
// (a reconnect), and outlives it; mcp-go hands the transport's context to
// the handler of every request the upstream makes, where the call's
// downstream would otherwise claim requests of other clients' calls.
func connectionContext() context.Context { return context.Background() }

// handshake starts c and runs initialize, bounded by ctx. The connection
// itself lives on connCtx, which the caller cancels to end it: Start keeps its
// context for the connection's lifetime (the SSE stream, the GET listener).
func handshake(ctx, connCtx context.Context, c *client.Client, tr transport.Interface, onRequest transport.RequestHandler) (core.ServerInfo, error) {
	rec := &statusRecorder{}
	ctx = context.WithValue(ctx, statusKey{}, rec)
	started := make(chan error, 1)
	go func() { started <- c.Start(context.WithValue(connCtx, statusKey{}, rec)) }()
	select {
	case err := <-started:
		if err != nil {
			return core.ServerInfo{}, handshakeErr(err, rec)
		}
	case <-ctx.Done():
		return core.ServerInfo{}, fmt.Errorf("initialize: %w", ctx.Err())
	}
	// Start installed mcp-go's own handler, which has nothing to answer
	// with; the gateway's routes requests to the calling session.
	caps := mcpgo.ClientCapabilities{Roots: &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{}}
	if bt, ok := tr.(transport.BidirectionalInterface); ok && onRequest != nil {
		bt.SetRequestHandler(onRequest)
		caps.Sampling = &mcpgo.SamplingCapability{}
		caps.Elicitation = &mcpgo.ElicitationCapability{}
	}
	req := mcpgo.InitializeRequest{}
	req.Params.Capabilities = caps
	req.Params.ProtocolVersion = ProtocolVersion
	req.Params.ClientInfo = mcpgo.Implementation{Name: "toolgate", Version: "0"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		return core.ServerInfo{}, handshakeErr(err, rec)
	}
	return core.ServerInfo{
		Name:     res.ServerInfo.Name,
		Version:  res.ServerInfo.Version,
		Protocol: res.ProtocolVersion,
	}, nil
}

// handshakeErr labels a failed handshake by what happened (IM-29): a server
// that answered with a status failed with that status, whatever the
// transport made of it; only what never reached a server is not sent.
func handshakeErr(err error, rec *statusRecorder) error {
	if code := rec.code.Load(); code >= 400 {
		return fmt.Errorf("initialize: %w", answered(int(code), err))
	}
	return fmt.Errorf("initialize: %w", classifyErr(err))
}

// statusFailure is a request the server answered with an HTTP error status.
// Matching sees the *core.StatusError and the transport's error.
type statusFailure struct {
	status *core.StatusError
	err    error
	text   string
}

func answered(code int, err error) error {
	se := &core.StatusError{Code: code}
	text := se.Error()
	// mcp-go calls any 4xx on initialize a legacy SSE server: a guess that
	// misleads when the transport was chosen, and adds nothing under auto,
	// which tries SSE anyway.
	if !errors.Is(err, transport.ErrLegacySSEServer) {
		// Error pages end in a newline.
		text += ": " + strings.TrimSpace(err.Error())
	}
	return &statusFailure{status: se, err: err, text: text}
}

func (e *statusFailure) Error() string   { return e.text }
func (e *statusFailure) Unwrap() []error { return []error{e.status, e.err} }

// libLogger is the logger handed to mcp-go: its messages are demoted to
// debug (it reports routine reconnects as errors) and scrubbed of secret.
func libLogger(log *slog.Logger, rd redactor) *slog.Logger {
	return slog.New(libHandler{log.Handler(), rd})
}

type libHandler struct {
	h  slog.Handler
	rd redactor
}

func (h libHandler) Enabled(ctx context.Context, _ slog.Level) bool {
	return h.h.Enabled(ctx, slog.LevelDebug)
}

func (h libHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, slog.LevelDebug, h.text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h libHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.text(v.String()))
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.rd.scrub(err).Error())
		}
	}
	return a
}

func (h libHandler) text(s string) string { return h.rd.text(s) }

func (h libHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.h = h.h.WithAttrs(as)
	return h
}

func (h libHandler) WithGroup(name string) slog.Handler {
	h.h = h.h.WithGroup(name)
	return h
}
