package scan

import (
	"regexp/syntax"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate/core"

	"github.com/google/go-cmp/cmp"
)

// TestRV2ScanRunsExact: for every rule of the scanner searched run by run,
// on every corpus and generated text and their identifiers read as words,
// the search finds exactly what the rule finds over the whole text. (The
// other searches through the gate run the rule whole where mayMatch allows,
// which TestRV2ScanGateExact holds to the rule.) (RV-2)
func TestRV2ScanRunsExact(t *testing.T) {
	views := signalViews(t)
	windowed := 0
	for _, l := range allRegexps {
		g := l.get()
		if !g.windowed {
			continue
		}
		windowed++
		for i := 0; i < len(views); i += gateStride() {
			v := views[i]
			if diff := cmp.Diff(g.re.FindAllStringIndex(v.text, -1), l.findAllIn(v)); diff != "" {
				t.Errorf("rule %s on %q (-whole +gated):\n%s", clip(l.src, 120), clip(v.text, 200), diff)
			}
		}
	}
	if windowed < 3 {
		t.Errorf("%d rules are searched run by run, want the base64, hex and blank-space rules at least", windowed)
	}
}

// TestRV2ScanRunsOf: what a pattern of classes only is a run of.
func TestRV2ScanRunsOf(t *testing.T) {
	for _, c := range []struct {
		src     string
		min     int
		in, out string
		noRuns  bool
	}{
		{src: `[A-Za-z0-9+/_-]{40,}={0,2}`, min: 40, in: "aZ9+/_-=", out: " .:"},
		{src: `\b[0-9A-Fa-f]{24,}\b`, min: 24, in: "09afAF", out: "gG "},
		{src: `\b(?:[0-9A-Fa-f]{2}[ :,-]){11,}[0-9A-Fa-f]{2}\b`, min: 35, in: "0f :,-", out: "gt"},
		{src: `[\t \x{00A0}\x{3000}]{80,}`, min: 80, in: "\t \u00a0\u3000", out: "a\n"},
		{src: `(?i)\bsend\b[\s]+\w+`, noRuns: true},
		{src: `.{40,}`, noRuns: true},
	} {
		p, err := syntax.Parse(c.src, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		runs := charRuns(p.Simplify())
		if c.noRuns {
			if runs != nil {
				t.Errorf("%s: runs %v, want none", c.src, runs)
			}
			continue
		}
		if len(runs) != 1 || runs[0].min != c.min {
			t.Fatalf("%s: runs %+v, want one of at least %d", c.src, runs, c.min)
		}
		for _, r := range c.in {
			if !runs[0].has(r) {
				t.Errorf("%s: %q not in its run", c.src, r)
			}
		}
		for _, r := range c.out {
			if runs[0].has(r) {
				t.Errorf("%s: %q in its run", c.src, r)
			}
		}
	}
}

// TestIN1ScanResultTextIsEntryDescription: a result's text read through
// ScanResultText gets the flags of ResultKinds that ScanEntry gives the
// same text as an entry's description. Text decoded from JSON, as a result's is, is valid
// UTF-8; other text an entry could not carry as it is (JSON replaces the
// bytes), and its flags' spans stay inside it. (IN-1)
func TestIN1ScanResultTextIsEntryDescription(t *testing.T) {
	texts := append(generatedTexts(gateTexts(t), 60), resultText(t, 4096, true), resultText(t, 2048, false))
	for _, c := range readCorpus[poisonedCase](t, "poisoned") {
		texts = append(texts, c.Description)
	}
	for i := 0; i < len(texts); i += gateStride() {
		s := texts[i]
		if !utf8.ValidString(s) {
			for _, f := range ScanResultText(s) {
				if f.Start < 0 || f.End > len(s) || f.Start > f.End {
					t.Errorf("on %q: span %d–%d outside the text", clip(s, 120), f.Start, f.End)
				}
			}
			continue
		}
		var want []core.Flag
		for _, f := range ScanEntry(entryOf(t, s)) {
			if f.Where == "/description" && slices.Contains(ResultKinds, f.Kind) {
				f.Where = ""
				want = append(want, f)
			}
		}
		if diff := cmp.Diff(want, ScanResultText(s)); diff != "" {
			t.Errorf("on %q (-entry +result):\n%s", clip(s, 120), diff)
		}
	}
}
