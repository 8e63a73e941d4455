package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/mcp/jsonrpc"
	"github.com/toolgate/toolgate/mcp/session"
)

// method is one entry of the endpoint's method table (SV-1): who answers
// the method, in which protocol eras, and what it needs. A legacy request
// on a stateful endpoint needs a session, but for one that opens one.
type method struct {
	// own is the gateway's answer; nil: mcp-go's MCPServer.HandleMessage
	// answers, with the request's session (or a session of the request's
	// own) in the context.
	own func(*Endpoint, context.Context, *callStream, *inbound)
	// legacy and modern: the eras mcp-go (or the gateway) serves it in;
	// outside them HandleMessage answers with the protocol's error.
	legacy, modern bool
	// opens: the method opens a session instead of needing one.
	opens bool
	// streams: the answer is a stream held open until the client goes
	// (subscriptions/listen), which broadcasts reach.
	streams bool
	// needs is what the endpoint must offer for the method to be served.
	needs offer
}

// offer is what an endpoint offers by its options, which mcp-go's
// capabilities follow: always; a Catalog (resources and prompts); a
// Catalog that routes (CatalogRouter); that and a Hub, on a stateful
// endpoint.
type offer uint8

const (
	always offer = iota
	catalog
	completions
	subscriptions
)

// methods is every method a client sends, in either era (SV-1). A method
// not listed reads as the zero entry: HandleMessage answers its error.
var methods = map[string]method{
	string(mcpgo.MethodToolsCall): {own: (*Endpoint).serveToolsCall, legacy: true, modern: true},
	string(mcpgo.MethodToolsList): {own: (*Endpoint).serveToolsList, legacy: true, modern: true},

	string(mcpgo.MethodInitialize):             {legacy: true, opens: true},
	string(mcpgo.MethodPing):                   {legacy: true},
	string(mcpgo.MethodSetLogLevel):            {legacy: true},
	string(mcpgo.MethodResourcesList):          {legacy: true, modern: true, needs: catalog},
	string(mcpgo.MethodResourcesTemplatesList): {legacy: true, modern: true, needs: catalog},
	string(mcpgo.MethodResourcesRead):          {legacy: true, modern: true, needs: catalog},
	string(mcpgo.MethodResourcesSubscribe):     {legacy: true, needs: subscriptions},
	string(mcpgo.MethodResourcesUnsubscribe):   {legacy: true, needs: subscriptions},
	string(mcpgo.MethodPromptsList):            {legacy: true, modern: true, needs: catalog},
	string(mcpgo.MethodPromptsGet):             {legacy: true, modern: true, needs: catalog},
	string(mcpgo.MethodCompletionComplete):     {legacy: true, modern: true, needs: completions},
	string(mcpgo.MethodServerDiscover):         {modern: true},
	string(mcpgo.MethodSubscriptionsListen):    {modern: true, streams: true},

	string(mcpgo.MethodNotificationInitialized):      {legacy: true},
	string(mcpgo.MethodNotificationCancelled):        {legacy: true, modern: true},
	string(mcpgo.MethodNotificationRootsListChanged): {legacy: true},
}

