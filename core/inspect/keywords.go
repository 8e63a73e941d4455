package inspect

import (
	"slices"
	"sync"
)

// One pass finds the keywords of every detector that is gated by them
// (IN-1): the secrets rules' keywords, the result rules' anchors and the
// anchors of the expression that names a model as the reader. Searching
// for each keyword on its own read a 2 KB text a few hundred times, and
// three passes of their own, one per table, still read it three times. A
// table of the byte pairs that start a keyword turns most positions away
// at once; only the keywords that start with a position's pair are
// compared there.

// family is one table of keywords, and the text its occurrences are
// counted in.
type family uint8

const (
	// secretsFamily: secretRules' keywords, in the text as it is, or in
	// any ASCII case where the rule folds.
	secretsFamily family = iota
	// resultFamily: addressRules' anchors, in the ASCII-lowercased text
	// with its escaped line breaks read as spaces (unescapeBreaks).
	resultFamily
	// addresseeFamily: addresseeAnchors, in the ASCII-lowercased text.
	addresseeFamily
	// needsFamily: the literals of addressRules' needs, in the result
	// rules' text, every occurrence (those that overlap too): a window
	// holds a literal where one of them lies inside it.
	needsFamily
	numFamilies
)

// resultText are the families read in the result rules' text.
const resultText families = 1<<resultFamily | 1<<needsFamily

// families is a set of families.
type families uint8

func (f families) has(x family) bool { return f&(1<<x) != 0 }

// familyKeywords lists a family's rules: how many, each one's keywords,
// and whether a rule's keywords match in any ASCII case. Keywords of the
// result and addressee families are matched in lowered text, so they fold
// too.
func familyKeywords(f family) (rules int, keywords func(int) []string, fold func(int) bool) {
	always := func(int) bool { return true }
	switch f {
	case secretsFamily:
		return len(secretRules), func(r int) []string { return secretRules[r].keywords }, func(r int) bool { return secretRules[r].fold }
	case resultFamily:
		return len(addressRules), func(r int) []string { return addressRules[r].anchors }, always
	case needsFamily:
		return len(addressRules), func(r int) []string { return slices.Concat(addressRules[r].needs...) }, always
	default:
		return 1, func(int) []string { return addresseeAnchors }, always
	}
}

// keywordSet indexes the keywords of some families for one pass.
type keywordSet struct {
	fams families
	// words are compared with the lowered text: a folding keyword as it
	// is (its ASCII letters lower case), an exact one lowered, and then
	// compared as written with the text itself (exact[w] != "").
	words  []string
	exact  []string
	every  []bool     // every occurrence counts, not only those apart
	owners [][]keyRef // the rules (and their keyword) each word gates
	rules  [numFamilies]int
	starts [1 << 16 / 64]uint64 // the byte pairs that start a word
	// byPair holds, for a pair that starts a word, 1 + its bucket's
	// index in buckets: a dense table, since a map lookup at each
	// position that passes starts was most of the pass's cost.
	byPair  []uint16
	buckets []pairBucket
	// triples marks (hashed) the first three bytes of the words of
	// three bytes or more: most positions whose pair starts a word
	// start none of the longer ones.
	triples [1 << tripleBits / 64]uint64
}

// pairBucket holds the words that start with one pair: those of two
// bytes, and the longer ones.
type pairBucket struct{ short, long []bucketWord }

const tripleBits = 18

// tripleOf hashes the first three bytes of a head (see head4).
func tripleOf(head uint32) uint32 { return (head & 0xffffff) * 0x9e3779b1 >> (32 - tripleBits) }

// bucketWord is a word in its pair's bucket, with its first four bytes
// (fewer for a shorter word, the rest of mask zero) as a little-endian
// word: most candidates are turned away by one comparison of integers.
type bucketWord struct {
	head, mask uint32
	w          int32
}

