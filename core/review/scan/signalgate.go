package scan

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/toolgate/toolgate/core"
)

// The signal rules' gate (RV-2). The signal rules are word lists of common
// words ("send", "the user", "every", "then"), so most texts hold a
// literal of most of them, and asking each rule of the whole text — which
// signals did — ran every rule on every text: almost all of the scanner's
// time on a tool's result. Here each rule is split into its branches, and
// each branch gives the literals one of which every match of it holds
// (needles, read off the parsed branch, case folded). One pass over a
// sentence finds which needles it holds; a signal is looked for in the
// sentence only when one of its branches' needles is there, and only when
// a pair of signals that flags could still be made of the signals whose
// needles are there. The answer is exactly the rules' (a branch whose
// needles a sentence lacks cannot match it): TestRV2SignalGateExact checks
// it over every corpus and generated text, for every rule of the table,
// whichever rules it holds.

// sigBranch is one branch of a signal rule.
type sigBranch struct {
	re  *regexp.Regexp
	sig signal
	// unanchored: the branch holds no ^, $, \A or \z, so a match in a
	// sentence is a match in the whole text (sentences are cut at
	// characters \b reads as it does at either end of a text).
	unanchored bool
}

// signalTable is the gate of one way of reading a text: prose (where
// proseChain stands for sigChain) or identifiers read as words.
type signalTable struct {
	branches []sigBranch
	// rules are the rules of the reading, by signal, for the whole-text
	// question.
	rules []signalRule
	// order is the signals in the order of the rules: the rarest first;
	// bySig[i] the branches of order[i].
	order []signal
	bySig [][]int32
	// always: branches without needles, candidates in every sentence.
	always    []uint64
	alwaysSig signal
	needles   []string
	// head and headMask: a needle's first eight bytes (fewer for a
	// shorter one) as a little-endian word, and which bytes count.
	head, headMask []uint64
	owners         [][]int32 // per needle: the branches it gates
	single         [256][]int32
	// starts marks the byte pairs a needle of two bytes or more starts
	// with; pairFrom[h]:pairFrom[h+1] are the needles (in pairNeedles)
	// whose first pair hashes to h. Small, so the table stays in cache
	// beside the gateway's own work.
	starts      [1 << 16 / 64]uint64
	pairFrom    [pairBuckets + 1]int32
	pairNeedles []int32
}

// pairBuckets is the size of the byte-pair hash of signalTable.
const pairBuckets = 1 << 11

func pairBucket(pr int) int { return (pr * 0x9E37 >> 5) & (pairBuckets - 1) }

var (
	proseSignals = sync.OnceValue(func() *signalTable { return newSignalTable(false) })
	wordSignals  = sync.OnceValue(func() *signalTable { return newSignalTable(true) })
)

// signalTableFor is the table of t's reading.
func signalTableFor(words bool) *signalTable {
	if words {
		return wordSignals()
	}
	return proseSignals()
}

// readingRules is signalRules as a reading applies them: in prose "and"
// and "then" join steps of what a tool does, and only proseChain's
// semicolon sets an order apart.
func readingRules(words bool) []signalRule {
	out := make([]signalRule, 0, len(signalRules))
	for _, r := range signalRules {
		if r.sig == sigChain && !words {
			r.re = proseChain
		}
		out = append(out, r)
	}
	return out
}

