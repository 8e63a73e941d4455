package serve

import (
	"regexp"
	"testing"
)

// A call's id sorts with the calls made before it, so the audit's index
// on call ids grows at its end, and keeps 64 random bits; the idempotency
// key stays 128 random bits (OP-6).
func TestCallIDsSortInTimeOrderOP6(t *testing.T) {
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	prev := ""
	seen := map[string]bool{}
	for range 1000 {
		id, key := randomIDPair()
		if !hex32.MatchString(id) || !hex32.MatchString(key) {
			t.Fatalf("id %q, key %q: want 32 hex digits each", id, key)
		}
		if prev != "" && id[:16] < prev[:16] {
			t.Fatalf("call id %s sorts before the one made before it, %s", id, prev)
		}
		if seen[id[16:]] || seen[key] {
			t.Fatalf("random part repeated: %s %s", id, key)
		}
		seen[id[16:]], seen[key] = true, true
		prev = id
	}
}
