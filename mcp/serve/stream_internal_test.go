package serve

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
