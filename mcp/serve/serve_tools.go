package serve

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/mcp/jsonrpc"
)

// inbound is a request the pipeline answers itself, as read. Every
// era and session mode — a legacy session, a stateless endpoint, a client
// of revision 2026-07-28 — is answered from it by the same code
// (serveToolsCall, serveToolsList), so they are governed alike and cost
// alike (SV-1). mcp-go never sees these two methods.
type inbound struct {
	rawID  json.RawMessage
	params json.RawMessage
	actor  core.Actor
	// session is the legacy session the request came on, nil without one
	// (a stateless endpoint, revision 2026-07-28, or a session ended by
	// another request meanwhile); sessionID is its id, "" without one.
	session   server.ClientSession
	sessionID string
	// modern is the 2026-07-28 request as read; nil for a legacy one.
	modern *modernInbound
	header http.Header
	// cancel ends the request's context: a notifications/cancelled for a
	// session's call uses it.
	cancel context.CancelCauseFunc
}

// readInbound reads env as a request of a method the gateway answers
// (methods) from an authenticated actor. ok is false for anything else,
// and for what is refused before any method runs (a legacy request without
// the session a stateful endpoint requires, or naming a protocol revision
// the endpoint does not serve), which HandleMessage's path then answers.
func (e *Endpoint) readInbound(r *http.Request, env *jsonrpc.Envelope, modern *modernInbound, session string, cancel context.CancelCauseFunc) (*inbound, bool) {
	if env.Kind != jsonrpc.Request || methods[env.Method].own == nil {
		return nil, false
	}
	actor, ok := e.opts.Actor(r.Context())
	if !ok {
		return nil, false
	}
	tr := &inbound{rawID: env.RawID, params: env.ParamsOrEmpty(), actor: actor, header: r.Header, cancel: cancel}
	if modern != nil {
		tr.modern = modern
		return tr, true
	}
	if !env.Valid {
		return nil, false
	}
	if v := r.Header.Get(mcpgo.HeaderProtocolVersion); v != "" && !slices.Contains(legacyProtocols, v) {
		return nil, false
	}
	if session == "" {
		if !e.opts.Stateless {
			return nil, false
		}
		return tr, true
	}
	tr.sessionID = session
	if s := e.ids.Lookup(session).Conn; s != nil {
		tr.session = s
	}
	return tr, true
}

// requestID is the request's id as handlers see it (SV-7).
func (tr *inbound) requestID() string { return jsonrpc.IDText(tr.rawID) }

// writeError answers with a JSON-RPC error; a 2026-07-28 request gets the
// HTTP status its revision maps the code to.
func (tr *inbound) writeError(cs *callStream, code int, message string) {
	if tr.modern != nil {
		writeModernError(cs, tr.rawID, &modernError{code: code, message: message})
		return
	}
	writeJSON(cs, http.StatusOK, jsonrpc.ErrorBody(tr.rawID, code, message))
}

