package upstream

import (
	"encoding/json"
	"reflect"
	"testing"
)

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
