package serve_test

// Benchmarks of one tools/call through the served endpoint and through the
// upstream client, over httptest loopback servers (QB-2). The bare mcp-go
// server with the same tool is the floor the endpoint's own cost sits on.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/mcptest"
	"github.com/toolgate/toolgate/internal/store/memory"
	"github.com/toolgate/toolgate/internal/store/sqlite"
	"github.com/toolgate/toolgate/internal/upstreamtest"
	"github.com/toolgate/toolgate/mcp/serve"
	"github.com/toolgate/toolgate/mcp/upstream"
)

const benchToolSchema = `{"type":"object","properties":{"message":{"type":"string","maxLength":1000}},"required":["message"]}`

const benchKey = "bench-api-key-0123456789"

var benchArguments = `{"message":"toolgate bench: the quick brown fox jumps over the lazy dog"}`

// benchResult is the fixed answer of the benchmarked tool.
var benchResult = core.TextResult("toolgate bench: the quick brown fox jumps over the lazy dog")

// bareServer is mcp-go serving the same tool with no gateway around it.
func bareServer(b *testing.B) *httptest.Server {
	b.Helper()
	s := server.NewMCPServer("bare", "1", server.WithToolCapabilities(true))
	s.AddTool(mcpgo.NewToolWithRawSchema("echo", "Echo.", json.RawMessage(benchToolSchema)),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("toolgate bench: the quick brown fox jumps over the lazy dog"), nil
		})
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
	b.Cleanup(srv.Close)
	return srv
}

// endpointServer is the gateway endpoint behind API-key auth, with the tool
// needing the actor's role, and the given audit store (nil: none).
func endpointServer(b *testing.B, audit core.Auditor) *httptest.Server {
	b.Helper()
	reg := core.NewRegistry(nil)
	err := reg.Register(core.Tool{
		Name: "up_echo", Source: "up", RemoteName: "echo", Kind: core.KindRead, Description: "Echo.",
		InputSchema: json.RawMessage(benchToolSchema), Roles: []string{"bench"},
		Handler: func(context.Context, json.RawMessage) (core.Result, error) { return benchResult, nil },
	})
	if err != nil {
		b.Fatal(err)
	}
	ep, err := serve.NewEndpoint(serve.EndpointOptions{
		Path: "/mcp", Registry: reg, Sessions: core.NewSessions(reg.Bus()), Actor: auth.ActorFrom,
		Audit: audit, AuditKey: []byte("bench-audit-key-0123456789abcdef"),
	})
	if err != nil {
		b.Fatal(err)
	}
	mw := auth.Middleware(auth.EndpointAuth{Path: "/mcp", Strategy: auth.APIKeys([]auth.APIKey{
		{Key: benchKey, Actor: core.Actor{ID: "bench-client", Roles: []string{"bench"}}},
	})})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mw(ep))
	srv := httptest.NewServer(mux)
	b.Cleanup(func() {
		_ = ep.Close(context.Background())
		srv.Close()
	})
	return srv
}

func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
}

// benchSession is one session of the benchmarked client, mcptest's (as the
// bench's): the call's body differs only in its id.
type benchSession struct {
	c    *mcptest.Client
	tool string
}

func openBenchSession(b *testing.B, hc *http.Client, url, bearer, tool string) *benchSession {
	b.Helper()
	opts := &mcptest.Options{HTTPClient: hc, ClientName: "bench"}
	if bearer != "" {
		opts.Authorization = "Bearer " + bearer
	}
	c := mcptest.New(url, opts)
	if _, err := c.Initialize(context.Background()); err != nil {
		b.Fatal(err)
	}
	return &benchSession{c: c, tool: tool}
}

func (s *benchSession) call() error {
	body := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(s.c.NextID(), 10) + `,"method":"tools/call","params":{"name":"` + s.tool + `","arguments":` + benchArguments + `}}`
	resp, err := s.c.Post(context.Background(), []byte(body), nil)
	if err != nil {
		return err
	}
	if resp.Status/100 != 2 {
		return fmt.Errorf("HTTP %d: %s", resp.Status, resp.Body)
	}
	if !bytes.Contains(resp.Body, []byte("quick brown fox")) || bytes.Contains(resp.Body, []byte(`"isError":true`)) {
		return fmt.Errorf("unexpected answer %s", resp.Body)
	}
	return nil
}

