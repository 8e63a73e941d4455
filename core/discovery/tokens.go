package discovery

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Terms splits s into index terms: words split at every non-letter,
// non-digit and at camelCase boundaries, folded, stemmed, stopwords out.
// The same function reads tools and queries, so both meet on one form.
func Terms(s string) []string {
	var out []string
	eachWord(s, func(w string) {
		w = fold(w)
		if stopwords()[w] {
			return
		}
		out = append(out, Stem(w))
	})
	return out
}

// eachWord calls f with each word of s: a run of letters and digits, cut
// where a lower-case letter meets an upper-case one ("getViewer") and
// before the last capital of a run of capitals followed by lower case
// ("HTTPRequest" → HTTP, Request).
func eachWord(s string, f func(string)) {
	start := -1
	var prev, prev2 rune
	for i, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r) {
			if start >= 0 {
				f(s[start:i])
				start = -1
			}
			prev, prev2 = 0, 0
			continue
		}
		if start < 0 {
			start = i
		} else if unicode.IsUpper(r) && unicode.IsLower(prev) {
			f(s[start:i])
			start = i
		} else if unicode.IsLower(r) && unicode.IsUpper(prev) && unicode.IsUpper(prev2) {
			// "HTTPRequest": the R begins a new word.
			cut := i - utf8.RuneLen(prev)
			f(s[start:cut])
			start = cut
		}
		prev2, prev = prev, r
	}
	if start >= 0 {
		f(s[start:])
	}
}

// fold lower-cases w and strips diacritics (é → e, ß stays ß), so that a
// query typed without accents meets a text written with them.
func fold(w string) string {
	ascii := true
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(w)
	}
	var b strings.Builder
	for _, r := range norm.NFD.String(w) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// Stem reduces an English word to a light stem: plurals, -ing, -ed and
// the -ion of -tion go, then a final e, so that "create", "creates",
// "created", "creating" and "creation" meet. It is deliberately light: heavier stemmers join words that differ
// in meaning ("organization", "organ"). Words of other scripts pass
// through unchanged but folded.
func Stem(w string) string {
	if len(w) <= 3 || w[len(w)-1] >= utf8.RuneSelf {
		return w
	}
	// Plurals first, so that "relations" and "relation" go on alike.
	n := len(w)
	switch {
	case strings.HasSuffix(w, "ies") && n > 4:
		w = w[:n-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:n-2]
	case strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "zes"):
		w = w[:n-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
	case strings.HasSuffix(w, "s"):
		w = w[:n-1]
	}
	n = len(w)
	switch {
	case strings.HasSuffix(w, "ied") && n > 4:
		w = w[:n-3] + "y"
	case strings.HasSuffix(w, "ing") && n > 5:
		w = undouble(w[:n-3])
	case strings.HasSuffix(w, "ed") && n > 4:
		w = undouble(w[:n-2])
	case strings.HasSuffix(w, "tion") && n > 7:
		// "creation", "deletion", "association" meet their verbs.
		w = w[:n-3]
	}
	if n := len(w); n > 3 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	return w
}

// undouble drops one of two equal final consonants a suffix left
// ("mapped" → "mapp" → "map"), except l, s and z ("filled" → "fill").
func undouble(w string) string {
	n := len(w)
	if n < 3 || w[n-1] != w[n-2] {
		return w
	}
	switch w[n-1] {
	case 'a', 'e', 'i', 'o', 'u', 'l', 's', 'z':
		return w
	}
	return w[:n-1]
}

// stopwords are words too common in tool texts and requests to tell tools
// apart; leaving them out keeps "a", "the" and "to" from ranking a tool.
//
// Built on first use, as synonyms is.
var stopwords = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or of to in on at for from by with into onto
		is are be been was were it its this that these those as if then than so
		i me my we our you your he she they them their there here
		can could would should will shall may might must do does did done
		please want need some any all each every which what who whom whose when where how
		not no yes also just only very about over under up down out off again
		use using used via per e g eg ie etc`) {
		m[w] = true
	}
	return m
})
