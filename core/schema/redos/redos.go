package redos

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolgate/toolgate/core/schema/ecma"
)

// Reasons given by the screen, one per rule. Each is followed by " in " and
// the offending repetition as parsed.
const (
	reasonNested      = "nested quantifiers"
	reasonAlternation = "overlapping alternatives under a quantifier"
	reasonDotStar     = "repeated group containing a .*-like element"
	reasonAdjacent    = "adjacent overlapping quantifiers in a repeated group"
	reasonTooComplex  = "repeated group too large to analyse"
	reasonPolynomial  = "overlapping quantifiers in sequence"
	reasonBounded     = "nested counted repeats"
)

// ScreenPattern reports whether an ECMA-262 pattern can backtrack
// catastrophically, and why. Patterns it cannot parse are not flagged.
func ScreenPattern(pattern string) (reason string, dangerous bool) {
	reason, dangerous, _, _ = screen(pattern)
	return reason, dangerous
}

// screen is ScreenPattern, also returning, for a pattern it passes, the
// degree of polynomial backtracking (the largest over the pattern and its
// lookarounds) and the quantifiers of that chain.
func screen(pattern string) (reason string, dangerous bool, degree int, chain string) {
	tr, ok := translateForScreen(pattern)
	if !ok {
		return "", false, 0, ""
	}
	work := 0 // shared by the main pattern and its lookarounds
	for i, re := range tr {
		// A lookaround is tried where it stands, not at every start.
		reason, bad, deg, ch := screenTree(re, i > 0, &work)
		if bad {
			if i > 0 {
				reason += " (inside a lookaround)"
			}
			return reason, true, 0, ""
		}
		if deg > degree {
			degree, chain = deg, ch
		}
	}
	return "", false, degree, chain
}

// translateForScreen returns the parsed main pattern followed by the parsed
// lookaround bodies. ok is false when the main pattern cannot be parsed.
func translateForScreen(pattern string) (trees []*syntax.Regexp, ok bool) {
	for _, clampMin := range []int{ecma.MaxRE2Repeat, 1} {
		t, err := ecma.NewECMATranslator(pattern, ecma.EcmaForScreen, clampMin)
		if err != nil {
			return nil, false
		}
		main, err := t.Translate(0, len(pattern), 0)
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
		for _, body := range t.Lifted {
			if lre, err := syntax.Parse(body, syntax.Perl); err == nil {
				trees = append(trees, lre)
			}
		}
		return trees, true
	}
	return nil, false
}

const (
	maxPositions = 4096    // past this, counted repeats stay loops instead of unrolling
	maxEdges     = 1 << 20 // follow edges in one pattern
)

// screenWorkBudget bounds the work spent on one pattern, about half a second
// at worst: comparing a pair of edges costs 1, a new pair of positions
// workPerPair. A pattern needing more is refused as too large.
var ScreenWorkBudget = 4_000_000

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
	src   *syntax.Regexp // rxLoop and unrolled repeats: as parsed, for the reason
	// end: an rxEmpty that is an end anchor ($), which a match can only
	// end at where the input ends.
	end bool

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
	meets3    map[[3]int32]bool
	meetTable []int8 // made once labels are final, when there are few
	leaves    int

	posLabel []int32
	edges    []rxEdge
	loops    []*rxNode // post-order: inner loops first
	counted  []*rxNode // unrolled counted repeats with a range, inner first
	start    *rxNode   // the [^]* an unanchored search begins with, or nil
	witness  []rune    // the input boundedWays built, for tests to replay
	nextID   int32
	tooBig   bool
	work     *int // spent from screenWorkBudget
}

// newAutomaton builds the position automaton of re. anchored says the
// pattern is tried at one place only, as a lookaround is.
func newAutomaton(re *syntax.Regexp, anchored bool, work *int) (*automaton, followSets) {
	a := &automaton{labelIDs: map[string]int32{}, meets: map[[2]int32]bool{}, work: work}
	root := a.build(re)
	if !anchored && !startAnchored(re) {
		// An unanchored search retries at every offset, as if the pattern
		// began with [^]*: one more quantifier to overlap with.
		a.start = &rxNode{op: rxLoop, subs: []*rxNode{a.leaf([]rune{0, unicode.MaxRune})}}
		root = &rxNode{op: rxCat, subs: []*rxNode{a.start, root}}
	}
	return a, a.walk(root)
}

// screenTree screens one parsed tree. For a tree it passes it also returns
// the degree of polynomial backtracking and that chain of quantifiers.
func screenTree(re *syntax.Regexp, anchored bool, work *int) (reason string, bad bool, degree int, chain string) {
	a, f := newAutomaton(re, anchored, work)
	for _, l := range a.loops {
		if a.tooBig {
			return reasonTooComplex + " in " + a.render(l), true, 0, ""
		}
		amb, exhausted := a.ambiguous(l)
		if exhausted {
			return reasonTooComplex + " in " + a.render(l), true, 0, ""
		}
		if amb {
			return a.classify(l) + " in " + a.render(l), true, 0, ""
		}
	}
	if a.tooBig {
		return "", false, 0, ""
	}
	ended := endAnchored(re)
	// Only positions a match can end at without a $ still to pass stop a
	// search at its first success; a branch ending in $ is backtracked
	// whatever the others do (`^\s+|\s+$`).
	deg, loops, exhausted := a.degree(f.free, false)
	if exhausted {
		return reasonTooComplex + " in " + renderRegexp(re), true, 0, ""
	}
	parts := make([]string, len(loops))
	for i, l := range loops {
		parts[i] = a.render(l)
	}
	chain = truncate(strings.Join(parts, " then "))
	if deg >= MinPolynomialDegree {
		return fmt.Sprintf("%s (degree %d) in %s", reasonPolynomial, deg, chain), true, 0, ""
	}
	if ways, at := a.boundedWays(f, ended); ways > MaxBoundedWays {
		return fmt.Sprintf("%s (over %.0e ways to read %d characters) in %s", reasonBounded, MaxBoundedWays, BoundedInputLength, renderRegexp(at)), true, 0, ""
	}
	return "", false, deg, chain
}

