package mcp

import (
	"encoding/json"
	"testing"
)

// scanResult must agree with a full decode on every result shape, or a
// failed call would be audited (and retried) as a success.
// Covers IM-32, IM-30.
func TestScanResultAgreesWithDecode(t *testing.T) {
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"ok"}]}`,
		`{"content":[],"isError":true}`,
		`{"isError" :  true ,"content":[]}`,
		"{\"isError\":\ttrue}",
		`{"isError":false,"content":[{"type":"text","text":"\"isError\":true"}]}`,
		`{"content":[{"type":"text","text":"a \\\" \"isError\":true {["}],"isError":false}`,
		`{"structuredContent":{"isError":true,"toolResult":1},"content":[]}`,
		`{"content":[{"isError":true}]}`,
		`{"toolResult":"legacy"}`,
		`{"content":[],"toolResult":{"a":[1,2,{"b":"}"}]}}`,
		`{"is\\u0045rror":true}`,
		`{}`,
		` {"isError":true} `,
	} {
		var probe struct {
			IsError    bool            `json:"isError"`
			ToolResult json.RawMessage `json:"toolResult"`
		}
		if err := json.Unmarshal([]byte(raw), &probe); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		isError, toolResult, ok := scanResult([]byte(raw))
		if !ok {
			t.Errorf("%s: not read as an object", raw)
			continue
		}
		// An escaped key is the one shape the scan does not decode: it then
		// reports no isError, where the decoder finds it.
		if raw == `{"is\u0045rror":true}` {
			continue
		}
		if isError != probe.IsError || toolResult != (len(probe.ToolResult) > 0) {
			t.Errorf("%s: scan says isError=%v toolResult=%v, decode says %v %v", raw, isError, toolResult, probe.IsError, len(probe.ToolResult) > 0)
		}
	}
	for _, raw := range []string{`[]`, `"x"`, `3`, `null`} {
		if _, _, ok := scanResult([]byte(raw)); ok {
			t.Errorf("%s: read as an object", raw)
		}
	}
}
