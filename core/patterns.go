package core

// The screen for patterns that can backtrack catastrophically (IM-19).
//
// Go's regexp is RE2 and never backtracks, but toolgate re-serves imported
// input schemas verbatim, and clients validate against them with ECMA-262
// engines that do. A pattern such as `^(a+)+$` is harmless here and can hang
// a client, so a schema carrying one is refused.
//
// The screen decides on structure, not on a list of known-bad strings:
//
//  1. The ECMA pattern is rewritten into RE2 syntax (ecmaTranslator). Every
//     alternative is wrapped in a capture group of its own, because Go's
//     parser otherwise factors `a|a` into `a` and merges `.|\s` into one
//     class, erasing exactly the overlap being looked for. Counts above 10
//     become unbounded, since they backtrack like unbounded loops and Go's
//     parser refuses counts above 1000. Lookaround bodies are lifted out and
//     screened as patterns of their own: an engine backtracks inside them just
//     the same, but where they stand they consume nothing. A backreference
//     matches one fixed string at run time, so it stands in as a single
//     character drawn from its group's alphabet.
//  2. regexp/syntax parses the result and the raw tree is used as is; it is
//     never simplified, because simplification rewrites repetitions.
//  3. The tree becomes a position (Glushkov) automaton that keeps parallel
//     edges: `(a*)*` has two distinct ways from one `a` to the next, and a
//     backtracking engine tries both.
//  4. Each unbounded repetition is checked for exponential ambiguity: a state
//     with two different paths back to itself over the same input (the EDA
//     criterion of Weber and Seidl), decided on the product automaton. That
//     ambiguity is what lets a backtracking engine try exponentially many
//     ways to fail. It also settles what separates repetitions: in
//     `(\.[a-z]+)*` every repetition starts with a dot the inner loop cannot
//     read, so there is one way only, while `([a-z]+)*` has many.
//
// Counted repeats up to 10 are unrolled, so `(\.\d{1,3}){3}` is just text.
// Polynomial blow-up (`\d+\d+` on its own, `.*a.*a`, `(.*a){5}`) is not
// flagged: it is slow rather than catastrophic, and common in ordinary
// patterns.
//
// Where the screen approximates, it errs towards flagging: anchors and word
// boundaries are taken to match the empty string anywhere (so
// `(\b\w+\b\s*)*` is flagged though its boundaries make it linear), and a
// Unicode property Go does not know is taken as any character. A pattern
// neither the translator nor Go's parser understands is not flagged here; the
// schema compiler decides whether it compiles (IM-18).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrDangerousPattern is wrapped by every *DangerousPatternError.
var ErrDangerousPattern = errors.New("pattern can backtrack catastrophically")

// DangerousPatternError names one pattern the screen refused.
//
// It also matches ErrSchemaInvalid under errors.Is, because CompileSchema
// refuses a schema that carries one; test ErrDangerousPattern first to tell
// the two apart.
type DangerousPatternError struct {
	// Pointer is an RFC 6901 JSON pointer into the schema document: to the
	// pattern string, or to the patternProperties member whose key is the
	// pattern.
	Pointer string
	Pattern string
	Reason  string
}

func (e *DangerousPatternError) Error() string {
	at := ""
	if e.Pointer != "" {
		at = " at " + e.Pointer
	}
	return fmt.Sprintf("pattern %s%s can backtrack catastrophically: %s", quotePattern(e.Pattern), at, e.Reason)
}

// Unwrap returns ErrDangerousPattern.
func (e *DangerousPatternError) Unwrap() error { return ErrDangerousPattern }

// Is reports ErrSchemaInvalid as matching; see the type's doc comment.
func (e *DangerousPatternError) Is(target error) bool { return target == ErrSchemaInvalid }

// quotePattern quotes a pattern without doubling its backslashes where it can.
func quotePattern(p string) string {
	if strconv.CanBackquote(p) {
		return "`" + p + "`"
	}
	return strconv.Quote(p)
}

// Reasons given by the screen, one per rule. Each is followed by " in " and
// the offending repetition as parsed.
const (
	reasonNested      = "nested quantifiers"
	reasonAlternation = "overlapping alternatives under a quantifier"
	reasonDotStar     = "repeated group containing a .*-like element"
	reasonAdjacent    = "adjacent overlapping quantifiers in a repeated group"
	reasonTooComplex  = "repeated group too large to analyse"
)

// ScreenPattern reports whether an ECMA-262 pattern can backtrack
// catastrophically, and why. Patterns it cannot parse are not flagged.
func ScreenPattern(pattern string) (reason string, dangerous bool) {
	tr, ok := translateForScreen(pattern)
	if !ok {
		return "", false
	}
	work := 0 // shared by the main pattern and its lookarounds
	for i, re := range tr {
		if reason, bad := screenTree(re, &work); bad {
			if i > 0 {
				reason += " (inside a lookaround)"
			}
			return reason, true
		}
	}
	return "", false
}

// translateForScreen returns the parsed main pattern followed by the parsed
// lookaround bodies. ok is false when the main pattern cannot be parsed.
func translateForScreen(pattern string) (trees []*syntax.Regexp, ok bool) {
	for _, clampMin := range []int{maxRE2Repeat, 1} {
		t, err := newECMATranslator(pattern, ecmaForScreen, clampMin)
		if err != nil {
			return nil, false
		}
		main, err := t.translate(0, len(pattern), 0)
		if err != nil {
			return nil, false
		}
		re, err := syntax.Parse(main, syntax.Perl)
		if err != nil {
			// Nested counts can exceed Go's limit on their product even when
			// each is valid; counting the minimums as 1 keeps the shape.
			var se *syntax.Error
			if errors.As(err, &se) && (se.Code == syntax.ErrInvalidRepeatSize || se.Code == syntax.ErrLarge) {
				continue
			}
			return nil, false
		}
		trees = append(trees, re)
		for _, body := range t.lifted {
			if lre, err := syntax.Parse(body, syntax.Perl); err == nil {
				trees = append(trees, lre)
			}
		}
		return trees, true
	}
	return nil, false
}

