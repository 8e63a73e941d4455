package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/otlptest"
	"github.com/toolgate/toolgate/internal/waittest"
	"github.com/toolgate/toolgate/mcp/upstream"
)

// probeStdioArg makes the test binary a stdio MCP server with the probe
// tools (see init), so the gateway runs a real child process.
const probeStdioArg = "toolgate-test-trace-probe"

func init() {
	// Stdio upstreams run under this binary's supervisor command, as they
	// run under toolgate's.
	if len(os.Args) > 2 && os.Args[1] == "_supervise" && os.Args[2] == "--" {
		os.Exit(upstream.Supervise(context.Background(), os.Args[3:], os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == probeStdioArg {
		if err := server.ServeStdio(probeServer()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

type headerKey struct{}

// probeServer has a read tool that answers with the trace context it
// received, as a header (HTTP) and in _meta, an action tool, and a prompt
// whose text is the _meta traceparent of its prompts/get.
func probeServer() *server.MCPServer {
	s := server.NewMCPServer("trace-probe", "1.0.0")
	s.AddTool(mcpgo.NewTool("probe", mcpgo.WithReadOnlyHintAnnotation(true), mcpgo.WithString("secret")),
		func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			header, _ := ctx.Value(headerKey{}).(string)
			var meta string
			if m := req.Params.Meta; m != nil {
				meta, _ = m.AdditionalFields["traceparent"].(string)
			}
			out, _ := json.Marshal(map[string]string{"header": header, "meta": meta})
			return mcpgo.NewToolResultText(string(out)), nil
		})
	s.AddTool(mcpgo.NewTool("change", mcpgo.WithReadOnlyHintAnnotation(false), mcpgo.WithDestructiveHintAnnotation(true), mcpgo.WithString("secret")),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("changed"), nil
		})
	s.AddPrompt(mcpgo.NewPrompt("trace"), func(_ context.Context, req mcpgo.GetPromptRequest) (*mcpgo.GetPromptResult, error) {
		var meta string
		if m := req.Params.Meta; m != nil {
			meta, _ = m.AdditionalFields["traceparent"].(string)
		}
		return mcpgo.NewGetPromptResult("the traceparent in _meta", []mcpgo.PromptMessage{mcpgo.NewPromptMessage(mcpgo.RoleUser, mcpgo.NewTextContent(meta))}), nil
	})
	return s
}

// serveProbe serves probeServer over Streamable HTTP on 127.0.0.1 until the
// test ends.
func serveProbe(t *testing.T) string {
	t.Helper()
	h := server.NewStreamableHTTPServer(probeServer(), server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, headerKey{}, r.Header.Get("traceparent"))
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		<-done
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// Distinctive values that must reach no span.
const (
	otlpToken = "otlp-token-7c1e0b55d4a2"
	argValue  = "argument-value-91f3a6c2"
	// An argument value a policy rule denies.
	refusedValue = "refused-value-3e8d10b7"
	// The caller's own trace, which the gateway continues.
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
)

// lockedBuffer is a log sink safe for the gateway's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// traceConfig is a gateway config with an HTTP and a stdio probe upstream,
// exporting traces to endpoint over protocol with the token as a header.
func traceConfig(t *testing.T, endpoint, protocol string) *config.Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	yaml := gatewayYAML(filepath.Join(t.TempDir(), "toolgate.db"),
		upstreamYAML("web", serveProbe(t), true),
		upstreamYAML("ops", serveProbe(t), true),
		fmt.Sprintf("  - name: local\n    command: %q\n    args: [%s]\n    timeout: 20s\n    required: true\n", exe, probeStdioArg),
	) + "policies:\n  default: allow\n  rules:\n    - {id: ask-ops, when: tool.name == \"ops_probe\", effect: approve}\n" +
		"    - {id: no-refused, when: tool.name == \"web_probe\" && args.secret == \"" + refusedValue + "\", effect: deny}\n" +
		fmt.Sprintf("telemetry:\n  traces:\n    endpoint: %s\n    protocol: %s\n    headers: {authorization: \"Bearer ${OTLP_TOKEN}\"}\n    sampleRatio: 1.0\n", endpoint, protocol)
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(path, config.LoadOptions{
		Environ: func() []string { return append(testEnv[:len(testEnv):len(testEnv)], "OTLP_TOKEN="+otlpToken) }, HomeDir: t.TempDir(), Version: "test",
	})
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	return cfg
}

// probeAnswer is what a probe call saw of the trace context.
type probeAnswer struct {
	Header string `json:"header"`
	Meta   string `json:"meta"`
}

// OP-9: one call's whole path in a real OTLP receiver. A client that sends
// its own traceparent calls, through a real gateway, a tool of an HTTP
// upstream and one of a stdio child process; each call is one server span
// in the caller's trace, named and attributed as the MCP conventions say,
// whose in-process stages (authentication, policy, validation, an
// action's confirm gate, the audit write) are its attributes with their
// durations, and whose only child is the client span of its upstream
// attempt. A read a policy sends to an operator also has the operator's
// wait as a child, the one stage that is a span, since it waits on a
// person. The upstreams received the attempt span's context: the HTTP one
// as a header and in _meta, the stdio one in _meta. A call a rule denies
// is a failed span with error.type tool_error. The collector got its
// header; no span holds the argument value, the API key or the
// collector's token, and neither does the log.
func TestTracesFollowACallAcrossTheHop(t *testing.T) {
	for _, protocol := range []string{"http", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			ctx := testCtx(t)
			rcv := otlptest.Start(t)
			endpoint := rcv.URL
			if protocol == "grpc" {
				rcv.StartGRPC(t)
				endpoint = rcv.GRPC
			}
			cfg := traceConfig(t, endpoint, protocol)
			var logs lockedBuffer
			g := newGateway(t, cfg, &gateway.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			if err := g.Start(ctx); err != nil {
				t.Fatalf("Start: %v", err)
			}
			s := connectWith(t, ctx, "http://"+g.Addr()+"/mcp", map[string]string{
				"Authorization": "Bearer " + testKey, "traceparent": "00-" + callerTrace + "-" + callerSpan + "-01",
			})
			waitServed(t, ctx, s, []string{"web_probe", "local_probe", "web_change"}, nil)

			answers := map[string]probeAnswer{}
			for _, tool := range []string{"web_probe", "local_probe"} {
				res := call(t, ctx, s, tool, map[string]any{"secret": argValue})
				var a probeAnswer
				if res.IsError || json.Unmarshal([]byte(resultText(res)), &a) != nil {
					t.Fatalf("%s: %q isError=%v", tool, resultText(res), res.IsError)
				}
				answers[tool] = a
			}
			if res := call(t, ctx, s, "web_change", map[string]any{"secret": argValue}); res.IsError {
				t.Fatalf("web_change: %q", resultText(res))
			}
			if res := call(t, ctx, s, "web_probe", map[string]any{"secret": refusedValue}); !res.IsError {
				t.Fatalf("a denied web_probe was answered %q", resultText(res))
			}
			// A read that waits for an operator.
			_, sub := g.Registry().Bus().Subscribe(256)
			waited := callAsync(ctx, s, "ops_probe", map[string]any{"secret": argValue})
			p := waitPending(t, ctx, sub, "ops_probe")
			sub.Close()
			if err := g.Approvals().Approve(p.ID, "olivia"); err != nil {
				t.Fatalf("Approve: %v", err)
			}
			res := result(t, ctx, waited)
			var a probeAnswer
			if res.IsError || json.Unmarshal([]byte(resultText(res)), &a) != nil {
				t.Fatalf("ops_probe: %q", resultText(res))
			}
			answers["ops_probe"] = a
			// Exemplars: the latency histogram names the calls' trace, in
			// the OpenMetrics exposition a scraper asks for.
			var exposition string
			if !waittest.Poll(stepWait, func() bool {
				exposition = scrapeOpenMetrics(t, "http://"+g.Addr()+"/metrics")
				return strings.Contains(exposition, `toolgate_call_duration_seconds_bucket{outcome="ok",tool="local_probe"`) &&
					strings.Contains(exposition, `# {trace_id="`+callerTrace+`"}`)
			}) {
				t.Errorf("/metrics has no exemplar of trace %s:\n%s", callerTrace, exposition)
			}
			// Close flushes the exporter: every span is in by its end.
			closeGateway(t, g)
			spans := rcv.Spans()

			for _, tool := range []string{"web_probe", "local_probe", "web_change", "ops_probe"} {
				root := only(t, spans, func(sp otlptest.Span) bool {
					return sp.Name == "tools/call "+tool && sp.Attributes["toolgate.call.outcome"] != "denied"
				})
				if root.TraceID != callerTrace || root.ParentSpanID != callerSpan || root.Kind != tracepb.Span_SPAN_KIND_SERVER {
					t.Errorf("%s: span %+v does not continue the caller's trace %s/%s as a server span", tool, root, callerTrace, callerSpan)
				}
				outcome := "" // an ok call's span names no outcome
				if tool == "web_change" {
					outcome = "preview"
				}
				if root.Attributes["mcp.method.name"] != "tools/call" || root.Attributes["gen_ai.tool.name"] != tool ||
					root.Attributes["gen_ai.operation.name"] != "execute_tool" || root.Attributes["jsonrpc.request.id"] == "" ||
					root.Attributes["http.response.status_code"] != "200" || root.Attributes["toolgate.call.outcome"] != outcome ||
					root.StatusError || root.Attributes["error.type"] != "" {
					t.Errorf("%s: request span attributes %v, failed %v", tool, root.Attributes, root.StatusError)
				}
				stages := []string{"auth", "policy", "validate", "audit"}
				var children []string
				switch tool {
				case "web_change":
					stages = append(stages, "confirm")
				case "ops_probe":
					children = append(children, "operator wait")
				}
				if tool != "web_change" {
					children = append(children, "tools/call probe")
				}
				for _, stage := range stages {
					stageTook(t, root, stage)
				}
				if got := childNames(spans, root); !slices.Equal(got, children) {
					t.Errorf("%s: the request span's children are %q, want %q", tool, got, children)
				}
				if tool == "web_change" {
					continue // a preview: nothing went upstream
				}
				upstream, transport := "web", "http"
				switch tool {
				case "local_probe":
					upstream, transport = "local", "stdio"
				case "ops_probe":
					upstream = "ops"
				}
				attempt := only(t, spans, func(sp otlptest.Span) bool {
					return sp.Name == "tools/call probe" && sp.ParentSpanID == root.SpanID
				})
				if attempt.Kind != tracepb.Span_SPAN_KIND_CLIENT || attempt.Attributes["toolgate.upstream.name"] != upstream ||
					attempt.Attributes["toolgate.upstream.transport"] != transport || attempt.Attributes["toolgate.upstream.attempt"] != "1" ||
					attempt.Attributes["toolgate.upstream.outcome"] != "ok" || attempt.TraceID != callerTrace {
					t.Errorf("%s: attempt span %+v", tool, attempt)
				}
				sent := "00-" + callerTrace + "-" + attempt.SpanID + "-01"
				a := answers[tool]
				if a.Meta != sent {
					t.Errorf("%s: the upstream saw _meta.traceparent %q, want %q", tool, a.Meta, sent)
				}
				if transport == "http" && a.Header != sent {
					t.Errorf("%s: the upstream saw the traceparent header %q, want %q", tool, a.Header, sent)
				}
			}
			denied := only(t, spans, func(sp otlptest.Span) bool {
				return sp.Name == "tools/call web_probe" && sp.Attributes["toolgate.call.outcome"] == "denied"
			})
			if !denied.StatusError || denied.Attributes["error.type"] != "tool_error" {
				t.Errorf("the denied call's span is not failed as a tool error: %+v", denied)
			}
			stageTook(t, denied, "policy")
			if got := childNames(spans, denied); len(got) != 0 {
				t.Errorf("the denied call went on to %q", got)
			}
			for _, sp := range spans {
				if sp.Resource["service.name"] != "toolgate" || sp.Scope != "github.com/toolgate/toolgate" {
					t.Errorf("span %q: resource %v, scope %q", sp.Name, sp.Resource, sp.Scope)
				}
				text := sp.Name + fmt.Sprint(sp.Attributes) + fmt.Sprint(sp.Resource)
				for _, secret := range []string{argValue, refusedValue, testKey, otlpToken, testSecret} {
					if strings.Contains(text, secret) {
						t.Errorf("span %q holds a secret or an argument value: %s", sp.Name, text)
					}
				}
			}
			headers := rcv.Headers()
			if len(headers) == 0 {
				t.Fatal("no export arrived")
			}
			for _, h := range headers {
				if got := h["authorization"]; len(got) != 1 || got[0] != "Bearer "+otlpToken {
					t.Errorf("an export came with authorization %q", got)
				}
			}
			if strings.Contains(logs.String(), otlpToken) {
				t.Errorf("the log holds the collector's token:\n%s", logs.String())
			}
		})
	}
}

// only is the one span pred matches, failing the test unless there is
// exactly one.
func only(t *testing.T, spans []otlptest.Span, pred func(otlptest.Span) bool) otlptest.Span {
	t.Helper()
	var found []otlptest.Span
	for _, sp := range spans {
		if pred(sp) {
			found = append(found, sp)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans match, want 1; all spans:\n%s", len(found), otlptest.Dump(spans))
	}
	return found[0]
}

// stageTook fails the test unless span reports how long stage took (OP-9):
// its toolgate.<stage>.duration attribute, in seconds.
func stageTook(t *testing.T, span otlptest.Span, stage string) {
	t.Helper()
	v, ok := span.Attributes["toolgate."+stage+".duration"]
	if d, err := strconv.ParseFloat(v, 64); !ok || err != nil || d < 0 || d > 600 {
		t.Errorf("span %q: %s took %q: %v", span.Name, stage, v, span.Attributes)
	}
}

// childNames is the names of parent's children among spans, sorted.
func childNames(spans []otlptest.Span, parent otlptest.Span) []string {
	var names []string
	for _, sp := range spans {
		if sp.ParentSpanID == parent.SpanID && sp.TraceID == parent.TraceID {
			names = append(names, sp.Name)
		}
	}
	slices.Sort(names)
	return names
}

// scrapeOpenMetrics fetches url as a Prometheus server does that wants
// exemplars.
func scrapeOpenMetrics(t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
	hc := &http.Client{Timeout: stepWait}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("GET %s answered %s, not OpenMetrics", url, ct)
	}
	return string(b)
}

// OP-9: tracing is off by default. Without telemetry.traces and the OTLP
// environment no span is made and nothing is added upstream: the HTTP
// upstream gets no traceparent header and neither upstream a _meta one,
// even when the client sent its own traceparent.
func TestTracingOffAddsNothingUpstream(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	ctx := testCtx(t)
	cfg := traceConfig(t, "http://127.0.0.1:4318", "http")
	cfg.Telemetry.Traces = config.Traces{}
	g := newGateway(t, cfg, nil)
	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	s := connectWith(t, ctx, "http://"+g.Addr()+"/mcp", map[string]string{
		"Authorization": "Bearer " + testKey, "traceparent": "00-" + callerTrace + "-" + callerSpan + "-01",
	})
	waitServed(t, ctx, s, []string{"web_probe", "local_probe"}, nil)
	for _, tool := range []string{"web_probe", "local_probe"} {
		res := call(t, ctx, s, tool, map[string]any{"secret": argValue})
		var a probeAnswer
		if res.IsError || json.Unmarshal([]byte(resultText(res)), &a) != nil {
			t.Fatalf("%s: %q isError=%v", tool, resultText(res), res.IsError)
		}
		if a.Header != "" || a.Meta != "" {
			t.Errorf("%s: with tracing off the upstream saw header %q, _meta %q", tool, a.Header, a.Meta)
		}
	}
}

// OP-9: a request of revision 2026-07-28 may carry its caller's trace
// context in _meta rather than in a header. A raw modern tools/call with
// _meta.traceparent and no header is a server span in the caller's trace,
// with the authentication, which ran before the body was read, among its
// stages; the HTTP and the stdio upstream receive the attempt's context in
// the same trace. A modern call without any trace context starts a trace
// of its own, and one refused before its body was read still has its
// span, with the failed authentication's duration and outcome on it.
func TestModernCallContinuesTheTraceInItsMeta(t *testing.T) {
	ctx := testCtx(t)
	rcv := otlptest.Start(t)
	g := newGateway(t, traceConfig(t, rcv.URL, "http"), nil)
	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	url := "http://" + g.Addr() + "/mcp"
	traced := strings.Replace(modernMeta, `"_meta":{`, `"_meta":{"traceparent":"00-`+callerTrace+`-`+callerSpan+`-01","tracestate":"vendor=1",`, 1)
	modernCall := func(tool, meta string) (int, probeAnswer) {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"secret":"` + argValue + `"},` + meta + `}}`
		var code int
		var a probeAnswer
		// The upstreams' tools are served shortly after Start.
		waittest.Poll(stepWait, func() bool {
			var ans map[string]json.RawMessage
			code, ans = rawModern(t, url, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}, body)
			var res mcpgo.CallToolResult
			if code != http.StatusOK || json.Unmarshal(ans["result"], &res) != nil || res.IsError {
				return false
			}
			return json.Unmarshal([]byte(resultText(&res)), &a) == nil
		})
		return code, a
	}
	answers := map[string]probeAnswer{}
	for _, tool := range []string{"web_probe", "local_probe"} {
		code, a := modernCall(tool, traced)
		if code != http.StatusOK || a.Meta == "" {
			t.Fatalf("%s: HTTP %d, the upstream saw %+v", tool, code, a)
		}
		answers[tool] = a
	}
	if code, _ := modernCall("web_probe", modernMeta); code != http.StatusOK {
		t.Fatalf("an untraced modern call: HTTP %d", code)
	}
	// Refused before its body is read: its span opens all the same, with
	// the failed authentication as its child.
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{`+traced+`}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	req.Header.Set("Authorization", "Bearer wrong-key-0000000000000000")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong key: HTTP %d", resp.StatusCode)
	}
	closeGateway(t, g)
	spans := rcv.Spans()
	for _, tool := range []string{"web_probe", "local_probe"} {
		root := only(t, spans, func(sp otlptest.Span) bool { return sp.Name == "tools/call "+tool && sp.TraceID == callerTrace })
		if root.ParentSpanID != callerSpan || root.Kind != tracepb.Span_SPAN_KIND_SERVER || root.Attributes["mcp.protocol.version"] != "2026-07-28" {
			t.Errorf("%s: span %+v does not continue the caller's trace %s/%s as a modern server span", tool, root, callerTrace, callerSpan)
		}
		for _, stage := range []string{"auth", "policy", "validate", "audit"} {
			stageTook(t, root, stage)
		}
		if got := childNames(spans, root); !slices.Equal(got, []string{"tools/call probe"}) {
			t.Errorf("%s: the request span's children are %q", tool, got)
		}
		attempt := only(t, spans, func(sp otlptest.Span) bool { return sp.Name == "tools/call probe" && sp.ParentSpanID == root.SpanID })
		if sent := "00-" + callerTrace + "-" + attempt.SpanID + "-01"; answers[tool].Meta != sent {
			t.Errorf("%s: the upstream saw _meta.traceparent %q, want %q", tool, answers[tool].Meta, sent)
		}
	}
	other := only(t, spans, func(sp otlptest.Span) bool { return sp.Name == "tools/call web_probe" && sp.TraceID != callerTrace })
	if other.ParentSpanID != "" {
		t.Errorf("a modern call without trace context has parent %q", other.ParentSpanID)
	}
	stageTook(t, other, "auth")
	if other.Attributes["toolgate.auth.outcome"] != "" {
		t.Errorf("an authenticated call's span: %v", other.Attributes)
	}
	refused := only(t, spans, func(sp otlptest.Span) bool {
		return sp.Name == "POST /mcp" && sp.Attributes["http.response.status_code"] == "401"
	})
	stageTook(t, refused, "auth")
	if refused.Attributes["toolgate.auth.outcome"] != "refused" {
		t.Errorf("the refused request's span: %+v", refused)
	}
	if got := childNames(spans, refused); len(got) != 0 {
		t.Errorf("the refused request's span has children %q", got)
	}
}

// OP-9: every request to an upstream carries the trace context in _meta,
// not tools/call alone: a traced prompts/get reaches the stdio child with
// the traceparent of a span of the caller's trace the gateway exported.
func TestStdioUpstreamSeesTheTraceOfAPromptGet(t *testing.T) {
	ctx := testCtx(t)
	rcv := otlptest.Start(t)
	g := newGateway(t, traceConfig(t, rcv.URL, "http"), nil)
	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	s := connectWith(t, ctx, "http://"+g.Addr()+"/mcp", map[string]string{
		"Authorization": "Bearer " + testKey, "traceparent": "00-" + callerTrace + "-" + callerSpan + "-01",
	})
	waitServed(t, ctx, s, []string{"local_probe"}, nil)
	req := mcpgo.GetPromptRequest{}
	req.Params.Name = "local_trace"
	res, err := s.GetPrompt(ctx, req)
	if err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	var seen string
	if len(res.Messages) == 1 {
		if tc, ok := res.Messages[0].Content.(mcpgo.TextContent); ok {
			seen = tc.Text
		}
	}
	closeGateway(t, g)
	prefix := "00-" + callerTrace + "-"
	if !strings.HasPrefix(seen, prefix) || !strings.HasSuffix(seen, "-01") {
		t.Fatalf("the stdio upstream saw _meta.traceparent %q, want one in trace %s", seen, callerTrace)
	}
	sent := strings.TrimSuffix(strings.TrimPrefix(seen, prefix), "-01")
	only(t, rcv.Spans(), func(sp otlptest.Span) bool { return sp.TraceID == callerTrace && sp.SpanID == sent })
}
