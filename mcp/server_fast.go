package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
)

// serveCall answers a tools/call itself, without mcp-go's
// request handling: the upstream's result goes out as the bytes it sent,
// never parsed into mcp-go's types and marshalled again, so every field of
// every content block reaches the client (issue 5), and the call costs
// less (issue 8). It takes only what it can answer exactly as mcp-go would:
// a single request, on a live initialized session, for a tool the endpoint
// serves and the actor may call. Everything else, including every way of being wrong, is
// left to mcp-go, and then serveCall reports false.
func (e *Endpoint) serveCall(w *callStream, r *http.Request, body []byte, session string) bool {
	req, ok := e.ownRequest(r, body, session, mcpgo.MethodToolsCall)
	if !ok {
		return false
	}
	var params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      *struct {
			ProgressToken any `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(req.params, &params) != nil {
		return false
	}
	// A call that does not resolve is left to mcp-go, whose answer to it
	// stands (SV-5).
	c, err := e.resolve(r.Context(), req.actor, params.Name, params.Arguments)
	if err != nil {
		return false
	}

	ctx, cancel := context.WithCancel(e.mcp.WithContext(r.Context(), req.session))
	defer cancel()
	key := session + "\x00" + idKey(req.id)
	e.ids.inflight.add(key, cancel)
	defer e.ids.inflight.remove(key)
	var token any
	if params.Meta != nil {
		token = params.Meta.ProgressToken
	}
	result := e.invoke(ctx, req.actor, c, token, &e.asks)

	resp := make([]byte, 0, len(result)+len(req.rawID)+40)
	resp = append(resp, `{"jsonrpc":"2.0","id":`...)
	resp = append(resp, req.rawID...)
	resp = append(resp, `,"result":`...)
	resp = append(resp, result...)
	resp = append(resp, "}\n"...)
	// Written as mcp-go writes a response: the call stream turns it into the
	// stream's last event if notifications went out first.
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(resp)
	return true
}

// ownRequest is a request the gateway answers itself, read.
type ownRequest struct {
	rawID   json.RawMessage
	id      any
	params  json.RawMessage
	session server.ClientSession
	actor   core.Actor
}

// ownRequest reads body as a single JSON-RPC request of method on a live,
// initialized session, from an authenticated actor, with a protocol
// version header (if any) of a revision that has sessions, and a string or
// number id. ok is false for anything else, which mcp-go then answers.
func (e *Endpoint) ownRequest(r *http.Request, body []byte, session string, method mcpgo.MCPMethod) (req ownRequest, ok bool) {
	if e.opts.Stateless || session == "" || !bytes.Contains(body, []byte(`"`+method+`"`)) {
		return req, false
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.JSONRPC != mcpgo.JSONRPC_VERSION || msg.Method != string(method) {
		return req, false
	}
	if json.Unmarshal(msg.ID, &req.id) != nil {
		return req, false
	}
	switch req.id.(type) {
	case string, float64:
	default:
		return req, false
	}
	if v := r.Header.Get(mcpgo.HeaderProtocolVersion); v != "" && !slices.Contains(mcpgo.LegacyProtocolVersions(), v) {
		return req, false
	}
	if req.session = e.ids.session(session); req.session == nil || !req.session.Initialized() {
		return req, false
	}
	if req.actor, ok = e.opts.Actor(r.Context()); !ok {
		return req, false
	}
	req.rawID, req.params = msg.ID, msg.Params
	if len(req.params) == 0 || string(req.params) == "null" {
		req.params = json.RawMessage(`{}`)
	}
	return req, true
}

// cancelFast applies a client's notifications/cancelled to a call serveCall
// is running; mcp-go, which gets the notification next, knows only its own.
func (e *Endpoint) cancelFast(body []byte, session string) {
	if session == "" || !bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
		return
	}
	var n struct {
		Method string `json:"method"`
		Params struct {
			RequestID any `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &n) != nil || n.Method != string(mcpgo.MethodNotificationCancelled) {
		return
	}
	e.ids.inflight.cancel(session + "\x00" + idKey(n.Params.RequestID))
}
