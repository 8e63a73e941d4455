package redos

import (
	"regexp/syntax"
	"slices"
)

// MinPolynomialDegree is the degree of polynomial backtracking the screen
// refuses: a chain of this many quantifiers that can share one input, each
// able to hand it on to the next (`^(a+){4}$`). Degree 4 costs V8 seconds on
// a few hundred characters. Degree 3 passes: it needs kilobytes for the same
// (ajv-formats' url, cubic through its user, password and path parts, takes
// 0.2 s on 3,200 characters; `^\S+@\S+\.\S+$` 1.4 s on 2,000), and it is
// common in published schemas. Degree 2 (`^\d+\d+$`, `^.*a.*b$`, `\s+$`)
// is everywhere.
var MinPolynomialDegree = 4

// Backtracking is what the screen finds in one pattern: whether it refuses
// the pattern, and for one it passes the degree of polynomial backtracking
// that is left.
type Backtracking struct {
	// Refused: ScreenPattern refuses the pattern (Reason says why); Degree
	// and Chain are then not set.
	Refused bool
	Reason  string
	// Degree is the longest chain of quantifiers that can share one input
	// (MinPolynomialDegree's measure): a backtracking engine may take about
	// n^Degree steps on n characters. 1 is linear, 0 a pattern without an
	// unbounded repetition or one the screen cannot parse. A pattern
	// passed has a degree below MinPolynomialDegree.
	Degree int
	// Chain names the quantifiers of that chain, "x then y", outermost
	// first; "[^]* (an unanchored start)" is the retry at every offset of
	// a pattern without ^.
	Chain string
}

// PatternBacktracking screens an ECMA-262 pattern like ScreenPattern and
// reports the degree of what the screen lets through, so a reviewer can be
// shown the slow patterns the gateway still serves (RV-2, IM-19).
func PatternBacktracking(pattern string) Backtracking {
	reason, refused, degree, chain := screen(pattern)
	if refused {
		return Backtracking{Refused: true, Reason: reason}
	}
	return Backtracking{Degree: degree, Chain: chain}
}

// Bounded repeats have no loop to pump, but nesting them multiplies the
// ways to read one input: `^(a{1,10}){1,10}$` reads 34 a's in tens of
// millions of ways. The screen counts the ways, along the most ambiguous
// input it can build, for inputs up to BoundedInputLength characters, and
// refuses more than MaxBoundedWays; a backtracking engine tries each of
// them before it fails.
const BoundedInputLength = 64

var MaxBoundedWays = 1e7

// maxCandidates bounds the characters tried at each step of boundedWays.
const maxCandidates = 256

