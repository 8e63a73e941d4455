package jsontree

import (
	"strconv"
	"strings"
)

// lookup resolves an RFC 6901 pointer; nil when nothing is there. Among
// duplicate keys the last wins, as in the parsers that build the schema.
func (n *JsonNode) Lookup(ptr string) *JsonNode {
	if ptr == "" {
		return n
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		var next *JsonNode
		switch n.Kind {
		case 'o':
			for i, k := range n.Keys {
				if k == tok {
					next = n.Elems[i]
				}
			}
		case 'a':
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(n.Elems) {
				next = n.Elems[i]
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}
