package review

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/canonjson"
)

// FingerprintPrefix starts every fingerprint Fingerprint makes. The version
// in it changes whenever what the fingerprint covers changes, so an approval
// of an older format is recognised as one — and never mistaken for an
// approval of everything the current format covers.
const FingerprintPrefix = "sha256v2:"

// legacyPrefix started the fingerprints of the first format, which covered
// remoteName, description, inputSchema and annotations only.
const legacyPrefix = "sha256:"

// Definition is everything a client or a model reads of an imported tool
// (RV-1): what an approval approves.
type Definition struct {
	RemoteName   string
	Title        string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  json.RawMessage
	Icons        json.RawMessage
	Execution    json.RawMessage
	Meta         json.RawMessage
}

// DefinitionOf is what t shows a client or a model. It is the one place
// that maps a registry tool to its Definition.
func DefinitionOf(t core.ToolInfo) Definition {
	return Definition{
		RemoteName: t.RemoteName, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations,
		Icons: t.Icons, Execution: t.Execution, Meta: t.Meta,
	}
}

// member is one member of the canonical document: a string, or raw JSON.
type member struct {
	name string
	text *string
	raw  *json.RawMessage
}

// members lists what the fingerprint covers, one line per field; order
// does not matter (the document is written sorted). A field added here
// changes every fingerprint: bump FingerprintPrefix with it.
func (d *Definition) members() []member {
	return []member{
		{name: "remoteName", text: &d.RemoteName},
		{name: "title", text: &d.Title},
		{name: "description", text: &d.Description},
		{name: "inputSchema", raw: &d.InputSchema},
		{name: "outputSchema", raw: &d.OutputSchema},
		{name: "annotations", raw: &d.Annotations},
		{name: "icons", raw: &d.Icons},
		{name: "execution", raw: &d.Execution},
		{name: "_meta", raw: &d.Meta},
	}
}

// Fingerprint identifies what a client is shown of an imported tool (RV-1):
// FingerprintPrefix and the hex SHA-256 of the canonical JSON
// (canonjson.CanonicalJSON) of
//
//	{"_meta": …, "annotations": …, "description": …, "execution": …,
//	 "icons": …, "inputSchema": …, "outputSchema": …, "remoteName": …,
//	 "title": …}
//
// An approval records it, so any change to what the model reads — one
// zero-width character in the description, a schema default, an output
// schema's description, a title — gives another fingerprint and calls for
// review again, while re-ordered keys or re-indented JSON do not.
//
// An absent, empty or null JSON field counts as null, an absent title as
// "". A field that is not valid JSON cannot be canonicalised; its raw bytes
// are hashed instead, as the base64 string of a member named after it with
// "Raw" appended ("inputSchemaRaw"), a name valid JSON never produces here,
// so an invalid document can never share a fingerprint with a valid one.
func (d Definition) Fingerprint() string {
	type written struct {
		key string
		val []byte
	}
	var ws []written
	for _, m := range d.members() {
		var v bytes.Buffer
		key := m.name
		switch {
		case m.text != nil:
			canonjson.WriteCanonicalString(&v, *m.text)
		case len(bytes.TrimSpace(*m.raw)) == 0:
			v.WriteString("null")
		default:
			if canon, err := canonjson.CanonicalJSON(*m.raw); err == nil {
				v.Write(canon)
			} else {
				key += "Raw"
				canonjson.WriteCanonicalString(&v, base64.StdEncoding.EncodeToString(*m.raw))
			}
		}
		ws = append(ws, written{key, v.Bytes()})
	}
	// Member names are ASCII, so byte order is the canonical order.
	slices.SortFunc(ws, func(a, b written) int { return cmp.Compare(a.key, b.key) })
	var b bytes.Buffer
	b.WriteByte('{')
	for i, w := range ws {
		if i > 0 {
			b.WriteByte(',')
		}
		canonjson.WriteCanonicalString(&b, w.key)
		b.WriteByte(':')
		b.Write(w.val)
	}
	b.WriteByte('}')
	sum := sha256.Sum256(b.Bytes())
	return FingerprintPrefix + hex.EncodeToString(sum[:])
}

// equal reports whether d and o show the same thing byte for byte.
func (d Definition) equal(o Definition) bool {
	a, b := d.members(), o.members()
	for i := range a {
		if a[i].text != nil && *a[i].text != *b[i].text || a[i].raw != nil && !bytes.Equal(*a[i].raw, *b[i].raw) {
			return false
		}
	}
	return true
}

// clone copies d's JSON, for a cache that outlives the caller's buffers.
func (d Definition) clone() Definition {
	for _, m := range d.members() {
		if m.raw != nil {
			*m.raw = bytes.Clone(*m.raw)
		}
	}
	return d
}

// LegacyFingerprint reports whether fp is of an older format than
// Fingerprint makes: an approval recording one covered less than a
// definition shows today, so it approves nothing (RV-3) until the tool is
// approved again.
func LegacyFingerprint(fp string) bool {
	return strings.HasPrefix(fp, legacyPrefix)
}
