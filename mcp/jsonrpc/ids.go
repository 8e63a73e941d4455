package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// ReadID is json.Unmarshal of a JSON-RPC id into an any: a string, a
// float64, or whatever else it holds. Plain strings and numbers, nearly
// every id, are read without the decoder.
func ReadID(raw []byte) (any, bool) {
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

// ReadString reads a JSON string value: a plain one without the decoder.
func ReadString(raw []byte) (string, bool) {
	if n, ok := ReadID(raw); ok {
		s, isString := n.(string)
		return s, isString
	}
	return "", false
}

// IDText is a JSON-RPC id as handlers see it (SV-7): a string id's
// text, a number as written.
func IDText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(raw))
}

// IDTextOf is IDText of an id already decoded (a string or a
// number, as ownRequest allows).
func IDTextOf(id any, raw json.RawMessage) string {
	if s, ok := id.(string); ok {
		return s
	}
	return string(bytes.TrimSpace(raw))
}

// IDKey is a JSON-RPC id as its JSON text, so 7 and "7" stay apart.
func IDKey(id any) string {
	// The common ids, written as encoding/json writes them, without its
	// encoder: every call keys its cancellation by one.
	switch v := id.(type) {
	case string:
		return string(AppendString(make([]byte, 0, len(v)+2), v))
	case float64:
		if a := math.Abs(v); a == 0 || a >= 1e-6 && a < 1e21 {
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	raw, _ := json.Marshal(id)
	return string(raw)
}

// AppendString appends s as a JSON string: as it is when it is plain
// printable ASCII, as encoding/json writes it otherwise.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// ErrorBody is a JSON-RPC error response to id (null when there is none).
func ErrorBody(id json.RawMessage, code int, message string) json.RawMessage {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	msg, _ := json.Marshal(message)
	return json.RawMessage(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, id, code, msg))
}
