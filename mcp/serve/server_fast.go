package serve

import (
	"bytes"
	"encoding/json"
	"net/http"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/toolgate/toolgate/mcp/jsonrpc"
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

// writeResult writes a tools/call's answer around the result's own bytes,
// as mcp-go writes a response: the call stream turns it into the stream's
// last event if notifications went out first.
func writeResult(w *callStream, rawID, result json.RawMessage) {
	resp := make([]byte, 0, len(result)+len(rawID)+40)
	resp = append(resp, `{"jsonrpc":"2.0","id":`...)
	resp = append(resp, rawID...)
	resp = append(resp, `,"result":`...)
	resp = append(resp, result...)
	writeJSON(w, http.StatusOK, append(resp, "}\n"...))
}

// decorateModern adds what the 2026-07-28 revision requires of every
// result, as mcp-go does for its own: a resultType, and the server's
// identity in _meta. Every member already there keeps its bytes and its
// place; a result that is not an object is returned as it is.
func (e *Endpoint) decorateModern(result json.RawMessage) json.RawMessage {
	// Nearly every result names neither member: both go in front, the
	// result's own bytes after them, in one scan and one copy.
	t := bytes.TrimSpace(result)
	plain := len(t) > 1 && t[0] == '{' && jsonrpc.EachMember(t, func(key, _ []byte) bool {
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

// readCallParams is json.Unmarshal of a tools/call's params (valid JSON)
// into p, reporting whether it succeeded. The common params, an object
// with a plain name and arguments and no _meta, are read in one scan; any
// member the scan would have to interpret (a _meta, an escape, a name in
// other case, which encoding/json matches too) sends the whole object to
// the decoder.
func readCallParams(raw []byte, p *callParams) bool {
	plain := true
	var name, args []byte
	ok := jsonrpc.EachMember(raw, func(key, v []byte) bool {
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
		// A string reads as jsonrpc.ReadID reads a string id.
		if n, _ := jsonrpc.ReadID(name); n != nil {
			if s, isString := n.(string); isString {
				*p = callParams{Name: s, Arguments: json.RawMessage(args)}
				return true
			}
		}
	}
	*p = callParams{}
	return json.Unmarshal(raw, p) == nil
}

// cancelFast applies a client's notifications/cancelled to a call the
// session has running; mcp-go, which gets the notification next, knows
// none of them.
func (e *Endpoint) cancelFast(env *jsonrpc.Envelope, session string) {
	if env.Method != string(mcpgo.MethodNotificationCancelled) {
		return
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(env.ParamsOrEmpty(), &p) != nil {
		return
	}
	e.inflight.Cancel(session + "\x00" + jsonrpc.IDKey(p.RequestID))
}

// unknownToolText is the words for a tool that is not there, as
// docs/behaviour.md says them (IM-20, SV-5).
func unknownToolText(name string) string { return "unknown tool: " + name }

// unknownToolAnswer is the answer to a tools/call for a name that is
// unknown or off the actor's list, on every path alike: the JSON-RPC error
// mcp-go gives an unknown tool, in the gateway's words.
func unknownToolAnswer(rawID json.RawMessage, name string) []byte {
	return append(jsonrpc.ErrorBody(rawID, mcpgo.INVALID_PARAMS, unknownToolText(name)), '\n')
}