// BenchmarkEndpointToolsCall is one tools/call over loopback HTTP: the bare
// mcp-go server, then the gateway endpoint (auth, policy, validation, the
// registry's pass-through of a fixed result) without audit and with each
// audit store.
func BenchmarkEndpointToolsCall(b *testing.B) {
	targets := []struct {
		name   string
		start  func(b *testing.B) *httptest.Server
		bearer string
		tool   string
	}{
		{"mcp-go", bareServer, "", "echo"},
		{"endpoint/audit=off", func(b *testing.B) *httptest.Server { return endpointServer(b, nil) }, benchKey, "up_echo"},
		{"endpoint/audit=memory", func(b *testing.B) *httptest.Server { return endpointServer(b, memory.NewMemStore()) }, benchKey, "up_echo"},
		{"endpoint/audit=sqlite", func(b *testing.B) *httptest.Server {
			st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "audit.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			return endpointServer(b, st)
		}, benchKey, "up_echo"},
	}
	for _, tc := range targets {
		b.Run(tc.name+"/seq", func(b *testing.B) {
			srv := tc.start(b)
			hc := benchClient()
			defer hc.CloseIdleConnections()
			s := openBenchSession(b, hc, srv.URL+"/mcp", tc.bearer, tc.tool)
			b.ReportAllocs()
			for b.Loop() {
				if err := s.call(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/parallel", func(b *testing.B) {
			srv := tc.start(b)
			hc := benchClient()
			defer hc.CloseIdleConnections()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				s := openBenchSession(b, hc, srv.URL+"/mcp", tc.bearer, tc.tool)
				for pb.Next() {
					if err := s.call(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkUpstreamCallTool is the gateway's side of an imported call: the
// upstream client calling a bare mcp-go server over Streamable HTTP. conns/op
// counts the TCP connections the server accepted: a pooled client makes
// none per call once warm.
func BenchmarkUpstreamCallTool(b *testing.B) {
	for _, parallel := range []bool{false, true} {
		name := "seq"
		if parallel {
			name = "parallel"
		}
		b.Run(name, func(b *testing.B) {
			srv := bareServer(b)
			var conns atomic.Int64
			srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					conns.Add(1)
				}
			}
			up, err := upstream.New(upstream.Options{Name: "bare", URL: srv.URL, Transport: "http"})
			if err != nil {
				b.Fatal(err)
			}
			defer up.Close()
			if _, err := up.Connect(context.Background()); err != nil {
				b.Fatal(err)
			}
			args := json.RawMessage(benchArguments)
			call := func() error {
				res, err := up.CallTool(context.Background(), "echo", args)
				if err == nil && res.IsError {
					err = fmt.Errorf("isError: %s", res.JSON)
				}
				return err
			}
			before := conns.Load()
			b.ReportAllocs()
			b.ResetTimer()
			if parallel {
				b.SetParallelism(8) // 16 callers on 2 CPUs, as bench's sessions
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := call(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else {
				for range b.N {
					if err := call(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(conns.Load()-before)/float64(b.N), "conns/op")
		})
	}
}

// BenchmarkUpstreamCallToolStdio is the same over stdio: the upstream
// client calling the test binary's stdio server (its echo tool) as a child
// process. The child's CPU is in the wall time, not in allocs/op.
func BenchmarkUpstreamCallToolStdio(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, parallel := range []bool{false, true} {
		name := "seq"
		if parallel {
			name = "parallel"
		}
		b.Run(name, func(b *testing.B) {
			up, err := upstream.New(upstream.Options{Name: "child", Command: exe, Args: []string{upstreamtest.StdioServerArg}})
			if err != nil {
				b.Fatal(err)
			}
			defer up.Close()
			if _, err := up.Connect(context.Background()); err != nil {
				b.Fatal(err)
			}
			args := json.RawMessage(`{"text":"toolgate bench: the quick brown fox jumps over the lazy dog"}`)
			call := func() error {
				res, err := up.CallTool(context.Background(), "echo", args)
				if err == nil && res.IsError {
					err = fmt.Errorf("isError: %s", res.JSON)
				}
				return err
			}
			b.ReportAllocs()
			b.ResetTimer()
			if parallel {
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := call(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else {
				for range b.N {
					if err := call(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkEndpointToolsCallEras is one tools/call through the endpoint
// (audit off) by a legacy session and by a client of revision 2026-07-28,
// which has no session and carries its _meta and the Mcp-Method and
// Mcp-Name headers on every call: the two should cost alike.
func BenchmarkEndpointToolsCallEras(b *testing.B) {
	srv := endpointServer(b, nil)
	url := srv.URL + "/mcp"
	b.Run("legacy", func(b *testing.B) {
		hc := benchClient()
		defer hc.CloseIdleConnections()
		s := openBenchSession(b, hc, url, benchKey, "up_echo")
		b.ReportAllocs()
		for b.Loop() {
			if err := s.call(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("2026-07-28", func(b *testing.B) {
		hc := benchClient()
		defer hc.CloseIdleConnections()
		call := modernBenchCall(hc, url)
		b.ReportAllocs()
		for b.Loop() {
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("2026-07-28/elicitation", func(b *testing.B) {
		hc := benchClient()
		defer hc.CloseIdleConnections()
		call := modernBenchCallDeclaring(hc, url, `{"elicitation":{}}`)
		b.ReportAllocs()
		for b.Loop() {
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("legacy/parallel", func(b *testing.B) {
		hc := benchClient()
		defer hc.CloseIdleConnections()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			s := openBenchSession(b, hc, url, benchKey, "up_echo")
			for pb.Next() {
				if err := s.call(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("2026-07-28/parallel", func(b *testing.B) {
		hc := benchClient()
		defer hc.CloseIdleConnections()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			call := modernBenchCall(hc, url)
			for pb.Next() {
				if err := call(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// modernBenchCall is a 2026-07-28 client's checked tools/call.
func modernBenchCall(hc *http.Client, url string) func() error {
	return modernBenchCallDeclaring(hc, url, `{}`)
}

// modernBenchCallDeclaring is modernBenchCall from a client declaring
// caps: one that declares elicitation has its calls run so that an
// upstream's question could reach it.
func modernBenchCallDeclaring(hc *http.Client, url, caps string) func() error {
	c := mcptest.New(url, &mcptest.Options{HTTPClient: hc, Authorization: "Bearer " + benchKey})
	header := http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"up_echo"}}
	meta := `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	return func() error {
		body := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(c.NextID(), 10) + `,"method":"tools/call","params":{"name":"up_echo","arguments":` + benchArguments + meta + `}}`
		resp, err := c.Post(context.Background(), []byte(body), header)
		if err != nil {
			return err
		}
		if resp.Status != http.StatusOK || !bytes.Contains(resp.Body, []byte("quick brown fox")) || !bytes.Contains(resp.Body, []byte(`"resultType":"complete"`)) {
			return fmt.Errorf("HTTP %d: %s", resp.Status, resp.Body)
		}
		return nil
	}
}
