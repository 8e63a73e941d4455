package ecma

import (
	"regexp"
	"testing"
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
