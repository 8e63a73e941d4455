package scan

import (
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// Some rules hold no literal at all: a run of base64 or hex digits, blank
// space, styled letters. Go's regexp tries them at every byte, which on a
// long text is most of what the scanner's other passes cost. Such a rule
// is made of character classes only, so every match of it is a run of at
// least some length of the characters its classes hold; a text without
// such a run does not match, which one pass over it tells (RV-2).

// charRun is a run of at least min characters of a set.
type charRun struct {
	ascii [2]uint64
	// ranges of the characters past ASCII, as syntax gives them: pairs
	// of bounds, sorted.
	ranges []rune
	min    int
}

// maxRunAlternatives bounds the alternatives a rule gives runs for.
const maxRunAlternatives = 4

// charRuns returns runs one of which every match of re is, or nil when
// re matches something else than classes (., a repetition without bound
// of the empty string) or its runs would be too short to tell anything.
func charRuns(re *syntax.Regexp) []charRun {
	if re.Op == syntax.OpAlternate {
		if len(re.Sub) > maxRunAlternatives {
			return nil
		}
		var out []charRun
		for _, sub := range re.Sub {
			r := charRuns(sub)
			if r == nil {
				return nil
			}
			out = append(out, r...)
		}
		return out
	}
	set, n, ok := runOf(re)
	if !ok || n < 4 {
		return nil
	}
	r := charRun{min: n}
	for i := 0; i+1 < len(set); i += 2 {
		for c := set[i]; c <= set[i+1] && c < utf8.RuneSelf; c++ {
			r.ascii[c/64] |= 1 << (c % 64)
		}
		if set[i+1] >= utf8.RuneSelf {
			r.ranges = append(r.ranges, max(set[i], utf8.RuneSelf), set[i+1])
		}
	}
	if r.has(' ') && r.has('t') {
		// prose is a run of letters and spaces: the pass would tell
		// nothing
		return nil
	}
	return []charRun{r}
}

// runOf returns the characters every match of re is made of and the
// fewest of them a match holds.
func runOf(re *syntax.Regexp) (set []rune, n int, ok bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return nil, 0, true
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			set = addRange(set, r, r)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					set = addRange(set, f, f)
				}
			}
		}
		return set, len(re.Rune), true
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			set = addRange(set, re.Rune[i], re.Rune[i+1])
		}
		return set, 1, true
	case syntax.OpCapture:
		return runOf(re.Sub[0])
	case syntax.OpStar, syntax.OpQuest:
		set, _, ok = runOf(re.Sub[0])
		return set, 0, ok
	case syntax.OpPlus:
		return runOf(re.Sub[0])
	case syntax.OpRepeat:
		set, n, ok = runOf(re.Sub[0])
		return set, n * re.Min, ok
	case syntax.OpConcat, syntax.OpAlternate:
		least := -1
		for _, sub := range re.Sub {
			s, k, ok := runOf(sub)
			if !ok {
				return nil, 0, false
			}
			for i := 0; i+1 < len(s); i += 2 {
				set = addRange(set, s[i], s[i+1])
			}
			switch {
			case re.Op == syntax.OpConcat:
				n += k
			case least < 0 || k < least:
				least = k
			}
		}
		if re.Op == syntax.OpAlternate {
			n = max(least, 0)
		}
		return set, n, true
	}
	return nil, 0, false
}

// addRange adds lo–hi to a sorted list of disjoint ranges.
func addRange(set []rune, lo, hi rune) []rune {
	set = append(set, lo, hi)
	type span struct{ lo, hi rune }
	spans := make([]span, 0, len(set)/2)
	for i := 0; i+1 < len(set); i += 2 {
		spans = append(spans, span{set[i], set[i+1]})
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.lo - b.lo) })
	out := set[:0]
	for _, s := range spans {
		if n := len(out); n > 0 && s.lo <= out[n-1]+1 {
			out[n-1] = max(out[n-1], s.hi)
			continue
		}
		out = append(out, s.lo, s.hi)
	}
	return out
}

// has reports whether c is in the run's set.
func (r *charRun) has(c rune) bool {
	if c < utf8.RuneSelf {
		return r.ascii[c/64]&(1<<(c%64)) != 0
	}
	i, _ := slices.BinarySearch(r.ranges, c)
	// ranges alternate lo, hi: c is inside when it lands on a bound or
	// between a lo and its hi
	return i < len(r.ranges) && (r.ranges[i] == c || i%2 == 1)
}

// holdsRun reports whether t.text holds one of runs, or runs is nil.
func (t *cleanText) holdsRun(runs []charRun) bool {
	if runs == nil {
		return true
	}
	s := t.text
	for k := range runs {
		r := &runs[k]
		n := 0
		for i := 0; i < len(s); {
			c, size := rune(s[i]), 1
			if c >= utf8.RuneSelf {
				c, size = utf8.DecodeRuneInString(s[i:])
			}
			i += size
			if !r.has(c) {
				n = 0
				continue
			}
			if n++; n >= r.min {
				return true
			}
		}
	}
	return false
}

// findAll is re.FindAllStringIndex(s, -1) for a rule every match of which
// is the run r: re is run only over each stretch of s that is such a run,
// with the character on either side of it, so that \b and \B read there
// what they read in s. No match holds a character outside the run's set,
// so the matches are those of s, in its order.
func (r *charRun) findAll(re interface {
	FindAllStringIndex(string, int) [][]int
}, s string) [][]int {
	var out [][]int
	for i := 0; i < len(s); {
		c, size := rune(s[i]), 1
		if c >= utf8.RuneSelf {
			c, size = utf8.DecodeRuneInString(s[i:])
		}
		if !r.has(c) {
			i += size
			continue
		}
		start, n := i, 0
		for i < len(s) {
			c, size = rune(s[i]), 1
			if c >= utf8.RuneSelf {
				c, size = utf8.DecodeRuneInString(s[i:])
			}
			if !r.has(c) {
				break
			}
			i += size
			n++
		}
		if n < r.min {
			continue
		}
		a, z := start, i
		if a > 0 {
			_, size := utf8.DecodeLastRuneInString(s[:a])
			a -= size
		}
		if z < len(s) {
			_, size := utf8.DecodeRuneInString(s[z:])
			z += size
		}
		for _, m := range re.FindAllStringIndex(s[a:z], -1) {
			out = append(out, []int{m[0] + a, m[1] + a})
		}
	}
	return out
}