// degree returns the degree of polynomial ambiguity of the automaton (the
// IDA criterion of Weber and Seidl): the longest chain of loops p1 … pd
// where, for some word v, pi reads v back to itself, pi+1 does too, and pi
// reads v to pi+1. Each link multiplies the ways to split a pumped input by
// its length. The search stops at its first success, so no way through a
// position in last (where a match ends with no $ still to pass) is ever
// backtracked: unless ended, those positions are left out. It also returns the loops of the chain,
// outermost start first.
func (a *automaton) degree(last []int32, ended bool) (int, []*rxNode, bool) {
	n := int32(len(a.posLabel))
	if n == 0 {
		return 0, nil, false
	}
	final := make([]bool, n)
	if !ended {
		for _, p := range last {
			final[p] = true
		}
	}
	succ := make([][]int32, n)
	for _, e := range a.edges {
		if !final[e.from] && !final[e.to] {
			succ[e.from] = append(succ[e.from], e.to)
		}
	}
	self := make([]bool, n)
	for p := range succ {
		slices.Sort(succ[p])
		succ[p] = slices.Compact(succ[p])
		self[p] = slices.Contains(succ[p], int32(p))
	}
	comp, ncomp := components(succ)
	members := make([][]int32, ncomp)
	for p, c := range comp {
		members[c] = append(members[c], int32(p))
	}
	var cyclic []int32
	for c := int32(0); c < ncomp; c++ {
		if len(members[c]) > 1 || self[members[c][0]] {
			cyclic = append(cyclic, c)
		}
	}
	if len(cyclic) < 2 {
		return len(cyclic), a.loopsOf(members, cyclic), false
	}
	// Which cyclic components each one reaches, and for each target the
	// positions that can still reach it.
	reaches := map[[2]int32]bool{}
	for _, c := range cyclic {
		seen := make([]bool, n)
		queue := slices.Clone(members[c])
		for _, p := range queue {
			seen[p] = true
		}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			*a.work++
			for _, q := range succ[p] {
				if !seen[q] {
					seen[q] = true
					queue = append(queue, q)
					reaches[[2]int32{c, comp[q]}] = true
				}
			}
		}
	}
	if *a.work > ScreenWorkBudget {
		return 0, nil, true
	}
	pred := make([][]int32, n)
	for p, ss := range succ {
		for _, q := range ss {
			pred[q] = append(pred[q], int32(p))
		}
	}
	toward := map[int32][]bool{}
	canReach := func(c int32) []bool {
		if r, ok := toward[c]; ok {
			return r
		}
		r := make([]bool, n)
		queue := slices.Clone(members[c])
		for _, p := range queue {
			r[p] = true
		}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			*a.work++
			for _, q := range pred[p] {
				if !r[q] {
					r[q] = true
					queue = append(queue, q)
				}
			}
		}
		toward[c] = r
		return r
	}
	link := map[[2]int32]bool{}
	for _, cp := range cyclic {
		for _, cq := range cyclic {
			if cp == cq || !reaches[[2]int32{cp, cq}] {
				continue
			}
			r := canReach(cq)
		pairs:
			for _, p := range members[cp] {
				for _, q := range members[cq] {
					if !a.meet(a.posLabel[p], a.posLabel[q]) {
						continue
					}
					ok, exhausted := a.pumpsTogether(succ, comp, r, p, q)
					if exhausted {
						return 0, nil, true
					}
					if ok {
						link[[2]int32{cp, cq}] = true
						break pairs
					}
				}
			}
		}
	}
	// Components are numbered sinks first, so links go from higher numbers
	// to lower ones.
	best := map[int32]int{}
	prev := map[int32]int32{}
	slices.SortFunc(cyclic, func(x, y int32) int { return int(y - x) })
	deg, end := 0, int32(-1)
	for _, c := range cyclic {
		best[c], prev[c] = 1, -1
		for _, b := range cyclic {
			if b > c && link[[2]int32{b, c}] && best[b]+1 > best[c] {
				best[c], prev[c] = best[b]+1, b
			}
		}
		if best[c] > deg {
			deg, end = best[c], c
		}
	}
	var chain []int32
	for c := end; c >= 0; c = prev[c] {
		chain = append(chain, c)
	}
	slices.Reverse(chain)
	return deg, a.loopsOf(members, chain), false
}

// pumpsTogether reports whether some word v reads p back to p, p to q, and
// q back to q, searching the product of three copies of the automaton from
// (p, p, q) for (p, q, q). The first copy stays in p's component and the
// third in q's, since they must come back; the second must still be able to
// reach q.
func (a *automaton) pumpsTogether(succ [][]int32, comp []int32, toQ []bool, p, q int32) (bool, bool) {
	type triple struct{ x, y, z int32 }
	cp, cq := comp[p], comp[q]
	seen := map[triple]bool{{p, p, q}: true}
	queue := []triple{{p, p, q}}
	for len(queue) > 0 {
		t := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		*a.work += workPerPair
		for _, x := range succ[t.x] {
			if comp[x] != cp {
				continue
			}
			for _, y := range succ[t.y] {
				if !toQ[y] || !a.meet(a.posLabel[x], a.posLabel[y]) {
					continue
				}
				for _, z := range succ[t.z] {
					if *a.work++; *a.work > ScreenWorkBudget {
						return false, true
					}
					if comp[z] != cq || !a.meet3(a.posLabel[x], a.posLabel[y], a.posLabel[z]) {
						continue
					}
					if x == p && y == q && z == q {
						return true, false
					}
					if next := (triple{x, y, z}); !seen[next] {
						seen[next] = true
						queue = append(queue, next)
					}
				}
			}
		}
	}
	return false, false
}

// meet3 reports whether three labels share a character.
func (a *automaton) meet3(x, y, z int32) bool {
	if !a.meet(x, y) || !a.meet(y, z) || !a.meet(x, z) {
		return false
	}
	k := [3]int32{x, y, z}
	slices.Sort(k[:])
	if v, ok := a.meets3[k]; ok {
		return v
	}
	v := rangesMeet(intersectRanges(a.labels[x], a.labels[y]), a.labels[z])
	if a.meets3 == nil {
		a.meets3 = map[[3]int32]bool{}
	}
	a.meets3[k] = v
	return v
}

// intersectRanges intersects two sorted lists of lo-hi pairs.
func intersectRanges(x, y []rune) []rune {
	var out []rune
	for i, j := 0, 0; i+1 < len(x) && j+1 < len(y); {
		lo, hi := max(x[i], y[j]), min(x[i+1], y[j+1])
		if lo <= hi {
			out = append(out, lo, hi)
		}
		if x[i+1] < y[j+1] {
			i += 2
		} else {
			j += 2
		}
	}
	return out
}

