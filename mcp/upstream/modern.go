package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp/downstream"
	"github.com/toolgate/toolgate/mcp/jsonrpc"
)

// An upstream that serves only the stateless revision (2026-07-28) refuses
// initialize. toolgate asks for a legacy session first, so that the many
// upstreams that serve only legacy revisions connect as before, with no
// server/discover probe to wait out; when the server refuses the legacy
// revision (-32022, or an HTTP 400 or 404, or -32601 for initialize itself)
// it probes server/discover and, if the server serves 2026-07-28, speaks that
// revision to it for the whole connection (IM-2): every request carries its
// protocol version, client info and capabilities in _meta (and, over HTTP,
// the Mcp-Method and Mcp-Name headers, and the Mcp-Param headers of a
// call, see modern_params.go), list_changed and the updates of
// subscribed resources come through a subscriptions/listen request held
// open for the connection's life (see modern_listen.go), the
// health check is server/discover (the revision has no ping), and an
// elicitation or sampling request arrives as an input_required result of the
// call, answered and retried here.

// ModernProtocolVersion is the stateless revision toolgate speaks to an
// upstream that refuses every legacy one.
const ModernProtocolVersion = mcpgo.ProtocolVersion20260728

// maxInputRounds bounds the input_required exchanges of one call, as
// mcp-go's client bounds its own.
const maxInputRounds = 10

// modernEra is what every request of a modern connection carries.
type modernEra struct {
	version string
	// members are the _meta members every request carries, as the bytes
	// of JSON object members (no braces).
	members []byte
	// http is set over Streamable HTTP, where requests carry the
	// revision's headers.
	http bool
	// bindings are the upstream's x-mcp-header bindings, set once the
	// connection is the upstream's (see base.modernConnected).
	bindings atomic.Pointer[paramHeaders]
}

func newModernEra(version string) *modernEra {
	caps := mcpgo.ClientCapabilities{
		Roots: &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{},
		// Both are answered: relayed to the calling session, or declined.
		Sampling:    &mcpgo.SamplingCapability{},
		Elicitation: &mcpgo.ElicitationCapability{},
	}
	capsJSON, _ := json.Marshal(caps)
	infoJSON, _ := json.Marshal(mcpgo.Implementation{Name: "toolgate", Version: "0"})
	var b []byte
	b = jsonrpc.AppendString(b, mcpgo.MetaKeyProtocolVersion)
	b = append(b, ':')
	b = jsonrpc.AppendString(b, version)
	b = append(b, ',')
	b = jsonrpc.AppendString(b, mcpgo.MetaKeyClientInfo)
	b = append(b, ':')
	b = append(b, infoJSON...)
	b = append(b, ',')
	b = jsonrpc.AppendString(b, mcpgo.MetaKeyClientCapabilities)
	b = append(b, ':')
	b = append(b, capsJSON...)
	return &modernEra{version: version, members: b}
}

// params is the one place where a request to a modern upstream gets its
// _meta: params (nil, raw JSON or a value to marshal) with the revision's
// members merged into its _meta, members already there kept. A per-request
// member for every modern request (a trace context) belongs here.
func (m *modernEra) params(params any) (json.RawMessage, error) {
	var raw []byte
	switch p := params.(type) {
	case nil:
	case json.RawMessage:
		raw = p
	default:
		b, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		out := make([]byte, 0, len(m.members)+12)
		out = append(out, `{"_meta":{`...)
		out = append(out, m.members...)
		return append(out, "}}"...), nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("params are not a JSON object: %w", err)
	}
	meta := append([]byte{'{'}, m.members...)
	if old, ok := fields["_meta"]; ok && string(old) != "null" {
		var members map[string]json.RawMessage
		if err := json.Unmarshal(old, &members); err != nil {
			return nil, fmt.Errorf("_meta is not a JSON object: %w", err)
		}
		keys := make([]string, 0, len(members))
		for k := range members {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			switch k {
			case mcpgo.MetaKeyProtocolVersion, mcpgo.MetaKeyClientInfo, mcpgo.MetaKeyClientCapabilities:
				continue
			}
			meta = append(meta, ',')
			meta = jsonrpc.AppendString(meta, k)
			meta = append(meta, ':')
			meta = append(meta, members[k]...)
		}
	}
	fields["_meta"] = append(meta, '}')
	return writeObject(fields), nil
}

