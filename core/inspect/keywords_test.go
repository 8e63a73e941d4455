package inspect

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
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

// everyHit is every occurrence of each literal in s, those that overlap
// too, ordered by literal, then place.
func everyHit(s string, literals []string) []keywordHit {
	var hits []keywordHit
	for kw, k := range literals {
		for at := 0; ; {
			i := strings.Index(s[at:], k)
			if i < 0 {
				break
			}
			hits = append(hits, keywordHit{kw, at + i})
			at += i + 1
		}
	}
	return hits
}

// holdsNeeds is what needsWithin replaces: the window searched for a
// literal of each group of needs.
func holdsNeeds(s string, needs [][]string) bool {
	for _, group := range needs {
		if !slices.ContainsFunc(group, func(w string) bool { return strings.Contains(s, w) }) {
			return false
		}
	}
	return true
}

// A window holds a rule's needs by the occurrences the pass found exactly
// where searching the window finds them (IN-1): over every text above,
// for every rule with needs, windows at every anchor, at each of the
// literals' occurrences and at random, of the sizes the rules read and
// cut through literals.
func TestNeedsWithinExactIN1(t *testing.T) {
	texts := keywordTexts(t)
	rng := rand.New(rand.NewPCG(3, 5))
	checked, held := 0, 0
	for _, s := range texts {
		ix := indexText(s, 1<<resultFamily)
		lower := ix.spaced
		for i := range addressRules {
			r := &addressRules[i]
			if len(r.needs) == 0 {
				continue
			}
			occ := ix.scan.of(needsFamily)[i]
			var starts []int
			for _, h := range ix.scan.of(resultFamily)[i] {
				starts = append(starts, h.at, max(0, h.at-r.back))
			}
			for _, h := range occ {
				starts = append(starts, h.at, max(0, h.at-1), h.at+1)
			}
			for range 8 {
				starts = append(starts, rng.IntN(len(lower)+1))
			}
			for _, lo := range starts {
				lo = min(lo, len(lower))
				for _, n := range []int{0, 1, 3, r.fwd, r.back + r.fwd, rng.IntN(300)} {
					hi := min(len(lower), lo+n)
					got, want := r.needsWithin(occ, lo, hi), holdsNeeds(lower[lo:hi], r.needs)
					if got != want {
						t.Fatalf("rule %d (%s), window [%d,%d) of %.80q: needsWithin %v, the search %v", i, r.detector, lo, hi, s, got, want)
					}
					checked++
					if want {
						held++
					}
				}
			}
		}
		ix.release()
	}
	if held < 1000 || checked-held < 1000 {
		t.Fatalf("%d windows, %d holding the needs", checked, held)
	}
	t.Logf("%d windows, %d holding the needs, the same answers", checked, held)
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
	words = append(words, addresseeAnchors...)
	for _, r := range addressRules {
		words = append(words, slices.Concat(r.needs...)...)
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
	fillers := []string{" ", "", "\n", "_", "x", "=", ": ", "s ", "://", "\"", "ü", "—", `\n`, `\t`, `\`}
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

// The one pass finds exactly the occurrences the searches did, for every
// family in every combination a text is scanned for, so every secrets rule,
// result rule and the addressee's gate read the same windows and find the
// same spans (IN-1). Texts with escaped line breaks, where the result rules
// read other text than the rest, are among them.
func TestKeywordScanMatchesSearchIN1(t *testing.T) {
	texts := keywordTexts(t)
	escaped := 0
	for _, s := range texts {
		lower := asciiLower(s)
		spaced := unescapeBreaks(lower)
		if spaced != lower {
			escaped++
		}
		var wantSecrets, wantResult [][]keywordHit
		for _, r := range secretRules {
			wantSecrets = append(wantSecrets, (searchHits(s, r.keywords, r.fold)))
		}
		for _, r := range addressRules {
			wantResult = append(wantResult, (searchHits(spaced, r.anchors, false)))
		}
		wantAddressee := (searchHits(lower, addresseeAnchors, false))
		var wantNeeds [][]keywordHit
		for _, r := range addressRules {
			wantNeeds = append(wantNeeds, (everyHit(spaced, slices.Concat(r.needs...))))
		}
		for fams := families(1); fams < 1<<numFamilies; fams++ {
			ix := indexText(s, fams)
			if ix.lower != lower || ix.spaced != spaced && fams.has(resultFamily) {
				t.Fatalf("families %b on %.80q: the index's texts differ from asciiLower and unescapeBreaks", fams, s)
			}
			if fams.has(secretsFamily) {
				for i, r := range secretRules {
					if want := wantSecrets[i]; !slices.Equal(ix.scan.of(secretsFamily)[i], want) {
						t.Fatalf("families %b, secrets rule %s on %.80q: scan %v, searches %v", fams, r.detector, s, ix.scan.of(secretsFamily)[i], want)
					}
				}
			}
			if fams.has(resultFamily) {
				for i, r := range addressRules {
					if want := wantResult[i]; !slices.Equal(ix.scan.of(resultFamily)[i], want) {
						t.Fatalf("families %b, result rule %d (%s) on %.80q: scan %v, searches %v", fams, i, r.detector, s, ix.scan.of(resultFamily)[i], want)
					}
				}
			}
			if fams.has(resultFamily) {
				for i, r := range addressRules {
					if want := wantNeeds[i]; !slices.Equal(ix.scan.of(needsFamily)[i], want) {
						t.Fatalf("families %b, result rule %d (%s)'s needs on %.80q: scan %v, searches %v", fams, i, r.detector, s, ix.scan.of(needsFamily)[i], want)
					}
				}
			}
			if fams.has(addresseeFamily) {
				if want := wantAddressee; !slices.Equal(ix.scan.of(addresseeFamily)[0], want) {
					t.Fatalf("families %b, addressee anchors on %.80q: scan %v, searches %v", fams, s, ix.scan.of(addresseeFamily)[0], want)
				}
			}
			ix.release()
		}
	}
	if escaped < 100 {
		t.Fatalf("only %d texts with escaped breaks", escaped)
	}
	t.Logf("%d texts (%d with escaped breaks), the same occurrences", len(texts), escaped)
}

// asciiLower lowers ASCII capitals and nothing else, byte for byte
// (IN-1): every offset into the lowered text is the same offset in s.
func TestASCIILowerIN1(t *testing.T) {
	texts := keywordTexts(t)
	rng := rand.New(rand.NewPCG(23, 29))
	for range 2000 {
		b := make([]byte, rng.IntN(200))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		texts = append(texts, string(b))
	}
	for _, s := range texts {
		want := []byte(s)
		for i, c := range want {
			if 'A' <= c && c <= 'Z' {
				want[i] = c + 32
			}
		}
		if got := asciiLower(s); got != string(want) {
			t.Fatalf("asciiLower(%.80q) = %.80q, want %.80q", s, got, want)
		}
	}
}

// The scans that read eight bytes at a time stop where a scan of one
// byte at a time does, from every place of texts of every byte (IN-1).
func TestWordScansIN1(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 43))
	alphabets := []string{"", "aZ0+( é\x80\xff@AMz9/.:-", "abc def ghi"}
	for range 3000 {
		a := alphabets[rng.IntN(len(alphabets))]
		b := make([]byte, rng.IntN(70))
		for i := range b {
			if a == "" {
				b[i] = byte(rng.IntN(256))
			} else {
				b[i] = a[rng.IntN(len(a))]
			}
		}
		s := string(b)
		for i := 0; i <= len(s); i++ {
			wantUpper, wantNumber := i, i
			for wantUpper < len(s) && !('A' <= s[wantUpper] && s[wantUpper] <= 'Z') {
				wantUpper++
			}
			for wantNumber < len(s) && !('0' <= s[wantNumber] && s[wantNumber] <= '9' || s[wantNumber] == '+' || s[wantNumber] == '(') {
				wantNumber++
			}
			if got := nextUpper(s, i); got != wantUpper {
				t.Fatalf("nextUpper(%q, %d) = %d, want %d", s, i, got, wantUpper)
			}
			if got := nextNumberStart(s, i); got != wantNumber {
				t.Fatalf("nextNumberStart(%q, %d) = %d, want %d", s, i, got, wantNumber)
			}
		}
	}
}