func newSignalTable(words bool) *signalTable {
	st := &signalTable{rules: readingRules(words)}
	byPair := map[uint16][]int32{}
	index := map[string]int{}
	add := func(re *regexp.Regexp, sig signal) {
		b := int32(len(st.branches))
		p, err := syntax.Parse(re.String(), syntax.Perl)
		var lits []string
		unanchored := false
		if err == nil {
			p = p.Simplify()
			lits = gateLits(p)
			unanchored = !hasAnchor(p)
		}
		st.branches = append(st.branches, sigBranch{re: re, sig: sig, unanchored: unanchored})
		if lits == nil {
			st.alwaysSig |= sig
			st.always = setBit(st.always, int(b))
			return
		}
		for _, n := range slices.Compact(slices.Sorted(slices.Values(lits))) {
			i, ok := index[n]
			if !ok {
				i = len(st.needles)
				index[n] = i
				st.needles = append(st.needles, n)
				h, m := headWord(n)
				st.head, st.headMask = append(st.head, h), append(st.headMask, m)
				st.owners = append(st.owners, nil)
				if len(n) == 1 {
					st.single[n[0]] = append(st.single[n[0]], int32(i))
				} else {
					pr := uint16(n[0])<<8 | uint16(n[1])
					byPair[pr] = append(byPair[pr], int32(i))
				}
			}
			st.owners[i] = append(st.owners[i], b)
		}
	}
	for _, r := range st.rules {
		k := slices.Index(st.order, r.sig)
		if k < 0 {
			k = len(st.order)
			st.order = append(st.order, r.sig)
			st.bySig = append(st.bySig, nil)
		}
		from := len(st.branches)
		if g := r.re.get(); g.branches == nil {
			add(g.re, r.sig)
		} else {
			for _, b := range g.branches {
				add(b.re, r.sig)
			}
		}
		for b := from; b < len(st.branches); b++ {
			st.bySig[k] = append(st.bySig[k], int32(b))
		}
	}
	st.always = growBits(st.always, len(st.branches))
	buckets := make([][]int32, pairBuckets)
	for pr, ns := range byPair {
		st.starts[pr/64] |= 1 << (pr % 64)
		h := pairBucket(int(pr))
		buckets[h] = append(buckets[h], ns...)
	}
	for h, ns := range buckets {
		slices.Sort(ns)
		st.pairFrom[h] = int32(len(st.pairNeedles))
		st.pairNeedles = append(st.pairNeedles, ns...)
	}
	st.pairFrom[pairBuckets] = int32(len(st.pairNeedles))
	return st
}

// headWord returns the first eight bytes of s (all of a shorter s) as a
// little-endian word, and the mask of the bytes it holds.
func headWord(s string) (word, mask uint64) {
	for k := 0; k < 8 && k < len(s); k++ {
		word |= uint64(s[k]) << (8 * k)
		mask |= 0xff << (8 * k)
	}
	return word, mask
}

func growBits(bits []uint64, n int) []uint64 {
	for len(bits) < (n+63)/64 {
		bits = append(bits, 0)
	}
	return bits
}

func setBit(bits []uint64, i int) []uint64 {
	bits = growBits(bits, i+1)
	bits[i/64] |= 1 << (i % 64)
	return bits
}

// candidates marks in cand (the always set already) the branches whose
// needles folded, a sentence folded by canonFold, holds, and returns the
// signals of the marked branches.
func (st *signalTable) candidates(folded []byte, cand []uint64) signal {
	sigs := st.alwaysSig
	mark := func(n int32) {
		for _, b := range st.owners[n] {
			if cand[b/64]&(1<<(b%64)) == 0 {
				cand[b/64] |= 1 << (b % 64)
				sigs |= st.branches[b].sig
			}
		}
	}
	for i := 0; i < len(folded); i++ {
		for _, n := range st.single[folded[i]] {
			mark(n)
		}
		if i+1 == len(folded) {
			break
		}
		pr := int(folded[i])<<8 | int(folded[i+1])
		if st.starts[pr/64]&(1<<(pr%64)) == 0 {
			continue
		}
		h := pairBucket(pr)
		ns := st.pairNeedles[st.pairFrom[h]:st.pairFrom[h+1]]
		at, _ := headWord(string(folded[i:min(i+8, len(folded))]))
		for _, n := range ns {
			if at&st.headMask[n] != st.head[n] {
				continue
			}
			w := st.needles[n]
			if len(w) <= 8 || i+len(w) <= len(folded) && string(folded[i+8:i+len(w)]) == w[8:] {
				mark(n)
			}
		}
	}
	return sigs
}