// ScreenSchema screens every pattern in a schema document: each "pattern"
// string and each "patternProperties" key in a schema position, at any depth,
// in document order. The values of const, enum, default and examples are
// data and are not entered, unless a "#/…" reference points into them.
// Duplicate keys are all screened, whichever one a client's parser keeps. A
// document that is not valid JSON yields nothing; CompileSchema reports that,
// and also screens whatever other references the compiler resolved.
func ScreenSchema(raw json.RawMessage) []*DangerousPatternError {
	found, _ := screenDocument(raw)
	return found
}

// screenDocument is ScreenSchema, also returning each distinct pattern's
// verdict (its reason, "" when safe) so that nothing is screened twice.
func screenDocument(raw json.RawMessage) ([]*DangerousPatternError, map[string]string) {
	verdict := map[string]string{}
	root, err := decodeJSONTree(raw)
	if err != nil {
		return nil, verdict
	}
	w := &schemaWalker{
		root:    root,
		walked:  map[*jsonNode]bool{},
		verdict: verdict,
	}
	w.schema(root, "")
	// A local reference can turn any part of the document into a schema,
	// including data under const or enum; screen what they point at too.
	for i := 0; i < len(w.refs); i++ {
		ref := w.refs[i]
		frag, ok := strings.CutPrefix(ref, "#")
		if !ok {
			continue
		}
		if f, err := url.PathUnescape(frag); err == nil {
			frag = f
		}
		if frag != "" && !strings.HasPrefix(frag, "/") {
			continue // an anchor names a schema the walk has already seen
		}
		if target := root.lookup(frag); target != nil {
			w.schema(target, frag)
		}
	}
	return w.found, verdict
}

// --- walking a schema document

// jsonNode is a decoded JSON value that keeps object members in order,
// duplicates included.
type jsonNode struct {
	kind  byte // 'o' object, 'a' array, 's' string, '-' anything else
	str   string
	keys  []string // object member names; arrays leave this empty
	elems []*jsonNode
}

const maxJSONDepth = 10000

func decodeJSONTree(raw []byte) (*jsonNode, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	n, err := decodeJSONNode(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("data after the top-level value")
	}
	return n, nil
}

