package scan

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// wordText reads the identifiers in t as the words they are made of (RV-2):
// a model reads "ignore_previous_instructions", "ignore-previous-instructions",
// "ignore.previous.instructions" and "ignorePreviousInstructions" as the
// phrase they spell, wherever the identifier is — a name, an enum value, a
// required entry, a word inside a sentence. Underscores become spaces;
// hyphens and dots between two letters or digits become spaces (so "1.5",
// "--flag" and a dash between words stay as written); a space is inserted
// where a lower-case letter or a digit meets an upper-case one, and before
// the last capital of a run followed by a lower-case letter ("HTTPServer").
// It returns nil when there is no identifier to read, so prose is read once.
// Offsets of the result map to the original through pos, like t's.
func (t *cleanText) wordText() *cleanText {
	s := t.text
	if !strings.ContainsAny(s, "_-.") && !hasCamel(s) {
		return nil
	}
	w := &cleanText{pos: make([]int, 0, len(s)+8)}
	var b strings.Builder
	b.Grow(len(s) + 8)
	changed := false
	var prev rune = -1
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		next, _ := utf8.DecodeRuneInString(s[i+size:])
		if i+size >= len(s) {
			next = -1
		}
		switch {
		case r == '_':
			r, changed = ' ', true
		case (r == '-' || r == '.') && isWordRune(prev) && isWordRune(next) && !(r == '.' && (unicode.IsDigit(prev) || unicode.IsDigit(next))):
			r, changed = ' ', true
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev) ||
			unicode.IsUpper(prev) && unicode.IsLower(next)):
			// a boundary inside a camelCase word: a space of its own,
			// mapped to the capital it stands before
			b.WriteByte(' ')
			w.pos = append(w.pos, t.pos[i])
			changed = true
		}
		n := b.Len()
		b.WriteRune(r)
		for k := n; k < b.Len(); k++ {
			w.pos = append(w.pos, t.pos[min(i+k-n, i+size-1)])
		}
		prev = r
		i += size
	}
	if !changed {
		return nil
	}
	w.text = b.String()
	w.lower = asciiLower(w.text)
	return w
}

func isWordRune(r rune) bool { return r >= 0 && (unicode.IsLetter(r) || unicode.IsDigit(r)) }

// hasCamel: a lower-case letter or digit directly followed by an upper-case
// letter somewhere in s.
func hasCamel(s string) bool {
	prev := rune(-1)
	for _, r := range s {
		if unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)) {
			return true
		}
		prev = r
	}
	return false
}
