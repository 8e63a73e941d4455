package mcp

import (
	"bytes"
	"encoding/json"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// msgKind is what a POST body holds, as JSON-RPC 2.0 defines it.
type msgKind uint8

const (
	// kindInvalid is anything the endpoint cannot read as one message of
	// JSON-RPC 2.0: not JSON, not an object, a method that is not a
	// string. mcp-go gives such a body its parse or request error.
	kindInvalid msgKind = iota
	kindRequest
	kindNotification
	kindResponse
	kindBatch
)

// envelope is a POST body read once (SV-1): what kind of message it is,
// its method, its id and its params as the bytes the client sent. Every
// later step dispatches on it instead of looking at the body again.
type envelope struct {
	kind   msgKind
	method string
	// rawID is the id as sent; nil for a notification.
	rawID  json.RawMessage
	params json.RawMessage
	// valid: the body is well-formed JSON and names "jsonrpc": "2.0".
	valid bool
}

// readEnvelope reads body the way encoding/json (and so mcp-go) would: one
// scan of the members for the common body, a decode where the scan cannot
// say the same (escaped or case-folded member names).
func readEnvelope(body []byte) envelope {
	t := bytes.TrimSpace(body)
	if len(t) > 0 && t[0] == '[' {
		return envelope{kind: kindBatch, valid: json.Valid(t)}
	}
	if !json.Valid(t) {
		return envelope{}
	}
	var env envelope
	m, ok := scanMessage(t)
	if ok && !m.folded && bytes.IndexByte(m.method, '\\') < 0 && bytes.IndexByte(m.jsonrpc, '\\') < 0 {
		env = envelope{rawID: m.id, params: m.params, valid: string(m.jsonrpc) == `"`+mcpgo.JSONRPC_VERSION+`"`}
		if len(m.method) > 0 {
			if m.method[0] != '"' {
				return envelope{}
			}
			env.method = string(m.method[1 : len(m.method)-1])
		}
		env.kind = classify(env.method, m.id, m.result, m.err)
		return env
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(t, &msg) != nil {
		return envelope{}
	}
	env = envelope{rawID: msg.ID, params: msg.Params, valid: msg.JSONRPC == mcpgo.JSONRPC_VERSION}
	if msg.Method != nil {
		env.method = *msg.Method
	}
	env.kind = classify(env.method, msg.ID, msg.Result, msg.Error)
	return env
}

// classify tells a request (a method and an id) from a notification (a
// method alone) and a response (an id and a result or an error). A null id
// is no id for a message with a method, as mcp-go reads it: such a
// message is a notification, and nothing answers it.
func classify(method string, id, result, errMember []byte) msgKind {
	switch {
	case method != "" && len(id) > 0 && string(id) != "null":
		return kindRequest
	case method != "":
		return kindNotification
	case len(id) > 0 && (result != nil || errMember != nil):
		return kindResponse
	}
	return kindInvalid
}

// is reports whether env is a request of method.
func (env *envelope) is(method mcpgo.MCPMethod) bool {
	return env.kind == kindRequest && env.method == string(method)
}

// paramsOrEmpty is the params, an empty object when there are none.
func (env *envelope) paramsOrEmpty() json.RawMessage {
	if p := bytes.TrimSpace(env.params); len(p) > 0 && string(p) != "null" {
		return env.params
	}
	return json.RawMessage(`{}`)
}
