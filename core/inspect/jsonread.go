package inspect

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/toolgate/toolgate/core/jsontree"
)

// Reading what inspection reads of a JSON document (IN-1). Decoding a
// whole result into a tree, token by token through encoding/json, was a
// quarter of what inspecting a 2 KB result cost; a result's text is only
// a few of its values. readStrings validates the document in one pass of
// its own and keeps only the strings a check reads, with their pointers;
// the rest is stepped over. A document it does not take whole (nesting
// deeper than fastMaxDepth, data after the value, anything not JSON) goes
// to the tree decoder, which decides: so a document is accepted, refused
// and read exactly as the tree decoder reads it (TestReadStringsExactIN1).

// textAt is a string of a document and the RFC 6901 pointer to it.
type textAt struct{ s, path string }

// readStrings returns, in document order, the strings of raw a check
// reads: every string value with everyString, else those of a
// CallToolResult (see Policy.Check).
func readStrings(raw []byte, everyString bool) ([]textAt, error) {
	r := jsonReader{raw: raw}
	r.space()
	m := readResult
	if everyString {
		m = readAll
	}
	if r.value(m, "") {
		r.space()
		if r.i == len(raw) {
			return r.out, nil
		}
	}
	root, err := jsontree.DecodeJSONTree(raw)
	if err != nil {
		return nil, err
	}
	var out []textAt
	if everyString {
		treeStrings(root, "", &out)
	} else {
		treeResultStrings(root, &out)
	}
	return out, nil
}

// readMode is what the reader keeps of the value at hand.
type readMode uint8

const (
	readSkip     readMode = iota // nothing: the value is only checked
	readAll                      // every string in it
	readResult                   // a CallToolResult's content and structuredContent
	readContent                  // the content array
	readBlock                    // a content block: its text, its resource
	readResource                 // an embedded resource: its text
)

// fastMaxDepth bounds the nesting the reader follows; deeper documents
// are the tree decoder's.
const fastMaxDepth = 1000

// jsonReader reads one document. Its methods return false where the
// document is not one it takes; what was read so far is then dropped.
type jsonReader struct {
	raw   []byte
	i     int
	depth int
	out   []textAt
}

