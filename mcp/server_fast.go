package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
)

// legacyProtocols are the revisions with sessions, listed once: mcp-go
// builds the list anew on every call of LegacyProtocolVersions.
var legacyProtocols = mcpgo.LegacyProtocolVersions()

// callParams are a tools/call's params as the gateway reads them: the
// arguments stay the bytes the client sent.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      *struct {
		ProgressToken any `json:"progressToken"`
	} `json:"_meta"`
}

func (p *callParams) progressToken() any {
	if p.Meta == nil {
		return nil
	}
	return p.Meta.ProgressToken
}

// serveCall answers a tools/call itself, without mcp-go's
// request handling: the upstream's result goes out as the bytes it sent,
// never parsed into mcp-go's types and marshalled again, so every field of
// every content block reaches the client (IM-32), and the call costs
// less. It takes only what it can answer exactly as mcp-go would:
// a single request, on a live initialized session, for a tool the endpoint
// serves and the actor may call. Everything else is left to mcp-go, and
// then serveCall reports false; a tools/call that mcp-go then dispatches
// (stateless endpoints, revisions without sessions) reaches callHandler,
// which answers it the same way from the request read here.
//
// cancel ends the request's context: a notifications/cancelled for the
// call's id uses it, so the call needs no cancel context of its own.
func (e *Endpoint) serveCall(w *callStream, r *http.Request, body []byte, session string, cancel context.CancelCauseFunc) (bool, *http.Request) {
	req, ok := e.ownRequest(r, body, session, mcpgo.MethodToolsCall)
	if !ok {
		return false, withRawCall(r, body)
	}
	var params callParams
	if !readCallParams(req.params, &params) {
		return false, r
	}
	c, err := e.resolve(r.Context(), req.actor, params.Name, params.Arguments)
	if err != nil {
		// Unknown, or off this actor's list: one answer for both (SV-5).
		writeUnknownTool(w, req.rawID, params.Name, http.StatusOK)
		return true, r
	}

	c.RequestID = requestIDOf(req.id, req.rawID)
	ctx := e.mcp.WithContext(r.Context(), req.session)
	key := session + "\x00" + idKey(req.id)
	e.ids.inflight.add(key, func() { cancel(context.Canceled) })
	defer e.ids.inflight.remove(key)
	writeResult(w, req.rawID, e.invoke(ctx, req.actor, c, params.progressToken(), &e.asks))
	return true, r
}