// head4 is s[i:i+4] as a little-endian word, zero past the end of s.
func head4(s string, i int) uint32 {
	if i+4 <= len(s) {
		return uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
	}
	var x uint32
	for j := 0; i+j < len(s); j++ {
		x |= uint32(s[i+j]) << (8 * j)
	}
	return x
}

// keyRef is one rule's keyword: its family, the rule's index in its table
// and the keyword's index in the rule.
type keyRef struct {
	fam      family
	rule, kw int32
}

// keywordHit is one occurrence: the keyword's place in its rule and where
// it starts.
type keywordHit struct{ kw, at int }

func pairOf(a, b byte) uint16 { return uint16(lowerASCII(a))<<8 | uint16(lowerASCII(b)) }

// newKeywordSet indexes every keyword of the families in fams. A keyword
// is at least two bytes long.
func newKeywordSet(fams families) *keywordSet {
	k := &keywordSet{fams: fams, byPair: make([]uint16, 1<<16)}
	type wordKey struct {
		lower, exact string
		every        bool
	}
	index := map[wordKey]int{}
	for f := range numFamilies {
		if !fams.has(f) {
			continue
		}
		rules, keywords, fold := familyKeywords(f)
		k.rules[f] = rules
		for r := range rules {
			for kw, w := range keywords(r) {
				if len(w) < 2 {
					panic("inspect: a keyword of one byte: " + w)
				}
				lw, exact := w, ""
				if !fold(r) {
					lw, exact = asciiLower(w), w
				}
				every := f == needsFamily
				key := wordKey{lw, exact, every}
				i, ok := index[key]
				if !ok {
					i = len(k.words)
					index[key] = i
					k.words = append(k.words, lw)
					k.exact = append(k.exact, exact)
					k.every = append(k.every, every)
					k.owners = append(k.owners, nil)
					p := pairOf(lw[0], lw[1])
					k.starts[p>>6] |= 1 << (p & 63)
					if k.byPair[p] == 0 {
						k.buckets = append(k.buckets, pairBucket{})
						k.byPair[p] = uint16(len(k.buckets))
					}
					b := &k.buckets[k.byPair[p]-1]
					n := min(len(lw), 4)
					mask := uint32(1<<(8*n) - 1)
					bw := bucketWord{head4(lw[:n], 0), mask, int32(i)}
					if len(lw) == 2 {
						b.short = append(b.short, bw)
					} else {
						b.long = append(b.long, bw)
						t := tripleOf(bw.head)
						k.triples[t>>6] |= 1 << (t & 63)
					}
				}
				k.owners[i] = append(k.owners[i], keyRef{f, int32(r), int32(kw)})
			}
		}
	}
	return k
}

// keywordSets are built on first use, one per set of families asked for.
var keywordSets [1 << numFamilies]struct {
	once sync.Once
	set  *keywordSet
}

func keywordsOf(fams families) *keywordSet {
	ks := &keywordSets[fams]
	ks.once.Do(func() { ks.set = newKeywordSet(fams) })
	return ks.set
}

// scanPool holds the per-text state of scans.
var scanPool = sync.Pool{New: func() any { return new(keywordScan) }}

// keywordScan is what a pass found: per family, per rule, its keywords'
// occurrences ordered by keyword, then place.
type keywordScan struct {
	next []int // per word: where its next occurrence may start
	hits [numFamilies][][]keywordHit
}

// of is family f's occurrences, indexed by rule.
func (ks *keywordScan) of(f family) [][]keywordHit { return ks.hits[f] }

func (ks *keywordScan) release() { scanPool.Put(ks) }

// reset readies ks for the families of k.
func (ks *keywordScan) reset(k *keywordSet) {
	for f := range numFamilies {
		if !k.fams.has(f) {
			continue
		}
		n := k.rules[f]
		if cap(ks.hits[f]) < n {
			ks.hits[f] = make([][]keywordHit, n)
		}
		ks.hits[f] = ks.hits[f][:n]
		for r := range ks.hits[f] {
			ks.hits[f][r] = ks.hits[f][r][:0]
		}
	}
}