func decodeJSONNode(dec *json.Decoder, depth int) (*jsonNode, error) {
	if depth > maxJSONDepth {
		return nil, errors.New("JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &jsonNode{kind: 'a'}
		if t == '{' {
			n.kind = 'o'
		}
		for dec.More() {
			if n.kind == 'o' {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				n.keys = append(n.keys, k)
			}
			e, err := decodeJSONNode(dec, depth+1)
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, e)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &jsonNode{kind: 's', str: t}, nil
	default:
		return &jsonNode{kind: '-'}, nil
	}
}

// lookup resolves an RFC 6901 pointer; nil when nothing is there. Among
// duplicate keys the last wins, as in the parsers that build the schema.
func (n *jsonNode) lookup(ptr string) *jsonNode {
	if ptr == "" {
		return n
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		var next *jsonNode
		switch n.kind {
		case 'o':
			for i, k := range n.keys {
				if k == tok {
					next = n.elems[i]
				}
			}
		case 'a':
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(n.elems) {
				next = n.elems[i]
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func pointerAppend(ptr, token string) string {
	return ptr + "/" + pointerEscaper.Replace(token)
}

type schemaWalker struct {
	root    *jsonNode
	walked  map[*jsonNode]bool
	refs    []string
	verdict map[string]string // pattern -> reason ("" = safe), so repeats are screened once
	found   []*DangerousPatternError
}

// schema walks n as a schema. Unknown keywords are entered too: a "$ref"
// can point anywhere, so any object may end up used as a schema.
func (w *schemaWalker) schema(n *jsonNode, ptr string) {
	if n.kind == 'a' {
		for i, e := range n.elems {
			w.schema(e, pointerAppend(ptr, strconv.Itoa(i)))
		}
		return
	}
	if n.kind != 'o' || w.walked[n] {
		return
	}
	w.walked[n] = true
	for i, k := range n.keys {
		v, p := n.elems[i], pointerAppend(ptr, k)
		switch k {
		case "pattern":
			if v.kind == 's' {
				w.check(v.str, p)
			} else {
				w.schema(v, p)
			}
		case "patternProperties":
			if v.kind == 'o' {
				for j, pk := range v.keys {
					pp := pointerAppend(p, pk)
					w.check(pk, pp)
					w.schema(v.elems[j], pp)
				}
			}
		case "properties", "$defs", "definitions", "dependentSchemas", "dependencies":
			// Member names here are property or definition names, so a
			// member called "pattern" is a schema, never a regex.
			if v.kind == 'o' {
				for j, name := range v.keys {
					w.schema(v.elems[j], pointerAppend(p, name))
				}
			}
		case "$ref", "$dynamicRef", "$recursiveRef":
			if v.kind == 's' {
				w.refs = append(w.refs, v.str)
			}
		case "const", "enum", "default", "examples":
			// Data, not schemas.
		default:
			w.schema(v, p)
		}
	}
}

func (w *schemaWalker) check(pattern, ptr string) {
	reason, seen := w.verdict[pattern]
	if !seen {
		reason = screenCached(pattern)
		w.verdict[pattern] = reason
	}
	if reason != "" {
		w.found = append(w.found, &DangerousPatternError{Pointer: ptr, Pattern: pattern, Reason: reason})
	}
}

// --- ECMA-262 to RE2

type ecmaMode uint8

const (
	// ecmaForEngine keeps the meaning: what RE2 cannot run is an error.
	ecmaForEngine ecmaMode = iota
	// ecmaForScreen keeps the shape for the screen; see the file comment.
	ecmaForScreen
)

const (
	maxRE2Repeat = 1000 // Go's parser refuses larger counts
	smallRepeat  = 10   // counts up to this are unrolled by the screen
)

type ecmaGroup struct {
	open, body, close int // offsets of '(', of the body, of ')'
	lookaround        bool
	capture           bool
	name              string
}

type ecmaTranslator struct {
	src      string
	mode     ecmaMode
	clampMin int
	groups   map[int]*ecmaGroup // by offset of '('
	captures []*ecmaGroup       // in ECMA numbering: captures[0] is \1
	lifted   []string           // ecmaForScreen: lookaround bodies in RE2 syntax
}

func newECMATranslator(src string, mode ecmaMode, clampMin int) (*ecmaTranslator, error) {
	t := &ecmaTranslator{src: src, mode: mode, clampMin: clampMin, groups: map[int]*ecmaGroup{}}
	var open []*ecmaGroup
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
			if i >= len(src) {
				return nil, errors.New("pattern ends with a backslash")
			}
		case '[':
			end, err := classEnd(src, i)
			if err != nil {
				return nil, err
			}
			i = end
		case '(':
			g := &ecmaGroup{open: i, body: i + 1, capture: true}
			rest := src[i+1:]
			switch {
			case strings.HasPrefix(rest, "?="), strings.HasPrefix(rest, "?!"):
				g.lookaround, g.capture, g.body = true, false, i+3
			case strings.HasPrefix(rest, "?<="), strings.HasPrefix(rest, "?<!"):
				g.lookaround, g.capture, g.body = true, false, i+4
			case strings.HasPrefix(rest, "?<"), strings.HasPrefix(rest, "?P<"):
				start := i + 1 + strings.IndexByte(rest, '<') + 1
				end := strings.IndexByte(src[start:], '>')
				if end < 0 {
					return nil, errors.New("unterminated group name")
				}
				g.name, g.body = src[start:start+end], start+end+1
			case strings.HasPrefix(rest, "?"):
				// (?:…), (?i:…) or (?i): the header up to ':' is copied as
				// is; a bare flag group has an empty body.
				g.capture = false
				j := i + 2
				for j < len(src) && (isASCIILetter(src[j]) || src[j] == '-') {
					j++
				}
				switch {
				case j < len(src) && src[j] == ':':
					g.body = j + 1
				case j < len(src) && src[j] == ')':
					g.body = j
				default:
					g.body = i + 2 // not ECMA; Go's parser will object
				}
			}
			if g.capture {
				t.captures = append(t.captures, g)
			}
			open = append(open, g)
		case ')':
			if len(open) == 0 {
				return nil, errors.New("unbalanced )")
			}
			g := open[len(open)-1]
			open = open[:len(open)-1]
			g.close = i
			t.groups[g.open] = g
		}
	}
	if len(open) > 0 {
		return nil, errors.New("missing )")
	}
	return t, nil
}

// classEnd returns the offset of the ']' closing the class opened at i. In
// ECMA-262 a ']' right after '[' or '[^' closes the class: `[]` matches
// nothing and `[^]` matches anything.
func classEnd(s string, i int) (int, error) {
	j := i + 1
	if j < len(s) && s[j] == '^' {
		j++
	}
	for ; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case ']':
			return j, nil
		}
	}
	return 0, errors.New("missing ]")
}

// translate rewrites src[lo:hi] into RE2 syntax. depth counts how many
// backreference substitutions enclose this text.
func (t *ecmaTranslator) translate(lo, hi, depth int) (string, error) {
	var b strings.Builder
	branches := t.branches(lo, hi)
	wrap := t.mode == ecmaForScreen && len(branches) > 1
	for bi, br := range branches {
		if bi > 0 {
			b.WriteByte('|')
		}
		if wrap {
			b.WriteByte('(')
		}
		if err := t.sequence(&b, br[0], br[1], depth); err != nil {
			return "", err
		}
		if wrap {
			b.WriteByte(')')
		}
	}
	return b.String(), nil
}

// branches splits src[lo:hi] at its top-level '|'.
func (t *ecmaTranslator) branches(lo, hi int) [][2]int {
	var out [][2]int
	start := lo
	for i := lo; i < hi; i++ {
		switch t.src[i] {
		case '\\':
			i++
		case '[':
			i, _ = classEnd(t.src, i)
		case '(':
			i = t.groups[i].close
		case '|':
			out = append(out, [2]int{start, i})
			start = i + 1
		}
	}
	return append(out, [2]int{start, hi})
}

func (t *ecmaTranslator) sequence(b *strings.Builder, lo, hi, depth int) error {
	s := t.src
	for i := lo; i < hi; {
		switch c := s[i]; c {
		case '\\':
			next, err := t.escape(b, i, false, depth)
			if err != nil {
				return err
			}
			i = next
		case '[':
			end, _ := classEnd(s, i)
			if err := t.class(b, i, end); err != nil {
				return err
			}
			i = end + 1
		case '(':
			g := t.groups[i]
			if g.lookaround {
				if t.mode == ecmaForEngine {
					return fmt.Errorf("lookaround %s is not supported by RE2", s[i:g.body])
				}
				if depth == 0 {
					body, err := t.translate(g.body, g.close, depth)
					if err != nil {
						return err
					}
					t.lifted = append(t.lifted, body)
				}
				b.WriteString("(?:)")
				i = g.close + 1
				continue
			}
			if g.capture {
				// A plain group: names need not suit Go, and ECMA allows
				// the same name in different alternatives.
				b.WriteByte('(')
			} else {
				b.WriteString(s[i:g.body])
			}
			inner, err := t.translate(g.body, g.close, depth)
			if err != nil {
				return err
			}
			b.WriteString(inner)
			b.WriteByte(')')
			i = g.close + 1
		case '{':
			i = t.count(b, i)
		case '.':
			if t.mode == ecmaForEngine {
				b.WriteString(`[^\n\r\x{2028}\x{2029}]`) // ECMA's line terminators
			} else {
				b.WriteByte('.')
			}
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	return nil
}

// ecmaSpace is ECMA-262's \s: white space and line terminators, not just
// ASCII as in RE2.
const ecmaSpace = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`

// count copies a {n}, {n,} or {n,m} quantifier at i, or a literal '{'.
func (t *ecmaTranslator) count(b *strings.Builder, i int) int {
	s := t.src
	lo, j := digits(s, i+1)
	if j == i+1 {
		b.WriteString(`\{`)
		return i + 1
	}
	hi := lo
	if j < len(s) && s[j] == ',' {
		var k int
		hi, k = digits(s, j+1)
		if k == j+1 {
			hi = -1
		}
		j = k
	}
	if j >= len(s) || s[j] != '}' {
		b.WriteString(`\{`)
		return i + 1
	}
	if t.mode == ecmaForScreen && (hi < 0 || hi > smallRepeat) {
		// Past a handful of repetitions a counted loop backtracks like an
		// unbounded one, and Go's parser caps counts.
		fmt.Fprintf(b, "{%d,}", min(lo, t.clampMin))
		return j + 1
	}
	b.WriteString(s[i : j+1])
	return j + 1
}

// digits parses a decimal number at s[i:], saturating at a large value.
func digits(s string, i int) (int, int) {
	n := 0
	j := i
	for ; j < len(s) && s[j] >= '0' && s[j] <= '9'; j++ {
		if n < 1<<20 {
			n = n*10 + int(s[j]-'0')
		}
	}
	return n, j
}

// class translates the character class s[i:end+1].
func (t *ecmaTranslator) class(b *strings.Builder, i, end int) error {
	s := t.src
	j := i + 1
	negated := j < end && s[j] == '^'
	if negated {
		j++
	}
	if j == end {
		if negated {
			b.WriteString(`[\x{0}-\x{10FFFF}]`)
		} else {
			b.WriteString(`[^\x{0}-\x{10FFFF}]`)
		}
		return nil
	}
	b.WriteByte('[')
	if negated {
		b.WriteByte('^')
	}
	for j < end {
		switch c := s[j]; c {
		case '\\':
			next, err := t.escape(b, j, true, 0)
			if err != nil {
				return err
			}
			// After \d, \w or \s a '-' cannot start a range in ECMA-262;
			// Go would reject it, so make it a literal.
			if isClassEscape(s, j) && next < end-1 && s[next] == '-' {
				b.WriteString(`\-`)
				next++
			}
			j = next
		case '[':
			b.WriteString(`\[`) // Go would read [: as a POSIX class
			j++
		case '-':
			if j+2 < end && s[j+1] == '\\' && isClassEscape(s, j+1) {
				b.WriteString(`\-`)
			} else {
				b.WriteByte('-')
			}
			j++
		default:
			b.WriteByte(c)
			j++
		}
	}
	b.WriteByte(']')
	return nil
}

func isClassEscape(s string, i int) bool {
	return i+1 < len(s) && strings.IndexByte("dDwWsS", s[i+1]) >= 0
}

// escape translates the escape sequence at s[i] == '\\' and returns the
// offset after it.
func (t *ecmaTranslator) escape(b *strings.Builder, i int, inClass bool, depth int) (int, error) {
	s := t.src
	if i+1 >= len(s) {
		return 0, errors.New("pattern ends with a backslash")
	}
	c := s[i+1]
	switch {
	case t.mode == ecmaForEngine && c == 's':
		if inClass {
			b.WriteString(ecmaSpace)
		} else {
			b.WriteString("[" + ecmaSpace + "]")
		}
		return i + 2, nil
	case t.mode == ecmaForEngine && c == 'S' && !inClass:
		b.WriteString("[^" + ecmaSpace + "]")
		return i + 2, nil
	case strings.IndexByte("dDwWsSnrtfv", c) >= 0:
		b.WriteString(s[i : i+2])
		return i + 2, nil
	case c == 'b' || c == 'B':
		switch {
		case !inClass:
			b.WriteString(s[i : i+2])
		case c == 'b':
			b.WriteString(`\x08`) // backspace, inside a class
		default:
			b.WriteByte('B')
		}
		return i + 2, nil
	case c >= '0' && c <= '9':
		n, end := digits(s, i+1)
		if !inClass && c != '0' && n <= len(t.captures) {
			return end, t.backreference(b, t.captures[n-1], i, depth)
		}
		// A legacy octal escape, or a digit standing for itself.
		v, j := 0, i+1
		for ; j < len(s) && j < i+4 && s[j] >= '0' && s[j] <= '7' && v*8+int(s[j]-'0') <= 0377; j++ {
			v = v*8 + int(s[j]-'0')
		}
		if j == i+1 {
			b.WriteByte(c)
			return i + 2, nil
		}
		fmt.Fprintf(b, `\x{%x}`, v)
		return j, nil
	case c == 'k' && !inClass && i+2 < len(s) && s[i+2] == '<':
		end := strings.IndexByte(s[i+3:], '>')
		if end >= 0 {
			name := s[i+3 : i+3+end]
			for _, g := range t.captures {
				if g.name == name {
					return i + 3 + end + 1, t.backreference(b, g, i, depth)
				}
			}
		}
		b.WriteByte('k')
		return i + 2, nil
	case c == 'u':
		r, end, ok := unicodeEscape(s, i)
		if !ok {
			b.WriteByte('u')
			return i + 2, nil
		}
		fmt.Fprintf(b, `\x{%x}`, r)
		return end, nil
	case c == 'x':
		if i+3 < len(s) && isHex(s[i+2]) && isHex(s[i+3]) {
			b.WriteString(s[i : i+4])
			return i + 4, nil
		}
		b.WriteByte('x')
		return i + 2, nil
	case c == 'c':
		if i+2 < len(s) && isASCIILetter(s[i+2]) {
			fmt.Fprintf(b, `\x{%x}`, s[i+2]%32)
			return i + 3, nil
		}
		b.WriteString(`\\`) // a backslash standing for itself
		return i + 1, nil
	case (c == 'p' || c == 'P') && i+2 < len(s) && s[i+2] == '{':
		end := strings.IndexByte(s[i+3:], '}')
		if end < 0 {
			b.WriteByte(c)
			return i + 2, nil
		}
		return i + 3 + end + 1, t.property(b, c == 'P', s[i+3:i+3+end], inClass)
	case isASCIILetter(c):
		b.WriteByte(c) // an identity escape: the letter itself
		return i + 2, nil
	case c < utf8.RuneSelf:
		b.WriteString(s[i : i+2])
		return i + 2, nil
	default:
		_, size := utf8.DecodeRuneInString(s[i+1:])
		b.WriteString(s[i+1 : i+1+size])
		return i + 1 + size, nil
	}
}

func (t *ecmaTranslator) backreference(b *strings.Builder, g *ecmaGroup, at, depth int) error {
	if t.mode == ecmaForEngine {
		return fmt.Errorf("backreference %s is not supported by RE2", t.src[at:min(at+2, len(t.src))])
	}
	if depth > 0 || g.close > at {
		// Inside a copy, or naming a group not closed yet: match empty.
		b.WriteString("(?:)")
		return nil
	}
	// At run time a backreference matches one fixed string the group
	// matched, so repeating it is unambiguous; what can overlap is which
	// characters that string holds. It stands in as one character from the
	// group's alphabet.
	body, err := t.translate(g.body, g.close, depth+1)
	if err != nil {
		return err
	}
	re, err := syntax.Parse(body, syntax.Perl)
	if err != nil {
		b.WriteString("(?:)")
		return nil
	}
	var alphabet []rune
	collectAlphabet(re, &alphabet)
	if len(alphabet) == 0 {
		b.WriteString("(?:)")
		return nil
	}
	b.WriteByte('[')
	for i := 0; i+1 < len(alphabet); i += 2 {
		fmt.Fprintf(b, `\x{%x}-\x{%x}`, alphabet[i], alphabet[i+1])
	}
	b.WriteByte(']')
	return nil
}

// collectAlphabet adds the characters re can match, as lo-hi pairs.
func collectAlphabet(re *syntax.Regexp, out *[]rune) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					*out = append(*out, f, f)
				}
			}
			*out = append(*out, r, r)
		}
	case syntax.OpCharClass:
		*out = append(*out, re.Rune...)
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		*out = append(*out, 0, unicode.MaxRune)
	}
	for _, sub := range re.Sub {
		collectAlphabet(sub, out)
	}
}

// property writes a Unicode property escape Go understands.
func (t *ecmaTranslator) property(b *strings.Builder, negated bool, name string, inClass bool) error {
	if k, v, ok := strings.Cut(name, "="); ok {
		switch k {
		case "General_Category", "gc", "Script", "sc", "Script_Extensions", "scx":
			name = v
		}
	}
	esc := `\p{` + name + `}`
	if negated {
		esc = `\P{` + name + `}`
	}
	if _, err := syntax.Parse(esc, syntax.Perl); err == nil {
		b.WriteString(esc)
		return nil
	}
	if t.mode == ecmaForEngine {
		return fmt.Errorf("unicode property %q is not supported by RE2", name)
	}
	if inClass {
		b.WriteString(`\x{0}-\x{10FFFF}`)
	} else {
		b.WriteString(`[\x{0}-\x{10FFFF}]`)
	}
	return nil
}

// unicodeEscape decodes \uXXXX (joining a surrogate pair) or \u{X…} at s[i].
func unicodeEscape(s string, i int) (rune, int, bool) {
	if i+2 < len(s) && s[i+2] == '{' {
		end := strings.IndexByte(s[i+3:], '}')
		if end <= 0 {
			return 0, 0, false
		}
		v, err := strconv.ParseUint(s[i+3:i+3+end], 16, 32)
		if err != nil || v > unicode.MaxRune {
			return 0, 0, false
		}
		return rune(v), i + 3 + end + 1, true
	}
	hex4 := func(j int) (rune, bool) {
		if j+4 > len(s) {
			return 0, false
		}
		v, err := strconv.ParseUint(s[j:j+4], 16, 32)
		return rune(v), err == nil
	}
	r, ok := hex4(i + 2)
	if !ok {
		return 0, 0, false
	}
	end := i + 6
	if r >= 0xD800 && r < 0xDC00 && strings.HasPrefix(s[end:], `\u`) {
		if lo, ok := hex4(end + 2); ok && lo >= 0xDC00 && lo < 0xE000 {
			return (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000, end + 6, true
		}
	}
	return r, end, true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// ecmaToRE2 rewrites an ECMA-262 pattern into an equivalent RE2 pattern, or
// fails where RE2 cannot follow (lookarounds, backreferences).
func ecmaToRE2(pattern string) (string, error) {
	t, err := newECMATranslator(pattern, ecmaForEngine, 0)
	if err != nil {
		return "", err
	}
	return t.translate(0, len(pattern), 0)
}

// ecmaRegexp runs an ECMA-262 pattern on Go's regexp, printing as written.
type ecmaRegexp struct {
	*regexp.Regexp
	src string
}

func (r ecmaRegexp) String() string { return r.src }

func compileECMA(pattern string) (ecmaRegexp, error) {
	re2, err := ecmaToRE2(pattern)
	if err != nil {
		return ecmaRegexp{}, err
	}
	re, err := regexp.Compile(re2)
	if err != nil {
		return ecmaRegexp{}, err
	}
	return ecmaRegexp{re, pattern}, nil
}

// --- the automaton

const (
	maxPositions = 4096    // past this, counted repeats stay loops instead of unrolling
	maxEdges     = 1 << 20 // follow edges in one pattern
)

// screenWorkBudget bounds the work spent on one pattern, about half a second
// at worst: comparing a pair of edges costs 1, a new pair of positions
// workPerPair. A pattern needing more is refused as too large.
var screenWorkBudget = 4_000_000

const workPerPair = 4

type rxOp uint8

const (
	rxEmpty rxOp = iota // matches only the empty string: anchors, boundaries, (?:)
	rxLeaf              // one character from a set
	rxCat
	rxAlt
	rxOpt
	rxLoop // unbounded repetition
)

type rxNode struct {
	op    rxOp
	subs  []*rxNode
	label int32          // rxLeaf: index into automaton.labels
	min   int            // rxLoop
	src   *syntax.Regexp // rxLoop: as parsed, for the reason

	// Set by walk: the subtree's node ids (preorder) and positions.
	id, idEnd   int32
	pos, posEnd int32
}

// rxEdge is a follow edge: after reading position from, read position to.
// gen is the node that produced it; two edges with the same ends but
// different producers are different ways through the pattern.
type rxEdge struct{ from, to, gen int32 }

type automaton struct {
	labels    [][]rune // rune ranges, lo-hi pairs
	labelIDs  map[string]int32
	broad     []bool
	meets     map[[2]int32]bool
	meetTable []int8 // made once labels are final, when there are few
	leaves    int

	posLabel []int32
	edges    []rxEdge
	loops    []*rxNode // post-order: inner loops first
	nextID   int32
	tooBig   bool
	work     *int // spent from screenWorkBudget
}

func screenTree(re *syntax.Regexp, work *int) (string, bool) {
	a := &automaton{labelIDs: map[string]int32{}, meets: map[[2]int32]bool{}, work: work}
	root := a.build(re)
	a.walk(root)
	for _, l := range a.loops {
		if a.tooBig {
			return reasonTooComplex + " in " + renderRegexp(l.src), true
		}
		amb, exhausted := a.ambiguous(l)
		if exhausted {
			return reasonTooComplex + " in " + renderRegexp(l.src), true
		}
		if amb {
			return a.classify(l) + " in " + renderRegexp(l.src), true
		}
	}
	return "", false
}

func (a *automaton) leaf(ranges []rune) *rxNode {
	var key strings.Builder
	for _, r := range ranges {
		key.WriteString(strconv.FormatInt(int64(r), 36))
		key.WriteByte(',')
	}
	id, ok := a.labelIDs[key.String()]
	if !ok {
		id = int32(len(a.labels))
		a.labelIDs[key.String()] = id
		a.labels = append(a.labels, ranges)
		size := 0
		for i := 0; i+1 < len(ranges); i += 2 {
			size += int(ranges[i+1]-ranges[i]) + 1
		}
		a.broad = append(a.broad, size > unicode.MaxRune/2)
	}
	a.leaves++
	return &rxNode{op: rxLeaf, label: id}
}

func (a *automaton) literal(r rune, fold bool) *rxNode {
	rs := []rune{r}
	if fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			rs = append(rs, f)
		}
		slices.Sort(rs)
	}
	ranges := make([]rune, 0, 2*len(rs))
	for _, x := range rs {
		ranges = append(ranges, x, x)
	}
	return a.leaf(ranges)
}

func (a *automaton) build(re *syntax.Regexp) *rxNode {
	switch re.Op {
	case syntax.OpNoMatch:
		return a.leaf(nil)
	case syntax.OpLiteral:
		fold := re.Flags&syntax.FoldCase != 0
		if len(re.Rune) == 1 {
			return a.literal(re.Rune[0], fold)
		}
		n := &rxNode{op: rxCat}
		for _, r := range re.Rune {
			n.subs = append(n.subs, a.literal(r, fold))
		}
		return n
	case syntax.OpCharClass:
		return a.leaf(re.Rune)
	case syntax.OpAnyCharNotNL:
		return a.leaf([]rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune})
	case syntax.OpAnyChar:
		return a.leaf([]rune{0, unicode.MaxRune})
	case syntax.OpCapture:
		return a.build(re.Sub[0])
	case syntax.OpStar:
		return &rxNode{op: rxLoop, subs: []*rxNode{a.build(re.Sub[0])}, src: re}
	case syntax.OpPlus:
		return &rxNode{op: rxLoop, subs: []*rxNode{a.build(re.Sub[0])}, min: 1, src: re}
	case syntax.OpQuest:
		return &rxNode{op: rxOpt, subs: []*rxNode{a.build(re.Sub[0])}}
	case syntax.OpRepeat:
		return a.repeat(re)
	case syntax.OpConcat, syntax.OpAlternate:
		n := &rxNode{op: rxCat}
		if re.Op == syntax.OpAlternate {
			n.op = rxAlt
		}
		for _, s := range re.Sub {
			n.subs = append(n.subs, a.build(s))
		}
		return n
	default:
		return &rxNode{op: rxEmpty}
	}
}

// repeat unrolls a small counted repeat the way an engine runs it, x{1,3} as
// x(?:x(?:x)?)?, and keeps larger ones as loops.
func (a *automaton) repeat(re *syntax.Regexp) *rxNode {
	if re.Max == 0 {
		return &rxNode{op: rxEmpty}
	}
	before := a.leaves
	first := a.build(re.Sub[0])
	size := a.leaves - before
	if re.Max < 0 || re.Max > smallRepeat || a.leaves+size*(re.Max-1) > maxPositions {
		return &rxNode{op: rxLoop, subs: []*rxNode{first}, min: min(re.Min, 1), src: re}
	}
	copies := []*rxNode{first}
	for len(copies) < re.Max {
		copies = append(copies, a.build(re.Sub[0]))
	}
	var tail *rxNode
	for i := re.Max - 1; i >= re.Min; i-- {
		body := copies[i]
		if tail != nil {
			body = &rxNode{op: rxCat, subs: []*rxNode{body, tail}}
		}
		tail = &rxNode{op: rxOpt, subs: []*rxNode{body}}
	}
	n := &rxNode{op: rxCat, subs: slices.Clone(copies[:re.Min])}
	if tail != nil {
		n.subs = append(n.subs, tail)
	}
	return n
}

type followSets struct {
	nullable    bool
	first, last []int32
}

// walk numbers the tree and adds its follow edges (the Glushkov
// construction).
func (a *automaton) walk(n *rxNode) followSets {
	n.id = a.nextID
	a.nextID++
	n.pos = int32(len(a.posLabel))
	var f followSets
	switch n.op {
	case rxEmpty:
		f.nullable = true
	case rxLeaf:
		p := int32(len(a.posLabel))
		a.posLabel = append(a.posLabel, n.label)
		f = followSets{first: []int32{p}, last: []int32{p}}
	case rxCat:
		f.nullable = true
		for i, s := range n.subs {
			g := a.walk(s)
			if i == 0 {
				f = g
				continue
			}
			a.link(f.last, g.first, n.id)
			first, last := f.first, g.last
			if f.nullable {
				first = slices.Concat(f.first, g.first)
			}
			if g.nullable {
				last = slices.Concat(f.last, g.last)
			}
			f = followSets{f.nullable && g.nullable, first, last}
		}
	case rxAlt:
		for _, s := range n.subs {
			g := a.walk(s)
			f.nullable = f.nullable || g.nullable
			f.first = slices.Concat(f.first, g.first)
			f.last = slices.Concat(f.last, g.last)
		}
	case rxOpt:
		f = a.walk(n.subs[0])
		f.nullable = true
	case rxLoop:
		f = a.walk(n.subs[0])
		a.link(f.last, f.first, n.id)
		f.nullable = f.nullable || n.min == 0
	}
	n.idEnd = a.nextID
	n.posEnd = int32(len(a.posLabel))
	if n.op == rxLoop {
		a.loops = append(a.loops, n)
	}
	return f
}

func (a *automaton) link(from, to []int32, gen int32) {
	if len(a.edges)+len(from)*len(to) > maxEdges {
		a.tooBig = true
		return
	}
	for _, p := range from {
		for _, q := range to {
			a.edges = append(a.edges, rxEdge{p, q, gen})
		}
	}
}

// meet reports whether two labels share a character, cached in a square
// table while there are few labels and in a map beyond.
func (a *automaton) meet(x, y int32) bool {
	if x > y {
		x, y = y, x
	}
	n := int32(len(a.labels))
	if n <= maxDenseLabels {
		if a.meetTable == nil {
			a.meetTable = make([]int8, n*n)
		}
		switch a.meetTable[x*n+y] {
		case 1:
			return false
		case 2:
			return true
		}
		v := rangesMeet(a.labels[x], a.labels[y])
		a.meetTable[x*n+y] = 1
		if v {
			a.meetTable[x*n+y] = 2
		}
		return v
	}
	k := [2]int32{x, y}
	if v, ok := a.meets[k]; ok {
		return v
	}
	v := rangesMeet(a.labels[x], a.labels[y])
	a.meets[k] = v
	return v
}

const maxDenseLabels = 512

func rangesMeet(x, y []rune) bool {
	for i, j := 0, 0; i+1 < len(x) && j+1 < len(y); {
		switch {
		case x[i+1] < y[j]:
			i += 2
		case y[j+1] < x[i]:
			j += 2
		default:
			return true
		}
	}
	return false
}

// ambiguous reports whether the loop l, with everything inside it, has a
// position with two different paths back to itself over the same input.
// exhausted is true when the search was cut short.
func (a *automaton) ambiguous(l *rxNode) (amb, exhausted bool) {
	n := l.posEnd - l.pos
	if n == 0 {
		return false, false
	}
	s := &productSearch{a: a, base: l.pos, out: make([][]int32, n), index: map[uint64]int32{}}
	for i, e := range a.edges {
		if e.gen >= l.id && e.gen < l.idEnd {
			s.out[e.from-l.pos] = append(s.out[e.from-l.pos], int32(i))
		}
	}
	for q := range n {
		k := pairKey(q, q)
		if _, seen := s.index[k]; !seen {
			s.visit(k)
		}
		if s.exhausted {
			return false, true
		}
	}
	for _, d := range s.diverging {
		if c := s.comp[d[0]]; c == s.comp[d[1]] && s.compDiag[c] {
			return true, false
		}
	}
	return false, false
}

// productSearch runs Tarjan's algorithm over pairs of positions reading the
// same input, reached from pairs (q, q). A pair of different edges taken
// inside a strongly connected component that holds some (q, q) is two
// different ways around the same cycle.
//
// The product is symmetric, so a pair is stored once, smaller position
// first: a cycle through (q, q) in either graph lifts to one in the other,
// because (q, q) is its own mirror image.
type productSearch struct {
	a     *automaton
	base  int32
	out   [][]int32 // edge indices by local source position
	index map[uint64]int32

	low, comp []int32
	onStack   []bool
	diag      []bool
	stack     []int32
	compDiag  []bool
	diverging [][2]int32
	exhausted bool
}

func pairKey(p, r int32) uint64 {
	if p > r {
		p, r = r, p
	}
	return uint64(p)<<32 | uint64(r)
}

// visit runs Tarjan's algorithm from k with an explicit stack: the product
// of a long pattern can be millions of pairs deep.
func (s *productSearch) visit(k uint64) {
	type frame struct {
		v, p, r int32
		i, j    int   // next pair of edges: out[p][i] with out[r][j]
		child   int32 // node being explored below, or -1
		div     bool  // whether the edge pair to child diverged
	}
	open := func(k uint64) frame {
		*s.a.work += workPerPair
		v := int32(len(s.low))
		s.index[k] = v
		p, r := int32(k>>32), int32(uint32(k))
		s.low = append(s.low, v)
		s.comp = append(s.comp, -1)
		s.onStack = append(s.onStack, true)
		s.diag = append(s.diag, p == r)
		s.stack = append(s.stack, v)
		return frame{v: v, p: p, r: r, child: -1}
	}
	frames := []frame{open(k)}
	for len(frames) > 0 {
		f := &frames[len(frames)-1]
		if f.child >= 0 {
			w := f.child
			s.low[f.v] = min(s.low[f.v], s.low[w])
			// A w already in a finished component is not in v's.
			if f.div && s.onStack[w] {
				s.diverging = append(s.diverging, [2]int32{f.v, w})
			}
			f.child = -1
		}
		var next uint64
		descend := false
	edges:
		for ; f.i < len(s.out[f.p]); f.i, f.j = f.i+1, 0 {
			e1 := s.out[f.p][f.i]
			if f.p == f.r && f.j < f.i {
				f.j = f.i // the mirror of (e2, e1) is (e1, e2)
			}
			for ; f.j < len(s.out[f.r]); f.j++ {
				if *s.a.work++; *s.a.work > screenWorkBudget {
					s.exhausted = true
					return
				}
				e2 := s.out[f.r][f.j]
				t1, t2 := s.a.edges[e1].to, s.a.edges[e2].to
				if !s.a.meet(s.a.posLabel[t1], s.a.posLabel[t2]) {
					continue
				}
				wk := pairKey(t1-s.base, t2-s.base)
				w, seen := s.index[wk]
				switch {
				case !seen:
					f.div = e1 != e2
					f.j++
					next, descend = wk, true
					break edges
				case s.onStack[w]:
					s.low[f.v] = min(s.low[f.v], w)
					if e1 != e2 {
						s.diverging = append(s.diverging, [2]int32{f.v, w})
					}
				}
			}
		}
		if descend {
			child := open(next)
			f.child = child.v
			frames = append(frames, child)
			continue
		}
		v := f.v
		frames = frames[:len(frames)-1]
		if s.low[v] != v {
			continue
		}
		c := int32(len(s.compDiag))
		hasDiag := false
		for {
			x := s.stack[len(s.stack)-1]
			s.stack = s.stack[:len(s.stack)-1]
			s.onStack[x] = false
			s.comp[x] = c
			hasDiag = hasDiag || s.diag[x]
			if x == v {
				break
			}
		}
		s.compDiag = append(s.compDiag, hasDiag)
	}
}

// classify names the rule an ambiguous loop breaks, from its shape.
func (a *automaton) classify(l *rxNode) string {
	var inner []*rxNode
	var collect func(n *rxNode)
	collect = func(n *rxNode) {
		for _, s := range n.subs {
			if s.op == rxLoop && s.posEnd > s.pos {
				inner = append(inner, s)
			}
			collect(s)
		}
	}
	collect(l)
	if len(inner) == 0 {
		return reasonAlternation
	}
	for _, in := range inner {
		for p := in.pos; p < in.posEnd; p++ {
			if a.broad[a.posLabel[p]] {
				return reasonDotStar
			}
		}
	}
	within := func(n *rxNode, p int32) bool { return p >= n.pos && p < n.posEnd }
	budget := screenWorkBudget
	for _, e := range a.edges {
		if e.gen < l.id || e.gen >= l.idEnd || !a.meet(a.posLabel[e.from], a.posLabel[e.to]) {
			continue
		}
		for _, x := range inner {
			if !within(x, e.from) {
				continue
			}
			for _, y := range inner {
				if budget--; budget < 0 {
					return reasonNested
				}
				disjoint := x.posEnd <= y.pos || y.posEnd <= x.pos
				if disjoint && within(y, e.to) {
					return reasonAdjacent
				}
			}
		}
	}
	return reasonNested
}

// renderRegexp prints a parsed fragment in ECMA-like syntax, without the
// flag groups regexp/syntax adds.
func renderRegexp(re *syntax.Regexp) string {
	var b strings.Builder
	writeRegexp(&b, re)
	out := b.String()
	if len(out) > maxRendered {
		cut := maxRendered
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = out[:cut] + "…"
	}
	return out
}

// perlClassNames maps the ranges regexp/syntax gives \d, \s and \w (and
// their negations) back to their names.
var perlClassNames = map[string]string{
	string([]rune{0, unicode.MaxRune}):                                                                         `[^]`,
	string([]rune{'0', '9'}):                                                                                   `\d`,
	string([]rune{0, '0' - 1, '9' + 1, unicode.MaxRune}):                                                       `\D`,
	string([]rune{'\t', '\n', '\f', '\r', ' ', ' '}):                                                           `\s`,
	string([]rune{0, '\t' - 1, '\v', '\v', '\r' + 1, ' ' - 1, ' ' + 1, unicode.MaxRune}):                       `\S`,
	string([]rune{'0', '9', 'A', 'Z', '_', '_', 'a', 'z'}):                                                     `\w`,
	string([]rune{0, '0' - 1, '9' + 1, 'A' - 1, 'Z' + 1, '_' - 1, '_' + 1, 'a' - 1, 'z' + 1, unicode.MaxRune}): `\W`,
}

// maxRendered keeps a reason readable when a class spans half of Unicode.
const maxRendered = 120

func writeRegexp(b *strings.Builder, re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpNoMatch:
		b.WriteString("[]")
	case syntax.OpEmptyMatch:
		b.WriteString("(?:)")
	case syntax.OpLiteral:
		fold := re.Flags&syntax.FoldCase != 0
		if fold {
			b.WriteString("(?i:")
		}
		for _, r := range re.Rune {
			if unicode.IsPrint(r) {
				b.WriteString(regexp.QuoteMeta(string(r)))
			} else {
				fmt.Fprintf(b, `\x{%x}`, r)
			}
		}
		if fold {
			b.WriteByte(')')
		}
	case syntax.OpCharClass:
		if name, ok := perlClassNames[string(re.Rune)]; ok {
			b.WriteString(name)
		} else {
			b.WriteString(re.String())
		}
	case syntax.OpAnyCharNotNL:
		b.WriteByte('.')
	case syntax.OpAnyChar:
		b.WriteString(`[^]`)
	case syntax.OpBeginLine, syntax.OpBeginText:
		b.WriteByte('^')
	case syntax.OpEndLine, syntax.OpEndText:
		b.WriteByte('$')
	case syntax.OpWordBoundary:
		b.WriteString(`\b`)
	case syntax.OpNoWordBoundary:
		b.WriteString(`\B`)
	case syntax.OpCapture:
		b.WriteByte('(')
		writeRegexp(b, re.Sub[0])
		b.WriteByte(')')
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		sub := re.Sub[0]
		atomic := sub.Op == syntax.OpCapture || sub.Op == syntax.OpCharClass ||
			sub.Op == syntax.OpAnyChar || sub.Op == syntax.OpAnyCharNotNL ||
			sub.Op == syntax.OpLiteral && len(sub.Rune) == 1 && sub.Flags&syntax.FoldCase == 0
		if !atomic {
			b.WriteString("(?:")
		}
		writeRegexp(b, sub)
		if !atomic {
			b.WriteByte(')')
		}
		switch re.Op {
		case syntax.OpStar:
			b.WriteByte('*')
		case syntax.OpPlus:
			b.WriteByte('+')
		case syntax.OpQuest:
			b.WriteByte('?')
		default:
			switch {
			case re.Max < 0:
				fmt.Fprintf(b, "{%d,}", re.Min)
			case re.Min == re.Max:
				fmt.Fprintf(b, "{%d}", re.Min)
			default:
				fmt.Fprintf(b, "{%d,%d}", re.Min, re.Max)
			}
		}
		if re.Flags&syntax.NonGreedy != 0 {
			b.WriteByte('?')
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if s.Op == syntax.OpAlternate {
				b.WriteString("(?:")
				writeRegexp(b, s)
				b.WriteByte(')')
			} else {
				writeRegexp(b, s)
			}
		}
	case syntax.OpAlternate:
		for i, s := range re.Sub {
			if i > 0 {
				b.WriteByte('|')
			}
			// Alternatives were wrapped in groups only to stop Go's parser
			// from merging them; print them bare.
			if s.Op == syntax.OpCapture {
				s = s.Sub[0]
			}
			writeRegexp(b, s)
		}
	default:
		b.WriteString(re.String())
	}
}