// writeObject writes fields as a JSON object, each value as the bytes it
// holds: encoding/json would compact and re-escape them, and a call's
// arguments go as the client wrote them.
func writeObject(fields map[string]json.RawMessage) []byte {
	keys := make([]string, 0, len(fields))
	n := 2
	for k, v := range fields {
		keys = append(keys, k)
		n += len(k) + len(v) + 4
	}
	slices.Sort(keys)
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonrpc.AppendString(b, k)
		b = append(b, ':')
		b = append(b, fields[k]...)
	}
	return append(b, '}')
}

// header is the revision's headers of a request whose params are params:
// Mcp-Method and Mcp-Name, and for tools/call the Mcp-Param headers of
// the tool's x-mcp-header arguments. Other transports carry none. An error
// is an argument no header can carry: the request must not be sent.
func (m *modernEra) header(method string, params json.RawMessage) (http.Header, error) {
	if !m.http {
		return nil, nil
	}
	std := mcpgo.StandardHeaders(m.version, mcpgo.MCPMethod(method), params)
	if len(std) == 0 {
		return nil, nil
	}
	h := make(http.Header, len(std))
	for k, v := range std {
		h.Set(k, v)
	}
	if p := m.bindings.Load(); p != nil && method == string(mcpgo.MethodToolsCall) {
		if err := p.add(h, params); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// refusesLegacy reports whether a failed initialize says the server does
// not serve the legacy revisions, so that server/discover is worth a try:
// an unsupported version or an unknown initialize, as a JSON-RPC error or as
// the HTTP status the 2026-07-28 revision gives them. Any other failure,
// a refusal by status (401, 403, 5xx) above all, stays the connection's
// error.
func refusesLegacy(err error) bool {
	var unsupported mcpgo.UnsupportedProtocolVersionError
	var se *core.StatusError
	switch {
	case errors.As(err, &unsupported), errors.Is(err, mcpgo.ErrMethodNotFound):
		return true
	case errors.As(err, &se):
		return se.Code == http.StatusBadRequest || se.Code == http.StatusNotFound
	}
	return false
}

// startModern starts a transport for a modern connection, with the
// gateway's handlers on it, as handshake does for a legacy one.
func startModern(ctx, connCtx context.Context, tr transport.Interface, onNote func(mcpgo.JSONRPCNotification), onRequest transport.RequestHandler) error {
	if err := tr.Start(connCtx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	tr.SetNotificationHandler(onNote)
	if bt, ok := tr.(transport.BidirectionalInterface); ok && onRequest != nil {
		bt.SetRequestHandler(onRequest)
	}
	return nil
}

// errorBody keeps the body of a 404 answer: the stateless revision answers
// an unknown method with 404 and a JSON-RPC error, and mcp-go's transport
// takes any 404 for an ended session and drops the body. A modern
// connection has no session to end (see session.request).
type errorBody struct{ b atomic.Pointer[[]byte] }

type errorBodyKey struct{}

// rpcErrorOn is the JSON-RPC error of a 404 answer that mcp-go's
// transport reported as an ended session (err), or nil.
func (e *errorBody) rpcErrorOn(err error) *rpcErrorDetails {
	if e == nil || !errors.Is(err, transport.ErrSessionTerminated) {
		return nil
	}
	b := e.b.Load()
	if b == nil {
		return nil
	}
	var a rpcAnswer
	if json.Unmarshal(*b, &a) != nil || a.Error == nil {
		return nil
	}
	return a.Error
}

// keepErrorBody is the modern connection's RoundTripper: next's, keeping a
// 404's body for the request's errorBody.
type keepErrorBody struct{ next http.RoundTripper }

func (t keepErrorBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusNotFound {
		return resp, err
	}
	if eb, ok := req.Context().Value(errorBodyKey{}).(*errorBody); ok {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		eb.b.Store(&b)
		resp.Body = io.NopCloser(bytes.NewReader(b))
	}
	return resp, nil
}

// discoverModern runs server/discover on tr at ModernProtocolVersion and
// returns the era to speak and what the server said of itself.
func discoverModern(ctx context.Context, tr transport.Interface) (*modernEra, core.ServerInfo, error) {
	era := newModernEra(ModernProtocolVersion)
	if hc, ok := tr.(transport.HTTPConnection); ok {
		// The header and _meta must agree.
		hc.SetProtocolVersion(era.version)
		era.http = true
	}
	params, err := era.params(nil)
	if err != nil {
		return nil, core.ServerInfo{}, err
	}
	header, err := era.header(string(mcpgo.MethodServerDiscover), params)
	if err != nil {
		return nil, core.ServerInfo{}, err
	}
	rec := &statusRecorder{}
	resp, err := tr.SendRequest(context.WithValue(ctx, statusKey{}, rec), transport.JSONRPCRequest{
		JSONRPC: mcpgo.JSONRPC_VERSION,
		ID:      mcpgo.NewRequestId("tg-discover"),
		Method:  string(mcpgo.MethodServerDiscover),
		Params:  params,
		Header:  header,
	})
	if err != nil {
		return nil, core.ServerInfo{}, fmt.Errorf("server/discover: %w", handshakeErr(err, rec))
	}
	if resp.Error != nil {
		return nil, core.ServerInfo{}, fmt.Errorf("server/discover: %w",
			&core.RPCError{Code: resp.Error.Code, Message: resp.Error.Message})
	}
	var res struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		ServerInfo        *mcpgo.Implementation      `json:"serverInfo"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		return nil, core.ServerInfo{}, fmt.Errorf("server/discover: invalid result: %w", err)
	}
	if !slices.Contains(res.SupportedVersions, era.version) {
		return nil, core.ServerInfo{}, fmt.Errorf("server/discover: the server serves %q, not %s", res.SupportedVersions, era.version)
	}
	info := core.ServerInfo{Protocol: era.version}
	impl := res.ServerInfo
	if raw, ok := res.Meta[mcpgo.MetaKeyServerInfo]; ok {
		var fromMeta mcpgo.Implementation
		if json.Unmarshal(raw, &fromMeta) == nil && fromMeta.Name != "" {
			impl = &fromMeta
		}
	}
	if impl != nil {
		info.Name, info.Version = impl.Name, impl.Version
	}
	return era, info, nil
}

// ackWatcher wraps a connection's notification handler so that the
// acknowledgement of its subscriptions/listen reaches subscribe.
func ackWatcher(onNote func(mcpgo.JSONRPCNotification)) (func(mcpgo.JSONRPCNotification), <-chan mcpgo.JSONRPCNotification) {
	acks := make(chan mcpgo.JSONRPCNotification, 1)
	return func(n mcpgo.JSONRPCNotification) {
		if n.Method == mcpgo.MethodNotificationSubscriptionsAcknowledged {
			select {
			case acks <- n:
			default:
			}
			return
		}
		onNote(n)
	}, acks
}

// modernLogLevel is the level a modern upstream is asked to log a call of
// d's at: the stateless revision sends no log messages for a request that
// names no level. It is the level the session set, or debug when it set
// none, so that the session gets what it would from a legacy upstream; the
// relay filters by the session's level either way.
func modernLogLevel(d downstream.Downstream) string {
	if level, ok := d.LogLevel(); ok && level != "" {
		return string(level)
	}
	return string(mcpgo.LoggingLevelDebug)
}

// inputRequired is the part of a modern result that asks for input.
type inputRequired struct {
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
}

// needsInput reads whether raw is an input_required result. Most results
// are not, and say so without being decoded.
func needsInput(raw json.RawMessage) (*inputRequired, bool) {
	if !bytes.Contains(raw, []byte(mcpgo.ResultTypeInputRequired)) {
		return nil, false
	}
	var r inputRequired
	if json.Unmarshal(raw, &r) != nil || r.ResultType != string(mcpgo.ResultTypeInputRequired) {
		return nil, false
	}
	return &r, true
}

// completeInput answers a modern upstream's input_required results of a
// tools/call and sends the call again with the answers and the server's
// requestState, until the server completes it. That retry is the
// revision's continuation of one call, asked for by the server, not a
// second call (IM-29). An elicitation or sampling request goes to the
// client session whose call caused it, as a legacy upstream's request
// would; with none, an elicitation is declined and a sampling request
// fails the call. roots/list is answered from configuration.
func (b *base) completeInput(ctx context.Context, s *session, params []byte, raw json.RawMessage) (json.RawMessage, error) {
	for round := 0; ; round++ {
		ir, ok := needsInput(raw)
		if !ok {
			return raw, nil
		}
		if round == maxInputRounds {
			return nil, fmt.Errorf("the upstream asked for input more than %d times", maxInputRounds)
		}
		answers := make(map[string]json.RawMessage, len(ir.InputRequests))
		ids := make([]string, 0, len(ir.InputRequests))
		for id := range ir.InputRequests {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			a, err := b.answerInput(ctx, ir.InputRequests[id])
			if err != nil {
				return nil, fmt.Errorf("input request %s: %w", strconv.Quote(id), err)
			}
			answers[id] = a
		}
		next, err := retryParams(params, answers, ir.RequestState)
		if err != nil {
			return nil, err
		}
		if raw, err = s.request(ctx, string(mcpgo.MethodToolsCall), next); err != nil {
			return nil, err
		}
	}
}

// answerInput answers one input request.
func (b *base) answerInput(ctx context.Context, req json.RawMessage) (json.RawMessage, error) {
	var r struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(req, &r); err != nil {
		return nil, fmt.Errorf("invalid input request: %w", err)
	}
	switch r.Method {
	case string(mcpgo.MethodListRoots):
		roots := make([]mcpgo.Root, 0, len(b.roots))
		for _, u := range b.roots {
			roots = append(roots, mcpgo.Root{URI: u})
		}
		return json.Marshal(mcpgo.ListRootsResult{Roots: roots})
	case string(mcpgo.MethodElicitationCreate), string(mcpgo.MethodSamplingCreateMessage):
	default:
		return nil, fmt.Errorf("unsupported input request %q", r.Method)
	}
	d := downstream.From(ctx)
	if d == nil {
		d = b.fl.sole()
	}
	if d == nil {
		if r.Method == string(mcpgo.MethodElicitationCreate) {
			b.log.Info("upstream elicitation declined: not attributable to one client session")
			return json.RawMessage(`{"action":"decline"}`), nil
		}
		return nil, errors.New(r.Method + " refused by the gateway: it cannot be attributed to exactly one client session")
	}
	params := r.Params
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	res, err := d.Request(ctx, r.Method, params)
	if err != nil {
		return nil, b.scrub(err)
	}
	return json.Marshal(res)
}

// retryParams is a tools/call's params with the answers and the server's
// state added, every other member as it was sent.
func retryParams(params []byte, answers map[string]json.RawMessage, state string) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(params, &fields); err != nil {
		return nil, err
	}
	a, err := json.Marshal(answers)
	if err != nil {
		return nil, err
	}
	fields["inputResponses"] = a
	delete(fields, "requestState")
	if state != "" {
		s, _ := json.Marshal(state)
		fields["requestState"] = s
	}
	return writeObject(fields), nil
}
