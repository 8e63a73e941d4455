package jsontree

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// jsonNode is a decoded JSON value that keeps object members in order,
// duplicates included.
type JsonNode struct {
	Kind  byte // 'o' object, 'a' array, 's' string, '-' anything else
	Str   string
	Num   json.Number // a number's text (Kind '-'), for keywords such as maxLength
	Lit   string      // "true", "false" or "null" (Kind '-'), for readers of settings
	Keys  []string    // object member names; arrays leave this empty
	Elems []*JsonNode
}

const maxJSONDepth = 10000

func DecodeJSONTree(raw []byte) (*JsonNode, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	n, err := decodeJSONNode(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("data after the top-level value")
	}
	return n, nil
}

func decodeJSONNode(dec *json.Decoder, depth int) (*JsonNode, error) {
	if depth > maxJSONDepth {
		return nil, errors.New("JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &JsonNode{Kind: 'a'}
		if t == '{' {
			n.Kind = 'o'
		}
		for dec.More() {
			if n.Kind == 'o' {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				n.Keys = append(n.Keys, k)
			}
			e, err := decodeJSONNode(dec, depth+1)
			if err != nil {
				return nil, err
			}
			n.Elems = append(n.Elems, e)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &JsonNode{Kind: 's', Str: t}, nil
	case json.Number:
		return &JsonNode{Kind: '-', Num: t}, nil
	case bool:
		if t {
			return &JsonNode{Kind: '-', Lit: "true"}, nil
		}
		return &JsonNode{Kind: '-', Lit: "false"}, nil
	default:
		return &JsonNode{Kind: '-', Lit: "null"}, nil
	}
}

var PointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func PointerAppend(ptr, token string) string {
	return ptr + "/" + PointerEscaper.Replace(token)
}
