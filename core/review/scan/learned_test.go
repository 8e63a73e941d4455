package scan

import (
	"cmp"
	"encoding/json"
	"math/bits"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core"
)

// heaviestWords returns the corpus's single words the model weighs most
// toward poisoning, heaviest first.
func heaviestWords(t *testing.T, n int) []string {
	t.Helper()
	m := learned()
	seen := map[string]bool{}
	var words []string
	for _, c := range readRecallSet(t, "training.json").Cases {
		tokens := learnedTokens(learnedPlaces(c.Tool.input(nil)))
		for _, f := range learnedFeatures(tokens) {
			if w := f.text(tokens); !f.pair && !seen[w] && m.weight[f.key] > 0 {
				seen[w] = true
				words = append(words, w)
			}
		}
	}
	slices.SortStableFunc(words, func(a, b string) int {
		return cmp.Compare(m.weight[featureKey(b)], m.weight[featureKey(a)])
	})
	if len(words) < n {
		t.Fatalf("only %d words weigh toward poisoning", len(words))
	}
	return words[:n]
}

// TestRV2LearnedWeighsOnlyEnoughWords: the words the model weighs most
// are warned about as a description of twelve words or more, each named
// in the reason and the span on one of them; fewer than twelve are not
// weighed at all, however heavy (RV-2).
func TestRV2LearnedWeighsOnlyEnoughWords(t *testing.T) {
	words := heaviestWords(t, learnedMinWords)
	long := ScanInput{Name: "lookup", Description: strings.Join(words, " ")}
	flags := learnedFlags(long, nil)
	if len(flags) != 1 || flags[0].Kind != core.FlagResemblesPoisoning {
		t.Fatalf("%q: got %+v, want one %s flag", long.Description, flags, core.FlagResemblesPoisoning)
	}
	f := flags[0]
	if f.Where != DescriptionWhere || !slices.Contains(words, strings.ToLower(long.Description[f.Start:f.End])) {
		t.Errorf("span %s [%d,%d) is not one of the heavy words", f.Where, f.Start, f.End)
	}
	if !strings.Contains(f.Reason, `"`+words[0]+`"`) {
		t.Errorf("reason %q does not name the heaviest word %q", f.Reason, words[0])
	}
	short := ScanInput{Name: "lookup", Description: strings.Join(words[:learnedMinWords-2], " ")}
	if got := learnedFlags(short, nil); got != nil {
		t.Errorf("%d words were weighed: %+v", learnedMinWords-1, got)
	}
}

// TestRV2LearnedOnlyWhereRulesAreSilent: a tool a rule already warns about
// gets no learned flag on top; one the rules pass may (RV-2).
func TestRV2LearnedOnlyWhereRulesAreSilent(t *testing.T) {
	in := ScanInput{Name: "lookup", Description: strings.Join(heaviestWords(t, 20), " ")}
	rule := core.Flag{Kind: core.FlagHiddenInstruction, Where: DescriptionWhere}
	if got := learnedFlags(in, []core.Flag{rule}); got != nil {
		t.Errorf("flagged again after a rule: %+v", got)
	}
	info := core.Flag{Kind: core.FlagURL, Where: DescriptionWhere}
	if got := learnedFlags(in, []core.Flag{info}); len(got) != 1 {
		t.Errorf("an informational flag kept the learned reader from warning: %+v", got)
	}
}

// TestRV2LearnedReadsEveryPlace: the learned reader's places are the
// strings a model reads, each with a Where the scanner's Text resolves to
// that string (or, for a member name, to the name when its value is not a
// string); schema keywords and type names are not read as words (RV-2).
func TestRV2LearnedReadsEveryPlace(t *testing.T) {
	schema := `{"type":"object","properties":{"report_title":{"type":"string","description":"Title of the report.","default":"quarterly_summary","enum":["draft","final"]}},"required":["report_title","cc_the_auditor"],"$defs":{"Entry":{"type":"object","properties":{"note":{"type":"string","title":"A note"}}}}}`
	in := ScanInput{Name: "makeReport", Title: "Report maker", Description: "Makes reports.",
		InputSchema:  json.RawMessage(schema),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","description":"Where it is."}}}`),
		Annotations:  json.RawMessage(`{"title":"Make a report","readOnlyHint":true}`),
		Meta:         json.RawMessage(`{"vendor":{"note":"internal build"}}`)}
	got := map[string]string{}
	for _, p := range learnedPlaces(in) {
		got[p.where] = p.text
	}
	want := map[string]string{
		NameWhere: "makeReport", TitleWhere: "Report maker", DescriptionWhere: "Makes reports.",
		"/properties/report_title":                "report_title",
		"/properties/report_title/description":    "Title of the report.",
		"/properties/report_title/default":        "quarterly_summary",
		"/properties/report_title/enum/1":         "final",
		"/required/1":                             "cc_the_auditor",
		"/$defs/Entry":                            "Entry",
		"/$defs/Entry/properties/note/title":      "A note",
		"outputSchema/properties/url/description": "Where it is.",
		"annotations/title":                       "Make a report",
		"annotations/readOnlyHint":                "readOnlyHint",
		"_meta/vendor/note":                       "internal build",
	}
	for where, text := range want {
		if got[where] != text {
			t.Errorf("%s: read %q, want %q", where, got[where], text)
		}
	}
	for where, text := range got {
		if text == "string" || text == "object" || text == "type" || text == "properties" {
			t.Errorf("%s: read the schema keyword or type %q as words", where, text)
		}
	}
	var words []string
	for _, tok := range learnedTokens([]learnedPlace{{NameWhere, "makeReport cc_the_auditor x-ray a 報告"}}) {
		words = append(words, tok.word)
	}
	if w := strings.Join(words, " "); w != "make report cc the auditor ray 報告" {
		t.Errorf("words %q", w)
	}
}

// TestRV2LearnedSignalWordsCoverEverySignal: every signal has its words
// for a learned flag's reason, in the signals' order (RV-2).
func TestRV2LearnedSignalWordsCoverEverySignal(t *testing.T) {
	if n := bits.Len64(uint64(sigAudience)); n != len(signalWords) {
		t.Fatalf("%d signals, %d with words", n, len(signalWords))
	}
	if got := signalFeatureWords(signalKey(sigFeatSentencePair, 0, 4)); got != "spoken to the model with keeping it from the user in one sentence" {
		t.Errorf("got %q", got)
	}
}

// TestRV2LearnedSentenceSignalsExact: the gated reading of a sentence's
// signals is every rule's own answer, over the sentences of the training
// set's tools and the samples (RV-2).
func TestRV2LearnedSentenceSignalsExact(t *testing.T) {
	texts := slices.Clone(intentSamples)
	for _, c := range readRecallSet(t, "training.json").Cases {
		for _, p := range learnedPlaces(c.Tool.input(nil)) {
			texts = append(texts, p.text)
		}
	}
	var buf []byte
	for _, words := range []bool{false, true} {
		st := signalTableFor(words)
		cand := make([]uint64, len(st.always))
		for _, text := range texts {
			for a := 0; a < len(text); {
				e := sentenceEnd(text, a)
				var got signal
				got, buf = st.sentenceSignals(text[a:e], buf, cand)
				if want := signalsIn(text[a:e], words, ^signal(0)); got != want {
					t.Fatalf("%q (words %v): gated %b, rules %b", text[a:e], words, got, want)
				}
				a = e + 1
			}
		}
	}
}
