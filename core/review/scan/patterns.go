package scan

import (
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/jsontree"
	"github.com/toolgate/toolgate/core/schema/redos"
)

// The cost of a slow pattern in a client: a backtracking engine tries about
// n^d ways to fail on n characters, d the pattern's degree, and takes
// slowSeconds(d, n) ≈ c_d·n^d seconds.
//
// c_d was measured in V8 (Node 20, RegExp.prototype.test with the "u" flag
// ajv uses), on a shared two-core machine under load, timing each pattern
// on its attack string (a pumped input that fails at the end) at lengths
// growing by half until one test took 0.2 s, and dividing by n^d
// (testdata/schemas/slow-patterns.mjs). Runs vary by a factor of two to
// four with the machine's load and V8's tier-up from its regexp
// interpreter to native code.
//
// Degree 2, nine patterns (`\s+$`, `[a-z]+$`, `^.*a.*b$`, `^\d+\d+$`, the
// common float `^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$`,
// `^[^@\s]+@[^@\s]+\.[^@\s]+$`, ms's duration pattern, moment's
// `\([^)]*\)`, ua-parser-js's POCO rule): 1.0e-9 to 2.2e-8, a second at
// 6,700 to 32,000 characters. Degree 3, eight
// patterns (`\d+\d+x`, `^.*.*.*=$`, `\s+\s+$`, `^\d+\d+\d+$`,
// `^\S+@\S+\.\S+$`, `\s*(?:[\w\s]*\/)?\s*([\w.]+)\s*$`, …): 3.1e-10 to
// 3.9e-9, a second at 630 to 1,650 characters; ajv-formats' url, whose
// cubic chain needs a narrower input, took a second only at about 10,000.
// c_d is the slowest of each degree rounded up, so the lengths reported err
// short, as the screen errs towards flagging. dlclark/regexp2, a Go
// backtracking engine, is 10 to 20 times slower than V8 on the same inputs
// (`\s+$` 8.8e-8, `^.*.*.*=$` 2.4e-8); clients validate in V8 or engines
// like it. A degree above 3 (only if redos.MinPolynomialDegree is raised)
// takes c_3: the constant falls as the degree rises, so it overestimates.
const (
	slowC2 = 2.5e-8
	slowC3 = 4e-9
)

// slowBound is the cost below which a maxLength makes a slow pattern
// harmless: a tenth of a second, about the longest a pause goes unnoticed
// (the limit of an instantaneous response). A degree-2 pattern under
// maxLength 2,000 and a degree-3 one under about 290 stay below it.
const slowBound = 0.1

func slowCoefficient(degree int) float64 {
	if degree == 2 {
		return slowC2
	}
	return slowC3
}

// slowSeconds estimates how long a backtracking engine takes on n
// characters of an input built to fail.
func slowSeconds(degree int, n float64) float64 {
	return slowCoefficient(degree) * math.Pow(n, float64(degree))
}

// slowLength is the input length at which that takes seconds.
func slowLength(degree int, seconds float64) float64 {
	return math.Pow(seconds/slowCoefficient(degree), 1/float64(degree))
}

// slowPatternFlags flags each pattern of the input and output schemas that
// the pattern screen (IM-19) serves but that backtracks polynomially, unless
// a maxLength keeps it under slowBound. It walks the schemas as the screen
// does (core/schema's pattern walk): "pattern" strings and
// "patternProperties" keys at any depth, $defs and unknown keywords
// included, const, enum, default and examples left out, and local "#/…"
// references followed into whatever they point at.
func slowPatternFlags(in ScanInput) []core.Flag {
	var out []core.Flag
	for _, s := range []struct {
		raw   []byte
		where string
	}{{in.InputSchema, ""}, {in.OutputSchema, OutputSchemaWhere}} {
		if len(s.raw) == 0 {
			continue
		}
		root, err := jsontree.DecodeJSONTree(s.raw)
		if err != nil {
			continue
		}
		w := &patternWalk{prefix: s.where}
		jsontree.WalkSchemaPatterns(root, func(site jsontree.PatternSite) {
			switch {
			case !site.Key:
				w.check(site.Pattern, site.Pointer, maxLength(site.Schema, "maxLength"), "")
			case site.Value.Kind != 's':
				// A pointer to a string would mean that string, not the key;
				// a string is no schema, and the importer refuses it.
				w.check(site.Pattern, site.Pointer, propertyNamesMaxLength(site.Schema), "property name")
			}
		})
		out = append(out, w.flags...)
	}
	return out
}

