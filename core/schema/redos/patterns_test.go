package redos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core/schema/ecma"
	"github.com/toolgate/toolgate/core/schema/schematest"
)

var ruleReasons = []string{reasonNested, reasonAlternation, reasonDotStar, reasonAdjacent, reasonPolynomial, reasonBounded}

func ruleOf(reason string) string {
	for _, r := range ruleReasons {
		// The polynomial and bounded rules put a measure before " in ".
		if strings.HasPrefix(reason, r+" in ") || strings.HasPrefix(reason, r+" (") {
			return r
		}
	}
	return ""
}

// IM-19: every pattern of the evil corpus is flagged, under one of the rules.
func TestIM19EvilCorpusIsFlagged(t *testing.T) {
	patterns := schematest.ReadPatterns(t, "evil-patterns.txt")
	if len(patterns) < 24 {
		t.Fatalf("evil corpus has %d patterns, want at least 24", len(patterns))
	}
	counts := map[string]int{}
	for _, p := range patterns {
		reason, bad := ScreenPattern(p)
		if !bad {
			t.Errorf("ScreenPattern(%s) not flagged", p)
			continue
		}
		rule := ruleOf(reason)
		if rule == "" {
			t.Errorf("ScreenPattern(%s) reason %q names no rule", p, reason)
		}
		counts[rule]++
		t.Logf("%-40s %s", p, reason)
	}
	for _, r := range ruleReasons {
		if counts[r] == 0 {
			t.Errorf("no evil pattern exercises rule %q", r)
		}
	}
}

// IM-19: no real-world pattern of the benign corpus is flagged.
func TestIM19BenignCorpusPasses(t *testing.T) {
	patterns := schematest.ReadPatterns(t, "benign-patterns.txt")
	if len(patterns) < 40 {
		t.Fatalf("benign corpus has %d patterns, want at least 40", len(patterns))
	}
	for _, p := range patterns {
		if reason, bad := ScreenPattern(p); bad {
			t.Errorf("ScreenPattern(%s) flagged: %s", p, reason)
		}
	}
}

// IM-19: each rule, with the fragment the reason points at.
func TestIM19RuleReasons(t *testing.T) {
	tests := []struct {
		pattern, reason string
	}{
		{`(a+)+$`, "nested quantifiers in (a+)+"},
		{`^(\d+)*$`, `nested quantifiers in (\d+)*`},
		{`(\w+\s?)*$`, `nested quantifiers in (\w+\s?)*`},
		{`^(a|a)*$`, "overlapping alternatives under a quantifier in (a|a)*"},
		{`(\d|\w)+`, `overlapping alternatives under a quantifier in (\d|\w)+`},
		{`(.|\s)*`, `overlapping alternatives under a quantifier in (.|\s)*`},
		{`(a|a?)+$`, "overlapping alternatives under a quantifier in (a|a?)+"},
		{`(.*,)*`, "repeated group containing a .*-like element in (.*,)*"},
		{`(.+)+`, "repeated group containing a .*-like element in (.+)+"},
		// Count ranges above 10 backtrack like loops; the reason shows them so.
		{`(.*a){1,20}`, "repeated group containing a .*-like element in (.*a){1,}"},
		{`(\d+\d+)+`, `adjacent overlapping quantifiers in a repeated group in (\d+\d+)+`},
		{`(a*a*)*`, "adjacent overlapping quantifiers in a repeated group in (a*a*)*"},
		// What separates repetitions overlaps: trailing and leading \s*.
		{`(\s*,\s*)*$`, `adjacent overlapping quantifiers in a repeated group in (\s*,\s*)*`},
		// The innermost offending repetition is named.
		{`^((a+)+)+$`, "nested quantifiers in (a+)+"},
	}
	for _, tt := range tests {
		reason, bad := ScreenPattern(tt.pattern)
		if !bad || reason != tt.reason {
			t.Errorf("ScreenPattern(%s) = %q, %v; want %q, true", tt.pattern, reason, bad, tt.reason)
		}
	}
}

