package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/mcp/jsonrpc"
)

// A request of revision 2026-07-28 carries everything initialize used to
// settle in its own _meta, and opens no session: every endpoint serves it
// beside legacy sessions, on the same path (SV-1, SV-2). Such a request is
// read here once, checked against the revision's wire rules, and, for
// tools/call and tools/list, answered by the same code that answers a
// session's (invoke, the kept listing JSON), so both eras are governed
// alike and cost alike. Its other methods are HandleMessage's, with a
// session of the request's own (methods.go).

// modernInbound is a 2026-07-28 request as read from its body.
type modernInbound struct {
	rawID  json.RawMessage
	id     any
	method string
	params json.RawMessage
	info   *server.RequestProtocolInfo
	// elicits: the client declared the elicitation capability.
	elicits bool
	// progressToken is _meta's, nil when none.
	progressToken any
	// call holds a tools/call's params as read in the same pass; ok is
	// false when the scan could not say what encoding/json would.
	call   modernCallParams
	callOK bool
	// traceparent and tracestate are _meta's W3C trace context (OP-9),
	// read even from a request refused.
	traceparent, tracestate string
}

// modernError is a refusal of a 2026-07-28 request: its JSON-RPC code and
// the HTTP status the revision maps it to.
type modernError struct {
	code    int
	message string
	data    any
}

func (e *modernError) Error() string { return e.message }

func invalidMeta(format string, args ...any) *modernError {
	return &modernError{code: mcpgo.INVALID_PARAMS, message: fmt.Sprintf(format, args...)}
}

// readModern reports whether body, read into env, is a request of revision
// 2026-07-28 (by its _meta or its Mcp-Protocol-Version header, as mcp-go
// decides) and, if it is, reads and checks it: err refuses it. A body that is not a single
// request (a response, a notification) is not read here: mcp-go refuses what
// the revision does not allow.
func readModern(r *http.Request, env *jsonrpc.Envelope, body []byte) (req *modernInbound, modern bool, err *modernError) {
	headerVersion := r.Header.Get(mcpgo.HeaderProtocolVersion)
	if !mcpgo.IsModernProtocol(headerVersion) && !bytes.Contains(body, []byte(mcpgo.MetaKeyProtocolVersion)) {
		return nil, false, nil
	}
	if env.Kind != jsonrpc.Request {
		if mcpgo.IsModernProtocol(headerVersion) {
			return nil, true, nil // mcp-go answers what is no request
		}
		return nil, false, nil
	}
	req = &modernInbound{rawID: env.RawID, method: env.Method, params: env.ParamsOrEmpty()}
	var metaRaw json.RawMessage
	plain := true
	var name []byte
	scanned := jsonrpc.EachMember(req.params, func(key, v []byte) bool {
		switch string(key) {
		case "_meta":
			metaRaw = v
		case "name":
			name = v
		case "arguments":
			req.call.Arguments = v
		case "requestState":
			plain = false // rare: decoded below
		default:
			if bytes.IndexByte(key, '\\') >= 0 || len(key) <= len("requestState") && foldsToCallKey(key) {
				plain = false
			}
		}
		return true
	})
	if !scanned && !mcpgo.IsModernProtocol(headerVersion) {
		return nil, false, nil
	}
	if req.method == string(mcpgo.MethodToolsCall) && scanned {
		if plain {
			if n, ok := jsonrpc.ReadID(name); ok {
				req.call.Name, req.callOK = n.(string)
			}
		} else if json.Unmarshal(req.params, &req.call) == nil {
			req.callOK = true
		}
	}
	info, progress, elicits, metaErr := readModernMeta(metaRaw, req)
	if info == nil && !mcpgo.IsModernProtocol(headerVersion) {
		return nil, false, nil // a legacy request: its _meta names no modern revision
	}
	req.id, _ = jsonrpc.ReadID(env.RawID)
	switch {
	case r.Header.Get(mcpgo.HeaderLastEventID) != "":
		return req, true, &modernError{code: mcpgo.HEADER_MISMATCH,
			message: "Last-Event-ID is not supported in protocol version " + mcpgo.ProtocolVersion20260728 + ": streams are not resumable, re-issue the request with a new ID"}
	case headerVersion == "":
		return req, true, &modernError{code: mcpgo.HEADER_MISMATCH,
			message: mcpgo.HeaderProtocolVersion + " header is required for requests carrying " + mcpgo.MetaKeyProtocolVersion}
	case info == nil && metaErr == nil:
		return req, true, invalidMeta("missing or invalid _meta field %s: a request of protocol version %s carries its version, client info and capabilities in params._meta",
			mcpgo.MetaKeyProtocolVersion, headerVersion)
	case info != nil && info.ProtocolVersion != headerVersion:
		return req, true, &modernError{code: mcpgo.HEADER_MISMATCH,
			message: fmt.Sprintf("%s header %s does not match request %s %s", mcpgo.HeaderProtocolVersion, headerVersion, mcpgo.MetaKeyProtocolVersion, info.ProtocolVersion)}
	case !mcpgo.IsValidProtocolVersion(headerVersion):
		e := mcpgo.UnsupportedProtocolVersionError{Version: headerVersion, Supported: mcpgo.ValidProtocolVersions}
		return req, true, &modernError{code: mcpgo.UNSUPPORTED_PROTOCOL_VERSION, message: e.Error(),
			data: mcpgo.UnsupportedProtocolVersionData{Supported: mcpgo.ValidProtocolVersions, Requested: headerVersion}}
	case metaErr != nil:
		return req, true, metaErr
	}
	if err := validateModernHeaders(r.Header, headerVersion, req); err != nil {
		return req, true, &modernError{code: mcpgo.HEADER_MISMATCH, message: err.Error()}
	}
	req.info, req.progressToken, req.elicits = info, progress, elicits
	return req, true, nil
}

