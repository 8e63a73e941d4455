package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	ds "github.com/toolgate/toolgate/mcp/downstream"
	"github.com/toolgate/toolgate/mcp/jsonrpc"
)

// downstream is the client session a tools/call came from, as the upstream
// side sees it: where the upstream's progress, log messages and requests
// made during that call are sent. The endpoint puts it in the call's
// context (ds.With); package mcp/upstream finds it there as a
// ds.Downstream, the seam's interface, and knows nothing more of it.
type downstream struct {
	// ctx is the downstream request's context: sending with it reaches the
	// calling session, on the call's own stream where the transport has one.
	ctx     context.Context
	srv     *server.MCPServer
	session string
	// progressToken is the client's own token; nil when it asked for none.
	progressToken any
	// logLevel is the level the session set with logging/setLevel; ok is
	// false when it set none, and then every message is passed on.
	logLevel func() (level mcpgo.LoggingLevel, ok bool)
	// streamed is set once anything was passed on during the call.
	streamed atomic.Bool
	// asks sends a request on the call's own stream and waits for the
	// client's answer; nil without a legacy session.
	asks *pendingRequests
	// filter inspects what the upstream sends during the call (IN-1); nil
	// when nothing is inspected.
	filter *streamFilter
}

// downstreamFrom is the call's downstream, when the serving side put it in
// ctx.
func downstreamFrom(ctx context.Context) *downstream {
	d, _ := ds.From(ctx).(*downstream)
	return d
}

var _ ds.Downstream = (*downstream)(nil)

// ProgressToken implements ds.Downstream.
func (d *downstream) ProgressToken() any { return d.progressToken }

// LogLevel implements ds.Downstream.
func (d *downstream) LogLevel() (mcpgo.LoggingLevel, bool) {
	if d.logLevel == nil {
		return "", false
	}
	return d.logLevel()
}

// Notify implements ds.Downstream.
func (d *downstream) Notify(method string, params map[string]any) {
	if d.filter != nil {
		var ok bool
		if params, ok = d.filter.apply(method, params); !ok {
			return
		}
	}
	d.notify(method, params)
}

// Streamed implements ds.Downstream.
func (d *downstream) Streamed() bool { return d.streamed.Load() }

// Request implements ds.Downstream.
func (d *downstream) Request(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return d.request(ctx, method, params)
}

// sessionKey names a client session across endpoints.
type sessionKey struct {
	srv     *server.MCPServer
	session string
}

// Session implements ds.Downstream. Only a legacy session of a stateful
// endpoint is known to be one client: the endpoint minted its id and
// checks its owner on every request. Any other call — a 2026-07-28
// request, a call on a stateless endpoint, whose Mcp-Session-Id is
// whatever the client sent — is a session of its own: two such calls, even
// of one actor, may come from two clients, and what the upstream sends
// without naming a call (a log message, a request over stdio) must not
// reach the one for the other.
func (d *downstream) Session() any {
	if _, legacy := server.ClientSessionFromContext(d.ctx).(*legacySession); legacy && d.session != "" && modernRelayFrom(d.ctx) == nil {
		return sessionKey{d.srv, d.session}
	}
	return d
}

// CanElicitURL implements ds.Downstream.
func (d *downstream) CanElicitURL() bool { return canElicitURL(d.ctx) }

// NotifyCallStream implements ds.Downstream.
func (d *downstream) NotifyCallStream(method string, params map[string]any) bool {
	cs := callStreamFrom(d.ctx)
	if cs == nil {
		return false
	}
	msg := mcpgo.JSONRPCNotification{JSONRPC: mcpgo.JSONRPC_VERSION,
		Notification: mcpgo.Notification{Method: method, Params: mcpgo.NotificationParams{AdditionalFields: params}}}
	return cs.send(msg) == nil
}

// SessionNotifier implements ds.Downstream: a 2026-07-28 client has no
// session to tell.
func (d *downstream) SessionNotifier() func(method string, params map[string]any) {
	if d.session == "" || modernRelayFrom(d.ctx) != nil {
		return nil
	}
	srv, session := d.srv, d.session
	return func(method string, params map[string]any) {
		_ = srv.SendNotificationToSpecificClient(session, method, params)
	}
}