// patternWalk collects the flags of one schema's patterns.
type patternWalk struct {
	prefix string // "" for the input schema, OutputSchemaWhere for the output one
	flags  []core.Flag
}

// maxLength returns the largest numeric value of key among n's members
// (duplicates included: a client's parser may keep either), or -1.
func maxLength(n *jsontree.JsonNode, key string) float64 {
	limit := -1.0
	for i, k := range n.Keys {
		if k != key || n.Elems[i].Num == "" {
			continue
		}
		if f, err := n.Elems[i].Num.Float64(); err == nil && f >= 0 {
			limit = max(limit, f)
		}
	}
	return limit
}

// propertyNamesMaxLength is the bound propertyNames puts on the names a
// patternProperties key is tried on, or -1.
func propertyNamesMaxLength(n *jsontree.JsonNode) float64 {
	limit := -1.0
	for i, k := range n.Keys {
		if k == "propertyNames" && n.Elems[i].Kind == 'o' {
			limit = max(limit, maxLength(n.Elems[i], "maxLength"))
		}
	}
	return limit
}

// check flags pattern at ptr when it is slow at the inputs limit lets
// through (-1: none). A maxLength is taken as what stops a long value
// before the pattern runs: validators that stop at the first failing
// keyword check lengths first (ajv's order), and one that reports every
// failure pays for the pattern anyway.
func (w *patternWalk) check(pattern, ptr string, limit float64, subject string) {
	b := backtracking(pattern)
	if b.Refused || b.Degree < 2 {
		return
	}
	if limit >= 0 && slowSeconds(b.Degree, limit) < slowBound {
		return
	}
	what, keyword, bound := "a value", "its maxLength", "no maxLength bounds it"
	if subject != "" {
		what, keyword, bound = "a "+subject, "propertyNames' maxLength", "no propertyNames maxLength bounds the names"
	}
	if limit >= 0 {
		bound = fmt.Sprintf("%s of %.0f lets one take %s", keyword, limit, aboutSeconds(slowSeconds(b.Degree, limit)))
	}
	where := ptr
	if w.prefix != "" {
		where = w.prefix + ptr
	}
	w.flags = append(w.flags, core.Flag{
		Kind: core.FlagSlowPattern, Where: where, Start: 0, End: len(pattern),
		Reason: fmt.Sprintf("backtracks polynomially (degree %d, %s): a client's backtracking validator takes about a second on %s of %s characters, and %s",
			b.Degree, clip(b.Chain, 80), what, roundLength(slowLength(b.Degree, 1)), bound),
	})
}

// roundLength writes n to two significant figures, with thousands
// separators: an estimate, not a count.
func roundLength(n float64) string {
	if n >= 100 {
		scale := math.Pow(10, math.Floor(math.Log10(n))-1)
		n = math.Round(n/scale) * scale
	}
	s := strconv.FormatFloat(math.Round(n), 'f', 0, 64)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func aboutSeconds(s float64) string {
	switch {
	case s < 10:
		return fmt.Sprintf("about %.1f s", s)
	case s < 600:
		return fmt.Sprintf("about %.0f s", s)
	case s < 7200:
		return fmt.Sprintf("about %.0f minutes", s/60)
	}
	return "hours"
}

// The screen of one pattern can cost up to redos.ScreenWorkBudget, and
// every view of a tool scans it again: verdicts are kept, up to
// maxBacktrackingCache patterns, then forgotten all at once.
const maxBacktrackingCache = 4096

type backtrackingKey struct {
	pattern        string
	budget, minDeg int
}

var (
	backtrackingMu    sync.Mutex
	backtrackingCache = map[backtrackingKey]redos.Backtracking{}
)

func backtracking(pattern string) redos.Backtracking {
	k := backtrackingKey{pattern, redos.ScreenWorkBudget, redos.MinPolynomialDegree}
	backtrackingMu.Lock()
	b, ok := backtrackingCache[k]
	backtrackingMu.Unlock()
	if ok {
		return b
	}
	b = redos.PatternBacktracking(pattern)
	backtrackingMu.Lock()
	if len(backtrackingCache) >= maxBacktrackingCache {
		clear(backtrackingCache)
	}
	backtrackingCache[k] = b
	backtrackingMu.Unlock()
	return b
}
