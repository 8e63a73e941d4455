package serve_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp/serve"
)

// BenchmarkEndpointSessionless is one request of the protocol's
// bookkeeping with no legacy session behind it, over HTTP: a 2026-07-28
// server/discover, and a stateless endpoint's ping and
// notifications/initialized, answered from the method table through
// mcp-go's HandleMessage.
func BenchmarkEndpointSessionless(b *testing.B) {
	actor := func(context.Context) (core.Actor, bool) { return core.Actor{ID: "bench"}, true }
	cases := []struct {
		name      string
		stateless bool
		body      string
		header    http.Header
		status    int
	}{
		{"2026-07-28/discover", false, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"b","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`,
			http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"server/discover"}}, http.StatusOK},
		{"stateless/ping", true, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, http.Header{"Mcp-Protocol-Version": {"2025-06-18"}}, http.StatusOK},
		{"stateless/notification", true, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, http.Header{"Mcp-Protocol-Version": {"2025-06-18"}}, http.StatusAccepted},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ep, err := serve.NewEndpoint(serve.EndpointOptions{Path: "/mcp", Registry: core.NewRegistry(nil), Actor: actor, Stateless: c.stateless})
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(ep)
			defer func() {
				_ = ep.Close(context.Background())
				srv.Close()
			}()
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			defer hc.CloseIdleConnections()
			body := []byte(c.body)
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", bytes.NewReader(body))
				req.Header = c.header.Clone()
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				out, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != c.status || c.status == http.StatusOK && !strings.Contains(string(out), `"result"`) {
					b.Fatal(fmt.Sprintf("HTTP %d %s", resp.StatusCode, out))
				}
			}
		})
	}
}
