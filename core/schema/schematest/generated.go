package schematest

import (
	"fmt"
	"slices"
	"strings"
)

// GeneratedPatterns is a corpus of patterns built from shapes rather than
// collected: nested and overlapping quantifiers with small and large bounds,
// alternations whose branches overlap or not, chains of quantifiers with
// and without separators, and real-world templates (lists, paths, e-mail,
// host names) filled with character sets that do or do not overlap the
// separators. Each shape comes anchored and unanchored. It is deterministic,
// and meant to be judged by an oracle, not labelled by hand.
func GeneratedPatterns() []string {
	atoms := []string{`a`, `\d`, `\w`, `[a-z0-9]`, `.`, `\S`, `[^,]`}
	inner := []string{`+`, `*`, `{1,3}`, `{1,10}`, `{0,20}`}
	outer := []string{`+`, `*`, `{1,5}`, `{1,10}`, `{3}`}
	seps := []string{`-`, `\.`, `,`, `@`, `\s`}
	var out []string
	add := func(p string) { out = append(out, p) }
	// Anchored at both ends, the usual form in schemas; at the end only,
	// so the search restarts at every offset; at the start only, so the
	// first success ends it. The last two for a share of each shape.
	n := 0
	anchorings := func(body string) {
		add("^" + body + "$")
		if n++; n%3 == 0 {
			add(body + "$")
		} else if n%3 == 1 {
			add("^" + body)
		}
	}

	// Nested quantifiers, bare and around a separator.
	for _, a := range atoms {
		for _, in := range inner {
			for _, o := range outer {
				anchorings("(" + a + in + ")" + o)
			}
		}
		for _, s := range seps {
			for _, o := range []string{`+`, `{1,10}`} {
				anchorings("(" + a + "+" + s + "?)" + o)
				anchorings("(" + a + "+" + s + ")" + o)
				anchorings("(?:" + s + a + "+)" + o)
			}
		}
	}

	// Alternations under a quantifier.
	for i, a := range atoms {
		for _, b := range atoms[i:] {
			for _, o := range []string{`+`, `{1,10}`} {
				anchorings("(" + a + "|" + b + ")" + o)
				anchorings("(" + a + "|" + b + b + ")" + o)
				anchorings("(?:" + a + "+|" + b + ")" + o)
			}
		}
	}

	// Chains of quantifiers: polynomial degree rises with each overlapping
	// link, and a separator the atom cannot read breaks it.
	for _, a := range atoms {
		for k := 2; k <= 5; k++ {
			for _, s := range []string{``, `-?`, `\s*`, `-`} {
				parts := []string{a + "+"}
				for range k - 1 {
					parts = append(parts, s+a+"*")
				}
				anchorings(strings.Join(parts, ""))
			}
			anchorings(fmt.Sprintf("(?:%s+){%d}", a, k))
			anchorings(fmt.Sprintf("(?:%s*,){%d}%s*", a, k, a))
		}
	}

	// Real-world templates, filled with overlapping and disjoint sets.
	word := []string{`\w`, `[a-z0-9]`, `[a-zA-Z0-9._-]`, `[^\s@]`, `\S`, `.`, `[^,]`, `[a-z0-9-]`}
	for _, w := range word {
		add(`^` + w + `+@` + w + `+\.` + w + `+$`)
		add(`^` + w + `+(?:\.` + w + `+)*@` + w + `+(?:\.` + w + `+)+$`)
		add(`^(` + w + `+\.?)+@` + w + `+$`)
		add(`^` + w + `+(?:,\s*` + w + `+)*$`)
		add(`^(?:` + w + `+,\s*)*` + w + `+$`)
		add(`^(?:` + w + `*,)*` + w + `*$`)
		add(`^(?:/` + w + `+)+/?$`)
		add(`^/?(?:` + w + `+/)*` + w + `*$`)
		add(`^(?:` + w + `+\.)+[a-z]{2,}$`)
		add(`^` + w + `{1,63}(?:\.` + w + `{1,63})*$`)
		add(`^(?:` + w + `{1,10}-?){1,10}$`)
		add(`^\s*` + w + `+\s*$`)
		add(`^` + w + `+\s*=\s*` + w + `*$`)
		add(`^(?:` + w + `+\s?)+$`)
		add(`^(?!\s)` + w + `+(?:\s` + w + `+)*$`)
		add(`^(?=` + w + `)(?:` + w + `+-)*` + w + `+$`)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