// notify sends a notification to the calling session. params is the
// upstream's object; numbers keep their exact text.
func (d *downstream) notify(method string, params map[string]any) {
	d.streamed.Store(true)
	cs := callStreamFrom(d.ctx)
	if r := modernRelayFrom(d.ctx); r != nil {
		// The call outlives the request that made it: what it sends goes
		// to the request following it now, if any.
		cs = r.stream()
	}
	if cs != nil {
		msg := mcpgo.JSONRPCNotification{JSONRPC: mcpgo.JSONRPC_VERSION,
			Notification: mcpgo.Notification{Method: method, Params: mcpgo.NotificationParams{AdditionalFields: params}}}
		if cs.send(msg) == nil {
			return
		}
	}
	_ = d.srv.SendNotificationToClient(d.ctx, method, params)
}

// canElicitURL reports whether the calling client declared URL-mode
// elicitation and can be asked during this call: on its session, or
// (2026-07-28) in the call's own capabilities with an input request.
func canElicitURL(ctx context.Context) bool {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		cc := info.ClientCapabilities
		return modernRelayFrom(ctx) != nil && cc != nil && cc.Elicitation != nil && cc.Elicitation.URL != nil
	}
	el := sessionElicitation(ctx)
	return el != nil && el.URL != nil
}

// errNoSuchRequest: the upstream asked for something a gateway does not
// pass on to clients.
var errNoSuchRequest = errors.New("method not offered to upstreams")