// pairsWithin is the union of the pairs that sigs holds whole: the signals
// worth looking for when only sigs can be there.
func pairsWithin(sigs signal) signal {
	var rel signal
	for _, p := range signalPairs {
		if sigs&p.all == p.all {
			rel |= p.all
		}
	}
	return rel
}

// signalsGated is signals (its doc says what it returns) with the gate.
func (t *cleanText) signalsGated(seen []core.Flag) []core.Flag {
	st := signalTableFor(t.words)
	// whole answers, per signal, whether a rule of it matches the whole
	// text; known records which answers are in. It is asked of the
	// branches the needles of the whole text allow (a match may span
	// sentences), found in one more pass when first needed.
	var whole, known signal
	var wholeCand []uint64
	var wholeSigs signal
	var buf []byte
	inWhole := func(sig signal) bool {
		if known&sig != 0 {
			return whole&sig != 0
		}
		known |= sig
		if wholeCand == nil {
			wholeCand = slices.Clone(st.always)
			buf = appendGateText(buf[:0], t.text)
			wholeSigs = st.candidates(buf, wholeCand)
		}
		if wholeSigs&sig == 0 {
			return false
		}
		k := slices.Index(st.order, sig)
		for _, b := range st.bySig[k] {
			if wholeCand[b/64]&(1<<(b%64)) != 0 && st.branches[b].re.MatchString(t.text) {
				whole |= sig
				return true
			}
		}
		return false
	}
	cand := make([]uint64, len(st.always))
	var out []core.Flag
	for a := 0; a < len(t.text); {
		for a < len(t.text) && (t.text[a] == ' ' || t.text[a] == '\t') {
			a++
		}
		z := sentenceEnd(t.text, a)
		buf = appendGateText(buf[:0], t.text[a:z])
		copy(cand, st.always)
		sigs := st.candidates(buf, cand)
		if reason := st.sentenceReason(t.text[a:z], cand, sigs, &whole, &known, inWhole, t.words); reason != "" {
			start, end := t.span(a, z)
			if !slices.ContainsFunc(seen, func(f core.Flag) bool { return f.Start < end && start < f.End }) {
				out = append(out, core.Flag{Kind: core.FlagHiddenInstruction, Start: start, End: end, Reason: reason})
			}
		}
		a = next(t.text, z)
	}
	if len(out) == 0 && len(t.text) <= maxCrossText {
		for _, p := range crossPairs {
			if signalsAll(p.all, inWhole) {
				start, end := t.span(0, len(t.text))
				if !slices.ContainsFunc(seen, func(f core.Flag) bool { return f.Start < end && start < f.End }) {
					out = append(out, core.Flag{Kind: core.FlagHiddenInstruction, Start: start, End: end, Reason: p.reason})
				}
				break
			}
		}
	}
	return out
}

// signalsAll reports whether every signal of all holds by has.
func signalsAll(all signal, has func(signal) bool) bool {
	for s := signal(1); s != 0 && s <= all; s <<= 1 {
		if all&s != 0 && !has(s) {
			return false
		}
	}
	return true
}

// sentenceReason returns the reason of the first pair the sentence s
// carries of the signals the whole text carries, or "": what
// pairReason(unsaid(s, words, signalsIn(s, words, have))) gives when have is what the whole
// text holds. cand marks the branches whose needles s holds, sigs their
// signals. A rule's match in s found by an unanchored branch is a match in
// the whole text, recorded in whole and known.
func (st *signalTable) sentenceReason(s string, cand []uint64, sigs signal, whole, known *signal, inWhole func(signal) bool, words bool) string {
	rel := pairsWithin(sigs)
	if rel == 0 {
		return ""
	}
	var in signal
	for k, sig := range st.order {
		if rel&sig == 0 {
			continue
		}
		for _, b := range st.bySig[k] {
			br := &st.branches[b]
			if cand[b/64]&(1<<(b%64)) == 0 || !br.re.MatchString(s) {
				continue
			}
			in |= sig
			if br.unanchored {
				*whole |= sig
				*known |= sig
			}
			break
		}
		if in&sig == 0 {
			sigs &^= sig
			if rel = pairsWithin(sigs); rel == 0 {
				return ""
			}
		}
	}
	in = unsaid(s, words, in)
	for _, p := range signalPairs {
		if in&p.all == p.all && signalsAll(p.all, inWhole) {
			return p.reason
		}
	}
	return ""
}

