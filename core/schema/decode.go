package schema

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// decodeInstance reads a call's arguments into the values the validator
// takes: what jsonschema.UnmarshalJSON returns (encoding/json with
// UseNumber), in one pass for the common documents. Anything the pass does
// not read exactly as encoding/json would (escapes in strings, bytes that
// are not UTF-8, deep nesting, invalid JSON) is decoded by
// jsonschema.UnmarshalJSON instead, so its values and its errors are the
// library's.
func decodeInstance(args []byte) (any, error) {
	d := instanceDecoder{src: args}
	d.space()
	if v, ok := d.value(0); ok {
		d.space()
		if d.i == len(d.src) {
			return v, nil
		}
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(args))
}

type instanceDecoder struct {
	src []byte
	i   int
}

// maxInstanceDepth leaves deeper documents to encoding/json, which has
// limits of its own.
const maxInstanceDepth = 64

func (d *instanceDecoder) space() {
	for d.i < len(d.src) {
		switch d.src[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *instanceDecoder) value(depth int) (any, bool) {
	if d.i >= len(d.src) || depth > maxInstanceDepth {
		return nil, false
	}
	switch c := d.src[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		s, ok := d.str()
		return s, ok
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	default:
		for _, lit := range [...]struct {
			text string
			v    any
		}{{"true", true}, {"false", false}, {"null", nil}} {
			if bytes.HasPrefix(d.src[d.i:], []byte(lit.text)) {
				d.i += len(lit.text)
				return lit.v, true
			}
		}
		return nil, false
	}
}

func (d *instanceDecoder) object(depth int) (any, bool) {
	d.i++ // {
	m := map[string]any{}
	d.space()
	if d.i < len(d.src) && d.src[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		d.space()
		if d.i >= len(d.src) || d.src[d.i] != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.src) || d.src[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.space()
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		// The last of duplicate keys wins, as in encoding/json.
		m[k] = v
		if more, ok := d.next('}'); !more {
			return m, ok
		}
	}
}

// next reads what follows a member or an element: more is true after a
// comma; after close, ok is true and more false; anything else is neither.
func (d *instanceDecoder) next(close byte) (more, ok bool) {
	d.space()
	if d.i >= len(d.src) {
		return false, false
	}
	switch d.src[d.i] {
	case ',':
		d.i++
		return true, true
	case close:
		d.i++
		return false, true
	}
	return false, false
}

func (d *instanceDecoder) array(depth int) (any, bool) {
	d.i++ // [
	a := []any{}
	d.space()
	if d.i < len(d.src) && d.src[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		d.space()
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if more, ok := d.next(']'); !more {
			return a, ok
		}
	}
}

// str reads a string without escapes or control characters, whose bytes
// are valid UTF-8: its value is its bytes. Any other string is left to
// encoding/json, which replaces invalid bytes and reads escapes.
func (d *instanceDecoder) str() (string, bool) {
	start := d.i + 1
	ascii := true
	for j := start; j < len(d.src); j++ {
		switch c := d.src[j]; {
		case c == '"':
			raw := d.src[start:j]
			if !ascii && !utf8.Valid(raw) {
				return "", false
			}
			d.i = j + 1
			return string(raw), true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// number reads a number in JSON's grammar and keeps its text, as
// json.Number does.
func (d *instanceDecoder) number() (any, bool) {
	s, j := d.src, d.i
	if s[j] == '-' {
		j++
	}
	digits := func() int {
		n := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
			n++
		}
		return n
	}
	switch {
	case j < len(s) && s[j] == '0':
		j++
	case digits() == 0:
		return nil, false
	}
	if j < len(s) && s[j] == '.' {
		j++
		if digits() == 0 {
			return nil, false
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		j++
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	n := json.Number(s[d.i:j])
	d.i = j
	return n, true
}
