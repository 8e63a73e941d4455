package inspect

import "sync"

// keywordSet finds every keyword of a rule table in one pass over a text
// (IN-1). The secrets rules and the result rules are gated by literal
// keywords; looking for each with a search of its own read a 2 KB text a
// few hundred times. Here a table of the byte pairs that start a keyword
// turns most positions away at once, and only the keywords that start
// with a position's pair are compared there.
type keywordSet struct {
	words  []string
	fold   []bool     // compared without regard to ASCII case; the word is lower case
	owners [][]keyRef // the rules (and their keyword) each word gates
	starts [1 << 16 / 64]uint64
	byPair map[uint16][]int32
}

// keyRef is one rule's keyword: the rule's index in its table and the
// keyword's index in the rule.
type keyRef struct{ rule, kw int }

// keywordHit is one occurrence: the keyword's place in its rule and where
// it starts.
type keywordHit struct{ kw, at int }

func pairOf(a, b byte) uint16 { return uint16(lowerASCII(a))<<8 | uint16(lowerASCII(b)) }

// newKeywordSet indexes keywords(rule) of every rule; fold(rule) says
// whether the rule's keywords match in any case. A keyword is at least two
// bytes long.
func newKeywordSet(rules int, keywords func(int) []string, fold func(int) bool) *keywordSet {
	k := &keywordSet{byPair: map[uint16][]int32{}}
	index := map[[2]any]int{}
	for r := range rules {
		for kw, w := range keywords(r) {
			if len(w) < 2 {
				panic("inspect: a keyword of one byte: " + w)
			}
			key := [2]any{w, fold(r)}
			i, ok := index[key]
			if !ok {
				i = len(k.words)
				index[key] = i
				k.words = append(k.words, w)
				k.fold = append(k.fold, fold(r))
				k.owners = append(k.owners, nil)
				p := pairOf(w[0], w[1])
				k.starts[p>>6] |= 1 << (p & 63)
				k.byPair[p] = append(k.byPair[p], int32(i))
			}
			k.owners[i] = append(k.owners[i], keyRef{r, kw})
		}
	}
	return k
}

// scanPool holds the per-text state of scans.
var scanPool = sync.Pool{New: func() any { return new(scanState) }}

type scanState struct {
	next []int          // per word: where its next occurrence may start
	hits [][]keywordHit // per rule
}

// scan returns, per rule, its keywords' occurrences in s ordered by
// keyword, then place, as searching for each keyword in turn would find
// them: an occurrence that overlaps the previous one of the same keyword
// is not one. Call done when the hits are no longer needed.
func (k *keywordSet) scan(s string, rules int) (hits [][]keywordHit, done func()) {
	st := scanPool.Get().(*scanState)
	st.next = append(st.next[:0], make([]int, len(k.words))...)
	if cap(st.hits) < rules {
		st.hits = make([][]keywordHit, rules)
	}
	st.hits = st.hits[:rules]
	for r := range st.hits {
		st.hits[r] = st.hits[r][:0]
	}
	for i := 0; i+1 < len(s); i++ {
		p := pairOf(s[i], s[i+1])
		if k.starts[p>>6]&(1<<(p&63)) == 0 {
			continue
		}
		for _, w := range k.byPair[p] {
			word := k.words[w]
			if i < st.next[w] || i+len(word) > len(s) || !k.at(s, i, int(w)) {
				continue
			}
			st.next[w] = i + len(word)
			for _, o := range k.owners[w] {
				st.hits[o.rule] = append(st.hits[o.rule], keywordHit{o.kw, i})
			}
		}
	}
	for r := range st.hits {
		sortHits(st.hits[r])
	}
	return st.hits, func() { scanPool.Put(st) }
}

// at reports whether word w occurs in s at i.
func (k *keywordSet) at(s string, i, w int) bool {
	word := k.words[w]
	if !k.fold[w] {
		return s[i:i+len(word)] == word
	}
	for j := 0; j < len(word); j++ {
		if lowerASCII(s[i+j]) != word[j] {
			return false
		}
	}
	return true
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
