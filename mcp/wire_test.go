package mcp

import (
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

// SV-1: a tools/call body's id and params, read by the scan, are what
// encoding/json reads, on every body of wireCases.
func TestRequestMembersAsDecoded(t *testing.T) {
	for _, body := range wireCases {
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Params  json.RawMessage `json:"params"`
		}
		wantOK := json.Unmarshal([]byte(body), &msg) == nil && msg.JSONRPC == mcpgo.JSONRPC_VERSION &&
			msg.Method == string(mcpgo.MethodToolsCall)
		id, params, ok := requestMembers([]byte(body), mcpgo.MethodToolsCall)
		if ok != wantOK {
			t.Errorf("%s: ok %v, decoded %v", body, ok, wantOK)
			continue
		}
		if ok && (string(id) != string(msg.ID) || string(params) != string(msg.Params)) {
			t.Errorf("%s: id %s params %s, decoded %s and %s", body, id, params, msg.ID, msg.Params)
		}
	}
}

// SV-1: the scan tells a notification from a request as encoding/json
// does, on every body of wireCases.
func TestIsNotificationAsDecoded(t *testing.T) {
	for _, body := range wireCases {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		want := json.Unmarshal([]byte(body), &msg) == nil && msg.Method != "" && len(msg.ID) == 0
		if got := isNotification([]byte(body)); got != want {
			t.Errorf("%s: isNotification %v, decoded %v", body, got, want)
		}
	}
}

// BenchmarkRequestRead is what the endpoint reads of a tools/call body
// before serving it: whether it is a notification, then its id and
// params; "decode" is the same read through encoding/json.
func BenchmarkRequestRead(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"bench_echo","arguments":{"message":"toolgate bench: the quick brown fox jumps over the lazy dog"}}}`)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if isNotification(body) {
				b.Fatal("notification")
			}
			if _, _, ok := requestMembers(body, mcpgo.MethodToolsCall); !ok {
				b.Fatal("not a call")
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var n struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(body, &n) != nil || len(n.ID) == 0 {
				b.Fatal("notification")
			}
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
