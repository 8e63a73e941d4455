package serve

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/toolgate/toolgate/mcp/jsonrpc"
)

// callParamsCases are tools/call params on which readCallParams must read
// what encoding/json reads.
var callParamsCases = []string{
	`{"name":"echo","arguments":{"text":"hi"}}`, `{"name":"echo"}`, `{"arguments":{}}`, `{}`,
	`{"name":"echo","arguments":null}`, `{"name":null,"arguments":{}}`, `{"name":1}`, `{"name":"a","name":"b"}`,
	`{"Name":"echo"}`, `{"NAME":"x","name":"y"}`, `{"name":"x","NAME":"y"}`, `{"argumentſ":{"a":1}}`,
	`{"n\u0061me":"echo"}`, `{"name":"caf\u00e9","arguments":[1,2]}`, "{\"name\":\"\xff\"}", `{"name":"café"}`,
	`{"name":"echo","_meta":{"progressToken":"p-1"}}`, `{"name":"echo","_meta":{"progressToken":7}}`,
	`{"name":"echo","_meta":null}`, `{"name":"echo","_meta":3}`, `{"name":"echo","_META":{"progressToken":1}}`,
	`[]`, `"params"`, `null`, `3`, ` { "name" : "echo" , "arguments" : { "a" : [ 1 , 2 ] } } `,
	`{"name":"echo","extra":{"name":"nested"},"arguments":"not an object"}`,
}

// TestReadCallParamsAsDecoded pins the one-scan read of tools/call params
// (SV-4) to encoding/json: the same fields, and a failure wherever it fails.
func TestReadCallParamsAsDecoded(t *testing.T) {
	for _, raw := range callParamsCases {
		checkCallParams(t, []byte(raw))
	}
}

// FuzzReadCallParams: the same equality (SV-4) on any valid JSON.
func FuzzReadCallParams(f *testing.F) {
	for _, raw := range callParamsCases {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if json.Valid(raw) { // the body was checked whole before
			checkCallParams(t, raw)
		}
	})
}

func checkCallParams(t *testing.T, raw []byte) {
	t.Helper()
	var want callParams
	wantOK := json.Unmarshal(raw, &want) == nil
	var got callParams
	gotOK := readCallParams(raw, &got)
	if gotOK != wantOK {
		t.Fatalf("%q: read %v, encoding/json %v", raw, gotOK, wantOK)
	}
	if !wantOK {
		return
	}
	if got.Name != want.Name || string(got.Arguments) != string(want.Arguments) || (got.Arguments == nil) != (want.Arguments == nil) ||
		(got.Meta == nil) != (want.Meta == nil) || got.Meta != nil && got.Meta.ProgressToken != want.Meta.ProgressToken {
		t.Fatalf("%q: read %+v, encoding/json %+v", raw, got, want)
	}
}

// TestReadIDAsDecoded: JSON-RPC ids read as encoding/json reads them into
// an any (SV-7).
func TestReadIDAsDecoded(t *testing.T) {
	for _, raw := range []string{`1`, `-1.5e3`, `0`, `1e400`, `"a"`, `"tg-1"`, `""`, `"caf\u00e9"`, `"café"`, "\"\xff\"",
		`"a\"b"`, `null`, `true`, `{}`, `[1]`, `12345678901234567890`} {
		var want any
		wantErr := json.Unmarshal([]byte(raw), &want)
		got, ok := jsonrpc.ReadID([]byte(raw))
		if ok != (wantErr == nil) || ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: read %#v %v, encoding/json %#v %v", raw, got, ok, want, wantErr)
		}
	}
}
