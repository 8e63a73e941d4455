package bench

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The bench's own client over a real loopback server: a JSON and an SSE
// answer read alike, the session's headers on every later request, and
// each kind of bad answer an error, not a result.
func TestMCPClientAnswers(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b := string(body)
		seen = append(seen, r.Method+" "+r.Header.Get("Mcp-Session-Id")+" "+r.Header.Get("Mcp-Protocol-Version")+" "+r.Header.Get("Authorization"))
		switch {
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		case strings.Contains(b, `"initialize"`):
			w.Header().Set("Mcp-Session-Id", "s1")
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, ": comment\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n"+
				"data: {\"jsonrpc\":\"2.0\",\"id\":1,\ndata: \"result\":{\"protocolVersion\":\"2025-03-26\"}}\n\n")
		case strings.Contains(b, `notifications/initialized`):
			w.WriteHeader(http.StatusAccepted)
		case strings.Contains(b, `"fail_http"`):
			http.Error(w, "boom", http.StatusBadGateway)
		case strings.Contains(b, `"fail_rpc"`):
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"unknown tool: fail_rpc"}}`)
		case strings.Contains(b, `"empty_stream"`):
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, ": nothing\n\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":2,"result":{"content":[],"isError":true}}`)
		}
	}))
	defer srv.Close()

	c := newMCPClient(srv.URL, srv.Client(), "k123")
	if err := c.initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c.Session() != "s1" || c.proto != "2025-03-26" {
		t.Fatalf("session %q, protocol %q", c.Session(), c.proto)
	}
	res, rpcErr, err := c.CallTool(t.Context(), "ok", map[string]string{"message": "x"})
	if err != nil || rpcErr != nil || res == nil || !res.IsError {
		t.Fatalf("call: %+v %v %v", res, rpcErr, err)
	}
	if _, _, err := c.CallTool(t.Context(), "fail_http", nil); err == nil || !strings.Contains(err.Error(), "502") {
		t.Errorf("HTTP 502: err %v", err)
	}
	if _, rpcErr, err := c.CallTool(t.Context(), "fail_rpc", nil); err != nil || rpcErr == nil || rpcErr.Code != -32602 {
		t.Errorf("JSON-RPC error: %v %v", rpcErr, err)
	}
	if _, _, err := c.CallTool(t.Context(), "empty_stream", nil); err != errNoResponse {
		t.Errorf("a stream with no response: err %v", err)
	}
	if resp, err := c.Delete(t.Context()); err != nil || resp.Status != http.StatusNoContent {
		t.Errorf("delete: %+v %v", resp, err)
	}
	if seen[0] != "POST   Bearer k123" {
		t.Errorf("initialize sent %q", seen[0])
	}
	for _, s := range seen[1:] {
		if s != "POST s1 2025-03-26 Bearer k123" && s != "DELETE s1 2025-03-26 Bearer k123" {
			t.Errorf("a request after initialize sent %q", s)
		}
	}
}
