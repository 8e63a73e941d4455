package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

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
	if e.opts.Stateless || session == "" || !bytes.Contains(body, []byte(`"tools/call"`)) {
		return false
	}
	var req struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
			Meta      *struct {
				ProgressToken any `json:"progressToken"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil || req.JSONRPC != mcpgo.JSONRPC_VERSION || req.Method != string(mcpgo.MethodToolsCall) {
		return false
	}
	var id any
	if json.Unmarshal(req.ID, &id) != nil {
		return false
	}
	switch id.(type) {
	case string, float64:
	default:
		return false
	}
	if v := r.Header.Get(mcpgo.HeaderProtocolVersion); v != "" && !slices.Contains(mcpgo.LegacyProtocolVersions(), v) {
		return false
	}
	sess := e.ids.session(session)
	if sess == nil || !sess.Initialized() {
		return false
	}
	actor, ok := e.opts.Actor(r.Context())
	if !ok {
		return false
	}
	tool, ok := e.opts.Registry.Get(req.Params.Name)
	if !ok || !e.served(core.ToolInfo{Kind: tool.Kind, Disabled: tool.Disabled}) ||
		e.opts.Registry.Allowed(r.Context(), actor, e.opts.Tools, tool.Name) != nil {
		return false
	}

	ctx, cancel := context.WithCancel(e.mcp.WithContext(r.Context(), sess))
	defer cancel()
	key := session + "\x00" + idKey(id)
	e.ids.startCall(key, cancel)
	defer e.ids.endCall(key)
	var token any
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	result := e.invoke(ctx, tool.Name, tool.Kind, req.Params.Arguments, token, true)

	resp := make([]byte, 0, len(result)+len(req.ID)+40)
	resp = append(resp, `{"jsonrpc":"2.0","id":`...)
	resp = append(resp, req.ID...)
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
	e.ids.cancelCall(session + "\x00" + idKey(n.Params.RequestID))
}

func (m *sessionIDs) startCall(key string, cancel context.CancelFunc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inflight[key] = cancel
}

func (m *sessionIDs) endCall(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.inflight, key)
}

func (m *sessionIDs) cancelCall(key string) {
	m.mu.Lock()
	cancel := m.inflight[key]
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