// IM-19: look-alikes that are linear, because every input splits into
// repetitions one way only, or because nothing repeats.
func TestIM19SafeLookAlikes(t *testing.T) {
	for _, p := range []string{
		`.*`, `\s+`, `[a-z]+`, `^\d+\d+$`, `^.*a.*b$`,
		`(\.\d+)*`,             // every repetition starts with a dot
		`^(\.\d{1,3}){3}$`,     // small counts are just text
		`^[a-z]+(-[a-z]+)*$`,   // separators the loops cannot read
		`^\w+(?:\s*,\s*\w+)*$`, // the comma list, done right
		`(a|b)*`, `(\w|\s)*`,   // alternatives that never overlap
		`(ab|ac)*`,         // overlap on the first character only
		`(a|ab)*`,          // {a, ab} splits any input one way
		`(aa)+`, `(a{2})+`, // fixed-length repetitions
		`(?:ab{0,3})+`, // a counted repeat unrolled as nested options
		`^(?:[a-z0-9]{1,63}\.){1,127}[a-z]{2,63}$`,
		// Quadratic at worst: degree 2 passes (see MinPolynomialDegree).
		`^\d+\d+$`, `^.*a.*b$`, `\s+$`, `^[^@\s]+@[^@\s]+\.[^@\s]+$`,
		// Nested counts with few ways to read one input.
		`^(a{1,10}){1,5}$`, `^(a{1,3}){1,10}$`, `^(\w{1,2}\s?){1,3}$`,
	} {
		if reason, bad := ScreenPattern(p); bad {
			t.Errorf("ScreenPattern(%s) flagged: %s", p, reason)
		}
	}
}

// IM-19: Go's parser merges `a|a` into `a` and `.|\s` into one class; the
// screen must see the alternatives as written, and honour case folding.
func TestIM19AlternativesAreNotMerged(t *testing.T) {
	for _, p := range []string{`(a|a)*`, `(?:x|x)+y`, `(.|\s)*`, `([ab]|[bc])+`, `(?i:(a|A)+)`} {
		if _, bad := ScreenPattern(p); !bad {
			t.Errorf("ScreenPattern(%s) not flagged", p)
		}
	}
	// Without folding, a and A never overlap.
	if reason, bad := ScreenPattern(`(a|A)+`); bad {
		t.Errorf("ScreenPattern((a|A)+) flagged: %s", reason)
	}
}

// IM-19: constructs RE2 does not parse go through the ECMA translation.
func TestIM19ECMAOnlySyntax(t *testing.T) {
	tests := []struct {
		pattern string
		bad     bool
		reason  string
	}{
		// Lookaround bodies are screened on their own...
		{`(?=(a+)+$)x`, true, "nested quantifiers in (a+)+ (inside a lookaround)"},
		{`(?<!(a|a)*)x`, true, "overlapping alternatives under a quantifier in (a|a)* (inside a lookaround)"},
		{`^(?!(\d+)*$)\d+$`, true, `nested quantifiers in (\d+)* (inside a lookaround)`},
		// ...and consume nothing where they stand, so a tempered token or a
		// password rule stays linear.
		{`^(?:(?!--).)*$`, false, ""},
		{`^(?=.*\d)(?=.*[a-z]).{8,}$`, false, ""},
		{`^(?!x)(a|aa)+$`, true, "overlapping alternatives under a quantifier in (a|aa)+"},
		// A backreference matches one fixed string: repeating it is
		// unambiguous, but its characters can still overlap a neighbour.
		{`^(\w+)\s\1$`, false, ""},
		{`^(a|aa)\1*$`, false, ""},
		{`^(a+)(?:\1)+$`, false, ""},
		{`^(a)(?:\1|a)+$`, true, "overlapping alternatives under a quantifier in (?:a|a)+"},
		{`^(?<w>a+)(?:\k<w>|a)+$`, true, "overlapping alternatives under a quantifier in (?:a|a)+"},
		{`^(['"])(\w+\s?)*\1$`, true, `nested quantifiers in (\w+\s?)*`},
		// Escapes and classes Go spells differently.
		{`(\u0061+)+$`, true, "nested quantifiers in (a+)+"},
		{`(\u{61}+)+$`, true, "nested quantifiers in (a+)+"},
		{`([^]+)+`, true, "repeated group containing a .*-like element in ([^]+)+"},
		{`([\u0041-\u005A]+)*`, true, "nested quantifiers in ([A-Z]+)*"},
		{`(\x41|\cA)+`, false, ""},
		{`([[:alpha:]]|a)+`, false, ""}, // ECMA: a class of [ : a l p h, then ']'
		{`([\w-]|-)+`, true, `overlapping alternatives under a quantifier in ([\-0-9A-Z_a-z]|-)+`},
		{`(?<word>\w+\s?)+$`, true, `nested quantifiers in (\w+\s?)+`},
		{`(\p{Script=Greek}+)+`, true, `nested quantifiers in ([Ͱ-ͳ`},
	}
	for _, tt := range tests {
		reason, bad := ScreenPattern(tt.pattern)
		if bad != tt.bad || (tt.bad && !strings.HasPrefix(reason, tt.reason)) {
			t.Errorf("ScreenPattern(%s) = %q, %v; want %q, %v", tt.pattern, reason, bad, tt.reason, tt.bad)
		}
	}
}

