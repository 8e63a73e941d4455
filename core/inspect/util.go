package inspect

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
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

// Classes of bytes, for loops that pass over most bytes of a text.
const (
	classUpper       = 1 << iota // A-Z
	classNumberStart             // a digit, "+" or "(": where a number may start
)

var byteClass = func() (t [256]uint8) {
	for c := range 256 {
		if isUpper(byte(c)) {
			t[c] |= classUpper
		}
		if isDigit(byte(c)) || c == '+' || c == '(' {
			t[c] |= classNumberStart
		}
	}
	return t
}()

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// asciiLower lowers ASCII letters only, so every byte offset of the result
// is the same offset in s. The copy is lowered eight bytes at a time.
func asciiLower(s string) string {
	i := 0
	for i < len(s) && !isUpper(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], lower8(binary.LittleEndian.Uint64(b[i:])))
	}
	for ; i < len(b); i++ {
		b[i] = lowerASCII(b[i])
	}
	return string(b)
}

// lower8 lowers the ASCII capitals among eight bytes: each byte's low
// seven bits plus 0x80-'A' carry into its top bit where it is 'A' or
// above, plus 0x80-'Z'-1 where it is above 'Z'; a byte whose own top bit
// is set is not ASCII. No sum carries into the next byte (127+63 < 256).
func lower8(x uint64) uint64 {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	low := x &^ tops
	atLeastA := low + (0x80-'A')*ones
	aboveZ := low + (0x80-'Z'-1)*ones
	upper := atLeastA &^ aboveZ &^ x & tops
	return x | upper>>2
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
