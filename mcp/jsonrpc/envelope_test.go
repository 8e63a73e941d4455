package jsonrpc

import (
	"bytes"
	"encoding/json"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// wireCases are request bodies on which the scan must read what
// encoding/json reads.
var wireCases = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"id":2,"method":"x"}}}`,
	`{"jsonrpc":"2.0","id":"s-1","method":"tools/call"}`,
	`{"jsonrpc":"2.0","id":"s-1","method":"tools/call","params":null}`,
	`{"jsonrpc":"2.0","method":"tools/call","params":{}}`,
	`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{}}`,
	`{"jsonrpc":"1.0","id":1,"method":"tools/call"}`,
	`{"jsonrpc":2.0,"id":1,"method":"tools/call"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`,
	`{"jsonrpc":"2\u002e0","id":1,"method":"tools/call"}`,
	`{"JSONRPC":"2.0","ID":7,"Method":"tools/call"}`,
	`{"jsonrpc":"2.0","\u0069d":3,"method":"tools/call"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call"} trailing`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call",}`,
	`{"jsonrpc":"2.0","id":1,"method":5}`,
	` {"jsonrpc" : "2.0" , "id" : 1 , "method" : "tools/call" , "params" : [1] } `,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
	`{"jsonrpc":"2.0","method":""}`,
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","Method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","method":"notifications/x","Id":1}`,
	`{"jsonrpc":"2.0","method":"notifications/x","id":}`,
	`[{"jsonrpc":"2.0","method":"notifications/x"}]`,
	`not json`,
	``,
}

// SV-1: the envelope read once from a body — its kind, method, id and
// params — is what encoding/json reads, on every body of wireCases: a
// request has a method and an id, a notification a method alone, a
// response an id and a result or an error; anything else is invalid.
func TestEnvelopeAsDecoded(t *testing.T) {
	for _, body := range append(wireCases,
		`{"jsonrpc":"2.0","id":1,"method":"initi\u0061lize","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"2.0","method":null,"id":1}`) {
		env := Read([]byte(body))
		var msg struct {
			JSONRPC any             `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  *string         `json:"method"`
			Params  json.RawMessage `json:"params"`
			Result  json.RawMessage `json:"result"`
			Error   json.RawMessage `json:"error"`
		}
		trimmed := bytes.TrimSpace([]byte(body))
		switch {
		case len(trimmed) > 0 && trimmed[0] == '[':
			if env.Kind != Batch {
				t.Errorf("%s: kind %d, want a batch", body, env.Kind)
			}
			continue
		case json.Unmarshal([]byte(body), &msg) != nil:
			if env.Kind != Invalid {
				t.Errorf("%s: kind %d, not JSON-RPC at all", body, env.Kind)
			}
			continue
		}
		method := ""
		if msg.Method != nil {
			method = *msg.Method
		}
		want := Invalid
		switch {
		case method != "" && len(msg.ID) > 0 && string(msg.ID) != "null":
			want = Request
		case method != "":
			want = Notification
		case len(msg.ID) > 0 && (msg.Result != nil || msg.Error != nil):
			want = Response
		}
		if body == `{"jsonrpc":"2.0","method":null,"id":1}` || body == `{"jsonrpc":"2.0","id":1,"method":5}` {
			want = Invalid // a method that is no string is no request
		}
		if env.Kind != want {
			t.Errorf("%s: kind %d, decoded %d", body, env.Kind, want)
		}
		if want == Invalid {
			continue
		}
		if env.Method != method || string(env.RawID) != string(msg.ID) || string(env.Params) != string(msg.Params) {
			t.Errorf("%s: method %q id %s params %s, decoded %q %s %s", body, env.Method, env.RawID, env.Params, method, msg.ID, msg.Params)
		}
		if env.Valid != (msg.JSONRPC == any(mcpgo.JSONRPC_VERSION)) {
			t.Errorf("%s: valid %v, jsonrpc %q", body, env.Valid, msg.JSONRPC)
		}
	}
}

// BenchmarkRequestRead is what the endpoint reads of a tools/call body
// before serving it: its envelope; "decode" is the same read through
// encoding/json.
func BenchmarkRequestRead(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"bench_echo","arguments":{"message":"toolgate bench: the quick brown fox jumps over the lazy dog"}}}`)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if env := Read(body); !env.Is(mcpgo.MethodToolsCall) {
				b.Fatal("not a call")
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var msg struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Method  string          `json:"method"`
				Params  json.RawMessage `json:"params"`
			}
			if json.Unmarshal(body, &msg) != nil || msg.Method != string(mcpgo.MethodToolsCall) {
				b.Fatal("not a call")
			}
		}
	})
}