// canonFold maps every character to one representative of the characters
// a case-insensitive match takes for it: an ASCII letter's lower case,
// otherwise the least of them. Unlike foldRune it folds every character
// safely (Cyrillic в and its old round form, ᲀ, fold to one), so every
// literal gives a needle.
func canonFold(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	m := r
	for o := unicode.SimpleFold(r); o != r; o = unicode.SimpleFold(o) {
		if o < utf8.RuneSelf {
			return unicode.ToLower(o)
		}
		m = min(m, o)
	}
	return m
}

// maxClassNeedles bounds the characters a class may stand for and still
// give each as a needle ([#@], [0-9]); maxExact the strings a piece of a
// pattern may stand for and still be spelled out.
const (
	maxClassNeedles = 10
	maxExact        = 64
)

// gateLits returns strings one of which every match of re holds, in a
// sentence read by appendGateText (case folded by canonFold, each run of
// white space one space); nil when some match need hold none.
func gateLits(re *syntax.Regexp) []string {
	if ex, ok := exactSet(re); ok {
		return usable(ex)
	}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return gateLits(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min > 0 {
			return gateLits(re.Sub[0])
		}
	case syntax.OpConcat:
		// the best of: each run of sub-patterns that spell out, spelled
		// out whole, and each other sub-pattern's needles
		var best []string
		consider := func(n []string) {
			if n != nil && better(n, best) {
				best = n
			}
		}
		var run []string
		for _, sub := range re.Sub {
			ex, ok := exactSet(sub)
			if ok && run != nil && len(run)*len(ex) <= maxExact {
				run = product(run, ex)
				continue
			}
			consider(usable(run))
			run = nil
			if ok {
				run = ex
				continue
			}
			consider(gateLits(sub))
		}
		consider(usable(run))
		return best
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			n := gateLits(sub)
			if n == nil {
				return nil
			}
			all = append(all, n...)
		}
		return all
	}
	return nil
}

// better: the shortest of a is longer than the shortest of b, or as long
// with fewer strings.
func better(a, b []string) bool {
	if b == nil {
		return true
	}
	sa, sb := shortest(a), shortest(b)
	return sa > sb || sa == sb && len(a) < len(b)
}

func shortest(ss []string) int {
	n := len(ss[0])
	for _, s := range ss {
		n = min(n, len(s))
	}
	return n
}

// usable is ss as needles: white space squeezed as appendGateText
// squeezes it; nil when one is empty or only a space, which every
// sentence may hold.
func usable(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		s = string(appendGateText(nil, s))
		if s == "" || s == " " {
			return nil
		}
		out = append(out, s)
	}
	// a needle that holds another adds nothing: drop it
	slices.SortFunc(out, func(a, b string) int { return len(a) - len(b) })
	keep := out[:0]
	for _, s := range out {
		if !slices.ContainsFunc(keep, func(k string) bool { return strings.Contains(s, k) }) {
			keep = append(keep, s)
		}
	}
	return keep
}

func product(a, b []string) []string {
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return out
}

