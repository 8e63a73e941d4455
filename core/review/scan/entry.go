package scan

import (
	"encoding/json"
	"math"
	"slices"

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

// ResultKinds are the flags ScanResultText reports: text that addresses
// the model with instructions, and links that carry data out. The rest of
// what the scanner reports on descriptions (URLs, length, base64, secret
// paths, invisible characters, script) is ordinary in a tool's result.
var ResultKinds = []core.FlagKind{core.FlagHiddenInstruction, core.FlagExfiltration}

// ScanResultText returns the flags of ResultKinds that ScanEntry gives s
// as an entry's description, with Where empty (IN-1). A tool's result is
// one string of data, not an entry: it needs no JSON document around it,
// and the rules whose flags are of other kinds alone are not run (secret
// paths, URLs but where base64 needs them, hidden and styled text, blank
// space, script links, the length). The instruction rules still read the
// text those rules decode (base64, escapes, tag characters, data: URIs).
func ScanResultText(s string) []core.Flag {
	if s == "" {
		return nil
	}
	runs := hiddenRuns(s)
	var flags []core.Flag
	for _, r := range runs {
		if tags := r.tagText(); tags != "" {
			flags = append(flags, payloadFlags(tags, r.start, r.end, "hidden in tag characters")...)
		}
	}
	t := newCleanText(s, runs)
	flags = append(flags, t.instructions()...)
	if w := t.wordText(); w != nil {
		flags = append(flags, w.instructions()...)
	}
	flags = append(flags, t.settings()...)
	flags = append(flags, t.base64With(func() []core.Flag { return t.rules(core.FlagURL, urlRules) })...)
	flags = append(flags, t.encoded()...)
	flags = append(flags, t.obfuscatedReadings(flags, false)...)
	flags = append(flags, t.links(false)...)
	flags = slices.DeleteFunc(flags, func(f core.Flag) bool { return !slices.Contains(ResultKinds, f.Kind) })
	if len(flags) == 0 {
		return nil
	}
	flags = mergeFlags(flags)
	sortFlags(flags)
	return flags
}
