package ecma

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

type ecmaMode uint8

const (
	// ecmaForEngine keeps the meaning: what RE2 cannot run is an error.
	ecmaForEngine ecmaMode = iota
	// ecmaForScreen keeps the shape for the screen; see the file comment.
	EcmaForScreen
	// ecmaForBacktracker keeps the meaning for regexp2 in ECMAScript mode:
	// lookarounds and backreferences stay, and what regexp2 reads unlike
	// ECMA-262 is spelled out.
	ecmaForBacktracker
)

// ErrNeedsBacktracker marks a pattern RE2 cannot run because it holds a
// lookaround or a backreference; ToBacktracker translates it for regexp2.
var ErrNeedsBacktracker = errors.New("RE2 cannot run it")

const (
	MaxRE2Repeat = 1000 // Go's parser refuses larger counts
	SmallRepeat  = 10   // count ranges up to this are unrolled by the screen
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
	Lifted   []string           // ecmaForScreen: lookaround bodies in RE2 syntax
}

func NewECMATranslator(src string, mode ecmaMode, clampMin int) (*ecmaTranslator, error) {
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

// ecmaSpace is ECMA-262's \s: white space and line terminators, not just
// ASCII as in RE2.
const ecmaSpace = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`

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

func isClassEscape(s string, i int) bool {
	return i+1 < len(s) && strings.IndexByte("dDwWsS", s[i+1]) >= 0
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

// codePoint writes one code point as an escape the target engine reads.
func (t *ecmaTranslator) codePoint(b *strings.Builder, r rune) {
	if t.mode == ecmaForBacktracker {
		fmt.Fprintf(b, `\u{%x}`, r) // regexp2 reads it with ECMAScript|Unicode
		return
	}
	fmt.Fprintf(b, `\x{%x}`, r)
}

// ToBacktracker rewrites an ECMA-262 pattern for regexp2 with
// regexp2.ECMAScript|regexp2.Unicode. That mode follows ECMA-262 in most
// things, but its dot also matches U+2028 and U+2029, it knows neither
// \p{Script=…} nor surrogate pairs, and it reads [[:a:]] as a POSIX class;
// those are rewritten. Backreferences become numbered, since named groups
// are numbered after the others in regexp2's .NET lineage.
func ToBacktracker(pattern string) (string, error) {
	t, err := NewECMATranslator(pattern, ecmaForBacktracker, 0)
	if err != nil {
		return "", err
	}
	return t.Translate(0, len(pattern), 0)
}

// ecmaToRE2 rewrites an ECMA-262 pattern into an equivalent RE2 pattern, or
// fails where RE2 cannot follow (lookarounds, backreferences).
func ecmaToRE2(pattern string) (string, error) {
	t, err := NewECMATranslator(pattern, ecmaForEngine, 0)
	if err != nil {
		return "", err
	}
	return t.Translate(0, len(pattern), 0)
}

// ecmaRegexp runs an ECMA-262 pattern on Go's regexp, printing as written.
type EcmaRegexp struct {
	*regexp.Regexp
	src string
}

// Regexp is a compiled ECMA-262 pattern: on Go's regexp where the
// translation is exact, on regexp2 where it holds what RE2 cannot run. It is
// safe for concurrent use.
type Regexp interface {
	MatchString(s string) bool
	String() string
}

// MatchTimeout bounds one match on regexp2, which backtracks. A match that
// runs out does not match, so the value is refused: the screen has already
// refused patterns that can take that long, so this is a last resort.
var MatchTimeout = 100 * time.Millisecond

// Compile compiles an ECMA-262 pattern (IM-17). Go's regexp runs it when
// the translation to RE2 is exact, in time linear in the input. A pattern
// with a lookaround or a backreference, valid ECMA-262 that RE2 cannot run,
// goes to regexp2 in ECMAScript mode, bounded by MatchTimeout.
func Compile(pattern string) (Regexp, error) {
	re, err := CompileECMA(pattern)
	if err == nil {
		return re, nil
	}
	if !errors.Is(err, ErrNeedsBacktracker) {
		return nil, err
	}
	src, err := ToBacktracker(pattern)
	if err != nil {
		return nil, err
	}
	bt, err := regexp2.Compile(src, regexp2.ECMAScript|regexp2.Unicode)
	if err != nil {
		return nil, err
	}
	bt.MatchTimeout = MatchTimeout
	return backtracking{bt, pattern}, nil
}

// backtracking runs a pattern on regexp2, printing as written.
type backtracking struct {
	re  *regexp2.Regexp
	src string
}

func (r backtracking) MatchString(s string) bool {
	ok, err := r.re.MatchString(s)
	return err == nil && ok // a timeout is not a match
}

func (r backtracking) String() string { return r.src }

// CompileECMA compiles an ECMA-262 pattern on Go's regexp, or fails, with
// ErrNeedsBacktracker for lookarounds and backreferences.
func CompileECMA(pattern string) (EcmaRegexp, error) {
	re2, err := ecmaToRE2(pattern)
	if err != nil {
		return EcmaRegexp{}, err
	}
	re, err := regexp.Compile(re2)
	if err != nil {
		return EcmaRegexp{}, err
	}
	return EcmaRegexp{re, pattern}, nil
}

// translate rewrites src[lo:hi] into RE2 syntax. depth counts how many
// backreference substitutions enclose this text.
func (t *ecmaTranslator) Translate(lo, hi, depth int) (string, error) {
	var b strings.Builder
	branches := t.branches(lo, hi)
	wrap := t.mode == EcmaForScreen && len(branches) > 1
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
				switch t.mode {
				case ecmaForEngine:
					return fmt.Errorf("lookaround %s: %w", s[i:g.body], ErrNeedsBacktracker)
				case ecmaForBacktracker:
					body, err := t.Translate(g.body, g.close, depth)
					if err != nil {
						return err
					}
					b.WriteString(s[i:g.body] + body + ")")
					i = g.close + 1
					continue
				}
				if depth == 0 {
					body, err := t.Translate(g.body, g.close, depth)
					if err != nil {
						return err
					}
					t.Lifted = append(t.Lifted, body)
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
			inner, err := t.Translate(g.body, g.close, depth)
			if err != nil {
				return err
			}
			b.WriteString(inner)
			b.WriteByte(')')
			i = g.close + 1
		case '{':
			i = t.count(b, i)
		case '.':
			switch t.mode {
			case ecmaForEngine:
				b.WriteString(`[^\n\r\x{2028}\x{2029}]`) // ECMA's line terminators
			case ecmaForBacktracker:
				b.WriteString(`[^\n\r\u2028\u2029]`)
			default:
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
	// Only the range of a count makes choices: {38} reads 38 repetitions
	// and no other number, so it is kept and unrolled like text. A range
	// past a handful backtracks like an unbounded loop. Go's parser caps
	// counts, and on the coarse retry (clampMin 1) the product of nested
	// ones, so there every count past a handful becomes a loop.
	coarse := t.clampMin < MaxRE2Repeat
	if t.mode == EcmaForScreen && (hi < 0 || hi-lo > SmallRepeat || hi > MaxRE2Repeat || coarse && hi > SmallRepeat) {
		fmt.Fprintf(b, "{%d,}", min(lo, t.clampMin))
		return j + 1
	}
	b.WriteString(s[i : j+1])
	return j + 1
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
		switch {
		case t.mode == ecmaForBacktracker && negated:
			b.WriteString(`[\s\S]`)
		case t.mode == ecmaForBacktracker:
			b.WriteString(`(?!)`)
		case negated:
			b.WriteString(`[\x{0}-\x{10FFFF}]`)
		default:
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
		t.codePoint(b, rune(v))
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
		t.codePoint(b, r)
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
			t.codePoint(b, rune(s[i+2]%32))
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
	switch t.mode {
	case ecmaForEngine:
		return fmt.Errorf("backreference %s: %w", t.src[at:min(at+2, len(t.src))], ErrNeedsBacktracker)
	case ecmaForBacktracker:
		if g.close > at {
			// ECMA-262: a group not closed yet has matched nothing, so the
			// reference matches empty; regexp2 would fail instead.
			b.WriteString("(?:)")
			return nil
		}
		n := slices.Index(t.captures, g) + 1
		fmt.Fprintf(b, `(?:\%d)`, n) // grouped, so a digit after it stays a digit
		return nil
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
	body, err := t.Translate(g.body, g.close, depth+1)
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
	if t.mode != EcmaForScreen {
		return fmt.Errorf("unicode property %q is not supported", name)
	}
	if inClass {
		b.WriteString(`\x{0}-\x{10FFFF}`)
	} else {
		b.WriteString(`[\x{0}-\x{10FFFF}]`)
	}
	return nil
}

func (r EcmaRegexp) String() string { return r.src }
