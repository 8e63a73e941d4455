package mcp

import (
	"bytes"
	"encoding/json"
)

// wireMessage is where a JSON-RPC message's members are in its bytes.
type wireMessage struct {
	jsonrpc, id, method, params, result, err []byte
	// hasMethod: a method that is not empty (as mcp-go reads it, a
	// request or a notification).
	hasMethod bool
	// folded: a member is named as one of these but in other case
	// ("ID"), which encoding/json would take for it; a caller that must
	// agree with encoding/json decodes instead.
	folded bool
}

// scanMessage finds the top-level jsonrpc, id, method, params, result and
// error of a JSON object in one pass, without decoding anything; the last
// of a repeated member wins, as with encoding/json. It does not validate:
// ok is false for what is plainly not an object, and a cut-off object
// yields the members found before the cut.
func scanMessage(b []byte) (m wireMessage, ok bool) {
	ok = scanMembers(b, func(key, v []byte) bool {
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &k) != nil {
				return false
			}
			key = []byte(k)
		}
		switch string(key) {
		case "jsonrpc":
			m.jsonrpc = v
		case "id":
			m.id = v
		case "method":
			m.method = v
			m.hasMethod = len(v) > 2 && v[0] == '"'
		case "params":
			m.params = v
		case "result":
			m.result = v
		case "error":
			m.err = v
		default:
			if len(key) <= len("jsonrpc") {
				for _, name := range []string{"jsonrpc", "id", "method", "params", "result", "error"} {
					if bytes.EqualFold(key, []byte(name)) {
						m.folded = true
					}
				}
			}
		}
		return true
	})
	return m, ok
}

// scanMembers calls visit with each top-level member of the JSON object b,
// its key as written between the quotes and its value's bytes, in order,
// until visit returns false. It does not validate: it reports false for
// what is not an object, for a cut-off one, and when visit stopped it.
func scanMembers(b []byte, visit func(key, value []byte) bool) bool {
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
