package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/toolgate/toolgate/core/schema/redos"
)

// IM-17: identical schema bytes compile once; the cached schema is the same
// value, still verbatim, and a schema differing only in whitespace is its
// own entry with its own bytes.
func TestIM17SchemaCacheSharesIdenticalBytes(t *testing.T) {
	raw := `{"type":"object","properties":{"cache-test-1":{"type":"string","pattern":"^[a-z]+$"}}}`
	a := mustCompile(t, raw)
	b := mustCompile(t, raw)
	if a != b {
		t.Error("identical bytes compiled twice")
	}
	spaced := mustCompile(t, " "+raw)
	if spaced == a || string(spaced.Raw()) != " "+raw || string(a.Raw()) != raw {
		t.Errorf("whitespace variant shares an entry: %q / %q", spaced.Raw(), a.Raw())
	}
	if err := b.Validate(json.RawMessage(`{"cache-test-1":"ABC"}`)); err == nil {
		t.Error("the cached schema accepts what it must refuse")
	}
}

// IM-18, IM-19: a refused schema is refused again, the same way, whether it
// comes from the cache or not: same text, same error kinds, same pointer.
func TestIM19SchemaCacheRefusesHostileAgain(t *testing.T) {
	for _, raw := range []string{
		`{"type":"object","properties":{"cache-test-2":{"type":"string","pattern":"(a|a)*"}}}`,
		`{"type":"object","properties":{"cache-test-3":{"type":"string","pattern":"(?=a"}}}`,
		`{"type":"strnig","cache-test-4":1}`,
		`{"type":`,
	} {
		var first error
		for i := range 3 {
			s, err := CompileSchema(json.RawMessage(raw))
			if s != nil || !errors.Is(err, ErrSchemaInvalid) {
				t.Fatalf("%s, try %d: %v, %v; want a refusal", raw, i, s, err)
			}
			if i == 0 {
				first = err
				continue
			}
			if err.Error() != first.Error() || errors.Is(err, ErrDangerousPattern) != errors.Is(first, ErrDangerousPattern) {
				t.Errorf("%s, try %d: %v; first %v", raw, i, err, first)
			}
			var d1, d2 *DangerousPatternError
			if errors.As(first, &d1) != errors.As(err, &d2) || d1 != nil && *d1 != *d2 {
				t.Errorf("%s, try %d: pattern error %+v, first %+v", raw, i, d2, d1)
			}
		}
	}
}

// IM-19: a verdict reached under one screen budget is not reused under
// another.
func TestIM19SchemaCacheKeysTheBudget(t *testing.T) {
	words := make([]string, 60)
	for i := range words {
		words[i] = fmt.Sprintf("w%03dy", i)
	}
	raw := `{"type":"object","properties":{"cache-test-5":{"type":"string","pattern":"^(?:` + strings.Join(words, "|") + `)+$"}}}`
	mustCompile(t, raw)
	defer func(b int) { redos.ScreenWorkBudget = b }(redos.ScreenWorkBudget)
	redos.ScreenWorkBudget = 1000
	if _, err := CompileSchema(json.RawMessage(raw)); !errors.Is(err, ErrDangerousPattern) {
		t.Errorf("under a small budget: %v, want the pattern refused as too complex", err)
	}
}

// The cache keeps at most its entries and its cost, least recently used
// out first, and never stores what alone exceeds a tenth of the cost.
// Covers IM-17.
func TestLRUBounds(t *testing.T) {
	c := newLRU[int, int](3, 100)
	calls := 0
	get := func(k, cost int) int {
		return c.do(k, cost, func() int { calls++; return k * 10 })
	}
	for k := range 3 {
		get(k, 5)
	}
	get(0, 5) // 0 is now the most recently used
	get(3, 5) // evicts 1
	if n, cost := c.len(); n != 3 || cost != 15 {
		t.Fatalf("%d entries costing %d, want 3 costing 15", n, cost)
	}
	calls = 0
	for _, k := range []int{0, 2, 3} {
		if v := get(k, 5); v != k*10 {
			t.Fatalf("get(%d) = %d", k, v)
		}
	}
	if calls != 0 {
		t.Errorf("%d recomputations of cached keys", calls)
	}
	get(1, 5)
	if calls != 1 {
		t.Errorf("the evicted key was not recomputed")
	}
	get(9, 11) // over a tenth of the cost: computed, not kept
	get(9, 11)
	if calls != 3 {
		t.Errorf("an oversized value was cached (%d computations)", calls)
	}
	c2 := newLRU[int, int](100, 30)
	for k := range 10 {
		c2.do(k, 3, func() int { return k })
	}
	c2.do(10, 3, func() int { return 10 })
	if n, cost := c2.len(); cost > 30 || n != 10 {
		t.Errorf("%d entries costing %d, want 10 within 30", n, cost)
	}
}

// Concurrent misses on one key compute it once; a computation that panics
// lets its waiters compute for themselves.
// Covers IM-17.
func TestLRUConcurrentMisses(t *testing.T) {
	c := newLRU[string, int](10, 1000)
	var computed atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			v := c.do("k", 1, func() int {
				computed.Add(1)
				<-release
				return 42
			})
			if v != 42 {
				t.Errorf("got %d", v)
			}
		})
	}
	for computed.Load() == 0 {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	if n := computed.Load(); n != 1 {
		t.Errorf("computed %d times, want once", n)
	}

	started := make(chan struct{})
	boom := make(chan struct{})
	done := make(chan int)
	go func() {
		defer func() { _ = recover() }()
		c.do("p", 1, func() int { close(started); <-boom; panic("boom") })
	}()
	<-started
	go func() { done <- c.do("p", 1, func() int { return 7 }) }()
	close(boom)
	if v := <-done; v != 7 {
		t.Errorf("waiter after a panic got %d, want its own 7", v)
	}
}

const cacheBenchSchema = `{"type":"object","properties":{"id":{"type":"string","pattern":"^[a-z0-9-]{1,40}$"},"n":{"type":"integer","minimum":0}},"required":["id"]}`

// BenchmarkCompileSchemaCache is one tool's schema at import: compiled and
// screened from scratch (cold), and found in the cache (cached), as every
// tool after the first with the same schema is.
func BenchmarkCompileSchemaCache(b *testing.B) {
	raw := json.RawMessage(cacheBenchSchema)
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := compileSchema(raw, jsonschema.Draft2020); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := CompileSchema(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
