package jsontree

import (
	"net/url"
	"strconv"
	"strings"
)

// PatternSite is one regular expression a schema document holds: a
// "pattern" string, or a "patternProperties" key.
type PatternSite struct {
	Pattern string
	// Pointer is where it is, RFC 6901 from the document's root: the
	// "pattern" member, or the patternProperties member named by the key.
	Pointer string
	// Schema is the schema object that holds it, for its siblings
	// (maxLength, propertyNames).
	Schema *JsonNode
	// Key is set for a patternProperties key; Value is then the schema the
	// key maps to.
	Key   bool
	Value *JsonNode
}

// WalkSchemaPatterns calls visit for every regular expression of the schema
// document root, wherever a validator could apply it: "pattern" strings
// and "patternProperties" keys at any depth, under $defs and unknown
// keywords too (a "$ref" can make any object a schema), but not inside
// const, enum, default or examples, which are data. Local "#…" references
// are followed into whatever they point at, data included; each object is
// walked once, so a pattern reached twice is visited once.
func WalkSchemaPatterns(root *JsonNode, visit func(PatternSite)) {
	w := &patternWalker{walked: map[*JsonNode]bool{}, visit: visit}
	w.schema(root, "")
	for i := 0; i < len(w.refs); i++ {
		frag, ok := strings.CutPrefix(w.refs[i], "#")
		if !ok {
			continue // another document: the loader never fetches one
		}
		if f, err := url.PathUnescape(frag); err == nil {
			frag = f
		}
		if frag != "" && !strings.HasPrefix(frag, "/") {
			continue // an anchor names a schema the walk has already seen
		}
		if target := root.Lookup(frag); target != nil {
			w.schema(target, frag)
		}
	}
}

type patternWalker struct {
	walked map[*JsonNode]bool
	refs   []string
	visit  func(PatternSite)
}

func (w *patternWalker) schema(n *JsonNode, ptr string) {
	if n.Kind == 'a' {
		for i, e := range n.Elems {
			w.schema(e, PointerAppend(ptr, strconv.Itoa(i)))
		}
		return
	}
	if n.Kind != 'o' || w.walked[n] {
		return
	}
	w.walked[n] = true
	for i, k := range n.Keys {
		v, p := n.Elems[i], PointerAppend(ptr, k)
		switch k {
		case "pattern":
			if v.Kind == 's' {
				w.visit(PatternSite{Pattern: v.Str, Pointer: p, Schema: n})
			} else {
				w.schema(v, p)
			}
		case "patternProperties":
			if v.Kind == 'o' {
				for j, key := range v.Keys {
					pp := PointerAppend(p, key)
					w.visit(PatternSite{Pattern: key, Pointer: pp, Schema: n, Key: true, Value: v.Elems[j]})
					w.schema(v.Elems[j], pp)
				}
			}
		case "properties", "$defs", "definitions", "dependentSchemas", "dependencies":
			// Member names here are property or definition names, so a
			// member called "pattern" is a schema, never a regex.
			if v.Kind == 'o' {
				for j, name := range v.Keys {
					w.schema(v.Elems[j], PointerAppend(p, name))
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