// IM-19: what neither the translation nor Go's parser understands is left
// to the schema compiler, which refuses it (IM-18).
func TestIM19UnparseablePatternsAreNotFlagged(t *testing.T) {
	for _, p := range []string{`(`, `)`, `[a`, `\`, `a**`, `x{2}{3}`, `(?<name`, `(a+)+\`} {
		if reason, bad := ScreenPattern(p); bad {
			t.Errorf("ScreenPattern(%q) flagged: %s", p, reason)
		}
	}
}

// IM-19: a repetition too large to analyse within the budget is refused,
// and large but simple ones still pass.
func TestIM19Budget(t *testing.T) {
	words := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = fmt.Sprintf("w%03dx", i)
		}
		return strings.Join(w, "|")
	}
	if reason, bad := ScreenPattern("^(?:" + words(60) + ")+$"); bad {
		t.Errorf("60 words under + flagged: %s", reason)
	}
	if reason, bad := ScreenPattern("^(?:" + words(400) + ")(?:,(?:" + words(400) + "))*$"); bad {
		t.Errorf("400-word comma list flagged: %s", reason)
	}
	defer func(b int) { ScreenWorkBudget = b }(ScreenWorkBudget)
	ScreenWorkBudget = 1000
	reason, bad := ScreenPattern("^(?:" + words(60) + ")+$")
	if !bad || !strings.HasPrefix(reason, reasonTooComplex+" in ") {
		t.Errorf("over budget = %q, %v; want %q", reason, bad, reasonTooComplex)
	}
}

// IM-19: patterns come from upstreams; no input may crash the screen or the
// translation.
func FuzzScreenPattern(f *testing.F) {
	for _, name := range []string{"evil-patterns.txt", "benign-patterns.txt"} {
		data, err := os.ReadFile(filepath.Join(schematest.Corpus(), name))
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if line != "" && !strings.HasPrefix(line, "#") {
				f.Add(line)
			}
		}
	}
	for _, p := range []string{`(?<n)>`, `(?`, `[^]]`, `\u{`, `\uD800`, `\c`, `\k<`, `a{1,}{2}`, `(?i)`, `((((((((((a))))))))))\10`} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		ScreenPattern(p)
		if re, err := ecma.CompileECMA(p); err == nil {
			re.MatchString("aaaa")
		}
	})
}

// IM-19: nested counted repeats have no unbounded loop, but multiply the ways
// to read one input: each of these takes V8 over two seconds on 34 a's and a
// "!".
func TestIM19NestedBoundedQuantifiers(t *testing.T) {
	tests := []struct{ pattern, reason string }{
		{`^(a{1,10}){1,10}$`, reasonBounded + " (over 1e+07 ways to read 64 characters) in (a{1,10}){1,10}"},
		{`^((a{1,10}){1,10}){1,10}$`, reasonBounded + " (over 1e+07 ways to read 64 characters) in ((a{1,10}){1,10}){1,10}"},
		{`^(a{1,5}){1,10}$`, reasonBounded + " (over 1e+07 ways to read 64 characters) in (a{1,5}){1,10}"},
		// A loop inside counts: ten copies of ten copies of a+ in a row.
		{`^((a+){1,10}){1,10}$`, reasonPolynomial + " (degree 100) in a+ then a+ then "},
	}
	for _, tt := range tests {
		reason, bad := ScreenPattern(tt.pattern)
		if !bad || !strings.HasPrefix(reason, tt.reason) {
			t.Errorf("ScreenPattern(%s) = %q, %v; want %q…, true", tt.pattern, reason, bad, tt.reason)
		}
	}
}

// IM-19: polynomial backtracking of degree 4 and up is refused; degree 3
// and less passes (see MinPolynomialDegree). The search of an unanchored
// pattern restarts at every offset, which counts as one more quantifier;
// without a final $ the last one of a chain does not count, because the
// search stops at its first success. The degrees are recheck's.
func TestIM19PolynomialDegree(t *testing.T) {
	tests := []struct {
		pattern string
		degree  int // below MinPolynomialDegree: passes
	}{
		{`^(a+){4}$`, 4},
		{`^\S+@\S+\.\S+\.\S+$`, 4},
		{`\s*#?\s*-?\s*$`, 4}, // start, \s*, \s*, \s*
		// Without $ the screen over-counts where pumping completes the match:
		// recheck says 3 (start and three \S+, the fourth one ends it).
		{`\S+@\S+\.\S+\.\S+`, 4},
		{`^\d+\.?\d*\.?\d*\.?\d*$`, 4},
		{`^\w+\s*\w*\s*\w*\s*\w+$`, 4}, // \s* can be empty
		{`^((a+){1,10}){1,10}$`, 100},
		// Degree 3 passes.
		{`^\S+@\S+\.\S+$`, 3},
		{`\S+@\S+\.\S+`, 3},
		{`^.+@.+\..+$`, 3},
		{`\s*#?\s*$`, 3},
		{`^(a+){3}$`, 3},
		{`[a-z]+\d*[a-z]*$`, 3},
		{`^\w+\s+\w*\s+\w*\s+\w+$`, 3}, // the \s+ meet where \w* is empty
		// Separators the quantifiers cannot read break the chain.
		{`^\w+\s+\w+\s+\w+$`, 1},
		{`^\d+\d+$`, 2},
		{`\d+\.\d+`, 2},
		// A branch ending in $ is backtracked at every offset even when
		// another branch could end a search anywhere (the trim behind the
		// 2016 Stack Overflow outage); anchored at the start, it is not.
		{`^[\s\u200c]+|[\s\u200c]+$`, 2},
		{`^\s+|\s+$`, 2},
		{`a|\s+$`, 2},
		{`(?:\s+$|x)y?`, 2},
		{`^(?:\s+|\s+$)`, 1},
		{`^(?:[a-z0-9]+\.)*[a-z0-9]+$`, 1},
	}
	for _, tt := range tests {
		if got := degreeOf(t, tt.pattern); got != tt.degree {
			t.Errorf("degree of %s = %d, want %d", tt.pattern, got, tt.degree)
		}
		reason, bad := ScreenPattern(tt.pattern)
		want := fmt.Sprintf("%s (degree %d) in ", reasonPolynomial, tt.degree)
		switch {
		case tt.degree < MinPolynomialDegree && bad:
			t.Errorf("ScreenPattern(%s) flagged: %s", tt.pattern, reason)
		case tt.degree >= MinPolynomialDegree && (!bad || !strings.HasPrefix(reason, want)):
			t.Errorf("ScreenPattern(%s) = %q, %v; want %q…", tt.pattern, reason, bad, want)
		}
	}
}

// IM-19: only the range of a count makes choices. A fixed count reads one
// number of repetitions, so it is text however large, and what decides is
// whether the repetitions can split an input more than one way (
// @truffle/contract-schema's bytes pattern was refused).
func TestIM19FixedCountsAreText(t *testing.T) {
	for _, p := range []string{
		`^0x0?$|^0x([a-fA-F0-9]{2}|__.{38})+$`, // alternatives start apart, each one fixed length
		`^0x[a-fA-F0-9]{40}$`,
		`^(?:[a-z]{3}\d{2}){20}$`,
		`^(?:.{16})+$`,
		`^(?:[a-f0-9]{2}){1,32}$`,
		`^(?:[A-Z]{2}\d{12,14})+$`, // a range of 2 is unrolled too
	} {
		if reason, bad := ScreenPattern(p); bad {
			t.Errorf("ScreenPattern(%s) flagged: %s", p, reason)
		}
	}
	tests := []struct{ pattern, reason string }{
		// The same shapes where the alternatives overlap stay refused.
		{`^0x([a-fA-F0-9]{2}|a.{38})+$`, reasonAlternation + " in "},
		{`^(a|a.{38})+$`, reasonAlternation + " in "},
		{`^(.{2}|..)+$`, reasonAlternation + " in "},
		{`^(?:[A-Z]{2}.{12,14})+$`, reasonAlternation + " in "}, // a piece's tail can start the next
		// A large count with a range is still a loop.
		{`^(.{1,38})+$`, reasonDotStar + " in (.{1,})+"},
		// And a fixed count of something ambiguous is ambiguous.
		{`^((a+)+){40}$`, reasonNested + " in (a+)+"},
		{`^(a+){40}$`, reasonPolynomial + " (degree 40) in a+ then "},
	}
	for _, tt := range tests {
		reason, bad := ScreenPattern(tt.pattern)
		if !bad || !strings.HasPrefix(reason, tt.reason) {
			t.Errorf("ScreenPattern(%s) = %q, %v; want %q…", tt.pattern, reason, bad, tt.reason)
		}
	}
}

// degreeOf is the polynomial degree the screen computes for a pattern.
func degreeOf(t *testing.T, pattern string) int {
	t.Helper()
	trees, ok := translateForScreen(pattern)
	if !ok {
		t.Fatalf("%s does not parse", pattern)
	}
	work := 0
	a, f := newAutomaton(trees[0], false, &work)
	d, _, exhausted := a.degree(f.free, false)
	if exhausted {
		t.Fatalf("%s: budget exhausted", pattern)
	}
	return d
}
