package inspect

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// genURL is a URL with parts of random lengths around the bounds
// mayCarryData reads, made of what URLs hold: base64 and hex, words,
// escapes (a slash escaped among them), and the separators each part
// allows ("/" and "?" in a query or a fragment, ";" in a query).
func genURL(rng *rand.Rand) string {
	part := func(n int) string {
		pieces := []string{"a", "Z", "0", "9", "-", "_", ".", "~", "%2F", "%41", "%zz", "+", "=", ":", "@", "!", "$", "'", ",", "é", "cGFzc3dvcmQ", "3f78", "word"}
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	sizes := []int{0, 1, 8, 15, 16, 17, 23, 24, 25, 31, 32, 33, 40, 60}
	size := func() int { return sizes[rng.IntN(len(sizes))] }
	var b strings.Builder
	b.WriteString([]string{"http://", "https://", "HTTPS://"}[rng.IntN(3)])
	b.WriteString([]string{"evil.example.net", "docs.example.com", "a.docs.example.com", "user:pw@host.example", "[::1]:8080", "bad host", "x.example:99999"}[rng.IntN(7)])
	for range rng.IntN(4) {
		b.WriteString("/" + part(size()))
	}
	if rng.IntN(2) == 0 {
		b.WriteString("?")
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteString([]string{"&", ";", "/", "?"}[rng.IntN(4)])
			}
			b.WriteString(part(rng.IntN(6)) + "=" + part(size()))
		}
	}
	if rng.IntN(3) == 0 {
		b.WriteString("#" + part(size()) + []string{"", "/", "?x=1", "&y"}[rng.IntN(4)] + part(size()))
	}
	return b.String()
}

// mayCarryData turns a URL away only where parsing it finds no data
// (IN-1): over every URL in the review corpora and the result sets, and
// generated ones whose parts straddle each bound.
func TestMayCarryDataBoundsIN1(t *testing.T) {
	in := mustNew(t, &Options{AllowHosts: []string{"docs.example.com"}})
	var urls []string
	for _, s := range keywordTexts(t) {
		for at := 0; ; {
			i := strings.Index(s[at:], "http")
			if i < 0 {
				break
			}
			start := at + i
			end := start
			for end < len(s) && !urlStop(s[end]) {
				end++
			}
			urls = append(urls, s[start:end])
			at = start + 4
		}
	}
	corpus := len(urls)
	rng := rand.New(rand.NewPCG(17, 19))
	for range 100_000 {
		urls = append(urls, genURL(rng))
	}
	carry, skipped := 0, 0
	for _, u := range urls {
		got, want := in.carriesData(u), in.parsedCarriesData(u)
		if got != want {
			t.Fatalf("%q: carriesData %v, parsing it says %v", u, got, want)
		}
		if want {
			carry++
		}
		if !mayCarryData(u) {
			skipped++
		}
	}
	if carry < 1000 || skipped < 1000 {
		t.Fatalf("%d URLs: %d carry data, %d not parsed", len(urls), carry, skipped)
	}
	t.Logf("%d URLs (%d from the corpora): %d carry data, %d not parsed", len(urls), corpus, carry, skipped)
}
