// Package jsonrpc reads and writes the JSON-RPC 2.0 messages MCP is made of,
// as encoding/json would read them but without decoding what a gateway only
// passes on: a message's members located in one scan (Scan, EachMember), a
// POST body read once into an Envelope, ids read and written as their JSON
// text. Both the serving side (mcp/serve) and the upstream side (mcp/upstream) use it.
package jsonrpc

import (
	"bytes"
	"encoding/json"
)

// Members is where a JSON-RPC message's members are in its bytes.
type Members struct {
	JSONRPC, ID, Method, Params, Result, Err []byte
	// hasMethod: a method that is not empty (as mcp-go reads it, a
	// request or a notification).
	HasMethod bool
	// folded: a member is named as one of these but in other case
	// ("ID"), which encoding/json would take for it; a caller that must
	// agree with encoding/json decodes instead.
	Folded bool
}

// Scan finds the top-level jsonrpc, id, method, params, result and
// error of a JSON object in one pass, without decoding anything; the last
// of a repeated member wins, as with encoding/json. It does not validate:
// ok is false for what is plainly not an object, and a cut-off object
// yields the members found before the cut.
func Scan(b []byte) (m Members, ok bool) {
	ok = EachMember(b, func(key, v []byte) bool {
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &k) != nil {
				return false
			}
			key = []byte(k)
		}
		switch string(key) {
		case "jsonrpc":
			m.JSONRPC = v
		case "id":
			m.ID = v
		case "method":
			m.Method = v
			m.HasMethod = len(v) > 2 && v[0] == '"'
		case "params":
			m.Params = v
		case "result":
			m.Result = v
		case "error":
			m.Err = v
		default:
			if len(key) <= len("jsonrpc") {
				for _, name := range []string{"jsonrpc", "id", "method", "params", "result", "error"} {
					if bytes.EqualFold(key, []byte(name)) {
						m.Folded = true
					}
				}
			}
		}
		return true
	})
	return m, ok
}

// EachMember calls visit with each top-level member of the JSON object b,
// its key as written between the quotes and its value's bytes, in order,
// until visit returns false. It does not validate: it reports false for
// what is not an object, for a cut-off one, and when visit stopped it.
func EachMember(b []byte, visit func(key, value []byte) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '}':
			return true
		case ',':
			i++
			continue
		case '"':
		default:
			return false
		}
		end := stringEnd(b, i)
		if end < 0 {
			return false
		}
		key := b[i+1 : end-1]
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		vEnd := valueEnd(b, i)
		if vEnd < 0 {
			return false
		}
		if !visit(key, b[i:vEnd]) {
			return false
		}
		i = vEnd
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string that opens at b[i],
// or -1 if it does not end.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// valueEnd returns the index just past the value that starts at b[i], or
// -1 if it does not end within b.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := stringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	for j := i; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
	}
	return -1
}
