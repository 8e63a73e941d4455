package scan

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode"
)

// The scanner's rules are a few hundred regular expressions, many of them
// long case-insensitive alternations. Compiled at package init they cost
// every toolgate process milliseconds and megabytes, though most never
// scan (the supervisor, check, a gateway with nothing to import). Each is
// compiled on its first use instead, with its gate (RV-2).
//
// Go's regexp runs an alternation as one machine that tries every branch at
// every byte, so a rule of forty branches costs forty times one of them
// even where none can match. The gate splits a rule into its branches and
// reads off each branch the literals every match of it holds (needles);
// whether the rule matches a text is then asked only of the branches whose
// needles the text holds. That answer is exactly the rule's (a text matches
// an alternation iff it matches one branch; a match holds its needles), and
// TestRV2ScanGateExact checks it over every corpus and generated text. The
// rules that report spans (FindAll…) still run whole, and only on text the
// gate says they match, so spans and their order are the rule's own.

// lazyRegexp is a regular expression compiled, and split into its gate, on
// first use. Safe for concurrent use.
type lazyRegexp struct {
	src string
	get func() *gatedRegexp
}

// gatedRegexp is a compiled rule and its gate.
type gatedRegexp struct {
	re *regexp.Regexp
	// needles: every match holds one of them, folded as mayContain folds;
	// nil when no literal is known.
	needles []string
	// branches of re: re matches a text iff one of them does. Nil when re
	// does not split; then re itself is run behind needles.
	branches []gateBranch
}

type gateBranch struct {
	re      *regexp.Regexp
	needles []string // nil: always run
}

// allRegexps lists every lazyRegexp, for the tests that check the gate.
var allRegexps []*lazyRegexp

func newLazy(src string) *lazyRegexp {
	l := &lazyRegexp{src: src}
	l.get = sync.OnceValue(func() *gatedRegexp { return newGated(regexp.MustCompile(l.src)) })
	allRegexps = append(allRegexps, l)
	return l
}

// lazyMust is regexp.MustCompile, compiled on first use.
func lazyMust(src string) *lazyRegexp { return newLazy(src) }

// phrase compiles a case-insensitive pattern in which each space stands for
// any run of white space, Unicode spaces and line breaks included. Patterns
// write a space inside a character class as \x20.
func phrase(pattern string) *lazyRegexp {
	return newLazy(`(?i)` + strings.ReplaceAll(pattern, " ", `[\s\p{Z}]+`))
}

// maxGateBranches bounds how many branches a rule is split into; a rule
// whose alternations multiply past it is gated whole.
const maxGateBranches = 160

func newGated(re *regexp.Regexp) *gatedRegexp {
	g := &gatedRegexp{re: re}
	p, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return g
	}
	g.needles = required(p.Simplify())
	parts := splitAlternation(p)
	if len(parts) > maxGateBranches {
		parts = splitShallow(p)
	}
	if len(parts) < 2 || len(parts) > maxGateBranches {
		return g
	}
	for _, part := range parts {
		b, err := regexp.Compile(part.String())
		if err != nil {
			return g
		}
		g.branches = append(g.branches, gateBranch{re: b, needles: required(part.Simplify())})
	}
	return g
}

// splitAlternation returns regular expressions that match a text iff re
// does: the branches of its alternations, distributed over the
// concatenations around them. Capture groups are dropped: they do not
// change whether a text matches.
func splitAlternation(re *syntax.Regexp) []*syntax.Regexp {
	switch re.Op {
	case syntax.OpAlternate:
		var out []*syntax.Regexp
		for _, sub := range re.Sub {
			out = append(out, splitAlternation(sub)...)
		}
		return out
	case syntax.OpCapture:
		return splitAlternation(re.Sub[0])
	case syntax.OpConcat:
		for i, sub := range re.Sub {
			parts := splitAlternation(sub)
			if len(parts) < 2 {
				continue
			}
			var out []*syntax.Regexp
			for _, part := range parts {
				c := &syntax.Regexp{Op: syntax.OpConcat, Flags: re.Flags}
				c.Sub = append(append(append(c.Sub, re.Sub[:i]...), part), re.Sub[i+1:]...)
				out = append(out, splitAlternation(c)...)
				if len(out) > maxGateBranches {
					return out
				}
			}
			return out
		}
	}
	return []*syntax.Regexp{re}
}

