package scan

import (
	"encoding/json"
	"math"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/jsontree"
)

// EntryInput is a prompt or a resource (or resource template) as an
// upstream listed it (core.CatalogPrompt.Raw, core.CatalogResource.Raw):
// their descriptions reach the model as tools' do.
type EntryInput struct {
	Raw json.RawMessage
	// OtherTools is as in ScanInput.
	OtherTools []string
}

// entryIdentifiers are the members of an entry that are identifiers, not
// text: a prompt's name is matched by clients, a URI is where it is read.
var entryIdentifiers = map[string]bool{"name": true, "uri": true, "uriTemplate": true, "mimeType": true, "size": true}

// ScanEntry applies every rule to every string of a prompt or resource
// entry — description, title, each argument's description and title,
// annotations, icons, _meta — and returns the flags sorted by Where, here an
// RFC 6901 pointer into the entry ("/description",
// "/arguments/0/description"). The entry's own name, URI and MIME type are
// not read. An entry that is not a JSON object is not read.
func ScanEntry(in EntryInput) []core.Flag {
	root, err := jsontree.DecodeJSONTree(in.Raw)
	if err != nil || root.Kind != 'o' {
		return nil
	}
	w := schemaScan{names: shadowNames(ScanInput{OtherTools: in.OtherTools})}
	for i, k := range root.Keys {
		v, p := root.Elems[i], jsontree.PointerAppend("", k)
		switch {
		case entryIdentifiers[k]:
		case k == "description" && v.Kind == 's':
			w.flags = append(w.flags, scanText(v.Str, p, MaxDescriptionLen, w.names)...)
		case k == IconsWhere:
			w.anyStrings(v, p, math.MaxInt)
		default:
			w.anyStrings(v, p, MaxSchemaTextLen)
			w.pairs(v, p)
		}
	}
	sortFlags(w.flags)
	return w.flags
}

// Text returns the string a flag's Where points to.
func (in EntryInput) Text(where string) (string, bool) {
	if where == "" || where[0] != '/' {
		return "", false
	}
	return pointerText(in.Raw, where)
}

// ScanResultText applies every rule to s as ScanEntry does to an entry's
// description, and returns the flags it would give there, with Where
// empty. A tool's result is one string of data, not an entry: reading it
// needs no JSON document around it (IN-1).
func ScanResultText(s string) []core.Flag {
	flags := scanText(s, "", MaxDescriptionLen, nil)
	sortFlags(flags)
	return flags
}
