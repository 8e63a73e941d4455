package inspect

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
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
	classNumberStart = 1 << iota // a digit, "+" or "(": where a number may start
)

var byteClass = func() (t [256]uint8) {
	for c := range 256 {
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

// lower8 lowers the ASCII capitals among eight bytes.
func lower8(x uint64) uint64 { return x | inRange8(x, 'A', 'Z')>>2 }

const ones8, tops8 = 0x0101010101010101, 0x8080808080808080

// inRange8 sets the top bit of each of the eight bytes of x that is in
// [lo, hi] (ASCII), and no other bit: a byte's low seven bits plus
// 0x80-lo carry into its top bit where it is lo or above, plus 0x80-hi-1
// where it is above hi; a byte whose own top bit is set is not ASCII. No
// sum carries into the next byte.
func inRange8(x uint64, lo, hi byte) uint64 {
	low := x &^ tops8
	return (low + uint64(0x80-lo)*ones8) &^ (low + uint64(0x80-hi-1)*ones8) &^ x & tops8
}

// load8 is s[i:i+8] as a little-endian word.
func load8(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// nextUpper is the index of the first ASCII capital of s from i on, or
// len(s); eight bytes at a time, as most of a text is not.
func nextUpper(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		if m := inRange8(load8(s, i), 'A', 'Z'); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(s) && !isUpper(s[i]) {
		i++
	}
	return i
}

// nextNumberStart is the index of the first digit, "+" or "(" of s from
// i on, or len(s).
func nextNumberStart(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		x := load8(s, i)
		if m := inRange8(x, '0', '9') | inRange8(x, '+', '+') | inRange8(x, '(', '('); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(s) && byteClass[s[i]]&classNumberStart == 0 {
		i++
	}
	return i
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
