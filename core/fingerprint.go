package core

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
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
	writeCanonicalString(&b, "description")
	b.WriteByte(':')
	writeCanonicalString(&b, description)
	b.WriteByte(',')
	fingerprintMember(&b, "inputSchema", inputSchema)
	b.WriteByte(',')
	writeCanonicalString(&b, "remoteName")
	b.WriteByte(':')
	writeCanonicalString(&b, remoteName)
	b.WriteByte('}')
	sum := sha256.Sum256(b.Bytes())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// fingerprintMember writes `"name":<canonical raw>`, or the raw-bytes
// fallback for invalid JSON. The fallback keys sort after their plain names
// ("annotationsRaw" after "annotations"), so member order stays sorted.
func fingerprintMember(b *bytes.Buffer, name string, raw json.RawMessage) {
	if len(bytes.TrimSpace(raw)) == 0 {
		writeCanonicalString(b, name)
		b.WriteString(":null")
		return
	}
	canon, err := CanonicalJSON(raw)
	if err != nil {
		writeCanonicalString(b, name+"Raw")
		b.WriteByte(':')
		writeCanonicalString(b, base64.StdEncoding.EncodeToString(raw))
		return
	}
	writeCanonicalString(b, name)
	b.WriteByte(':')
	b.Write(canon)
}

// ErrInvalidJSON is wrapped by CanonicalJSON's errors.
var ErrInvalidJSON = errors.New("invalid JSON")

// CanonicalJSON re-encodes one JSON value so that equal values have equal
// bytes: object keys sorted (by their UTF-8 bytes, recursively), no
// insignificant whitespace, numbers exactly as written (never rounded through
// float64, so 12345678901234567890 and 1.0 survive as is), strings re-encoded
// by encoding/json without HTML escaping. Among duplicate keys the last wins,
// as in the decoders that read the document. Anything but exactly one valid
// JSON value is an error wrapping ErrInvalidJSON.
func CanonicalJSON(raw json.RawMessage) ([]byte, error) {
	// Audited arguments and confirm tokens canonicalise on every call; most
	// documents need no decoding for it.
	if out, ok := appendCanonical(make([]byte, 0, len(raw)), raw); ok {
		return out, nil
	}
	return canonicalDecoded(raw)
}

// canonicalDecoded is CanonicalJSON by decoding: every document it accepts.
func canonicalDecoded(raw json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the top-level value", ErrInvalidJSON)
	}
	var b bytes.Buffer
	writeCanonical(&b, v)
	return b.Bytes(), nil
}

func writeCanonical(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case json.Number:
		b.WriteString(string(v))
	case string:
		writeCanonicalString(b, v)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonicalString(b, k)
			b.WriteByte(':')
			writeCanonical(b, v[k])
		}
		b.WriteByte('}')
	}
}

// writeCanonicalString encodes s as encoding/json does, minus the HTML
// escaping of <, > and &: "<IMPORTANT>" stays readable in stored documents.
func writeCanonicalString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's trailing newline
}