// foldsToCallKey reports whether key names a tools/call member in other
// case, which encoding/json would take for it.
func foldsToCallKey(key []byte) bool {
	for _, k := range []string{"name", "arguments", "_meta", "requestState", "inputResponses"} {
		if bytes.EqualFold(key, []byte(k)) && string(key) != k {
			return true
		}
	}
	return false
}

// validateModernHeaders checks Mcp-Method and Mcp-Name against the body
// (SEP-2243), as mcp-go does; a tools/call's name is the one already read.
func validateModernHeaders(h http.Header, version string, req *modernInbound) error {
	if req.method != string(mcpgo.MethodToolsCall) || !req.callOK {
		return mcpgo.ValidateStandardHeaders(h.Get, version, mcpgo.MCPMethod(req.method), req.params)
	}
	switch m := h.Get(mcpgo.HeaderMethod); {
	case m == "":
		return mcpgo.HeaderMismatchError{Header: mcpgo.HeaderMethod, Reason: "missing required header"}
	case m != req.method:
		return mcpgo.HeaderMismatchError{Header: mcpgo.HeaderMethod, Reason: fmt.Sprintf("header value %q does not match body value %q", m, req.method)}
	}
	raw := h.Get(mcpgo.HeaderName)
	if raw == "" {
		return mcpgo.HeaderMismatchError{Header: mcpgo.HeaderName, Reason: fmt.Sprintf("missing required header for method %q", req.method)}
	}
	name, ok := mcpgo.DecodeHeaderValue(raw)
	if !ok {
		return mcpgo.HeaderMismatchError{Header: mcpgo.HeaderName, Reason: "invalid Base64 encoding"}
	}
	if name != req.call.Name {
		return mcpgo.HeaderMismatchError{Header: mcpgo.HeaderName, Reason: fmt.Sprintf("header value %q does not match body value %q", name, req.call.Name)}
	}
	return nil
}

// metaLogLevels are the levels a request's _meta may ask for.
var metaLogLevels = []mcpgo.LoggingLevel{mcpgo.LoggingLevelDebug, mcpgo.LoggingLevelInfo, mcpgo.LoggingLevelNotice, mcpgo.LoggingLevelWarning,
	mcpgo.LoggingLevelError, mcpgo.LoggingLevelCritical, mcpgo.LoggingLevelAlert, mcpgo.LoggingLevelEmergency}