// request asks the calling session's client on the upstream's behalf
// (sampling, elicitation) and returns its answer. ctx ends when the
// upstream cancels its request; the downstream call's end ends it too.
func (d *downstream) request(ctx context.Context, method string, params json.RawMessage) (any, error) {
	rctx, cancel := context.WithCancel(d.ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	if r := modernRelayFrom(d.ctx); r != nil {
		// A 2026-07-28 client: the request reaches it as an input
		// request (modern_relay.go).
		return r.ask(rctx, method, params)
	}
	if cs := callStreamFrom(d.ctx); d.asks != nil && cs != nil {
		// The call is the gateway's own: the request goes on its stream,
		// as the upstream sent it, and the answer comes back untouched.
		return d.asks.ask(rctx, cs, d.session, method, params)
	}
	// Every call is served from the method table, on a call stream: only
	// a call without a legacy session to ask on (a stateless endpoint's, a
	// 2026-07-28 client's that declared neither elicitation nor sampling,
	// or one whose session ended meanwhile) comes here, and its client has
	// no way to be asked.
	return nil, fmt.Errorf("%s: %w", method, errNoOneToAsk)
}

// errNoOneToAsk: the call has no session whose client could be asked.
var errNoOneToAsk = errors.New("the client cannot be asked during this call: it has no session here")

// Hub carries what upstreams send outside any call to the endpoints whose
// sessions asked for it: notifications/resources/updated goes to the
// sessions subscribed to that URI. One hub serves a whole gateway; it
// counts subscriptions across endpoints, so an upstream is subscribed once
// per URI and unsubscribed when the last session lets go.
type Hub struct {
	mu   sync.Mutex
	subs map[string]map[subscriber]bool // uri → sessions
}

type subscriber struct {
	e       *Endpoint
	session string
}

// NewHub returns an empty hub.
func NewHub() *Hub {
	return &Hub{subs: map[string]map[subscriber]bool{}}
}

// detach drops a closing endpoint's subscriptions.
func (h *Hub) detach(e *Endpoint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for uri, set := range h.subs {
		for s := range set {
			if s.e == e {
				delete(set, s)
			}
		}
		if len(set) == 0 {
			delete(h.subs, uri)
		}
	}
}

// subscribe records a session's subscription and reports whether it is the
// first for the URI, which is when the upstream must be asked. With live
// (nil: always), only while it reports the session live, under h.mu: an
// end makes its session not live before it lets go of its subscriptions
// (sessionEnded, under h.mu), so a subscription is either let go of by
// that end or never made.
func (h *Hub) subscribe(uri string, s subscriber, live func() bool) (first bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if live != nil && !live() {
		return false
	}
	set := h.subs[uri]
	if set == nil {
		set = map[subscriber]bool{}
		h.subs[uri] = set
	}
	first = len(set) == 0
	set[s] = true
	return first
}

// unsubscribe drops one subscription and reports whether none is left.
func (h *Hub) unsubscribe(uri string, s subscriber) (last bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.subs[uri]
	if !set[s] {
		return false
	}
	delete(set, s)
	if len(set) == 0 {
		delete(h.subs, uri)
		return true
	}
	return false
}

// sessionEnded drops a session's subscriptions and returns the URIs nobody
// is subscribed to any more.
func (h *Hub) sessionEnded(e *Endpoint, session string) (released []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for uri, set := range h.subs {
		if set[subscriber{e, session}] {
			delete(set, subscriber{e, session})
			if len(set) == 0 {
				delete(h.subs, uri)
				released = append(released, uri)
			}
		}
	}
	return released
}

var _ ds.Hub = (*Hub)(nil)

// ResourceUpdated implements ds.Hub: an upstream's
// notifications/resources/updated goes to every session subscribed to its
// URI, and to nobody else.
func (h *Hub) ResourceUpdated(raw json.RawMessage) {
	if h == nil {
		// An upstream given a nil *Hub as its ds.Hub drops updates, as
		// one given no hub does.
		return
	}
	params, err := jsonrpc.DecodeParams(raw)
	if err != nil {
		return
	}
	uri, _ := params["uri"].(string)
	h.mu.Lock()
	var to []subscriber
	for s := range h.subs[uri] {
		to = append(to, s)
	}
	h.mu.Unlock()
	for _, s := range to {
		_ = s.e.mcp.SendNotificationToSpecificClient(s.session, string(mcpgo.MethodNotificationResourceUpdated), params)
	}
}

// pendingRequests are requests the gateway sent to clients on a call's
// stream, waiting for the answer the client POSTs back.
type pendingRequests struct {
	seq     atomic.Int64
	mu      sync.Mutex
	waiting map[string]chan json.RawMessage // session + id → answer
}

// askPrefix starts the ids of the requests asked on a call's own stream.
const askPrefix = "tg-ask-"

func (p *pendingRequests) ask(ctx context.Context, cs *callStream, session, method string, params json.RawMessage) (any, error) {
	id := askPrefix + strconv.FormatInt(p.seq.Add(1), 10)
	key := session + "\x00" + id
	answer := make(chan json.RawMessage, 1)
	p.mu.Lock()
	if p.waiting == nil {
		p.waiting = map[string]chan json.RawMessage{}
	}
	p.waiting[key] = answer
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.waiting, key)
		p.mu.Unlock()
	}()
	msg := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      string          `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{mcpgo.JSONRPC_VERSION, id, method, params}
	if err := cs.send(msg); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case raw := <-answer:
		return clientAnswer(method, raw)
	case <-ctx.Done():
		// The upstream withdrew its request (or the call ended): the
		// client may stop asking its user or model.
		_ = cs.send(mcpgo.JSONRPCNotification{JSONRPC: mcpgo.JSONRPC_VERSION, Notification: mcpgo.Notification{
			Method: string(mcpgo.MethodNotificationCancelled),
			Params: mcpgo.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": "the server withdrew the request"}},
		}})
		return nil, fmt.Errorf("%s: %w", method, context.Cause(ctx))
	}
}

// clientAnswer is the result of a client's answer to a request made of it
// (method), or the error it answered.
func clientAnswer(method string, raw json.RawMessage) (json.RawMessage, error) {
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, fmt.Errorf("%s: the client's answer does not parse: %w", method, err)
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("%s: the client answered %d: %s", method, resp.Error.Code, resp.Error.Message)
	}
	return resp.Result, nil
}

// answer delivers a client's POSTed response to the request waiting for it
// and reports whether there was one.
func (p *pendingRequests) answer(session string, rawID json.RawMessage, body []byte) bool {
	id, ok := jsonrpc.ReadString(rawID)
	if !ok || !strings.HasPrefix(id, askPrefix) {
		return false
	}
	p.mu.Lock()
	answer := p.waiting[session+"\x00"+id]
	delete(p.waiting, session+"\x00"+id)
	p.mu.Unlock()
	if answer == nil {
		return false
	}
	answer <- body
	return true
}