// writeResult writes a tools/call's answer around the result's own bytes,
// as mcp-go writes a response: the call stream turns it into the stream's
// last event if notifications went out first.
func writeResult(w *callStream, rawID, result json.RawMessage) {
	resp := make([]byte, 0, len(result)+len(rawID)+40)
	resp = append(resp, `{"jsonrpc":"2.0","id":`...)
	resp = append(resp, rawID...)
	resp = append(resp, `,"result":`...)
	resp = append(resp, result...)
	resp = append(resp, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(resp)
}

// decorateModern adds what the 2026-07-28 revision requires of every
// result, as mcp-go does for its own: a resultType, and the server's
// identity in _meta. Every member already there keeps its bytes and its
// place; a result that is not an object is returned as it is.
func (e *Endpoint) decorateModern(result json.RawMessage) json.RawMessage {
	// Nearly every result names neither member: both go in front, the
	// result's own bytes after them, in one scan and one copy.
	t := bytes.TrimSpace(result)
	plain := len(t) > 1 && t[0] == '{' && scanMembers(t, func(key, _ []byte) bool {
		return bytes.IndexByte(key, '\\') < 0 && !bytes.EqualFold(key, []byte("resultType")) && !bytes.EqualFold(key, []byte("_meta"))
	})
	if plain {
		head := `{"resultType":"` + string(mcpgo.ResultTypeComplete) + `","_meta":`
		out := make([]byte, 0, len(head)+len(e.infoMeta)+len(t)+1)
		out = append(out, head...)
		out = append(out, e.infoMeta...)
		if rest := bytes.TrimSpace(t[1:]); len(rest) > 0 && rest[0] != '}' {
			out = append(out, ',')
			return append(out, rest...)
		}
		return append(out, '}')
	}
	dec := json.NewDecoder(bytes.NewReader(result))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return result
	}
	type member struct {
		key string
		val json.RawMessage
	}
	var members []member
	hasType, hasMeta := false, false
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return result
		}
		var val json.RawMessage
		if dec.Decode(&val) != nil {
			return result
		}
		hasType = hasType || key == "resultType"
		hasMeta = hasMeta || key == "_meta"
		members = append(members, member{key, val})
	}
	info := e.infoMeta
	var b bytes.Buffer
	b.Grow(len(result) + len(info) + 48)
	b.WriteByte('{')
	if !hasType {
		b.WriteString(`"resultType":"` + string(mcpgo.ResultTypeComplete) + `"`)
	}
	if !hasMeta {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(`"_meta":`)
		b.Write(info)
	}
	for _, m := range members {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(m.key)
		b.Write(key)
		b.WriteByte(':')
		if m.key == "_meta" {
			b.Write(withServerInfo(m.val, info))
			continue
		}
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// withServerInfo puts the one member of info first in the object meta unless
// meta names the server already; anything but an object is left alone.
func withServerInfo(meta, info json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(meta)
	if len(t) < 2 || t[0] != '{' || hasTopLevelKey(t, mcpgo.MetaKeyServerInfo) {
		return meta
	}
	rest := bytes.TrimSpace(t[1:])
	out := append([]byte(nil), info[:len(info)-1]...) // info without its closing brace
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

// hasTopLevelKey reports whether the JSON object raw has key at its top
// level.
func hasTopLevelKey(raw json.RawMessage, key string) bool {
	if !bytes.Contains(raw, []byte(key)) && bytes.IndexByte(raw, '\\') < 0 {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	_, ok := m[key]
	return ok
}

// rawCall is a tools/call request read by the gateway before mcp-go reads
// it, for callHandler to answer from: its id and its params as sent.
type rawCall struct {
	rawID  json.RawMessage
	params callParams
	// modern: the request is of a revision without sessions (2026-07-28).
	modern bool
}

type rawCallKey struct{}

// withRawCall reads body as a single tools/call request and, if it is one,
// returns r carrying it. Anything else is mcp-go's alone to read and answer.
func withRawCall(r *http.Request, body []byte) *http.Request {
	if !bytes.Contains(body, []byte(`"`+mcpgo.MethodToolsCall+`"`)) {
		return r
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.JSONRPC != mcpgo.JSONRPC_VERSION || msg.Method != string(mcpgo.MethodToolsCall) || len(msg.ID) == 0 {
		return r
	}
	v := r.Header.Get(mcpgo.HeaderProtocolVersion)
	rc := &rawCall{rawID: msg.ID, modern: v != "" && !slices.Contains(legacyProtocols, v)}
	if json.Unmarshal(msg.Params, &rc.params) != nil {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), rawCallKey{}, rc))
}

func rawCallFrom(ctx context.Context) *rawCall {
	rc, _ := ctx.Value(rawCallKey{}).(*rawCall)
	return rc
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
	rawID, params, ok := requestMembers(body, method)
	if !ok {
		return req, false
	}
	if req.id, ok = readID(rawID); !ok {
		return req, false
	}
	switch req.id.(type) {
	case string, float64:
	default:
		return req, false
	}
	if v := r.Header.Get(mcpgo.HeaderProtocolVersion); v != "" && !slices.Contains(legacyProtocols, v) {
		return req, false
	}
	if req.session = e.ids.session(session); req.session == nil || !req.session.Initialized() {
		return req, false
	}
	if req.actor, ok = e.opts.Actor(r.Context()); !ok {
		return req, false
	}
	req.rawID, req.params = rawID, params
	if len(req.params) == 0 || string(req.params) == "null" {
		req.params = json.RawMessage(`{}`)
	}
	return req, true
}

// readID is json.Unmarshal of a JSON-RPC id into an any: a string, a
// float64, or whatever else it holds. Plain strings and numbers, nearly
// every id, are read without the decoder.
func readID(raw []byte) (any, bool) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		if s := raw[1 : n-1]; bytes.IndexByte(s, '\\') < 0 && bytes.IndexByte(s, '"') < 0 && utf8.Valid(s) {
			return string(s), true
		}
	} else if n > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
			return f, true
		}
	}
	var id any
	err := json.Unmarshal(raw, &id)
	return id, err == nil
}