// loopsOf names, for each component, the innermost loop holding it.
func (a *automaton) loopsOf(members [][]int32, comps []int32) []*rxNode {
	var out []*rxNode
	for _, c := range comps {
		p := members[c][0]
		for _, l := range a.loops { // inner loops first
			if p >= l.pos && p < l.posEnd {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// components numbers the strongly connected components of a graph
// (Tarjan's algorithm, with an explicit stack), sinks first.
func components(succ [][]int32) ([]int32, int32) {
	n := int32(len(succ))
	index := make([]int32, n)
	low := make([]int32, n)
	comp := make([]int32, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int32
	var next, ncomp int32
	type frame struct{ v, i int32 }
	for root := int32(0); root < n; root++ {
		if index[root] >= 0 {
			continue
		}
		frames := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(frames) > 0 {
			f := &frames[len(frames)-1]
			if f.i < int32(len(succ[f.v])) {
				w := succ[f.v][f.i]
				f.i++
				switch {
				case index[w] < 0:
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					frames = append(frames, frame{w, 0})
				case onStack[w]:
					low[f.v] = min(low[f.v], index[w])
				}
				continue
			}
			v := f.v
			frames = frames[:len(frames)-1]
			if len(frames) > 0 {
				u := frames[len(frames)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] != index[v] {
				continue
			}
			for {
				x := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[x] = false
				comp[x] = ncomp
				if x == v {
					break
				}
			}
			ncomp++
		}
	}
	return comp, ncomp
}

// boundedWays counts the ways the automaton reads the most ambiguous input
// it can build, one character at a time, up to BoundedInputLength
// characters: at each step the character that keeps the most ways open.
// Every way is one a backtracking engine tries before failing. It returns
// the count and the counted repeat to name, or 0 when the pattern has no
// counted repeat with a range.
func (a *automaton) boundedWays(f followSets, ended bool) (float64, *syntax.Regexp) {
	if len(a.counted) == 0 {
		return 0, nil
	}
	var at *rxNode
	for _, c := range a.counted {
		if at == nil || c.posEnd-c.pos > at.posEnd-at.pos {
			at = c
		}
	}
	return a.ways(f, ended, BoundedInputLength, MaxBoundedWays), at.src
}

// ways follows the most ambiguous input one character at a time, for up to
// length characters or until the count passes limit, and returns the count.
// The input is left in a.witness.
func (a *automaton) ways(f followSets, ended bool, length int, limit float64) float64 {
	if !ended && f.nullable {
		return 0
	}
	var cands []rune
	seen := map[rune]bool{}
	for _, rs := range a.labels {
		for _, r := range rs {
			if !seen[r] && len(cands) < maxCandidates {
				seen[r] = true
				cands = append(cands, r)
			}
		}
	}
	holds := make([][]int32, len(a.labels)) // candidates in each label
	for l, rs := range a.labels {
		for ci, c := range cands {
			if rangesMeet(rs, []rune{c, c}) {
				holds[l] = append(holds[l], int32(ci))
			}
		}
	}
	*a.work += len(a.labels) * len(cands)
	n := len(a.posLabel)
	isLast := make([]bool, n)
	for _, p := range f.last {
		isLast[p] = true
	}
	cnt := make([]float64, n)
	agg := make([]float64, n)
	byCand := make([]float64, len(cands))
	total := 0.0
	for d := 1; d <= length; d++ {
		clear(agg)
		if d == 1 {
			for _, p := range f.first {
				agg[p]++
			}
		} else {
			for _, e := range a.edges {
				agg[e.to] += cnt[e.from]
			}
		}
		if *a.work += len(a.edges) + n; *a.work > ScreenWorkBudget {
			break // a supplement to the loop checks: give up quietly
		}
		clear(byCand)
		for q, w := range agg {
			if w > 0 {
				for _, ci := range holds[a.posLabel[q]] {
					byCand[ci] += w
				}
			}
		}
		bestC, bestW := 0, 0.0
		for ci, w := range byCand {
			if w > bestW {
				bestC, bestW = ci, w
			}
		}
		if bestW == 0 {
			break
		}
		a.witness = append(a.witness, cands[bestC])
		c := []rune{cands[bestC], cands[bestC]}
		accepted := false
		for q, w := range agg {
			if w > 0 && rangesMeet(a.labels[a.posLabel[q]], c) {
				cnt[q] = w
				accepted = accepted || isLast[q]
			} else {
				cnt[q] = 0
			}
		}
		total += bestW
		if total > limit || (!ended && accepted) {
			break
		}
	}
	return total
}
