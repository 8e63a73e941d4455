package ecma

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

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
		re, err := CompileECMA(tt.pattern)
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
		if _, err := CompileECMA(p); err == nil {
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

// IM-17: what RE2 cannot run (lookarounds, backreferences) runs on regexp2
// with ECMA-262's meaning, where regexp2 alone would read it otherwise.
func TestIM17BacktrackerKeepsECMAMeaning(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		noMatch []string
	}{
		{`^(?!\$)`, []string{"a", ""}, []string{"$", "$a"}},
		{`^(?!\s)(?:.*\S)?$`, []string{"", "a", "a b"}, []string{" a", "a ", "\ta", "a\n"}},
		{`(?<=a)b`, []string{"ab", "cab"}, []string{"b", "cb"}},
		{`^(?<!x)y`, []string{"y"}, nil},
		{`^(a|b)\1$`, []string{"aa", "bb"}, []string{"ab", "a"}},
		{`^(?<q>['"]).*\k<q>$`, []string{`"x"`, `'x'`}, []string{`"x'`}},
		// Named groups count in order with the others: \1 is the named one.
		{`^(?<n>x)(y)\1$`, []string{"xyx"}, []string{"xyy"}},
		// \1 then a digit.
		{`^(a)(?=a)\1\d$`, []string{"aa0"}, []string{"a0"}},
		// A reference to a group not yet closed matches empty.
		{`^(?=x)\1(a)$`, nil, []string{"xa"}},
		{`^(?=a)\1?(a)$`, []string{"a"}, nil},
		// ECMA's $ is the end of input, its dot stops at every line
		// terminator, \s is Unicode, [^] is anything.
		{`^(?=.)a$`, []string{"a"}, []string{"a\n"}},
		{`^(?=.).$`, []string{"a", "é", "😀"}, []string{"\n", "\r", "\u2028", "\u2029"}},
		{`^(?=\s)\s+$`, []string{"\u00a0\u3000", " \t"}, []string{"x"}},
		{`^(?=[^])[^]$`, []string{"\n", "x"}, []string{""}},
		{`^(?=[]|a)a$`, []string{"a"}, []string{"b"}},
		// Escapes regexp2 reads otherwise, or not at all.
		{`^(?=\p{Script=Greek})\p{Script=Greek}+$`, []string{"αβ"}, []string{"ab"}},
		{`^(?=\uD83D\uDE00)\u{1F600}$`, []string{"😀"}, nil},
		{`^(?=a)[[:a:]]+$`, []string{"a]", "a]]"}, []string{"ap", "a"}},
		{`^(?=\cJ)\n$`, []string{"\n"}, nil},
	}
	for _, tt := range tests {
		re, err := Compile(tt.pattern)
		if err != nil {
			t.Errorf("Compile(%s): %v", tt.pattern, err)
			continue
		}
		if _, ok := re.(backtracking); !ok {
			t.Errorf("Compile(%s) runs on RE2; want regexp2", tt.pattern)
		}
		if re.String() != tt.pattern {
			t.Errorf("String() = %q, want %q", re.String(), tt.pattern)
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
	// What RE2 can run stays on RE2: linear time, no timeout needed.
	if re, err := Compile(`^[a-z]+$`); err != nil {
		t.Fatal(err)
	} else if _, ok := re.(EcmaRegexp); !ok {
		t.Errorf("Compile(^[a-z]+$) = %T; want RE2", re)
	}
	for _, p := range []string{`(?=a`, `(a)\1**`, `(?<=[x)`, `\p{Emoji}(?=a)`} {
		if _, err := Compile(p); err == nil {
			t.Errorf("Compile(%s) succeeded; it is not valid here", p)
		}
	}
}

// IM-17: a match on regexp2 is bounded by MatchTimeout, and one that runs out
// does not match.
func TestIM17MatchTimeout(t *testing.T) {
	defer func(d time.Duration) { MatchTimeout = d }(MatchTimeout)
	MatchTimeout = 50 * time.Millisecond
	re, err := Compile(`^(?=(a+)+$)a`) // the screen refuses it; this is the last resort
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if re.MatchString(strings.Repeat("a", 40) + "!") {
		t.Error("matched")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("match took %v; want about %v", d, MatchTimeout)
	}
}
