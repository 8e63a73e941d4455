package review

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"

	"github.com/toolgate/toolgate/core/canonjson"
)

// Fingerprint identifies what a client is shown of an imported tool (RV-1):
// "sha256:" and the hex SHA-256 of the canonical JSON (CanonicalJSON) of
//
//	{"annotations": …, "description": …, "inputSchema": …, "remoteName": …}
//
// An approval records it, so any change to what the model reads — one
// zero-width character in the description, a schema default, an annotation —
// gives another fingerprint and calls for review again, while re-ordered keys
// or re-indented JSON do not.
//
// An absent, empty or null inputSchema or annotations counts as null. One that
// is not valid JSON cannot be canonicalised; its raw bytes are hashed instead,
// as the base64 string of a member named "inputSchemaRaw" or
// "annotationsRaw", a name valid JSON never produces here, so an invalid
// document can never share a fingerprint with a valid one.
func Fingerprint(remoteName, description string, inputSchema, annotations json.RawMessage) string {
	var b bytes.Buffer
	b.WriteByte('{')
	fingerprintMember(&b, "annotations", annotations)
	b.WriteByte(',')
	canonjson.WriteCanonicalString(&b, "description")
	b.WriteByte(':')
	canonjson.WriteCanonicalString(&b, description)
	b.WriteByte(',')
	fingerprintMember(&b, "inputSchema", inputSchema)
	b.WriteByte(',')
	canonjson.WriteCanonicalString(&b, "remoteName")
	b.WriteByte(':')
	canonjson.WriteCanonicalString(&b, remoteName)
	b.WriteByte('}')
	sum := sha256.Sum256(b.Bytes())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// fingerprintMember writes `"name":<canonical raw>`, or the raw-bytes
// fallback for invalid JSON. The fallback keys sort after their plain names
// ("annotationsRaw" after "annotations"), so member order stays sorted.
func fingerprintMember(b *bytes.Buffer, name string, raw json.RawMessage) {
	if len(bytes.TrimSpace(raw)) == 0 {
		canonjson.WriteCanonicalString(b, name)
		b.WriteString(":null")
		return
	}
	canon, err := canonjson.CanonicalJSON(raw)
	if err != nil {
		canonjson.WriteCanonicalString(b, name+"Raw")
		b.WriteByte(':')
		canonjson.WriteCanonicalString(b, base64.StdEncoding.EncodeToString(raw))
		return
	}
	canonjson.WriteCanonicalString(b, name)
	b.WriteByte(':')
	b.Write(canon)
}