// render names a loop for a reason: the virtual one an unanchored search
// starts with has no source.
func (a *automaton) render(l *rxNode) string {
	if l == a.start {
		return "[^]* (an unanchored start)"
	}
	return renderRegexp(l.src)
}

// startAnchored reports whether every alternative of re begins with ^.
func startAnchored(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginText, syntax.OpBeginLine:
		return true
	case syntax.OpCapture:
		return startAnchored(re.Sub[0])
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if s.Op != syntax.OpEmptyMatch {
				return startAnchored(s)
			}
		}
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if !startAnchored(s) {
				return false
			}
		}
		return len(re.Sub) > 0
	}
	return false
}

// endAnchored reports whether every alternative of re ends with $. Without
// it a search succeeds at the first place the pattern is complete.
func endAnchored(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEndText, syntax.OpEndLine:
		return true
	case syntax.OpCapture:
		return endAnchored(re.Sub[0])
	case syntax.OpConcat:
		for i := len(re.Sub) - 1; i >= 0; i-- {
			if re.Sub[i].Op != syntax.OpEmptyMatch {
				return endAnchored(re.Sub[i])
			}
		}
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if !endAnchored(s) {
				return false
			}
		}
		return len(re.Sub) > 0
	}
	return false
}

func truncate(s string) string {
	if len(s) <= maxRendered {
		return s
	}
	cut := maxRendered
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

type followSets struct {
	nullable    bool
	first, last []int32
	// free are the positions of last after which a match can end with no
	// end anchor still to pass, and freeNullable says the tree can match
	// the empty string with none: where a search may stop at its first
	// success. In `^\s+|\s+$` the first \s+ ends a match anywhere and the
	// second only at the end of the input, so a search backtracks it.
	free         []int32
	freeNullable bool
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

// renderRegexp prints a parsed fragment in ECMA-like syntax, without the
// flag groups regexp/syntax adds.
func renderRegexp(re *syntax.Regexp) string {
	var b strings.Builder
	writeRegexp(&b, re)
	return truncate(b.String())
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
	case syntax.OpEndText, syntax.OpEndLine:
		return &rxNode{op: rxEmpty, end: true}
	default:
		return &rxNode{op: rxEmpty}
	}
}

// repeat unrolls a counted repeat the way an engine runs it, x{1,3} as
// x(?:x(?:x)?)?, when its range is small: only the range makes choices, so
// x{38} is just text. A large range, or one that would not fit, stays a loop.
func (a *automaton) repeat(re *syntax.Regexp) *rxNode {
	if re.Max == 0 {
		return &rxNode{op: rxEmpty}
	}
	before := a.leaves
	first := a.build(re.Sub[0])
	size := a.leaves - before
	if re.Max < 0 || re.Max-re.Min > ecma.SmallRepeat || a.leaves+size*(re.Max-1) > maxPositions {
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
	n := &rxNode{op: rxCat, subs: slices.Clone(copies[:re.Min]), src: re}
	if tail != nil {
		n.subs = append(n.subs, tail)
	}
	if re.Max > re.Min {
		a.counted = append(a.counted, n)
	}
	return n
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
		f.freeNullable = !n.end
	case rxLeaf:
		p := int32(len(a.posLabel))
		a.posLabel = append(a.posLabel, n.label)
		f = followSets{first: []int32{p}, last: []int32{p}, free: []int32{p}}
	case rxCat:
		f.nullable, f.freeNullable = true, true
		for i, s := range n.subs {
			g := a.walk(s)
			if i == 0 {
				f = g
				continue
			}
			a.link(f.last, g.first, n.id)
			first, last, free := f.first, g.last, g.free
			if f.nullable {
				first = slices.Concat(f.first, g.first)
			}
			if g.nullable {
				last = slices.Concat(f.last, g.last)
			}
			if g.freeNullable {
				free = slices.Concat(f.free, g.free)
			}
			f = followSets{nullable: f.nullable && g.nullable, first: first, last: last,
				free: free, freeNullable: f.freeNullable && g.freeNullable}
		}
	case rxAlt:
		for _, s := range n.subs {
			g := a.walk(s)
			f.nullable = f.nullable || g.nullable
			f.freeNullable = f.freeNullable || g.freeNullable
			f.first = slices.Concat(f.first, g.first)
			f.last = slices.Concat(f.last, g.last)
			f.free = slices.Concat(f.free, g.free)
		}
	case rxOpt:
		f = a.walk(n.subs[0])
		f.nullable, f.freeNullable = true, true
	case rxLoop:
		f = a.walk(n.subs[0])
		a.link(f.last, f.first, n.id)
		f.nullable = f.nullable || n.min == 0
		f.freeNullable = f.freeNullable || n.min == 0
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
				if *s.a.work++; *s.a.work > ScreenWorkBudget {
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
	budget := ScreenWorkBudget
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
