package bench

import (
	"slices"
	"testing"
)

// Every order ranks each upstream once.
func TestBenchStartupRanks(t *testing.T) {
	for _, order := range []string{"ascending", "descending", "shuffled"} {
		r := startupRanks(20, order)
		seen := map[int]bool{}
		for _, v := range r {
			seen[v] = true
		}
		if len(seen) != 20 || slices.Min(r) != 0 || slices.Max(r) != 19 {
			t.Errorf("%s: %v is not a permutation of 0..19", order, r)
		}
		if order == "descending" && r[0] != 19 {
			t.Errorf("descending: the slowest is not configured first: %v", r)
		}
		if order == "shuffled" && !slices.Equal(r, startupRanks(20, order)) {
			t.Errorf("shuffled differs between calls")
		}
	}
}
