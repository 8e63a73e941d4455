package jsonrpc

import (
	"bytes"
	"encoding/json"
)

// DecodeParams reads a notification's params as an object, keeping numbers
// as they were written: a notification passed on (progress, a log message,
// a resource update) carries the sender's exact numbers.
func DecodeParams(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}
