package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
)

// appendCanonical appends the canonical form of raw in one pass, for the
// common documents: strings without escapes or characters encoding/json
// would escape, no duplicate keys. For anything else ok is false and
// CanonicalJSON decodes instead; where ok, the output is canonicalDecoded's
// byte for byte (members sorted by key bytes, no whitespace, numbers and
// strings as written).
func appendCanonical(dst, raw []byte) (out []byte, ok bool) {
	p := canonParser{src: raw}
	p.skipSpace()
	if dst, ok = p.value(dst, 0); !ok {
		return nil, false
	}
	p.skipSpace()
	return dst, p.i == len(p.src)
}

type canonParser struct {
	src []byte
	i   int
}

// maxCanonDepth leaves deep documents to canonicalDecoded.
const maxCanonDepth = 64

type canonMember struct {
	key   []byte // the key as written, quotes included
	value []byte // the value in canonical form
}

// ErrInvalidJSON is wrapped by CanonicalJSON's errors.
var ErrInvalidJSON = errors.New("invalid JSON")

// CanonicalJSON re-encodes one JSON value so that equal values have equal
// bytes: object keys sorted (by their UTF-8 bytes, recursively), no
// insignificant whitespace, numbers exactly as written (never rounded through
// float64, so 12345678901234567890 and 1.0 survive as is), strings re-encoded
// by encoding/json without HTML escaping. Among duplicate keys the last wins,
// as in the decoders that read the document. Anything but exactly one valid
// JSON value is an error wrapping ErrInvalidJSON.
func CanonicalJSON(raw json.RawMessage) ([]byte, error) {
	// Audited arguments and confirm tokens canonicalise on every call; most
	// documents need no decoding for it.
	if out, ok := appendCanonical(make([]byte, 0, len(raw)), raw); ok {
		return out, nil
	}
	return canonicalDecoded(raw)
}

// canonicalDecoded is CanonicalJSON by decoding: every document it accepts.
func canonicalDecoded(raw json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the top-level value", ErrInvalidJSON)
	}
	var b bytes.Buffer
	writeCanonical(&b, v)
	return b.Bytes(), nil
}

func writeCanonical(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case json.Number:
		b.WriteString(string(v))
	case string:
		WriteCanonicalString(b, v)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			WriteCanonicalString(b, k)
			b.WriteByte(':')
			writeCanonical(b, v[k])
		}
		b.WriteByte('}')
	}
}

// writeCanonicalString encodes s as encoding/json does, minus the HTML
// escaping of <, > and &: "<IMPORTANT>" stays readable in stored documents.
func WriteCanonicalString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's trailing newline
}

func (p *canonParser) skipSpace() {
	for p.i < len(p.src) {
		switch p.src[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *canonParser) value(dst []byte, depth int) ([]byte, bool) {
	if p.i >= len(p.src) || depth > maxCanonDepth {
		return nil, false
	}
	switch c := p.src[p.i]; {
	case c == '{':
		return p.object(dst, depth)
	case c == '[':
		p.i++
		dst = append(dst, '[')
		p.skipSpace()
		if p.i < len(p.src) && p.src[p.i] == ']' {
			p.i++
			return append(dst, ']'), true
		}
		for {
			var ok bool
			if dst, ok = p.value(dst, depth+1); !ok {
				return nil, false
			}
			p.skipSpace()
			if p.i >= len(p.src) {
				return nil, false
			}
			switch p.src[p.i] {
			case ',':
				p.i++
				dst = append(dst, ',')
				p.skipSpace()
			case ']':
				p.i++
				return append(dst, ']'), true
			default:
				return nil, false
			}
		}
	default:
		s, ok := p.scalar()
		return append(dst, s...), ok
	}
}

// scalar reads a string, number or literal, whose canonical form is its
// text as written: it is returned in place, not copied.
func (p *canonParser) scalar() ([]byte, bool) {
	if p.i >= len(p.src) {
		return nil, false
	}
	switch c := p.src[p.i]; {
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(p.src[p.i:], []byte(lit)) {
				p.i += len(lit)
				return p.src[p.i-len(lit) : p.i], true
			}
		}
		return nil, false
	}
}

func (p *canonParser) object(dst []byte, depth int) ([]byte, bool) {
	p.i++ // {
	p.skipSpace()
	if p.i < len(p.src) && p.src[p.i] == '}' {
		p.i++
		return append(dst, "{}"...), true
	}
	// Most objects have few members: their list stays on the stack.
	var few [8]canonMember
	members := few[:0]
	for {
		if p.i >= len(p.src) || p.src[p.i] != '"' {
			return nil, false
		}
		key, ok := p.str()
		if !ok {
			return nil, false
		}
		p.skipSpace()
		if p.i >= len(p.src) || p.src[p.i] != ':' {
			return nil, false
		}
		p.i++
		p.skipSpace()
		var val []byte
		if p.i < len(p.src) && (p.src[p.i] == '{' || p.src[p.i] == '[') {
			val, ok = p.value(nil, depth+1) // reordered inside: a copy of its own
		} else {
			val, ok = p.scalar()
		}
		if !ok {
			return nil, false
		}
		members = append(members, canonMember{key, val})
		p.skipSpace()
		if p.i >= len(p.src) {
			return nil, false
		}
		if p.src[p.i] == '}' {
			p.i++
			break
		}
		if p.src[p.i] != ',' {
			return nil, false
		}
		p.i++
		p.skipSpace()
	}
	// Keys hold no escapes, so their bytes (quotes aside) order like the
	// decoded keys canonicalDecoded sorts. Duplicates are left to it.
	slices.SortFunc(members, func(a, b canonMember) int {
		return bytes.Compare(a.key[1:len(a.key)-1], b.key[1:len(b.key)-1])
	})
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			if bytes.Equal(m.key, members[i-1].key) {
				return nil, false
			}
			dst = append(dst, ',')
		}
		dst = append(dst, m.key...)
		dst = append(dst, ':')
		dst = append(dst, m.value...)
	}
	return append(dst, '}'), true
}

// str returns the string at p.i, quotes included, if encoding/json would
// write its value back the same: no escapes, no control characters, valid
// UTF-8 without U+2028 or U+2029.
func (p *canonParser) str() ([]byte, bool) {
	start := p.i
	p.i++
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch {
		case c == '"':
			p.i++
			return p.src[start:p.i], true
		case c == '\\' || c < 0x20:
			return nil, false
		case c < utf8.RuneSelf:
			p.i++
		default:
			r, n := utf8.DecodeRune(p.src[p.i:])
			if r == utf8.RuneError && n == 1 || r == '\u2028' || r == '\u2029' {
				return nil, false
			}
			p.i += n
		}
	}
	return nil, false
}

// number copies a JSON number as written: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *canonParser) number() ([]byte, bool) {
	start := p.i
	digits := func() bool {
		n := p.i
		for p.i < len(p.src) && p.src[p.i] >= '0' && p.src[p.i] <= '9' {
			p.i++
		}
		return p.i > n
	}
	if p.src[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.src) && p.src[p.i] == '0':
		p.i++
	case !digits():
		return nil, false
	}
	if p.i < len(p.src) && p.src[p.i] == '.' {
		p.i++
		if !digits() {
			return nil, false
		}
	}
	if p.i < len(p.src) && (p.src[p.i] == 'e' || p.src[p.i] == 'E') {
		p.i++
		if p.i < len(p.src) && (p.src[p.i] == '+' || p.src[p.i] == '-') {
			p.i++
		}
		if !digits() {
			return nil, false
		}
	}
	return p.src[start:p.i], true
}