// readCallParams is json.Unmarshal of a tools/call's params (valid JSON)
// into p, reporting whether it succeeded. The common params, an object
// with a plain name and arguments and no _meta, are read in one scan; any
// member the scan would have to interpret (a _meta, an escape, a name in
// other case, which encoding/json matches too) sends the whole object to
// the decoder.
func readCallParams(raw []byte, p *callParams) bool {
	plain := true
	var name, args []byte
	ok := scanMembers(raw, func(key, v []byte) bool {
		switch string(key) {
		case "name":
			name = v
		case "arguments":
			args = v
		default:
			if bytes.IndexByte(key, '\\') >= 0 || bytes.EqualFold(key, []byte("name")) ||
				bytes.EqualFold(key, []byte("arguments")) || bytes.EqualFold(key, []byte("_meta")) {
				plain = false
			}
		}
		return true
	})
	if ok && plain {
		if name == nil {
			*p = callParams{Arguments: json.RawMessage(args)}
			return true
		}
		// A string reads as readID reads a string id.
		if n, _ := readID(name); n != nil {
			if s, isString := n.(string); isString {
				*p = callParams{Name: s, Arguments: json.RawMessage(args)}
				return true
			}
		}
	}
	*p = callParams{}
	return json.Unmarshal(raw, p) == nil
}

// requestMembers returns the id and params of body when it is a JSON-RPC
// 2.0 request for method: one check of the bytes and one scan of the
// members, as encoding/json would read them; where the scan cannot say
// the same (escapes in the values it compares, a member named in other
// case), it decodes.
func requestMembers(body []byte, method mcpgo.MCPMethod) (id, params json.RawMessage, ok bool) {
	if !json.Valid(body) {
		return nil, nil, false
	}
	m, ok := scanMessage(body)
	if ok && !m.folded && bytes.IndexByte(m.jsonrpc, '\\') < 0 && bytes.IndexByte(m.method, '\\') < 0 {
		ok = string(m.jsonrpc) == `"`+mcpgo.JSONRPC_VERSION+`"` && len(m.method) == len(method)+2 &&
			m.method[0] == '"' && string(m.method[1:len(m.method)-1]) == string(method)
		return m.id, m.params, ok
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.JSONRPC != mcpgo.JSONRPC_VERSION || msg.Method != string(method) {
		return nil, nil, false
	}
	return msg.ID, msg.Params, true
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

// requestIDText is a JSON-RPC id as handlers see it (SV-7): a string id's
// text, a number as written.
func requestIDText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(raw))
}

// requestIDOf is requestIDText of an id already decoded (a string or a
// number, as ownRequest allows).
func requestIDOf(id any, raw json.RawMessage) string {
	if s, ok := id.(string); ok {
		return s
	}
	return string(bytes.TrimSpace(raw))
}

// unknownToolText is the words for a tool that is not there, as SPEC says
// them (IM-20, SV-5).
func unknownToolText(name string) string { return "unknown tool: " + name }

// unknownToolAnswer is the answer to a tools/call for a name that is
// unknown or off the actor's list, on every path alike: the JSON-RPC error
// mcp-go gives an unknown tool, in the gateway's words.
func unknownToolAnswer(rawID json.RawMessage, name string) []byte {
	msg, _ := json.Marshal(unknownToolText(name))
	resp := make([]byte, 0, len(rawID)+len(msg)+64)
	resp = append(resp, `{"jsonrpc":"2.0","id":`...)
	resp = append(resp, rawID...)
	resp = append(resp, `,"error":{"code":-32602,"message":`...)
	resp = append(resp, msg...)
	return append(resp, "}}\n"...)
}

func writeUnknownTool(w *callStream, rawID json.RawMessage, name string, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(unknownToolAnswer(rawID, name))
}

// unknownToolRewrite puts mcp-go's answer to a tools/call of a name it does
// not know in the gateway's words, so that it matches unknownToolAnswer
// byte for byte; every other answer passes untouched.
func unknownToolRewrite(_ http.Header, answer []byte) []byte {
	var msg struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(answer, &msg) != nil || msg.Error == nil || msg.Error.Code != mcpgo.INVALID_PARAMS {
		return answer
	}
	name, ok := strings.CutPrefix(msg.Error.Message, "tool '")
	if !ok {
		return answer
	}
	if name, ok = strings.CutSuffix(name, "' not found: tool not found"); !ok {
		return answer
	}
	return unknownToolAnswer(msg.ID, name)
}

// initializeRewrite hands out no session id with an error (SV-2): mcp-go
// mints the id before it reads the request, and sends it with whatever it
// answers. The request lets go of an id it did not hand out (discard).
func initializeRewrite(h http.Header, answer []byte) []byte {
	if isErrorAnswer(answer) {
		h.Del(server.HeaderKeySessionID)
	}
	return answer
}

// isErrorAnswer reports whether a JSON-RPC answer is an error.
func isErrorAnswer(answer []byte) bool {
	var msg struct {
		Error json.RawMessage `json:"error"`
	}
	return json.Unmarshal(answer, &msg) == nil && len(msg.Error) > 0 && string(msg.Error) != "null"
}