func (r *jsonReader) space() {
	for r.i < len(r.raw) {
		switch r.raw[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// peek is the next byte, 0 at the end.
func (r *jsonReader) peek() byte {
	if r.i < len(r.raw) {
		return r.raw[r.i]
	}
	return 0
}

// value reads one value at r.i, white space before it already skipped.
func (r *jsonReader) value(m readMode, path string) bool {
	switch c := r.peek(); {
	case c == '{':
		return r.object(m, path)
	case c == '[':
		return r.array(m, path)
	case c == '"':
		s, ok := r.str(m == readAll)
		if ok && m == readAll {
			r.out = append(r.out, textAt{s, path})
		}
		return ok
	case c == 't':
		return r.literal("true")
	case c == 'f':
		return r.literal("false")
	case c == 'n':
		return r.literal("null")
	default:
		return r.number()
	}
}

func (r *jsonReader) literal(lit string) bool {
	if len(r.raw)-r.i < len(lit) || string(r.raw[r.i:r.i+len(lit)]) != lit {
		return false
	}
	r.i += len(lit)
	return true
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *jsonReader) number() bool {
	if r.peek() == '-' {
		r.i++
	}
	switch c := r.peek(); {
	case c == '0':
		r.i++
	case '1' <= c && c <= '9':
		r.digits()
	default:
		return false
	}
	if r.peek() == '.' {
		r.i++
		if !r.digits() {
			return false
		}
	}
	if c := r.peek(); c == 'e' || c == 'E' {
		r.i++
		if c := r.peek(); c == '+' || c == '-' {
			r.i++
		}
		if !r.digits() {
			return false
		}
	}
	return true
}

// digits reads one digit or more.
func (r *jsonReader) digits() bool {
	start := r.i
	for r.i < len(r.raw) && isDigit(r.raw[r.i]) {
		r.i++
	}
	return r.i > start
}

func (r *jsonReader) object(m readMode, path string) bool {
	if r.depth++; r.depth > fastMaxDepth {
		return false
	}
	r.i++ // {
	r.space()
	if r.peek() == '}' {
		r.i++
		r.depth--
		return true
	}
	for {
		if r.peek() != '"' {
			return false
		}
		k, ok := r.str(m != readSkip)
		if !ok {
			return false
		}
		r.space()
		if r.peek() != ':' {
			return false
		}
		r.i++
		r.space()
		mm, p := memberMode(m, k, r.peek()), ""
		if mm != readSkip {
			p = jsontree.PointerAppend(path, k)
		}
		if !r.value(mm, p) {
			return false
		}
		r.space()
		switch r.peek() {
		case ',':
			r.i++
			r.space()
		case '}':
			r.i++
			r.depth--
			return true
		default:
			return false
		}
	}
}

// memberMode is what is kept of member k of an object read in mode m,
// its value starting with byte next.
func memberMode(m readMode, k string, next byte) readMode {
	switch m {
	case readAll:
		return readAll
	case readResult:
		switch {
		case k == "content" && next == '[':
			return readContent
		case k == "structuredContent":
			return readAll
		}
	case readBlock:
		switch {
		case k == "text" && next == '"':
			return readAll
		case k == "resource" && next == '{':
			return readResource
		}
	case readResource:
		if k == "text" && next == '"' {
			return readAll
		}
	}
	return readSkip
}

func (r *jsonReader) array(m readMode, path string) bool {
	if r.depth++; r.depth > fastMaxDepth {
		return false
	}
	r.i++ // [
	r.space()
	if r.peek() == ']' {
		r.i++
		r.depth--
		return true
	}
	em := readSkip
	switch m {
	case readAll:
		em = readAll
	case readContent:
		em = readBlock
	}
	for n := 0; ; n++ {
		en := em
		if en == readBlock && r.peek() != '{' {
			en = readSkip
		}
		p := ""
		if en != readSkip {
			p = path + "/" + itoa(n)
		}
		if !r.value(en, p) {
			return false
		}
		r.space()
		switch r.peek() {
		case ',':
			r.i++
			r.space()
		case ']':
			r.i++
			r.depth--
			return true
		default:
			return false
		}
	}
}

// str reads a string at r.i and, with want, returns its value as
// encoding/json decodes it: escapes resolved, each byte that is not part
// of UTF-8 read as U+FFFD. It checks what encoding/json's scanner checks:
// no control character, only the escapes JSON has.
func (r *jsonReader) str(want bool) (string, bool) {
	raw := r.raw
	start := r.i + 1
	// buf is the value so far once it differs from the body; the body's
	// bytes from run on are not in it yet.
	var buf strings.Builder
	run := start
	for j := start; ; {
		for j < len(raw) && plainByte[raw[j]] {
			j++
		}
		if j >= len(raw) {
			return "", false
		}
		switch c := raw[j]; {
		case c == '"':
			r.i = j + 1
			switch {
			case !want:
				return "", true
			case buf.Cap() == 0:
				return string(raw[start:j]), true
			}
			buf.Write(raw[run:j])
			return buf.String(), true
		case c == '\\':
			if j+1 >= len(raw) {
				return "", false
			}
			var d byte // what the escape stands for, when one byte
			switch e := raw[j+1]; e {
			case '"', '\\', '/':
				d = e
			case 'b':
				d = '\b'
			case 'f':
				d = '\f'
			case 'n':
				d = '\n'
			case 'r':
				d = '\r'
			case 't':
				d = '\t'
			case 'u':
				rr := getu4(raw[j:])
				if rr < 0 {
					return "", false
				}
				if want {
					grow(&buf, len(raw)-start)
					buf.Write(raw[run:j])
				}
				j += 6
				if utf16.IsSurrogate(rr) {
					// A pair is read whole; a half alone is U+FFFD,
					// and what follows it is read on its own.
					if dec := utf16.DecodeRune(rr, getu4(raw[j:])); dec != unicode.ReplacementChar {
						j += 6
						rr = dec
					} else {
						rr = unicode.ReplacementChar
					}
				}
				if want {
					buf.WriteRune(rr)
				}
				run = j
				continue
			default:
				return "", false
			}
			if want {
				grow(&buf, len(raw)-start)
				buf.Write(raw[run:j])
				buf.WriteByte(d)
			}
			j += 2
			run = j
		case c < ' ':
			return "", false
		default: // not ASCII
			rr, size := utf8.DecodeRune(raw[j:])
			if rr == utf8.RuneError && size == 1 && want {
				grow(&buf, len(raw)-start)
				buf.Write(raw[run:j])
				buf.WriteRune(utf8.RuneError)
				run = j + 1
			}
			j += size
		}
	}
}

// grow gives buf, when it is still empty, room for a value of up to 4 KiB
// (most of them) or n bytes.
func grow(buf *strings.Builder, n int) {
	if buf.Cap() == 0 {
		buf.Grow(min(n, 4<<10))
	}
}

// plainByte: bytes a string holds as they are, which need neither
// checking nor decoding.
var plainByte = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// getu4 reads "\uXXXX" at the start of s; -1 if it is not one.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// treeStrings and treeResultStrings read a decoded tree as readStrings
// reads a document.
func treeStrings(n *jsontree.JsonNode, path string, out *[]textAt) {
	switch n.Kind {
	case 's':
		*out = append(*out, textAt{n.Str, path})
	case 'o':
		for i, k := range n.Keys {
			treeStrings(n.Elems[i], jsontree.PointerAppend(path, k), out)
		}
	case 'a':
		for i, e := range n.Elems {
			treeStrings(e, jsontree.PointerAppend(path, itoa(i)), out)
		}
	}
}

func treeResultStrings(root *jsontree.JsonNode, out *[]textAt) {
	if root.Kind != 'o' {
		return
	}
	for i, k := range root.Keys {
		v, path := root.Elems[i], jsontree.PointerAppend("", k)
		switch k {
		case "content":
			if v.Kind != 'a' {
				continue
			}
			for j, b := range v.Elems {
				if b.Kind != 'o' {
					continue
				}
				bp := jsontree.PointerAppend(path, itoa(j))
				for bi, bk := range b.Keys {
					bv := b.Elems[bi]
					switch {
					case bk == "text" && bv.Kind == 's':
						*out = append(*out, textAt{bv.Str, jsontree.PointerAppend(bp, bk)})
					case bk == "resource" && bv.Kind == 'o':
						for ri, rk := range bv.Keys {
							if rk == "text" && bv.Elems[ri].Kind == 's' {
								*out = append(*out, textAt{bv.Elems[ri].Str, jsontree.PointerAppend(jsontree.PointerAppend(bp, bk), rk)})
							}
						}
					}
				}
			}
		case "structuredContent":
			treeStrings(v, path, out)
		}
	}
}
