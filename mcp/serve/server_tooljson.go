package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/schema"
)

// servedInputSchema is the input schema as advertised: the upstream's own
// bytes, except that a root which does not say "type":"object" is given it
// in front of its other members. MCP requires an object schema, and the
// official TypeScript SDK refuses a whole tools/list over one tool whose
// root lacks it (`{}` from a server written without a schema library).
// Validation still uses the upstream's original (IM-17, IM-36).
func servedInputSchema(raw json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "true" {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	if err := schema.CheckObjectRoot(t); err != nil {
		return nil, err
	}
	var root map[string]json.RawMessage
	if err := json.Unmarshal(t, &root); err != nil {
		return nil, err
	}
	if _, ok := root["type"]; !ok {
		rest := bytes.TrimSpace(t[1:])
		out := make([]byte, 0, len(t)+16)
		out = append(out, `{"type":"object"`...)
		if len(rest) > 0 && rest[0] != '}' {
			out = append(out, ',')
		}
		return append(out, rest...), nil
	}
	return raw, nil
}

// servedMeta is the tool's _meta as served: the upstream's members as it
// wrote them, with the gateway's provenance key (IM-16) first and taking
// precedence over one the upstream sent.
func servedMeta(t core.ToolInfo) (json.RawMessage, error) {
	if t.Source == "" {
		if len(t.Meta) == 0 {
			return nil, nil
		}
		return t.Meta, nil
	}
	src, _ := json.Marshal(t.Source)
	var b bytes.Buffer
	b.WriteString(`{"` + SourceMetaKey + `":`)
	b.Write(src)
	if len(t.Meta) > 0 {
		dec := json.NewDecoder(bytes.NewReader(t.Meta))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return nil, errors.New("_meta is not an object")
		}
		for dec.More() {
			tok, err := dec.Token()
			key, ok := tok.(string)
			if err != nil || !ok {
				return nil, errors.New("_meta is not an object")
			}
			var val json.RawMessage
			if err := dec.Decode(&val); err != nil {
				return nil, err
			}
			if key == SourceMetaKey {
				continue
			}
			k, _ := json.Marshal(key)
			b.WriteByte(',')
			b.Write(k)
			b.WriteByte(':')
			b.Write(val)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// listingJSON is one tool's tools/list entry: every member the upstream
// sent, as it sent it, in the order mcp-go writes members (sorted); a member
// it did not send stays absent (IM-17). inputSchema and outputSchema are
// what mcpTool decided to advertise.
func listingJSON(t core.ToolInfo, inputSchema, outputSchema json.RawMessage) ([]byte, error) {
	meta, err := servedMeta(t)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteByte('{')
	member := func(key string, raw []byte) {
		if len(raw) == 0 {
			return
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + key + `":`)
		b.Write(raw)
	}
	str := func(s string) []byte {
		if s == "" {
			return nil
		}
		var sb strings.Builder
		enc := json.NewEncoder(&sb)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		return []byte(strings.TrimSuffix(sb.String(), "\n"))
	}
	member("_meta", meta)
	member("annotations", t.Annotations)
	member("description", str(t.Description))
	member("execution", t.Execution)
	member("icons", t.Icons)
	member("inputSchema", inputSchema)
	member("name", str(t.Name))
	member("outputSchema", outputSchema)
	member("title", str(t.Title))
	b.WriteByte('}')
	if !json.Valid(b.Bytes()) {
		return nil, errors.New("a tool member is not valid JSON")
	}
	return b.Bytes(), nil
}
