package mcp

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

// answerCases are upstream responses on which readAnswer must read what
// encoding/json reads.
var answerCases = []string{
	`{"jsonrpc":"2.0","id":"tg-1","result":{"content":[{"type":"text","text":"hi"}]}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool"}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}`, `{"jsonrpc":"2.0","id":1,"error":"boom"}`,
	`{"jsonrpc":"2.0","id":1,"error":null,"result":null}`, `{"id":null}`, `{}`, `[]`, `null`,
	`{"jsonrpc":"2.0","ID":"tg-2","Result":{}}`, `{"id":"a","result":1,"result":2}`,
	`{"method":"notifications/progress","params":{}}`, `{"method":null}`, `{"method":3}`,
	`{"m\u0065thod":"x"}`, `{"method":"caf\u00e9"}`, "{\"method\":\"\xff\"}", `{"id":1,"result":{"a":"\u0000"}}`,
	`{"id":1,"error":{"code":1,"message":"m","data":{"x":[1,2]}}}`, `{"id":1,"error":{"Code":5,"MESSAGE":"m"}}`,
	`{"id":1,"result":{} `, `{"id":1,"result":{}} trailing`,
}

// TestReadAnswerAsDecoded pins the one-scan read of an upstream's JSON
// response (IM-32) to encoding/json: the same fields and the same failures.
func TestReadAnswerAsDecoded(t *testing.T) {
	for _, raw := range answerCases {
		checkAnswer(t, []byte(raw))
	}
}

// FuzzReadAnswer: the same equality (IM-32) on any bytes.
func FuzzReadAnswer(f *testing.F) {
	for _, raw := range answerCases {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkAnswer(t, raw) })
}

func checkAnswer(t *testing.T, raw []byte) {
	t.Helper()
	var want rpcAnswer
	wantErr := json.Unmarshal(raw, &want)
	got, gotErr := readAnswer(raw)
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%q: error %v, encoding/json %v", raw, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: read %+v, encoding/json %+v", raw, got, want)
	}
}
