package schema

import (
	"strconv"

	"github.com/toolgate/toolgate/core/jsontree"
)

type schemaWalker struct {
	root    *jsontree.JsonNode
	walked  map[*jsontree.JsonNode]bool
	refs    []string
	verdict map[string]string // pattern -> reason ("" = safe), so repeats are screened once
	found   []*DangerousPatternError
}

// schema walks n as a schema. Unknown keywords are entered too: a "$ref"
// can point anywhere, so any object may end up used as a schema.
func (w *schemaWalker) schema(n *jsontree.JsonNode, ptr string) {
	if n.Kind == 'a' {
		for i, e := range n.Elems {
			w.schema(e, jsontree.PointerAppend(ptr, strconv.Itoa(i)))
		}
		return
	}
	if n.Kind != 'o' || w.walked[n] {
		return
	}
	w.walked[n] = true
	for i, k := range n.Keys {
		v, p := n.Elems[i], jsontree.PointerAppend(ptr, k)
		switch k {
		case "pattern":
			if v.Kind == 's' {
				w.check(v.Str, p)
			} else {
				w.schema(v, p)
			}
		case "patternProperties":
			if v.Kind == 'o' {
				for j, pk := range v.Keys {
					pp := jsontree.PointerAppend(p, pk)
					w.check(pk, pp)
					w.schema(v.Elems[j], pp)
				}
			}
		case "properties", "$defs", "definitions", "dependentSchemas", "dependencies":
			// Member names here are property or definition names, so a
			// member called "pattern" is a schema, never a regex.
			if v.Kind == 'o' {
				for j, name := range v.Keys {
					w.schema(v.Elems[j], jsontree.PointerAppend(p, name))
				}
			}
		case "$ref", "$dynamicRef", "$recursiveRef":
			if v.Kind == 's' {
				w.refs = append(w.refs, v.Str)
			}
		case "const", "enum", "default", "examples":
			// Data, not schemas.
		default:
			w.schema(v, p)
		}
	}
}

func (w *schemaWalker) check(pattern, ptr string) {
	reason, seen := w.verdict[pattern]
	if !seen {
		reason = screenCached(pattern)
		w.verdict[pattern] = reason
	}
	if reason != "" {
		w.found = append(w.found, &DangerousPatternError{Pointer: ptr, Pattern: pattern, Reason: reason})
	}
}
