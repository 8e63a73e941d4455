package gateway_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// SV-1 (DNS rebinding): on a loopback listener every request whose Host is not a
// loopback name is refused before it is read — initialize, and also the
// listings and calls of a session the gateway answers itself — while
// localhost and loopback addresses are served.
func TestLoopbackRefusesForeignHost(t *testing.T) {
	ctx := testCtx(t)
	g := newGateway(t, loadConfig(t, gatewayYAML(filepath.Join(t.TempDir(), "toolgate.db"))), nil)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	p := rawPost{hc: &http.Client{Transport: tr, Timeout: stepWait}, url: "http://" + g.Addr() + "/mcp"}
	id := p.open(t, testKey)
	_, port, _ := strings.Cut(g.Addr(), ":")

	post := func(host, body string, session bool) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, p.url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+testKey)
		if session {
			req.Header.Set("Mcp-Session-Id", id)
			req.Header.Set("Mcp-Protocol-Version", testProtocol)
		}
		resp, err := p.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	const call = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"anything","arguments":{}}}`
	for _, host := range []string{"evil.example", "evil.example:" + port, "10.0.0.1:" + port} {
		for name, req := range map[string]struct {
			body    string
			session bool
		}{"initialize": {goodInitialize, false}, "tools/list": {list, true}, "tools/call": {call, true}} {
			if code, body := post(host, req.body, req.session); code != http.StatusForbidden {
				t.Errorf("%s with Host %s: HTTP %d, want 403: %s", name, host, code, body)
			}
		}
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "LOCALHOST"} {
		if code, body := post(host, list, true); code != http.StatusOK || !strings.Contains(body, `"tools"`) {
			t.Errorf("tools/list with Host %s: HTTP %d: %s", host, code, body)
		}
	}
}