// pass adds to ks the occurrences of k's words in s, as searching for each
// keyword in turn would find them: an occurrence that overlaps the
// previous one of the same keyword is not one. lower is asciiLower(s), or
// a text of the same length the family reads instead (see resultFamily).
func (ks *keywordScan) pass(k *keywordSet, s, lower string) {
	ks.next = append(ks.next[:0], make([]int, len(k.words))...)
	for i := 0; i+1 < len(lower); i++ {
		p := uint16(lower[i])<<8 | uint16(lower[i+1])
		if k.starts[p>>6]&(1<<(p&63)) == 0 {
			continue
		}
		h := head4(lower, i)
		b := &k.buckets[k.byPair[p]-1]
		if len(b.short) > 0 {
			ks.try(k, s, lower, i, h, b.short)
		}
		if t := tripleOf(h); len(b.long) > 0 && k.triples[t>>6]&(1<<(t&63)) != 0 {
			ks.try(k, s, lower, i, h, b.long)
		}
	}
}

// try compares the words of a bucket with lower at i, whose first four
// bytes are h.
func (ks *keywordScan) try(k *keywordSet, s, lower string, i int, h uint32, words []bucketWord) {
	for _, c := range words {
		if h&c.mask != c.head {
			continue
		}
		w := c.w
		word := k.words[w]
		if i < ks.next[w] || i+len(word) > len(lower) || len(word) > 4 && lower[i+4:i+len(word)] != word[4:] {
			continue
		}
		if e := k.exact[w]; e != "" && s[i:i+len(e)] != e {
			continue
		}
		if !k.every[w] {
			ks.next[w] = i + len(word)
		}
		for _, o := range k.owners[w] {
			ks.hits[o.fam][o.rule] = append(ks.hits[o.fam][o.rule], keywordHit{int(o.kw), i})
		}
	}
}

// sort orders each rule's hits by keyword, then place.
func (ks *keywordScan) sort(fams families) {
	for f := range numFamilies {
		if fams.has(f) {
			for _, h := range ks.hits[f] {
				sortHits(h)
			}
		}
	}
}

// sortHits orders hits by keyword, then place. Insertion sort: a rule has
// few hits in a text, and the pass found them nearly in order.
func sortHits(h []keywordHit) {
	for i := 1; i < len(h); i++ {
		for j := i; j > 0 && (h[j].kw < h[j-1].kw || h[j].kw == h[j-1].kw && h[j].at < h[j-1].at); j-- {
			h[j], h[j-1] = h[j-1], h[j]
		}
	}
}

// textIndex is what the keyword-gated detectors share about one text: the
// text lowered once, and one pass's keyword occurrences.
type textIndex struct {
	s     string
	lower string // asciiLower(s)
	// spaced is lower with escaped line breaks as spaces, the text the
	// result rules read; lower itself when s holds no backslash.
	spaced string
	scan   *keywordScan
}

// indexText lowers s and finds the keywords of fams in it. Call release
// when the occurrences are no longer needed.
func indexText(s string, fams families) textIndex {
	ix := textIndex{s: s, lower: asciiLower(s)}
	ix.spaced = ix.lower
	ks := scanPool.Get().(*keywordScan)
	ix.scan = ks
	if fams.has(resultFamily) {
		fams |= 1 << needsFamily
	}
	all := fams
	if fams&resultText != 0 {
		ix.spaced = unescapeBreaks(ix.lower)
		if ix.spaced != ix.lower {
			// The result rules read other text here: a pass of their own.
			rest := fams &^ resultText
			k := keywordsOf(fams & resultText)
			ks.reset(k)
			ks.pass(k, s, ix.spaced)
			if rest == 0 {
				ks.sort(all)
				return ix
			}
			fams = rest
		}
	}
	k := keywordsOf(fams)
	ks.reset(k)
	ks.pass(k, s, ix.lower)
	ks.sort(all)
	return ix
}

func (ix textIndex) release() { ix.scan.release() }