// serveSessionless answers, through HandleMessage, a POST with no legacy
// session of the endpoint's: a stateless endpoint's, or a 2026-07-28
// client's. It keeps the Streamable HTTP transport's rules for those: a
// body that does not parse, a revision not served, a response that answers
// nothing asked, and notifications sent to the request's session while it
// runs, which turn the answer into an event stream.
func (e *Endpoint) serveSessionless(cs *callStream, r *http.Request, p *post) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result,omitempty"`
		Error  json.RawMessage `json:"error,omitempty"`
		Method mcpgo.MCPMethod `json:"method,omitempty"`
	}
	if json.Unmarshal(p.body, &msg) != nil {
		writeRPCError(cs, http.StatusBadRequest, mcpgo.PARSE_ERROR, "request body is not valid json")
		return
	}
	headerVersion, metaVersion := r.Header.Get(mcpgo.HeaderProtocolVersion), metaProtocol(p.body)
	modern := mcpgo.IsModernProtocol(headerVersion) || mcpgo.IsModernProtocol(metaVersion)
	if !modern && msg.Method != mcpgo.MethodInitialize && refuseVersion(cs, r) {
		e.noteUnasked(p)
		return
	}
	var id any
	if len(msg.ID) > 0 {
		_ = json.Unmarshal(msg.ID, &id)
	}
	if msg.Method == "" && msg.ID != nil {
		switch {
		case blank(msg.Result) && blank(msg.Error):
			cs.WriteHeader(http.StatusAccepted)
			return
		case msg.Result != nil || msg.Error != nil:
			e.unasked(cs, p, modern, id)
			return
		}
	}
	if modern && p.modern == nil && !checkModern(cs, r, id, headerVersion, metaVersion) {
		return
	}
	var s *legacySession
	if !modern {
		s = e.stream(p.id)
	}
	if s == nil {
		// The request's own session, for its life: it has no handshake to
		// wait for. A 2026-07-28 request names no id.
		s = newLegacySession(p.id)
		s.Initialize()
	}
	listening := modern && methods[string(msg.Method)].streams && id != nil
	var listen string
	if listening {
		// mcp-go's broadcasts reach the sessions registered with it, by
		// id: the stream's is registered under a key of its own while it
		// runs, and gets only what its filter lets through.
		s.listening.Store(true)
		listen = "\x00listen-" + session.NewID()
		_ = e.mcp.RegisterSession(r.Context(), listenKey{s, listen})
		defer e.mcp.UnregisterSession(context.Background(), listen)
	}
	ctx := server.WithSupportedProtocolVersions(e.mcp.WithContext(r.Context(), s), mcpgo.ValidProtocolVersions)
	stop, forwarded := make(chan struct{}), make(chan struct{})
	forward := func(n mcpgo.JSONRPCNotification) {
		if listening {
			n = tagSubscription(n, id)
		}
		_ = cs.send(n)
	}
	go func() {
		defer close(forwarded)
		for {
			select {
			case n := <-s.notes:
				forward(n)
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	answer := e.mcp.HandleMessage(ctx, p.body)
	if listening {
		e.mcp.UnregisterSession(context.Background(), listen)
	}
	close(stop)
	<-forwarded
	if answer == nil {
		cs.WriteHeader(http.StatusAccepted)
		return
	}
	for drained := false; !drained; {
		select {
		case n := <-s.notes:
			forward(n)
		default:
			drained = true
		}
	}
	if r.Context().Err() != nil {
		return
	}
	status := http.StatusOK
	if rpcErr, ok := answer.(mcpgo.JSONRPCError); ok && modern {
		status = modernErrorStatus(rpcErr.Error.Code)
	}
	writeJSONRPC(cs, status, answer)
}

// unasked answers a client's response to a request no one made of it
// (a legacy session's are the gateway's, serveAnswer): a 2026-07-28 client
// sends none, and a stateless endpoint asks nothing.
func (e *Endpoint) unasked(w http.ResponseWriter, p *post, modern bool, id any) {
	e.noteUnasked(p)
	if modern {
		writeJSONRPC(w, http.StatusBadRequest, mcpgo.JSONRPCError{JSONRPC: mcpgo.JSONRPC_VERSION, ID: mcpgo.NewRequestId(id),
			Error: mcpgo.JSONRPCErrorDetails{Code: mcpgo.INVALID_REQUEST, Message: "client-to-server responses are not supported in protocol version " +
				mcpgo.ProtocolVersion20260728 + ": server-initiated requests were replaced by multi round-trip requests"}})
		return
	}
	var n int64
	switch {
	case p.id == "":
		http.Error(w, "Missing session ID for sampling response", http.StatusBadRequest)
	case json.Unmarshal(p.env.RawID, &n) != nil:
		http.Error(w, "Invalid request ID in sampling response", http.StatusBadRequest)
	case e.stream(p.id) == nil:
		http.Error(w, "No active session found for the given session ID", http.StatusNotFound)
	default:
		http.Error(w, "No pending sampling request found for the given request ID", http.StatusBadRequest)
	}
}

// noteUnasked logs, within bounds, a response refused or answering
// nothing asked.
func (e *Endpoint) noteUnasked(p *post) {
	if p.env.Kind == jsonrpc.Response {
		e.unsolicited.note(e.opts.Logger, e.opts.Path, p.id, p.body)
	}
}

// checkModern checks what a 2026-07-28 message that is no request (readModern
// reads requests) must carry: both versions, agreeing, of a revision served.
func checkModern(w http.ResponseWriter, r *http.Request, id any, header, meta string) bool {
	refuse := func(code int, message string) bool {
		writeJSONRPC(w, http.StatusBadRequest, mcpgo.JSONRPCError{JSONRPC: mcpgo.JSONRPC_VERSION, ID: mcpgo.NewRequestId(id),
			Error: mcpgo.JSONRPCErrorDetails{Code: code, Message: message}})
		return false
	}
	switch {
	case r.Header.Get(mcpgo.HeaderLastEventID) != "":
		return refuse(mcpgo.HEADER_MISMATCH, "Last-Event-ID is not supported in protocol version "+mcpgo.ProtocolVersion20260728+
			": streams are not resumable, re-issue the request with a new ID")
	case header == "":
		return refuse(mcpgo.HEADER_MISMATCH, mcpgo.HeaderProtocolVersion+" header is required for requests carrying "+mcpgo.MetaKeyProtocolVersion)
	case meta == "":
		return refuse(mcpgo.INVALID_PARAMS, "missing or invalid _meta field "+mcpgo.MetaKeyProtocolVersion)
	case header != meta:
		return refuse(mcpgo.HEADER_MISMATCH, mcpgo.HeaderProtocolVersion+" header "+header+" does not match request "+mcpgo.MetaKeyProtocolVersion+" "+meta)
	case !mcpgo.IsValidProtocolVersion(meta):
		answer := mcpgo.UnsupportedProtocolVersionError{Version: meta, Supported: mcpgo.ValidProtocolVersions}.JSONRPCError()
		answer.ID = mcpgo.NewRequestId(id)
		writeJSONRPC(w, http.StatusBadRequest, answer)
		return false
	}
	return true
}

// serveSessionlessMethod answers what is not a POST and has no legacy
// session: a 2026-07-28 client's (which has no GET stream and nothing to
// DELETE), or a stateless endpoint's GET stream and DELETE.
func (e *Endpoint) serveSessionlessMethod(w http.ResponseWriter, r *http.Request, id string) {
	switch r.Method {
	case http.MethodGet, http.MethodDelete:
	case http.MethodHead:
		w.WriteHeader(http.StatusOK)
		return
	default:
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	if mcpgo.IsModernProtocol(r.Header.Get(mcpgo.HeaderProtocolVersion)) {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, r.Method+" is not supported in protocol version "+mcpgo.ProtocolVersion20260728+
			": server-to-client messages use subscriptions/listen", http.StatusMethodNotAllowed)
		return
	}
	if r.Method == http.MethodGet && id != "" {
		// Capped per id, though any id is served (SV-2).
		leave, ok := e.ids.Listen(id, e.opts.MaxStreamsPerSession)
		if !ok {
			tooManyStreams(w, e.opts.MaxStreamsPerSession)
			return
		}
		defer leave()
	}
	if refuseVersion(w, r) {
		return
	}
	if r.Method == http.MethodDelete {
		if s := e.stream(id); s != nil {
			e.streamGone(s)
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	s := newLegacySession(id)
	s.Initialize()
	if was, loaded := e.streams.LoadOrStore(id, s); loaded {
		s = was.(*legacySession)
	} else {
		// A stateless endpoint's GET stream is a session of its own,
		// registered so broadcasts reach it, listed while it is open.
		if err := (*sessionHost)(e).Register(r.Context(), id, s, true); err != nil {
			e.streams.CompareAndDelete(id, s)
			http.Error(w, "Session registration failed: "+err.Error(), http.StatusBadRequest)
			return
		}
		defer e.streamGone(s)
	}
	e.serveStream(w, r, s)
}

// stream is the session of a stateless endpoint's GET streams of id, nil
// if none is open: a POST naming the id runs with it.
func (e *Endpoint) stream(id string) *legacySession {
	s, _ := e.streams.Load(id)
	ls, _ := s.(*legacySession)
	return ls
}

// streamGone lets go of a stateless endpoint's GET stream session, once,
// whoever ends it first: its DELETE, the stream's end, or Close.
func (e *Endpoint) streamGone(s *legacySession) {
	if e.streams.CompareAndDelete(s.id, s) {
		e.mcp.UnregisterSession(context.Background(), s.id)
		(*sessionHost)(e).Gone(s.id)
		e.ids.Forget(s.id)
	}
}

// listenKey is a listen stream's session as registered with mcp-go, under
// a key no header value can name: the session itself keeps its empty id,
// as every 2026-07-28 request's.
type listenKey struct {
	*legacySession
	key string
}

func (l listenKey) SessionID() string { return l.key }

// tagSubscription tags a notification with the id of the
// subscriptions/listen request whose stream carries it; _meta is copied,
// since a broadcast shares it.
func tagSubscription(n mcpgo.JSONRPCNotification, id any) mcpgo.JSONRPCNotification {
	meta := make(map[string]any, len(n.Params.Meta)+1)
	for k, v := range n.Params.Meta {
		meta[k] = v
	}
	meta[mcpgo.MetaKeySubscriptionID] = id
	n.Params.Meta = meta
	return n
}

// metaProtocol is the protocol version a body's params._meta names, "" for
// none.
func metaProtocol(body []byte) string {
	var wrapper struct {
		Params struct {
			Meta *mcpgo.Meta `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &wrapper) != nil {
		return ""
	}
	return wrapper.Params.Meta.ProtocolVersion()
}

// modernErrorStatus is the HTTP status revision 2026-07-28 gives a JSON-RPC
// error code.
func modernErrorStatus(code int) int {
	switch code {
	case mcpgo.METHOD_NOT_FOUND:
		return http.StatusNotFound
	case mcpgo.HEADER_MISMATCH, mcpgo.MISSING_REQUIRED_CLIENT_CAPABILITY, mcpgo.UNSUPPORTED_PROTOCOL_VERSION,
		mcpgo.INVALID_REQUEST, mcpgo.INVALID_PARAMS, mcpgo.PARSE_ERROR:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// writeJSONRPC writes a JSON-RPC message with status: 202 with no body
// when there is none (a notification, a response).
func writeJSONRPC(w http.ResponseWriter, status int, msg mcpgo.JSONRPCMessage) {
	if msg == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	out, err := json.Marshal(msg)
	if err != nil {
		out = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"the answer could not be written"}}`)
	}
	writeJSON(w, status, append(out, '\n'))
}

// writeJSON writes body, a JSON document, with status.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// blank reports whether v is absent, null, {} or [] (whitespace aside).
func blank(v json.RawMessage) bool {
	switch string(bytes.Join(bytes.Fields(v), nil)) {
	case "", "null", "{}", "[]":
		return true
	}
	return false
}