// exactSet returns the strings re matches, folded, with a space for each
// run of white space, when there are at most maxExact of them.
func exactSet(re *syntax.Regexp) ([]string, bool) {
	if zeroWidth(re) {
		return []string{""}, true
	}
	switch re.Op {
	case syntax.OpLiteral:
		return []string{string(appendFoldedRunes(nil, re.Rune))}, true
	case syntax.OpCharClass:
		if spaceClass(re.Rune) {
			return []string{" "}, true
		}
		if n := classLits(re.Rune); n != nil {
			return n, true
		}
	case syntax.OpPlus:
		if spaceClass(classOf(re.Sub[0])) {
			return []string{" "}, true
		}
	case syntax.OpStar:
		if spaceClass(classOf(re.Sub[0])) {
			return []string{"", " "}, true
		}
	case syntax.OpQuest:
		if ex, ok := exactSet(re.Sub[0]); ok && len(ex) < maxExact {
			return append([]string{""}, ex...), true
		}
	case syntax.OpCapture:
		return exactSet(re.Sub[0])
	case syntax.OpConcat:
		out := []string{""}
		for _, sub := range re.Sub {
			ex, ok := exactSet(sub)
			if !ok || len(out)*len(ex) > maxExact {
				return nil, false
			}
			out = product(out, ex)
		}
		return out, true
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			ex, ok := exactSet(sub)
			if !ok || len(out)+len(ex) > maxExact {
				return nil, false
			}
			out = append(out, ex...)
		}
		return out, true
	}
	return nil, false
}

// classOf is the ranges of a class, or nil for anything else.
func classOf(re *syntax.Regexp) []rune {
	if re.Op == syntax.OpCharClass {
		return re.Rune
	}
	if re.Op == syntax.OpLiteral && len(re.Rune) == 1 && re.Flags&syntax.FoldCase == 0 {
		return []rune{re.Rune[0], re.Rune[0]}
	}
	return nil
}

// zeroWidth: re matches only the empty string (\b, ^, $).
func zeroWidth(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	return false
}

// isGateSpace: the white space a phrase's space stands for (\s and
// Unicode's separators), which appendGateText reads as one space.
func isGateSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\f', '\r':
		return true
	}
	return r >= utf8.RuneSelf && unicode.In(r, unicode.Z)
}

// spaceClass: every character of the class is white space.
func spaceClass(ranges []rune) bool {
	for i := 0; i+1 < len(ranges); i += 2 {
		if ranges[i+1]-ranges[i] > 64 {
			return false
		}
		for r := ranges[i]; r <= ranges[i+1]; r++ {
			if !isGateSpace(r) {
				return false
			}
		}
	}
	return len(ranges) > 0
}

// appendGateText appends s as the needles are looked for in it: folded by
// canonFold, each run of white space one space.
func appendGateText(dst []byte, s string) []byte {
	space := false
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			if c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' {
				if !space {
					dst = append(dst, ' ')
				}
				space = true
				continue
			}
			space = false
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if isGateSpace(r) {
			if !space {
				dst = append(dst, ' ')
			}
			space = true
			continue
		}
		space = false
		dst = utf8.AppendRune(dst, canonFold(r))
	}
	return dst
}

// classLits gives each character of a small class, folded, as a needle.
func classLits(ranges []rune) []string {
	var rs []rune
	for i := 0; i+1 < len(ranges); i += 2 {
		if ranges[i+1]-ranges[i] >= 4*maxClassNeedles {
			return nil
		}
		for r := ranges[i]; r <= ranges[i+1]; r++ {
			if f := canonFold(r); !slices.Contains(rs, f) {
				rs = append(rs, f)
			}
			if len(rs) > maxClassNeedles {
				return nil
			}
		}
	}
	if len(rs) == 0 {
		return nil
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

func appendFoldedRunes(dst []byte, rs []rune) []byte {
	for _, r := range rs {
		dst = utf8.AppendRune(dst, canonFold(r))
	}
	return dst
}

// hasAnchor: re holds ^, $, \A or \z somewhere.
func hasAnchor(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return true
	}
	return slices.ContainsFunc(re.Sub, hasAnchor)
}
