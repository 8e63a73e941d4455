package redos

import (
	"testing"

	"github.com/toolgate/toolgate/core/schema/schematest"
)

// IM-19: PatternBacktracking refuses exactly what ScreenPattern refuses, for
// the same reason, and a pattern it passes has a degree below
// MinPolynomialDegree.
func TestPatternBacktrackingAgreesWithScreen(t *testing.T) {
	for _, name := range []string{"evil-patterns.txt", "benign-patterns.txt"} {
		for _, p := range schematest.ReadPatterns(t, name) {
			reason, bad := ScreenPattern(p)
			b := PatternBacktracking(p)
			if b.Refused != bad || b.Reason != reason {
				t.Errorf("%s: PatternBacktracking %+v, ScreenPattern %q %v", p, b, reason, bad)
			}
			if !bad && b.Degree >= MinPolynomialDegree {
				t.Errorf("%s: passed with degree %d", p, b.Degree)
			}
		}
	}
}

// IM-19: the degree of what the screen serves, and the chain it names.
func TestPatternBacktrackingDegree(t *testing.T) {
	for _, tt := range []struct {
		pattern string
		degree  int
		chain   string
	}{
		{`^\d{4}-\d{2}-\d{2}$`, 0, ""},
		{`^[a-z]+$`, 1, `[a-z]+`},
		{`[a-z]+`, 1, `[^]* (an unanchored start)`},
		{`\s+$`, 2, `[^]* (an unanchored start) then \s+`},
		{`^\d+\d+$`, 2, `\d+ then \d+`},
		{`^.*.*.*=$`, 3, `.* then .* then .*`},
		{`\d+\d+x`, 3, `[^]* (an unanchored start) then \d+ then \d+`},
		// The largest degree of the pattern and its lookarounds.
		{`^(?=.*.*.*=$)[a-z]`, 3, `.* then .* then .*`},
	} {
		b := PatternBacktracking(tt.pattern)
		if b.Refused || b.Degree != tt.degree || b.Chain != tt.chain {
			t.Errorf("%s: %+v, want degree %d in %q", tt.pattern, b, tt.degree, tt.chain)
		}
	}
}
