package core

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const schemaCorpus = "../testdata/schemas"

// readPatterns reads one pattern per line, skipping blank lines and lines
// starting with '#'.
func readPatterns(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(schemaCorpus, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var ruleReasons = []string{reasonNested, reasonAlternation, reasonDotStar, reasonAdjacent}

func ruleOf(reason string) string {
	for _, r := range ruleReasons {
		if strings.HasPrefix(reason, r+" in ") {
			return r
		}
	}
	return ""
}

// IM-19: every pattern of the evil corpus is flagged, under one of the rules.
func TestIM19EvilCorpusIsFlagged(t *testing.T) {
	patterns := readPatterns(t, "evil-patterns.txt")
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
	patterns := readPatterns(t, "benign-patterns.txt")
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
		// Counts above 10 backtrack like loops; the reason shows them so.
		{`(.*a){20}`, "repeated group containing a .*-like element in (.*a){20,}"},
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
		`(.*a){5}`, // polynomial, not exponential: not this screen's business
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
	defer func(b int) { screenWorkBudget = b }(screenWorkBudget)
	screenWorkBudget = 1000
	reason, bad := ScreenPattern("^(?:" + words(60) + ")+$")
	if !bad || !strings.HasPrefix(reason, reasonTooComplex+" in ") {
		t.Errorf("over budget = %q, %v; want %q", reason, bad, reasonTooComplex)
	}
}

// IM-19: the walk finds patterns at any depth of the evil schemas, and
// exactly there.
func TestIM19ScreenSchemaEvil(t *testing.T) {
	want := map[string][]string{
		"anyof-branch.json":           {"/properties/query/anyOf/1/pattern"},
		"defs-2020-12.json":           {"/$defs/slug/pattern"},
		"draft07-definitions.json":    {"/definitions/word/pattern", "/properties/pair/items/1/pattern", "/dependencies/words/properties/sep/pattern"},
		"duplicate-keys.json":         {"/properties/code/pattern"},
		"items-nested.json":           {"/properties/matrix/items/items/pattern"},
		"pattern-properties-key.json": {"/properties/labels/patternProperties/^([a-z]+~1?)+$"},
		"ref-into-const.json":         {"/$defs/doc/const/pattern"},
		"ref-into-extension.json":     {"/x-shared/token/pattern"},
		"applicators.json": {
			"/propertyNames/pattern",
			"/additionalProperties/not/pattern",
			"/then/properties/items/prefixItems/0/pattern",
			"/then/properties/items/contains/pattern",
			"/dependentSchemas/kind/properties/tag/pattern",
		},
	}
	files, err := filepath.Glob(filepath.Join(schemaCorpus, "evil", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("%d evil schemas, want at least 4", len(files))
	}
	for _, f := range files {
		name := filepath.Base(f)
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		exp, ok := want[name]
		if !ok {
			t.Errorf("%s: no expectation in this test", name)
			continue
		}
		found := ScreenSchema(raw)
		var got []string
		for _, d := range found {
			got = append(got, d.Pointer)
			if d.Reason == "" || d.Pattern == "" {
				t.Errorf("%s: finding %+v lacks pattern or reason", name, d)
			}
		}
		if diff := cmp.Diff(exp, got); diff != "" {
			t.Errorf("%s: pointers (-want +got):\n%s", name, diff)
		}
		// The schemas compile; only the screen refuses them.
		_, err = CompileSchema(raw)
		var dpe *DangerousPatternError
		if !errors.As(err, &dpe) || dpe.Pointer != exp[0] {
			t.Errorf("%s: CompileSchema error = %v; want a DangerousPatternError at %s", name, err, exp[0])
		}
	}
}

// IM-19: the reference servers' schemas and the other real-world ones
// compile and pass the screen.
func TestIM19ScreenSchemaBenign(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(schemaCorpus, "benign", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("%d benign schemas, want at least 30", len(files))
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ScreenSchema(raw) {
			t.Errorf("%s: %v", filepath.Base(f), d)
		}
		if _, err := CompileSchema(raw); err != nil {
			t.Errorf("%s: CompileSchema: %v", filepath.Base(f), err)
		}
	}
}

// IM-19: names and data are not patterns.
func TestIM19ScreenSchemaTraps(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   []string
	}{
		{"property named pattern", `{"properties":{"pattern":{"type":"string"}}}`, nil},
		{"property named pattern with its own pattern",
			`{"properties":{"pattern":{"type":"string","pattern":"(a+)+$"}}}`,
			[]string{"/properties/pattern/pattern"}},
		{"string under properties is not a regex", `{"properties":{"pattern":"(a+)+$"}}`, nil},
		{"definition named pattern", `{"$defs":{"pattern":{"pattern":"(a|a)*"}},"definitions":{"pattern":"(a|a)*"}}`,
			[]string{"/$defs/pattern/pattern"}},
		{"property named patternProperties",
			`{"properties":{"patternProperties":{"type":"object","properties":{"(a+)+":{}}}}}`, nil},
		{"const, enum, default and examples are data",
			`{"properties":{"x":{"const":{"pattern":"(a+)+$"},"enum":["(a|a)*",{"pattern":"(.*a){20}"}],"default":{"pattern":"(.+)+"},"examples":[{"patternProperties":{"(a+)+":{}}}]}}}`,
			nil},
		{"required names", `{"required":["pattern"],"properties":{"pattern":true}}`, nil},
		{"non-string pattern is walked, not screened", `{"pattern":{"pattern":"(a+)+"}}`, []string{"/pattern/pattern"}},
		{"dependencies mix names and schemas",
			`{"dependencies":{"a":["pattern"],"pattern":{"properties":{"b":{"pattern":"(a|aa)+"}}}}}`,
			[]string{"/dependencies/pattern/properties/b/pattern"}},
		{"pointer escaping", `{"properties":{"a/b~c":{"pattern":"(a+)+"}}}`, []string{"/properties/a~1b~0c/pattern"}},
		{"anchor refs are skipped, pointer refs followed",
			`{"$ref":"#/enum/0","enum":[{"pattern":"(a+)+"}],"properties":{"x":{"$ref":"#foo"}}}`,
			[]string{"/enum/0/pattern"}},
		{"percent-encoded ref", `{"$ref":"#/$defs/a%20b/const","$defs":{"a b":{"const":{"pattern":"(a+)+"}}}}`,
			[]string{"/$defs/a b/const/pattern"}},
		{"not JSON", `{"pattern":`, nil},
	}
	for _, tt := range tests {
		var got []string
		for _, d := range ScreenSchema(json.RawMessage(tt.schema)) {
			got = append(got, d.Pointer)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: pointers (-want +got):\n%s", tt.name, diff)
		}
	}
}

// IM-19: the error names the place, the pattern and the rule, and matches
// both sentinels.
func TestIM19DangerousPatternError(t *testing.T) {
	found := ScreenSchema(json.RawMessage(`{"properties":{"q":{"type":"string","pattern":"^(\\d+)*$"}}}`))
	if len(found) != 1 {
		t.Fatalf("ScreenSchema found %d, want 1", len(found))
	}
	d := found[0]
	want := &DangerousPatternError{Pointer: "/properties/q/pattern", Pattern: `^(\d+)*$`, Reason: `nested quantifiers in (\d+)*`}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("finding (-want +got):\n%s", diff)
	}
	const msg = "pattern `^(\\d+)*$` at /properties/q/pattern can backtrack catastrophically: nested quantifiers in (\\d+)*"
	if d.Error() != msg {
		t.Errorf("Error() = %q, want %q", d.Error(), msg)
	}
	if !errors.Is(d, ErrDangerousPattern) || !errors.Is(d, ErrSchemaInvalid) {
		t.Errorf("errors.Is: dangerous %v, invalid %v; want both", errors.Is(d, ErrDangerousPattern), errors.Is(d, ErrSchemaInvalid))
	}
}

// IM-17, IM-18: patterns are ECMA-262, run on Go's regexp after translation;
// what RE2 cannot run is an error rather than a silent change of meaning.
func TestECMAPatternsOnRE2(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		noMatch []string
	}{
		{`^\u0041\u{1F600}$`, []string{"A😀"}, []string{"u0041"}},
		{`^\uD83D\uDE00$`, []string{"😀"}, nil},
		{`^[^]$`, []string{"\n", "x"}, []string{""}},
		{`[]`, nil, []string{"", "a"}},
		// ECMA has no POSIX classes: a class of [ : a l p h, then ]+.
		{`^[[:alpha:]]+$`, []string{"a]", ":]]"}, []string{"hap", "b]"}},
		{`^\cJ$`, []string{"\n"}, []string{"cJ"}},
		{`^[\w-z]+$`, []string{"a-z", "-"}, []string{"!"}},
		{`^[\b]$`, []string{"\b"}, []string{"b"}},
		{`^\p{Script=Greek}+$`, []string{"αβ"}, []string{"ab"}},
		{`^a\/b\-c$`, []string{"a/b-c"}, nil},
		{`^\Z\z\A$`, []string{"ZzA"}, nil},
		{`^a{,2}$`, []string{"a{,2}"}, []string{"aa"}},
		{`^(?<y>\d{4})-(?<m>\d{2})$`, []string{"2026-11"}, []string{"26-11"}},
		{`^(?:(?<v>a)|(?<v>b))$`, []string{"a", "b"}, nil},
		{`^\d{2,}$`, []string{"12", "123"}, []string{"1"}},
		// ECMA's dot stops at every line terminator, and its \s is Unicode.
		{`^.$`, []string{"a", "é"}, []string{"\n", "\r", "\u2028"}},
		{`^\s[\s]\S$`, []string{"\u00a0\u3000x", " \t-"}, []string{"  \u00a0", "x x"}},
	}
	for _, tt := range tests {
		re, err := compileECMA(tt.pattern)
		if err != nil {
			t.Errorf("compileECMA(%s): %v", tt.pattern, err)
			continue
		}
		if re.String() != tt.pattern {
			t.Errorf("String() = %q, want the pattern as written %q", re.String(), tt.pattern)
		}
		for _, s := range tt.match {
			if !re.MatchString(s) {
				t.Errorf("%s does not match %q", tt.pattern, s)
			}
		}
		for _, s := range tt.noMatch {
			if re.MatchString(s) {
				t.Errorf("%s matches %q", tt.pattern, s)
			}
		}
	}
	for _, p := range []string{`(?=a)`, `(?!a)b`, `(?<=a)b`, `(?<!a)b`, `(a)\1`, `(?<n>a)\k<n>`, `\p{Emoji}`, `(`, `[a`} {
		if _, err := compileECMA(p); err == nil {
			t.Errorf("compileECMA(%s) succeeded; RE2 cannot run it", p)
		}
	}
	// The translation itself, for the cases above that change spelling.
	for in, want := range map[string]string{
		`\u0041`:     `\x{41}`,
		`[^]`:        `[\x{0}-\x{10FFFF}]`,
		`[[:a:]]`:    `[\[:a:]]`,
		`(?<n>a)|b`:  `(a)|b`,
		`(?:a|b)`:    `(?:a|b)`,
		`(?i:a)`:     `(?i:a)`,
		`a{1,32000}`: `a{1,32000}`,
		`\8`:         `8`,
		`\0`:         `\x{0}`,
		`[\d-z]`:     `[\d\-z]`,
		`[a-\d]`:     `[a\-\d]`,
		`\k`:         `k`,
	} {
		got, err := ecmaToRE2(in)
		if err != nil || got != want {
			t.Errorf("ecmaToRE2(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := regexp.Compile(`(?=a)`); err == nil {
		t.Fatal("Go's regexp now accepts lookaheads; revisit the translation")
	}
}

// IM-19: patterns come from upstreams; no input may crash the screen or the
// translation.
func FuzzScreenPattern(f *testing.F) {
	for _, name := range []string{"evil-patterns.txt", "benign-patterns.txt"} {
		data, err := os.ReadFile(filepath.Join(schemaCorpus, name))
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
		if re, err := compileECMA(p); err == nil {
			re.MatchString("aaaa")
		}
	})
}
