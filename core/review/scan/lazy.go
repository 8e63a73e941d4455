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
// needles the text holds, when there are at most three of them (more, and
// the rule runs whole: one pass costs less). That answer is exactly the
// rule's (a text matches an alternation iff it matches one branch; a match
// holds its needles), and TestRV2ScanGateExact checks it over every corpus
// and generated text. The rules that report spans (FindAll…) still run
// whole, and only on text the gate does not rule out, so spans and their
// order are the rule's own.

// lazyRegexp is a regular expression compiled, and split into its gate, on
// first use. Safe for concurrent use.
type lazyRegexp struct {
	src string
	// phrase: src is written for phrase, not yet rewritten
	phrase bool
	get    func() *gatedRegexp
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
	// runs: every match is a run of one of them (nil: unknown).
	runs []charRun
	// windowed: re holds no ^, $, \A or \z and every match is runs[0], so
	// it may be run over the stretches of a text that are that run.
	windowed bool
}

type gateBranch struct {
	re      *regexp.Regexp
	needles []string // nil: always run
}

// allRegexps lists every lazyRegexp, for the tests that check the gate.
var allRegexps []*lazyRegexp

// newLazy is for package-level rules only: it records the rule in
// allRegexps, which nothing guards after init.
func newLazy(src string, phrase bool) *lazyRegexp {
	l := &lazyRegexp{src: src, phrase: phrase}
	l.get = sync.OnceValue(l.build)
	allRegexps = append(allRegexps, l)
	return l
}

// build compiles the rule and its gate.
func (l *lazyRegexp) build() *gatedRegexp {
	src := l.src
	if l.phrase {
		src = `(?i)` + strings.ReplaceAll(src, " ", `[\s\p{Z}]+`)
	}
	return newGated(regexp.MustCompile(src))
}

// lazyMust is regexp.MustCompile, compiled on first use.
func lazyMust(src string) *lazyRegexp { return newLazy(src, false) }

// phrase compiles a case-insensitive pattern in which each space stands for
// any run of white space, Unicode spaces and line breaks included. Patterns
// write a space inside a character class as \x20.
func phrase(pattern string) *lazyRegexp { return newLazy(pattern, true) }

// maxGateBranches bounds how many branches a rule is split into; a rule
// whose alternations multiply past it is gated whole.
const maxGateBranches = 40

func newGated(re *regexp.Regexp) *gatedRegexp {
	g := &gatedRegexp{re: re}
	p, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return g
	}
	p = p.Simplify()
	g.needles = required(p)
	if g.needles == nil {
		g.runs = charRuns(p)
		g.windowed = len(g.runs) == 1 && !hasAnchor(p)
	}
	parts := splitSource(re.String())
	if len(parts) < 2 || len(parts) > maxGateBranches {
		return g
	}
	for _, part := range parts {
		b, err := regexp.Compile(part)
		if err != nil {
			return &gatedRegexp{re: re, needles: g.needles}
		}
		p, err := syntax.Parse(part, syntax.Perl)
		if err != nil {
			return &gatedRegexp{re: re, needles: g.needles}
		}
		g.branches = append(g.branches, gateBranch{re: b, needles: required(p.Simplify())})
	}
	return g
}

