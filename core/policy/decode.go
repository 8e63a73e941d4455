package policy

import (
	"strconv"
	"unicode/utf8"
)

// decodeFast is decodeJSON for the arguments most calls send: a JSON
// object whose strings have no escapes, read in one pass without the
// reflection and buffering of encoding/json. It gives the same values
// (int64 for integers that fit, float64 for other numbers, empty maps and
// slices not nil, the last of repeated keys); false for anything else
// (escapes, invalid UTF-8, deep nesting, any syntax error), which
// decodeJSON then reads and reports.
func decodeFast(raw []byte) (map[string]any, bool) {
	if !utf8.Valid(raw) {
		return nil, false
	}
	p := jsonReader{b: raw}
	p.space()
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	if p.i != len(p.b) {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// maxFastDepth is the deepest nesting decodeFast reads; deeper goes to
// encoding/json.
const maxFastDepth = 64

type jsonReader struct {
	b []byte
	i int
}

func (p *jsonReader) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// next is the byte at the cursor, 0 at the end.
func (p *jsonReader) next() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *jsonReader) value(depth int) (any, bool) {
	if depth > maxFastDepth {
		return nil, false
	}
	switch c := p.next(); {
	case c == '{':
		p.i++
		m := map[string]any{}
		p.space()
		if p.next() == '}' {
			p.i++
			return m, true
		}
		for {
			p.space()
			k, ok := p.str()
			if !ok {
				return nil, false
			}
			p.space()
			if p.next() != ':' {
				return nil, false
			}
			p.i++
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
			p.space()
			switch p.next() {
			case ',':
				p.i++
			case '}':
				p.i++
				return m, true
			default:
				return nil, false
			}
		}
	case c == '[':
		p.i++
		l := []any{}
		p.space()
		if p.next() == ']' {
			p.i++
			return l, true
		}
		for {
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			l = append(l, v)
			p.space()
			switch p.next() {
			case ',':
				p.i++
			case ']':
				p.i++
				return l, true
			default:
				return nil, false
			}
		}
	case c == '"':
		s, ok := p.str()
		return s, ok
	case c == 't':
		return true, p.word("true")
	case c == 'f':
		return false, p.word("false")
	case c == 'n':
		return nil, p.word("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return nil, false
}

func (p *jsonReader) word(w string) bool {
	if len(p.b)-p.i < len(w) || string(p.b[p.i:p.i+len(w)]) != w {
		return false
	}
	p.i += len(w)
	return true
}

// str reads a string without escapes or control characters.
func (p *jsonReader) str() (string, bool) {
	if p.next() != '"' {
		return "", false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return string(p.b[start:j]), true
		case c == '\\' || c < 0x20:
			return "", false
		}
	}
	return "", false
}

// number reads a number as JSON writes one, as numbers converts it.
func (p *jsonReader) number() (any, bool) {
	start := p.i
	if p.next() == '-' {
		p.i++
	}
	switch c := p.next(); {
	case c == '0':
		p.i++
	case c >= '1' && c <= '9':
		p.digits()
	default:
		return nil, false
	}
	integer := true
	if p.next() == '.' {
		p.i++
		if !p.digits() {
			return nil, false
		}
		integer = false
	}
	if c := p.next(); c == 'e' || c == 'E' {
		p.i++
		if c := p.next(); c == '+' || c == '-' {
			p.i++
		}
		if !p.digits() {
			return nil, false
		}
		integer = false
	}
	s := string(p.b[start:p.i])
	if integer {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, true
		}
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f, true
}

// digits reads one or more digits.
func (p *jsonReader) digits() bool {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}
