package inspect

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

func itoa(i int) string { return strconv.Itoa(i) }

func errorf(err error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{err}, args...)...)
}

// entropy is the Shannon entropy of s in bits per byte: random tokens
// score high, words and repeated placeholders ("XXXX…") low.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	n := float64(len(s))
	var h float64
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// digitsOnly returns the digits of s.
func digitsOnly(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			b = append(b, s[i])
		}
	}
	return string(b)
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// asciiLower lowers ASCII letters only, so every byte offset of the result
// is the same offset in s. It builds the copy once, from the runs between
// capitals.
func asciiLower(s string) string {
	i := 0
	for i < len(s) && !isUpper(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	run := 0
	for ; i < len(s); i++ {
		if c := s[i]; isUpper(c) {
			b.WriteString(s[run:i])
			b.WriteByte(c + 'a' - 'A')
			run = i + 1
		}
	}
	b.WriteString(s[run:])
	return b.String()
}

// eachMergedWindow calls f on each window of wins, in order, windows that
// touch merged into one; wins is sorted in place. end is past every
// window.
func eachMergedWindow(wins [][2]int, end int, f func(lo, hi int)) {
	if len(wins) == 0 {
		return
	}
	sortWindows(wins)
	lo, hi := wins[0][0], wins[0][1]
	for _, w := range append(wins[1:], [2]int{end + 1, 0}) {
		if w[0] <= hi {
			hi = max(hi, w[1])
			continue
		}
		f(lo, hi)
		lo, hi = w[0], w[1]
	}
}

func sortWindows(w [][2]int) {
	// Insertion sort: a text has few keyword hits, and this allocates nothing.
	for i := 1; i < len(w); i++ {
		for j := i; j > 0 && w[j][0] < w[j-1][0]; j-- {
			w[j], w[j-1] = w[j-1], w[j]
		}
	}
}
