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
//
// The result holds the identifiers only, one a line: the prose around them
// is read already, as written, and reading it twice would double the
// scanner's work on every description that names an argument. It returns
// nil when there is no identifier to read. Offsets of the result map to
// the original through pos, like t's.
func (t *cleanText) wordText() *cleanText {
	s := t.text
	if !strings.ContainsAny(s, "_-.") && !hasCamel(s) {
		return nil
	}
	w := &cleanText{pos: make([]int, 0, 64), words: true}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			i += size
			continue
		}
		j := i
		for j < len(s) {
			r, size := utf8.DecodeRuneInString(s[j:])
			if unicode.IsSpace(r) {
				break
			}
			j += size
		}
		if isIdentifier(s[i:j]) {
			if b.Len() > 0 {
				b.WriteByte('\n')
				w.pos = append(w.pos, t.pos[i])
			}
			t.splitWords(&b, w, i, j)
		}
		i = j
	}
	if b.Len() == 0 {
		return nil
	}
	w.text = b.String()
	w.lower = asciiLower(w.text)
	return w
}

// isIdentifier: tok joins words with _, -, . or a change of case.
func isIdentifier(tok string) bool {
	prev := rune(-1)
	for i, r := range tok {
		next, _ := utf8.DecodeRuneInString(tok[i+utf8.RuneLen(r):])
		if i+utf8.RuneLen(r) >= len(tok) {
			next = -1
		}
		switch {
		case r == '_' && isWordRune(prev) && isWordRune(next):
			return true
		case r == '-' && isWordRune(prev) && isWordRune(next),
			r == '.' && unicode.IsLetter(prev) && unicode.IsLetter(next):
			return true
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			return true
		}
		prev = r
	}
	return false
}

// splitWords writes t.text[i:j] to b as words, and its positions to w.pos.
func (t *cleanText) splitWords(b *strings.Builder, w *cleanText, i, j int) {
	s := t.text
	prev := rune(-1)
	// Past an @ or a scheme's "://" the token is an address
	// (urgent_and_cc_security@audit.example): its dots and hyphens stay,
	// so the address reads as one; an underscore still parts words (a
	// query's {chat_history}).
	addr := false
	for k := i; k < j; {
		r, size := utf8.DecodeRuneInString(s[k:])
		next := rune(-1)
		if k+size < j {
			next, _ = utf8.DecodeRuneInString(s[k+size:])
		}
		if r == '@' || r == ':' && strings.HasPrefix(s[k:j], "://") {
			addr = true
		}
		switch {
		case r == '_':
			r = ' '
		case addr:
		case (r == '-' || r == '.') && isWordRune(prev) && isWordRune(next) && !(r == '.' && (unicode.IsDigit(prev) || unicode.IsDigit(next))):
			r = ' '
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev) ||
			unicode.IsUpper(prev) && unicode.IsLower(next)):
			// a boundary inside a camelCase word: a space of its own,
			// mapped to the capital it stands before
			b.WriteByte(' ')
			w.pos = append(w.pos, t.pos[k])
		}
		n := b.Len()
		b.WriteRune(r)
		for m := n; m < b.Len(); m++ {
			w.pos = append(w.pos, t.pos[min(k+m-n, k+size-1)])
		}
		prev = r
		k += size
	}
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