// splitSource splits a pattern at the alternations outside any group: a
// text matches the pattern iff it matches one of the parts. A leading flag
// group ("(?i)") is given to every part. It returns nil for a pattern it
// cannot split so (a flag group further on, which would reach across the
// bars, or a \Q quote). The split is made on the source, not on the parsed
// tree: printing a parsed tree back costs seconds on these classes.
func splitSource(src string) []string {
	prefix := ""
	if strings.HasPrefix(src, "(?") {
		if end := strings.IndexByte(src, ')'); end > 0 && strings.Trim(src[2:end], "imsU-") == "" {
			prefix, src = src[:end+1], src[end+1:]
		}
	}
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '\\':
			if i+1 < len(src) && src[i+1] == 'Q' {
				return nil
			}
			i++
		case '[':
			i = classEnd(src, i)
		case '(':
			if strings.HasPrefix(src[i:], "(?") && !strings.HasPrefix(src[i:], "(?:") && !strings.HasPrefix(src[i:], "(?P<") && !strings.HasPrefix(src[i:], "(?<") {
				// (?flags) or (?flags:…): flags set without a group
				// would reach across the bars
				end := strings.IndexAny(src[i+2:], ":)")
				if end < 0 || src[i+2+end] == ')' {
					return nil
				}
			}
			depth++
		case ')':
			depth--
		case '|':
			if depth == 0 {
				parts = append(parts, prefix+src[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil
	}
	parts = append(parts, prefix+src[start:])
	// A part that starts with, or holds, a group of alternatives is split
	// again over them, while the parts stay few: "\\b(?:ignore|forget) x"
	// is "\\b(?:ignore) x" or "\\b(?:forget) x", each with its own literal.
	var out []string
	for i, part := range parts {
		out = append(out, expandGroup(part, maxGateBranches-len(out)-(len(parts)-i-1))...)
	}
	return out
}

// expandGroup returns part with its first group of alternatives (not
// followed by a repetition) distributed over the concatenation around it,
// and so on recursively, in at most budget parts; part alone when none.
func expandGroup(part string, budget int) []string {
	if budget < 2 {
		return []string{part}
	}
	depth := 0
	open := -1
	for i := 0; i < len(part); i++ {
		switch part[i] {
		case '\\':
			i++
		case '[':
			i = classEnd(part, i)
		case '(':
			if depth == 0 {
				open = i
			}
			depth++
		case ')':
			depth--
			if depth != 0 || open < 0 {
				continue
			}
			body := part[open+1 : i]
			switch {
			case strings.HasPrefix(body, "?:"):
				body = body[2:]
			case strings.HasPrefix(body, "?"):
				open = -1
				continue // a flag or named group: left whole
			}
			if i+1 < len(part) && strings.IndexByte("*+?{", part[i+1]) >= 0 {
				open = -1
				continue
			}
			alts := splitSource(body)
			if len(alts) < 2 || len(alts) > budget {
				open = -1
				continue
			}
			var out []string
			for k, alt := range alts {
				rest := budget - len(out) - (len(alts) - k - 1)
				out = append(out, expandGroup(part[:open]+"(?:"+alt+")"+part[i+1:], rest)...)
			}
			return out
		}
	}
	return []string{part}
}

// classEnd returns the index of the ] that closes the class opening at i.
func classEnd(src string, i int) int {
	i++
	if i < len(src) && src[i] == '^' {
		i++
	}
	if i < len(src) && src[i] == ']' {
		i++
	}
	for ; i < len(src) && src[i] != ']'; i++ {
		switch {
		case src[i] == '\\':
			i++
		case strings.HasPrefix(src[i:], "[:"):
			if end := strings.Index(src[i+2:], ":]"); end >= 0 {
				i += end + 3
			}
		}
	}
	return i
}

// matchIn reports whether the rule matches t.text: exactly
// re.MatchString(t.text), asked of the branches the text's literals allow.
func (l *lazyRegexp) matchIn(t *cleanText) bool {
	g := l.get()
	if gateOff {
		return g.re.MatchString(t.text)
	}
	ok, known := l.gate(t)
	if known {
		return ok
	}
	return g.re.MatchString(t.text)
}

// mayMatch is false only when the rule does not match t.text: the gate
// for a search that reports the matches, which then runs whole.
func (l *lazyRegexp) mayMatch(t *cleanText) bool {
	if gateOff {
		return true
	}
	ok, known := l.gate(t)
	return ok || !known
}

// maxAskedBranches: when more branches than this hold their literals, the
// text is likely to match (hostile text holds many), and one pass of the
// whole rule costs less than a pass of each branch.
const maxAskedBranches = 3

// gate answers whether the rule matches t.text, when it can tell cheaply.
func (l *lazyRegexp) gate(t *cleanText) (ok, known bool) {
	g := l.get()
	if !t.mayContain(g.needles) || !t.holdsRun(g.runs) {
		return false, true
	}
	if g.branches == nil {
		return false, false
	}
	var asked [maxAskedBranches]*regexp.Regexp
	n := 0
	for _, b := range g.branches {
		if t.mayContain(b.needles) {
			if n == len(asked) {
				return false, false
			}
			asked[n] = b.re
			n++
		}
	}
	for _, re := range asked[:n] {
		if re.MatchString(t.text) {
			return true, true
		}
	}
	return false, true
}

// matchWhole is matchIn for a short text, a sentence: the rule is run
// whole behind its needles, since one pass of it over a few words costs
// less than asking its branches one by one.
func (l *lazyRegexp) matchWhole(t *cleanText) bool {
	g := l.get()
	return (gateOff || t.mayContain(g.needles)) && g.re.MatchString(t.text)
}

// gateOff runs every rule whole, for the tests that compare the gate with
// its absence.
var gateOff bool

func (l *lazyRegexp) String() string { return l.get().re.String() }

func (l *lazyRegexp) MatchString(s string) bool { return l.get().re.MatchString(s) }

func (l *lazyRegexp) Match(b []byte) bool { return l.get().re.Match(b) }

func (l *lazyRegexp) FindString(s string) string { return l.get().re.FindString(s) }

// findAllIn is FindAllStringIndex(t.text, -1), asked only where the gate
// allows a match.
func (l *lazyRegexp) findAllIn(t *cleanText) [][]int {
	if !l.mayMatch(t) {
		return nil
	}
	g := l.get()
	if g.windowed && !gateOff {
		return g.runs[0].findAll(g.re, t.text)
	}
	return g.re.FindAllStringIndex(t.text, -1)
}

// findAllSubmatchIn is FindAllStringSubmatchIndex(t.text, -1), asked only
// where the gate allows a match.
func (l *lazyRegexp) findAllSubmatchIn(t *cleanText) [][]int {
	if !l.mayMatch(t) {
		return nil
	}
	return l.get().re.FindAllStringSubmatchIndex(t.text, -1)
}

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
