package mcp

import (
	"errors"
	"net/http/httptest"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// SV-1, SV-9: once a call's response has ended, nothing more is written to it: an
// upstream that withdraws its request to the client after the call was
// answered gets an error instead of writing into a response the server
// may already reuse for another request.
func TestCallStreamRefusesWritesAfterFinish(t *testing.T) {
	rec := httptest.NewRecorder()
	cs := newCallStream(rec)
	progress := mcpgo.JSONRPCNotification{JSONRPC: mcpgo.JSONRPC_VERSION, Notification: mcpgo.Notification{Method: "notifications/progress"}}
	if err := cs.send(progress); err != nil {
		t.Fatal(err)
	}
	cs.answered()
	cs.finish()
	written := rec.Body.String()

	if err := cs.send(progress); !errors.Is(err, errStreamEnded) {
		t.Errorf("send after finish: %v, want errStreamEnded", err)
	}
	if n, err := cs.Write([]byte(`{"late":true}`)); n != 0 || !errors.Is(err, errStreamEnded) {
		t.Errorf("Write after finish: %d, %v", n, err)
	}
	cs.WriteHeader(500)
	cs.ping()
	cs.cut([]byte(`1`))
	if rec.Body.String() != written || rec.Code != 200 {
		t.Errorf("the ended response changed: %d %q, was %q", rec.Code, rec.Body.String(), written)
	}
}

// SV-2: which requests open a session is decided without decoding the
// calls that make up nearly all traffic, and an initialize spelt with
// escapes is still one.
func TestOpensSession(t *testing.T) {
	post := httptest.NewRequest("POST", "/mcp", nil)
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"initi\u0061lize","params":{}}`, true},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`, false},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"initialize"}}}`, false},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"\u00e9"}}}`, false},
		{`{"jsonrpc":"2.0","method":"initialize"`, false},
	} {
		if got := opensSession(post, []byte(tc.body)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.body, got, tc.want)
		}
	}
	if !opensSession(httptest.NewRequest("GET", "/mcp", nil), nil) {
		t.Error("a GET stream opens a session")
	}
}