// readModernMeta reads a request's _meta strictly: each key the revision
// defines must hold what it says (mcp-go lets a malformed one pass as
// absent). info is nil when _meta names no modern revision.
func readModernMeta(raw json.RawMessage, req *modernInbound) (info *server.RequestProtocolInfo, progress any, elicits bool, err *modernError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, false, nil
	}
	var version, clientInfo, caps, level json.RawMessage
	if !jsonrpc.EachMember(raw, func(key, v []byte) bool {
		switch string(key) {
		case mcpgo.MetaKeyProtocolVersion:
			version = v
		case mcpgo.MetaKeyClientInfo:
			clientInfo = v
		case mcpgo.MetaKeyClientCapabilities:
			caps = v
		case mcpgo.MetaKeyLogLevel:
			level = v
		case "progressToken":
			progress, _ = jsonrpc.ReadID(v)
		case "traceparent":
			req.traceparent, _ = jsonrpc.ReadString(v)
		case "tracestate":
			req.tracestate, _ = jsonrpc.ReadString(v)
		}
		return true
	}) {
		return nil, nil, false, invalidMeta("params._meta must be an object")
	}
	if len(version) == 0 {
		return nil, nil, false, nil
	}
	v, ok := jsonrpc.ReadString(version)
	if !ok {
		return nil, nil, false, invalidMeta("_meta field %s must be a string", mcpgo.MetaKeyProtocolVersion)
	}
	if !mcpgo.IsModernProtocol(v) {
		return nil, nil, false, nil
	}
	info = &server.RequestProtocolInfo{Modern: true, ProtocolVersion: v}
	if len(clientInfo) > 0 {
		impl := mcpgo.Implementation{}
		named := false
		if !jsonrpc.EachMember(clientInfo, func(key, v []byte) bool {
			var ok bool
			switch string(key) {
			case "name":
				impl.Name, ok = jsonrpc.ReadString(v)
				named = ok
				return ok
			case "version":
				impl.Version, ok = jsonrpc.ReadString(v)
				return ok
			}
			return true
		}) || !named {
			return info, nil, false, invalidMeta("_meta field %s must be an object with a string name (and version)", mcpgo.MetaKeyClientInfo)
		}
		info.ClientInfo = &impl
	}
	if len(caps) == 0 || caps[0] != '{' {
		return info, nil, false, invalidMeta("missing or invalid _meta field %s: an object is required (an empty one declares no optional capability)", mcpgo.MetaKeyClientCapabilities)
	}
	cc := &mcpgo.ClientCapabilities{}
	if string(caps) != "{}" {
		if json.Unmarshal(caps, cc) != nil {
			return info, nil, false, invalidMeta("_meta field %s is not a capabilities object", mcpgo.MetaKeyClientCapabilities)
		}
	}
	info.ClientCapabilities = cc
	if len(level) > 0 {
		l, ok := jsonrpc.ReadString(level)
		if !ok || !slices.Contains(metaLogLevels, mcpgo.LoggingLevel(l)) {
			return info, nil, false, invalidMeta("_meta field %s must be one of %v", mcpgo.MetaKeyLogLevel, metaLogLevels)
		}
		info.LogLevel = mcpgo.LoggingLevel(l)
	}
	return info, progress, cc.Elicitation != nil, nil
}

// writeModernError answers a refused 2026-07-28 request: the revision maps
// each of these codes to HTTP 400.
func writeModernError(w http.ResponseWriter, rawID json.RawMessage, e *modernError) {
	writeJSON(w, http.StatusBadRequest, errorBody(rawID, e))
}

// errorBody is the JSON-RPC error e answering rawID (null when it has
// none).
func errorBody(rawID json.RawMessage, e *modernError) []byte {
	if e.data == nil {
		return append(jsonrpc.ErrorBody(rawID, e.code, e.message), '\n')
	}
	if len(rawID) == 0 {
		rawID = json.RawMessage("null")
	}
	d, _ := json.Marshal(map[string]any{"code": e.code, "message": e.message, "data": e.data})
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":%s}`+"\n", rawID, d)
}

// modernCallParams are a 2026-07-28 tools/call's params as the gateway
// reads them.
type modernCallParams struct {
	Name           string                     `json:"name"`
	Arguments      json.RawMessage            `json:"arguments"`
	RequestState   *string                    `json:"requestState"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// serverInfoMeta is the _meta naming the server, as every 2026-07-28
// result carries.
func (e *Endpoint) serverInfoMeta() []byte {
	info, _ := json.Marshal(map[string]mcpgo.Implementation{mcpgo.MetaKeyServerInfo: {Name: e.opts.Name, Version: e.opts.Version}})
	return info
}

// askToConfirm turns an action's preview into an input request (CF-6 on
// revision 2026-07-28, which has no server-initiated elicitation): the
// client asks its user and retries with the answer and the state handed
// out here. ok is false when result is no preview (a refusal).
func (e *Endpoint) askToConfirm(actor core.Actor, c *core.ToolCall, result json.RawMessage) (json.RawMessage, bool) {
	var body struct {
		StructuredContent confirm.Preview `json:"structuredContent"`
	}
	if json.Unmarshal(result, &body) != nil || body.StructuredContent.ConfirmToken == "" {
		return nil, false
	}
	state, err := e.states.seal(actor, c, body.StructuredContent.ConfirmToken)
	if err != nil {
		e.opts.Logger.Warn("a confirmation could not be asked for; answering with the preview", "tool", c.Tool.Name, "err", err)
		return nil, false
	}
	ask := mcpgo.NewInputRequiredResult(mcpgo.InputRequests{
		confirmInputKey: mcpgo.NewElicitationInputRequest(confirmQuestion(c.Tool.Name, body.StructuredContent)),
	}, state)
	raw, err := json.Marshal(ask)
	if err != nil {
		return nil, false
	}
	return raw, true
}

// confirmInputKey names the one input request a confirmation asks.
const confirmInputKey = "confirm"
