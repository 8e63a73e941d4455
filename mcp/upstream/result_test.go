package upstream

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
		`{"is\u0045rror":true}`,
		`{"isError":false,"is\u0045rror":true}`,
		`{"is\u0045rror":true,"isError":false}`,
		`{"\u0074oolResult":{}}`,
		`{}`,
		` {"isError":true} `,
	} {
		checkScan(t, raw)
	}
	for _, raw := range []string{`[]`, `"x"`, `3`, `null`} {
		if _, _, ok := scanResult([]byte(raw)); ok {
			t.Errorf("%s: read as an object", raw)
		}
	}
}

// checkScan compares scanResult with encoding/json reading the members by
// their exact names, the last of a repeated name winning, as clients do.
func checkScan(t *testing.T, raw string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m == nil {
		return // not an object: what the scan says of it is not compared here
	}
	wantError := string(m["isError"]) == "true"
	_, wantLegacy := m["toolResult"]
	isError, toolResult, ok := scanResult([]byte(raw))
	if !ok {
		t.Errorf("%s: not read as an object", raw)
		return
	}
	if isError != wantError || toolResult != wantLegacy {
		t.Errorf("%s: scan says isError=%v toolResult=%v, decode says %v %v", raw, isError, toolResult, wantError, wantLegacy)
	}
}

// IM-30, IM-32: the scan agrees with a decode on any object, escapes in
// keys and strings included.
func FuzzScanResult(f *testing.F) {
	for _, s := range []string{`{"isError":true}`, `{"is\u0045rror":true}`, `{"a":"\"isError\":true","isError":false}`, `{"toolResult":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) { checkScan(t, raw) })
}
