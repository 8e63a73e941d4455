package jsonrpc

import (
	"bytes"
	"encoding/json"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// Kind is what a POST body holds, as JSON-RPC 2.0 defines it.
type Kind uint8

const (
	// Invalid is anything the endpoint cannot read as one message of
	// JSON-RPC 2.0: not JSON, not an object, a method that is not a
	// string. mcp-go gives such a body its parse or request error.
	Invalid Kind = iota
	Request
	Notification
	Response
	Batch
)

// Envelope is a POST body read once (SV-1): what kind of message it is,
// its method, its id and its params as the bytes the client sent. Every
// later step dispatches on it instead of looking at the body again.
type Envelope struct {
	Kind   Kind
	Method string
	// RawID is the id as sent; nil when there is none.
	RawID  json.RawMessage
	Params json.RawMessage
	// Valid: the body is well-formed JSON and names "jsonrpc": "2.0".
	Valid bool
}

// Read reads body the way encoding/json (and so mcp-go) would: one
// scan of the members for the common body, a decode where the scan cannot
// say the same (escaped or case-folded member names).
func Read(body []byte) Envelope {
	t := bytes.TrimSpace(body)
	if len(t) > 0 && t[0] == '[' {
		return Envelope{Kind: Batch, Valid: json.Valid(t)}
	}
	if !json.Valid(t) {
		return Envelope{}
	}
	var env Envelope
	m, ok := Scan(t)
	if ok && !m.Folded && bytes.IndexByte(m.Method, '\\') < 0 && bytes.IndexByte(m.JSONRPC, '\\') < 0 {
		env = Envelope{RawID: m.ID, Params: m.Params, Valid: string(m.JSONRPC) == `"`+mcpgo.JSONRPC_VERSION+`"`}
		if len(m.Method) > 0 {
			if m.Method[0] != '"' {
				return Envelope{}
			}
			env.Method = string(m.Method[1 : len(m.Method)-1])
		}
		env.Kind = classify(env.Method, m.ID, m.Result, m.Err)
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
		return Envelope{}
	}
	env = Envelope{RawID: msg.ID, Params: msg.Params, Valid: msg.JSONRPC == mcpgo.JSONRPC_VERSION}
	if msg.Method != nil {
		env.Method = *msg.Method
	}
	env.Kind = classify(env.Method, msg.ID, msg.Result, msg.Error)
	return env
}

// classify tells a request (a method and an id) from a notification (a
// method alone) and a response (an id and a result or an error). A null id
// is no id for a message with a method, as mcp-go reads it: such a
// message is a notification, and nothing answers it.
func classify(method string, id, result, errMember []byte) Kind {
	switch {
	case method != "" && len(id) > 0 && string(id) != "null":
		return Request
	case method != "":
		return Notification
	case len(id) > 0 && (result != nil || errMember != nil):
		return Response
	}
	return Invalid
}

// is reports whether env is a request of method.
func (env *Envelope) Is(method mcpgo.MCPMethod) bool {
	return env.Kind == Request && env.Method == string(method)
}

// paramsOrEmpty is the params, an empty object when there are none.
func (env *Envelope) ParamsOrEmpty() json.RawMessage {
	if p := bytes.TrimSpace(env.Params); len(p) > 0 && string(p) != "null" {
		return env.Params
	}
	return json.RawMessage(`{}`)
}
