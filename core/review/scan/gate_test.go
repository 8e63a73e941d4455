package scan

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// gateTexts is every string of every corpus in testdata/review (benign,
// poisoned, recall), the rule samples, and text generated from them.
func gateTexts(t *testing.T) []string {
	t.Helper()
	texts := slices.Clone(ruleSamples)
	for _, s := range readCorpus[benignServer](t, "benign") {
		for _, c := range s.Tools {
			texts = append(texts, c.Name, c.Title, c.Description)
			texts = appendStrings(texts, c.InputSchema, c.OutputSchema, c.Annotations, c.Meta)
		}
		texts = appendStrings(texts, slices.Concat(s.Prompts, s.Resources, s.ResourceTemplates)...)
	}
	for _, c := range readCorpus[poisonedCase](t, "poisoned") {
		texts = append(texts, c.Name, c.Title, c.Description)
		texts = appendStrings(texts, c.InputSchema, c.OutputSchema, c.Annotations, c.Icons, c.Meta, c.Entry)
	}
	files, err := filepath.Glob(filepath.Join(scanCorpus, "recall", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		for _, c := range readRecallSet(t, filepath.Base(f)).Cases {
			texts = append(texts, c.Tool.Name, c.Tool.Title, c.Tool.Description)
			texts = appendStrings(texts, c.Tool.InputSchema, c.Tool.OutputSchema, c.Tool.Annotations, c.Tool.Meta)
		}
	}
	slices.Sort(texts)
	texts = slices.Compact(texts)
	return append(texts, generatedTexts(texts, 200)...)
}

// generatedTexts splices n texts out of words of the corpus: joined across
// texts, with case changed, spacing varied and words cut, so the gate
// meets word boundaries, folds and line breaks that no corpus text has.
func generatedTexts(corpus []string, n int) []string {
	rnd := rand.New(rand.NewPCG(36, 38))
	var words []string
	for _, s := range corpus {
		words = append(words, strings.Fields(s)...)
	}
	seps := []string{" ", "  ", "\n", "\t", "\u00a0", ". ", "; ", "_", "-", ""}
	var out []string
	for range n {
		var b strings.Builder
		for k := 3 + rnd.IntN(60); k > 0; k-- {
			w := words[rnd.IntN(len(words))]
			switch rnd.IntN(6) {
			case 0:
				w = strings.ToUpper(w)
			case 1:
				w = w[:rnd.IntN(len(w)+1)]
			}
			b.WriteString(w)
			b.WriteString(seps[rnd.IntN(len(seps))])
		}
		out = append(out, b.String())
	}
	return out
}

// TestRV2ScanGateExact: for every rule of the scanner and every text of
// every corpus, generated text, their identifiers read as words, their
// sentences and their squeezed readings, the gate answers exactly what the
// whole rule does: it never skips a rule that would match. (RV-2)
func TestRV2ScanGateExact(t *testing.T) {
	var views, sentences, squeezed []*cleanText
	for _, s := range gateTexts(t) {
		c := newCleanText(s, hiddenRuns(s))
		views = append(views, c)
		if w := c.wordText(); w != nil {
			views = append(views, w)
		}
		for a := 0; a < len(c.text); a = next(c.text, sentenceEnd(c.text, a)) {
			if z := sentenceEnd(c.text, a); z-a < len(c.text) {
				sentences = append(sentences, &cleanText{text: c.text[a:z]})
			}
		}
		sq := squeeze(c.text).text
		squeezed = append(squeezed, &cleanText{text: sq}, &cleanText{text: reverse(sq)}, &cleanText{text: rot13(sq)})
	}
	views, sentences, squeezed = uniqueViews(views), uniqueViews(sentences), uniqueViews(squeezed)
	check := func(l *lazyRegexp, texts []*cleanText) {
		re := l.get().re
		for i := 0; i < len(texts); i += gateStride() {
			v := texts[i]
			want := re.MatchString(v.text)
			if got := l.matchIn(v); got != want {
				t.Errorf("rule %s\non %q: gate says %v, the rule %v", clip(l.src, 120), clip(v.text, 200), got, want)
			}
			if want && !l.mayMatch(v) {
				t.Errorf("rule %s\non %q: the gate skips a search that finds a match", clip(l.src, 120), clip(v.text, 200))
			}
			if ok, known := l.gate(v); known && ok != want {
				t.Errorf("rule %s\non %q: the gate's answer is %v, the rule's %v", clip(l.src, 120), clip(v.text, 200), ok, want)
			}
		}
	}
	// Every rule reads whole texts; the signal rules read sentences too,
	// and the squeezed rules the squeezed readings.
	for _, l := range allRegexps {
		check(l, views)
	}
	for _, r := range signalRules {
		check(r.re, sentences)
	}
	check(proseChain, sentences)
	for _, r := range squeezedRules {
		check(r.re, squeezed)
	}
}

// gateStride is 1: every text is compared; under the race detector, whose
// slowdown of the regexp engine would take the package past the test
// timeout, every fifth.
func gateStride() int {
	if raceBuild {
		return 5
	}
	return 1
}

// uniqueViews drops views whose text another view has already.
func uniqueViews(views []*cleanText) []*cleanText {
	seen := map[string]bool{}
	return slices.DeleteFunc(views, func(v *cleanText) bool {
		dup := seen[v.text]
		seen[v.text] = true
		return dup
	})
}

// TestRV2ScanGateSameFindings: every tool and entry of the corpora is
// flagged exactly the same with the gate and without it. (RV-2)
func TestRV2ScanGateSameFindings(t *testing.T) {
	var tools []ScanInput
	var entries []EntryInput
	for _, s := range readCorpus[benignServer](t, "benign") {
		for _, c := range s.Tools {
			tools = append(tools, c.input(nil))
		}
		for _, e := range slices.Concat(s.Prompts, s.Resources, s.ResourceTemplates) {
			entries = append(entries, EntryInput{Raw: e})
		}
	}
	for _, c := range readCorpus[poisonedCase](t, "poisoned") {
		if len(c.Entry) > 0 {
			entries = append(entries, EntryInput{Raw: c.Entry, OtherTools: c.OtherTools})
			continue
		}
		in := c.input(c.OtherTools)
		in.RemoteName = c.RemoteName
		tools = append(tools, in)
	}
	files, err := filepath.Glob(filepath.Join(scanCorpus, "recall", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		for _, c := range readRecallSet(t, filepath.Base(f)).Cases {
			tools = append(tools, c.Tool.input(c.OtherTools))
		}
	}
	for _, s := range generatedTexts(gateTexts(t), 60) {
		entries = append(entries, entryOf(t, s))
	}
	entries = append(entries, entryOf(t, resultText(t, 4096, true)))
	defer func() { gateOff = false }()
	for i := 0; i < len(tools); i += gateStride() {
		in := tools[i]
		gateOff = true
		want := ScanTool(in)
		gateOff = false
		if diff := cmp.Diff(want, ScanTool(in)); diff != "" {
			t.Errorf("tool %d (%s): with the gate (-without +with):\n%s", i, in.Name, diff)
		}
	}
	for i := 0; i < len(entries); i += gateStride() {
		in := entries[i]
		gateOff = true
		want := ScanEntry(in)
		gateOff = false
		if diff := cmp.Diff(want, ScanEntry(in)); diff != "" {
			t.Errorf("entry %d: with the gate (-without +with):\n%s", i, diff)
		}
	}
}