// serveToolsCall answers a tools/call: the upstream's result goes out as
// the bytes it sent, never parsed into mcp-go's types and marshalled
// again, so every field of every content block reaches the client (IM-32).
func (e *Endpoint) serveToolsCall(ctx context.Context, cs *callStream, tr *inbound) {
	defer func() {
		// A handler that panics fails its call, not the connection; what
		// it panicked with is logged, not shown to the client.
		if v := recover(); v != nil {
			e.opts.Logger.Error("tools/call panicked", "endpoint", e.opts.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			tr.writeError(cs, mcpgo.INTERNAL_ERROR, "internal error: the call failed in the gateway, and was logged")
		}
	}()
	var name string
	var args json.RawMessage
	var progress any
	var state *string
	var inputs map[string]json.RawMessage
	if tr.modern != nil {
		if !tr.modern.callOK {
			tr.writeError(cs, mcpgo.INVALID_PARAMS, "invalid params: tools/call params must be an object with a string name")
			return
		}
		p := &tr.modern.call
		name, args, progress, state, inputs = p.Name, p.Arguments, tr.modern.progressToken, p.RequestState, p.InputResponses
		ctx = server.WithRequestProtocolInfo(ctx, tr.modern.info)
	} else {
		var p callParams
		if !readCallParams(tr.params, &p) {
			tr.writeError(cs, mcpgo.INVALID_PARAMS, "invalid params: tools/call params must be an object with a string name")
			return
		}
		name, args, progress = p.Name, p.Arguments, p.progressToken()
	}
	// search_tools is answered there; call_tool goes on as its inner call.
	// One set of rules for the whole call (OP-8).
	r := e.rules.Load()
	name, args, via, done := e.discoveryCall(ctx, cs, tr, r, name, args)
	if done {
		return
	}
	c, err := e.resolve(ctx, r, tr.actor, name, args)
	if err != nil {
		// Unknown, or off this actor's list: one answer for both (SV-5),
		// with the status the 2026-07-28 revision gives -32602.
		status := http.StatusOK
		if tr.modern != nil {
			status = http.StatusBadRequest
		}
		writeJSON(cs, status, unknownToolAnswer(tr.rawID, name))
		return
	}
	c.RequestID, c.Via = tr.requestID(), via
	if tr.modern != nil {
		e.serveModernCall(ctx, cs, tr, r, c, state, inputs)
		return
	}
	var asks *pendingRequests
	if tr.session != nil {
		ctx = e.mcp.WithContext(ctx, tr.session)
		id, _ := jsonrpc.ReadID(tr.rawID)
		key := tr.sessionID + "\x00" + jsonrpc.IDKey(id)
		e.inflight.Add(key, func() { tr.cancel(context.Canceled) })
		defer e.inflight.Remove(key)
		asks = &e.asks
	}
	writeResult(cs, tr.rawID, e.invoke(ctx, r, tr.actor, c, progress, asks))
}

// serveModernCall is the rest of a 2026-07-28 tools/call, whose client
// carries its confirmation or its answers to an upstream's questions in
// the retried request (CF-6, server_state.go, modern_relay.go).
func (e *Endpoint) serveModernCall(ctx context.Context, cs *callStream, tr *inbound, r *Rules, c *core.ToolCall, state *string, inputs map[string]json.RawMessage) {
	req, actor := tr.modern, tr.actor
	// Through call_tool the headers are call_tool's, whose arguments hold
	// the inner ones: there is nothing of the inner tool's to bind.
	if c.Via == "" && bytes.Contains(c.Tool.InputSchema, []byte("x-mcp-header")) {
		// Arguments bound to headers travel twice: the two must agree.
		if err := checkParamHeaders(tr.header, c.Tool, tr.params); err != nil {
			writeModernError(cs, tr.rawID, &modernError{code: mcpgo.HEADER_MISMATCH, message: err.Error()})
			return
		}
	}
	ctx, untrack := e.states.inflight.track(ctx, actor, c.RequestID)
	defer untrack()
	if state != nil {
		if b, err := e.states.check(*state, actor, c); err == nil && b.Relay != "" {
			// The retry of a call parked for the client's answer to its
			// upstream's request: the answer goes on to the upstream.
			e.resumeRelay(ctx, cs, tr.rawID, actor, c, b, inputs)
			return
		}
		// The retry of a call whose confirmation rode an input request
		// (CF-6): its state must be the gateway's own, for this actor,
		// tool and arguments, fresh and unused, or nothing runs.
		confirmed, token, err := e.states.open(*state, actor, c, inputs)
		if err != nil {
			writeModernError(cs, tr.rawID, &modernError{code: mcpgo.INVALID_PARAMS, message: err.Error()})
			return
		}
		if !confirmed {
			raw, _ := json.Marshal(toolError(c.Tool.Name, &confirm.RefusedError{Err: errDeclined, Text: "Not run: " + errDeclined.Error()}))
			writeResult(cs, tr.rawID, e.decorateModern(raw))
			return
		}
		c.Confirm, c.Token = true, token
	}
	if elicits, samples := relays(req); (elicits || samples) && (c.Tool.Kind != core.KindAction || c.Confirm) {
		// The upstream may ask the client something during the call: the
		// call runs beyond this request, so the question can reach the
		// client as an input request (modern_relay.go).
		if e.startRelay(ctx, cs, r, actor, c, req, elicits, samples) {
			return
		}
	}
	result := e.invoke(ctx, r, actor, c, req.progressToken, nil)
	if c.Tool.Kind == core.KindAction && !c.Confirm && e.opts.ElicitConfirm && req.elicits {
		if asked, ok := e.askToConfirm(actor, c, result); ok {
			result = asked
		}
	}
	writeResult(cs, tr.rawID, e.decorateModern(result))
}

// checkParamHeaders checks the Mcp-Param-* headers of a call against the
// arguments the tool's x-mcp-header annotations bind them to (2026-07-28,
// SEP-2243): a header sent with an empty value is not a missing one.
func checkParamHeaders(h http.Header, t core.Tool, params json.RawMessage) error {
	tool := mcpgo.NewToolWithRawSchema(t.Name, "", t.InputSchema)
	return mcpgo.ValidateParamHeadersLookup(func(name string) (string, bool) {
		vs, ok := h[http.CanonicalHeaderKey(name)]
		if !ok || len(vs) == 0 {
			return "", false
		}
		return vs[0], true
	}, &tool, params)
}

// serveToolsList answers a tools/list from the kept listing JSON, filtered
// for the actor (SV-4), in name order. The whole list is one page; a
// cursor (the base64 of the last name a client saw) starts after that name,
// as pages of mcp-go's listings do.
func (e *Endpoint) serveToolsList(ctx context.Context, cs *callStream, tr *inbound) {
	var params struct {
		Cursor *string `json:"cursor"`
	}
	if json.Unmarshal(tr.params, &params) != nil {
		tr.writeError(cs, mcpgo.INVALID_PARAMS, "invalid params: tools/list params must be an object")
		return
	}
	after := ""
	if params.Cursor != nil && *params.Cursor != "" {
		c, err := base64.StdEncoding.DecodeString(*params.Cursor)
		if err != nil {
			tr.writeError(cs, mcpgo.INVALID_PARAMS, "invalid cursor: "+err.Error())
			return
		}
		after = string(c)
	}
	if tr.modern != nil {
		ctx = server.WithRequestProtocolInfo(ctx, tr.modern.info)
	}
	// Read your writes (SV-1): a tool registered before this request is
	// in its listing. A call needs no such wait: resolve reads the
	// registry itself.
	e.applied.wait(ctx, e.opts.Registry.Bus().Seq())
	listable := e.listable(ctx, e.rules.Load(), tr.actor, tr.session)
	var buf bytes.Buffer
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(tr.rawID)
	buf.WriteString(`,"result":{`)
	if tr.modern != nil {
		buf.WriteString(`"resultType":"complete","_meta":`)
		buf.Write(e.infoMeta)
		// The list is this actor's (SV-4): a cache may keep it for this
		// principal only.
		buf.WriteString(`,"ttlMs":`)
		buf.WriteString(strconv.FormatInt(e.opts.ListTTL.Milliseconds(), 10))
		buf.WriteString(`,"cacheScope":"private",`)
	}
	buf.WriteString(`"tools":[`)
	first := true
	e.eachListed(listable, func(name string, raw []byte) {
		if name <= after && after != "" {
			return
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		buf.Write(raw)
	})
	buf.WriteString("]}}\n")
	writeJSON(cs, http.StatusOK, buf.Bytes())
}
