package inspect

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// searchHits is what the one-pass scan replaces: each keyword of a rule
// searched for on its own, occurrence after occurrence.
func searchHits(s string, keywords []string, fold bool) []keywordHit {
	var hits []keywordHit
	for kw, k := range keywords {
		for at := 0; at < len(s); {
			i := indexFrom(s, k, at, fold)
			if i < 0 {
				break
			}
			hits = append(hits, keywordHit{kw, i})
			at = i + len(k)
		}
	}
	return hits
}

// keywordTexts are texts to compare on: every string of the review corpora
// and the injection sets, and generated text dense with every rule's
// keywords in mixed case, repeated and overlapping ("xoxox"), at the
// text's edges and inside words.
func keywordTexts(t *testing.T) []string {
	var texts []string
	for _, glob := range []string{"../../testdata/review/*/*.json", "testdata/*.json"} {
		files, _ := filepath.Glob(glob)
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var doc any
			if json.Unmarshal(raw, &doc) == nil {
				eachString(doc, func(s string) { texts = append(texts, s) })
			}
		}
	}
	if len(texts) < 1000 {
		t.Fatalf("only %d corpus texts", len(texts))
	}
	var words []string
	for _, r := range secretRules {
		words = append(words, r.keywords...)
	}
	for _, r := range addressRules {
		words = append(words, r.anchors...)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	mixCase := func(w string) string {
		b := []byte(w)
		for i := range b {
			if rng.IntN(3) == 0 {
				b[i] = lowerASCII(b[i]) ^ 0x20*byte(rng.IntN(2))
			}
		}
		return string(b)
	}
	fillers := []string{" ", "", "\n", "_", "x", "=", ": ", "s ", "://", "\"", "ü", "—"}
	for range 3000 {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			w := words[rng.IntN(len(words))]
			switch rng.IntN(4) {
			case 0:
				w = mixCase(w)
			case 1:
				w = w + w[len(w)/2:] + w // overlapping repeats
			}
			b.WriteString(fillers[rng.IntN(len(fillers))])
			b.WriteString(w)
			b.WriteString(fresh(rng.IntN(40), alnum+" "))
		}
		texts = append(texts, b.String())
	}
	return texts
}

// The one-pass scan finds exactly the occurrences the searches did, so
// every secrets and result rule reads the same windows and finds the same
// spans (IN-1).
func TestKeywordScanMatchesSearchIN1(t *testing.T) {
	texts := keywordTexts(t)
	for _, s := range texts {
		hits, done := secretKeywords().scan(s, len(secretRules))
		for i, r := range secretRules {
			if want := searchHits(s, r.keywords, r.fold); !reflect.DeepEqual(nonNil(hits[i]), nonNil(want)) {
				t.Fatalf("secrets rule %s on %.80q: scan %v, searches %v", r.detector, s, hits[i], want)
			}
		}
		done()
		lower := asciiLower(s)
		hits, done = addressKeywords().scan(lower, len(addressRules))
		for i, r := range addressRules {
			if want := searchHits(lower, r.anchors, false); !reflect.DeepEqual(nonNil(hits[i]), nonNil(want)) {
				t.Fatalf("result rule %d (%s) on %.80q: scan %v, searches %v", i, r.detector, s, hits[i], want)
			}
		}
		done()
	}
	t.Logf("%d texts, the same occurrences", len(texts))
}

func nonNil(h []keywordHit) []keywordHit {
	if h == nil {
		return []keywordHit{}
	}
	return h
}
