package serve_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/mcp/serve"
)

// SV-2: the legacy session transport's edges on a stateful endpoint: a GET
// or DELETE without a session id is 400 (a GET opens no session), one
// naming a protocol version there is none of is 400, a method the
// transport has no use for is 405, and a DELETE ends the session's open
// GET stream with it.
func TestLegacySessionEdgesSV2(t *testing.T) {
	s := serveEndpoint(t, serve.EndpointOptions{})
	c := testClient(s.url, "alice", "MEMBER")
	initialize(t, c)
	do := func(method string, header http.Header) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, s.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = http.Header{"Accept": {"text/event-stream"}, "X-Test-Actor": {"alice"}, "X-Test-Roles": {"MEMBER"}}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, string(body)
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		if code, body := do(method, nil); code != http.StatusBadRequest || !strings.Contains(body, "Mcp-Session-Id") {
			t.Errorf("%s without a session id: HTTP %d %q, want 400 naming the header", method, code, body)
		}
		if code, _ := do(method, http.Header{"Mcp-Session-Id": {c.Session()}, "Mcp-Protocol-Version": {"1999-01-01"}}); code != http.StatusBadRequest {
			t.Errorf("%s naming protocol 1999-01-01: HTTP %d, want 400", method, code)
		}
	}
	if n := len(s.sessions.List()); n != 1 {
		t.Fatalf("%d sessions after GETs without an id, want the one initialized", n)
	}
	if code, _ := do(http.MethodPut, http.Header{"Mcp-Session-Id": {c.Session()}}); code != http.StatusMethodNotAllowed {
		t.Errorf("PUT: HTTP %d, want 405", code)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := c.Listen(ctx)
	if err != nil || st.Status != http.StatusOK {
		t.Fatalf("GET stream: %v %+v", err, st)
	}
	defer st.Close()
	if resp, err := c.Delete(t.Context()); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("DELETE: %v %+v", err, resp)
	}
	if m, err := st.Next(); err == nil {
		t.Fatalf("the ended session's stream went on: %+v", m)
	}
	if resp := post(t, c, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); resp.Status != http.StatusNotFound {
		t.Fatalf("ping after DELETE: HTTP %d", resp.Status)
	}
}