// splitShallow splits re like splitAlternation, but distributes only the
// first alternation of each concatenation, leaving those after it whole:
// for rules whose alternations multiply past maxGateBranches.
func splitShallow(re *syntax.Regexp) []*syntax.Regexp {
	switch re.Op {
	case syntax.OpAlternate:
		var out []*syntax.Regexp
		for _, sub := range re.Sub {
			out = append(out, splitShallow(sub)...)
		}
		return out
	case syntax.OpCapture:
		return splitShallow(re.Sub[0])
	case syntax.OpConcat:
		for i, sub := range re.Sub {
			for sub.Op == syntax.OpCapture {
				sub = sub.Sub[0]
			}
			if sub.Op != syntax.OpAlternate {
				continue
			}
			var out []*syntax.Regexp
			for _, part := range sub.Sub {
				c := &syntax.Regexp{Op: syntax.OpConcat, Flags: re.Flags}
				c.Sub = append(append(append(c.Sub, re.Sub[:i]...), part), re.Sub[i+1:]...)
				out = append(out, c)
			}
			return out
		}
	}
	return []*syntax.Regexp{re}
}

// matchIn reports whether the rule matches t.text: exactly
// re.MatchString(t.text), asked of the branches the text's literals allow.
func (l *lazyRegexp) matchIn(t *cleanText) bool {
	g := l.get()
	if gateOff {
		return g.re.MatchString(t.text)
	}
	if !t.mayContain(g.needles) {
		return false
	}
	if g.branches == nil {
		return g.re.MatchString(t.text)
	}
	for _, b := range g.branches {
		if t.mayContain(b.needles) && b.re.MatchString(t.text) {
			return true
		}
	}
	return false
}

// gateOff runs every rule whole, for the tests that compare the gate with
// its absence.
var gateOff bool

func (l *lazyRegexp) String() string { return l.get().re.String() }

func (l *lazyRegexp) MatchString(s string) bool { return l.get().re.MatchString(s) }

func (l *lazyRegexp) Match(b []byte) bool { return l.get().re.Match(b) }

func (l *lazyRegexp) FindString(s string) string { return l.get().re.FindString(s) }

func (l *lazyRegexp) FindAllStringIndex(s string, n int) [][]int {
	return l.get().re.FindAllStringIndex(s, n)
}

func (l *lazyRegexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return l.get().re.FindAllStringSubmatchIndex(s, n)
}

func (l *lazyRegexp) FindStringSubmatchIndex(s string) []int {
	return l.get().re.FindStringSubmatchIndex(s)
}

func (l *lazyRegexp) FindStringSubmatch(s string) []string {
	return l.get().re.FindStringSubmatch(s)
}

// needles returns the literals one of which every match holds, or nil.
func (l *lazyRegexp) needles() []string { return l.get().needles }

// foldRune folds r the way mayContain folds text: (?i) matches ſ as s and
// the Kelvin sign as k.
func foldRune(r rune) rune {
	switch r {
	case 0x017F:
		return 's'
	case 0x212A:
		return 'k'
	}
	return unicode.ToLower(r)
}

// foldSafe: every character (?i) matches r with folds as r does, so a
// needle holding r is in the folded text wherever a match is.
func foldSafe(r rune) bool {
	f := foldRune(r)
	for o := unicode.SimpleFold(r); o != r; o = unicode.SimpleFold(o) {
		if foldRune(o) != f {
			return false
		}
	}
	return true
}

// literalNeedle is the needle of a literal, or "" when one of its
// characters does not fold safely.
func literalNeedle(rs []rune) string {
	var b strings.Builder
	for _, r := range rs {
		if !foldSafe(r) {
			return ""
		}
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

func (l *lazyRegexp) FindAllString(s string, n int) []string {
	return l.get().re.FindAllString(s, n)
}
