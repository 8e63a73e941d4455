package upstreamtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/internal/waittest"
)

// ModernStdioServerArg, as the first argument, makes the test binary a
// stdio server of the stateless revision only.
const ModernStdioServerArg = "toolgate-test-modern-stdio-server"

// LegacyRefusal is how a server of 2026-07-28 only answers a request
// without that revision's _meta: -32022 naming what it serves.
func LegacyRefusal(id json.RawMessage, requested string) []byte {
	e := mcpgo.UnsupportedProtocolVersionError{Version: requested, Supported: []string{mcpgo.ProtocolVersion20260728}}.JSONRPCError()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": e.Error})
	return b
}

// ModernRequest is what a test server reads of a request.
type ModernRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name            string                     `json:"name"`
		ProtocolVersion string                     `json:"protocolVersion"`
		Meta            map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
}

// Problems lists what a request of the stateless revision lacks:
// the _meta members every request must carry (notifications need none).
func (r ModernRequest) Problems() []string {
	if len(r.ID) == 0 {
		return nil
	}
	var out []string
	var v string
	if json.Unmarshal(r.Params.Meta[mcpgo.MetaKeyProtocolVersion], &v) != nil || v != mcpgo.ProtocolVersion20260728 {
		out = append(out, r.Method+": _meta protocolVersion "+v)
	}
	var info mcpgo.Implementation
	if json.Unmarshal(r.Params.Meta[mcpgo.MetaKeyClientInfo], &info) != nil || info.Name != "toolgate" {
		out = append(out, r.Method+": _meta clientInfo")
	}
	var caps mcpgo.ClientCapabilities
	if json.Unmarshal(r.Params.Meta[mcpgo.MetaKeyClientCapabilities], &caps) != nil || caps.Elicitation == nil {
		out = append(out, r.Method+": _meta clientCapabilities")
	}
	return out
}

// Modern reports whether the request names a stateless revision in its
// _meta.
func (r ModernRequest) Modern() bool {
	var v string
	return json.Unmarshal(r.Params.Meta[mcpgo.MetaKeyProtocolVersion], &v) == nil && mcpgo.IsModernProtocol(v)
}

// AddModernTools gives s the tools of the modern tests: echo, counted
// (counts its calls), ask (asks for a confirmation through an
// input_required result) and grow (adds a tool, which announces
// list_changed).
func AddModernTools(s *server.MCPServer, counted *atomic.Int32) {
	s.AddTool(mcpgo.NewToolWithRawSchema("tricky", "a tricky schema", json.RawMessage(TrickySchema)),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("id=" + req.GetString("id", "")), nil
		})
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text")),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText(req.GetString("text", "")), nil
		})
	s.AddTool(mcpgo.NewTool("counted"),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText(fmt.Sprint(counted.Add(1))), nil
		})
	s.AddTool(mcpgo.NewTool("ask"),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			if r := server.ElicitationResponse(req.Params.InputResponses, "confirm"); r != nil {
				return mcpgo.NewToolResultText(fmt.Sprintf("action=%s state=%s", r.Action, req.Params.RequestState)), nil
			}
			return server.NewInputRequestBuilder("st-1").Elicit("confirm", mcpgo.ElicitationParams{
				Message:         "go ahead?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
			}).ToolResult(), nil
		})
	s.AddTool(mcpgo.NewTool("sample"),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			if r := server.SamplingResponse(req.Params.InputResponses, "llm"); r != nil {
				var text struct{ Text string }
				raw, _ := json.Marshal(r.Content)
				_ = json.Unmarshal(raw, &text)
				return mcpgo.NewToolResultText("sampled: " + text.Text), nil
			}
			return server.NewInputRequestBuilder("st-2").Sample("llm", mcpgo.CreateMessageParams{
				Messages: []mcpgo.SamplingMessage{{Role: mcpgo.RoleUser,
					Content: mcpgo.TextContent{Type: "text", Text: "what is 2+2"}}},
				MaxTokens: 10,
			}).ToolResult(), nil
		})
	var grown atomic.Int32
	s.AddTool(mcpgo.NewTool("grow"),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			n := grown.Add(1)
			s.AddTool(mcpgo.NewTool(fmt.Sprintf("grown%d", n)),
				func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
					return mcpgo.NewToolResultText("grown"), nil
				})
			return mcpgo.NewToolResultText("ok"), nil
		})
}

// ModernHTTP is a Streamable HTTP server of the stateless revision only,
// mcp-go's restricted to 2026-07-28 behind a front that refuses every
// legacy request with -32022 (mcp-go alone still answers initialize). It
// checks IM-4's credentials and the revision's _meta and headers on every
// request, hangs up on a call of "drop" after reading it, and refuses a
// call of "mismatch" with HeaderMismatch.
//
// Its tool route has x-mcp-header parameters, which mcp-go checks against
// the Mcp-Param headers, and answers with those headers; its listing also
// carries badheader, a tool whose annotation breaks the revision's rules
// (mcp-go refuses to serve one, other servers may not). touch sends
// notifications/resources/updated for its uri on every open
// subscriptions/listen whose filter names it; the server keeps a log of
// the listen requests opened and closed.
type ModernHTTP struct {
	// Server is the mcp-go server behind the front; a test may add tools.
	Server *server.MCPServer
	next   http.Handler
	// check lists what a request lacks of the credentials the test set.
	check func(r *http.Request, body []byte) []string
	// Counted counts the calls of counted; Drops those of drop.
	Counted atomic.Int32
	Drops   atomic.Int32

	mu      sync.Mutex
	methods []string // "legacy initialize", "tools/call", …
	bad     []string
	listens map[*openListen]bool
	// listenLog is "open a,b" and "close a,b" (the filter's URIs) in the
	// order the server saw them.
	listenLog []string
}

// openListen is a subscriptions/listen request the test server holds.
type openListen struct {
	ch   chan<- mcpgo.JSONRPCNotification
	uris []string
}

// routeSchema marks three top-level parameters and a nested one.
const routeSchema = `{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"count":{"type":"integer","x-mcp-header":"Count"},
	"dry":{"type":"boolean","x-mcp-header":"Dry"},
	"target":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}},
	"note":{"type":"string"}}}`

// NewModernHTTP returns a fresh server; check lists what a request lacks
// of the credentials the test expects (IM-4).
func NewModernHTTP(check func(r *http.Request, body []byte) []string) *ModernHTTP {
	m := &ModernHTTP{listens: map[*openListen]bool{}, check: check}
	hooks := &server.Hooks{}
	hooks.AddAfterListTools(func(_ context.Context, _ any, _ *mcpgo.ListToolsRequest, r *mcpgo.ListToolsResult) {
		r.Tools = append(r.Tools, mcpgo.NewToolWithRawSchema("badheader", "an object in a header",
			json.RawMessage(`{"type":"object","properties":{"o":{"type":"object","x-mcp-header":"O"}}}`)))
	})
	hooks.AddBeforeSubscriptionsListen(func(ctx context.Context, _ any, req *mcpgo.SubscriptionsListenRequest) {
		s := server.ClientSessionFromContext(ctx)
		if s == nil {
			return
		}
		l := &openListen{ch: s.NotificationChannel(), uris: req.Params.Notifications.ResourceSubscriptions}
		m.mu.Lock()
		m.listens[l] = true
		m.listenLog = append(m.listenLog, "open "+strings.Join(l.uris, ","))
		m.mu.Unlock()
		context.AfterFunc(ctx, func() {
			m.mu.Lock()
			delete(m.listens, l)
			m.listenLog = append(m.listenLog, "close "+strings.Join(l.uris, ","))
			m.mu.Unlock()
		})
	})
	m.Server = server.NewMCPServer("modern-http", "7.0.0", server.WithToolCapabilities(true),
		server.WithResourceCapabilities(true, true), server.WithHooks(hooks))
	AddModernTools(m.Server, &m.Counted)
	m.Server.AddTool(mcpgo.NewTool("drop"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("never seen"), nil
	})
	m.Server.AddTool(mcpgo.NewToolWithRawSchema("route", "x-mcp-header parameters", json.RawMessage(routeSchema)),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			var seen []string
			for k, v := range req.Header {
				if name, ok := strings.CutPrefix(k, mcpgo.HeaderParamPrefix); ok {
					seen = append(seen, name+"="+strings.Join(v, "|"))
				}
			}
			slices.Sort(seen)
			return mcpgo.NewToolResultText(strings.Join(seen, " ")), nil
		})
	m.Server.AddResource(mcpgo.NewResource("test://doc", "doc"), func(context.Context, mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
		return []mcpgo.ResourceContents{mcpgo.TextResourceContents{URI: "test://doc", Text: "doc"}}, nil
	})
	m.Server.AddTool(mcpgo.NewTool("touch", mcpgo.WithString("uri")), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		uri := req.GetString("uri", "")
		n := 0
		m.mu.Lock()
		defer m.mu.Unlock()
		for l := range m.listens {
			if slices.Contains(l.uris, uri) {
				select {
				case l.ch <- mcpgo.JSONRPCNotification{JSONRPC: mcpgo.JSONRPC_VERSION, Notification: mcpgo.Notification{
					Method: mcpgo.MethodNotificationResourceUpdated,
					Params: mcpgo.NotificationParams{AdditionalFields: map[string]any{"uri": uri}},
				}}:
					n++
				default:
				}
			}
		}
		return mcpgo.NewToolResultText(fmt.Sprintf("touched %d", n)), nil
	})
	m.next = server.NewStreamableHTTPServer(m.Server, server.WithStreamableHTTPProtocolVersions(mcpgo.ProtocolVersion20260728))
	return m
}

// Listening returns the log of listen requests and the filters of those
// open now, sorted.
func (m *ModernHTTP) Listening() (log []string, open []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for l := range m.listens {
		open = append(open, strings.Join(l.uris, ","))
	}
	slices.Sort(open)
	return slices.Clone(m.listenLog), open
}

func (m *ModernHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req ModernRequest
	_ = json.Unmarshal(body, &req)
	var problems []string
	if m.check != nil {
		problems = m.check(r, body)
	}
	modern := r.Method == http.MethodPost && req.Modern()
	if modern {
		problems = append(problems, req.Problems()...)
		if len(req.ID) > 0 && r.Header.Get(mcpgo.HeaderMethod) != req.Method {
			problems = append(problems, req.Method+": Mcp-Method "+r.Header.Get(mcpgo.HeaderMethod))
		}
	}
	m.mu.Lock()
	what := req.Method
	if !modern {
		what = "legacy " + r.Method + " " + req.Method
	}
	m.methods = append(m.methods, what)
	m.bad = append(m.bad, problems...)
	m.mu.Unlock()
	switch {
	case r.Method != http.MethodPost:
		w.WriteHeader(http.StatusMethodNotAllowed)
	case !modern:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(LegacyRefusal(req.ID, req.Params.ProtocolVersion))
	case req.Method == "tools/call" && req.Params.Name == "mismatch":
		// A refusal no listing explains.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32020,"message":"Header mismatch"}}`, req.ID)
	case req.Method == "tools/call" && req.Params.Name == "drop":
		// The call arrived; its answer never leaves.
		m.Drops.Add(1)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	default:
		m.next.ServeHTTP(w, r)
	}
}

// Seen returns the methods the server was sent and what they lacked of
// the revision.
func (m *ModernHTTP) Seen() ([]string, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.methods...), append([]string(nil), m.bad...)
}

// runModernStdioServer is mcp-go's stdio server behind a front that
// refuses every request without the stateless revision's _meta, as a
// server of that revision only does. The tool problems reports what the
// front saw: "initialize refused", then any request that lacked _meta.
func runModernStdioServer() {
	s := server.NewMCPServer("modern-stdio", "8.0.0", server.WithToolCapabilities(true))
	var counted atomic.Int32
	AddModernTools(s, &counted)
	var mu sync.Mutex
	var seen []string
	s.AddTool(mcpgo.NewTool("problems"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		return mcpgo.NewToolResultText(strings.Join(seen, "; ")), nil
	})
	s.AddTool(mcpgo.NewTool("crash"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		// Each run is marked where the test can count it, beyond this
		// process's life.
		if dir := os.Getenv("MODERN_MARKS"); dir != "" {
			f, err := os.OpenFile(filepath.Join(dir, "crash"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err == nil {
				_, _ = f.WriteString("ran\n")
				_ = f.Close()
			}
		}
		os.Exit(3)
		return nil, nil
	})
	out := &lineWriter{w: os.Stdout}
	// chatty logs at three levels and reports progress; the stateless
	// revision logs only at the level a request names. It returns once its
	// notifications are written, as mcp-go's stdio server writes them from
	// a goroutine of their own.
	s.AddTool(mcpgo.NewTool("chatty"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		var token mcpgo.ProgressToken
		if req.Params.Meta != nil {
			token = req.Params.Meta.ProgressToken
		}
		var min mcpgo.LoggingLevel
		if info := server.RequestProtocolInfoFromContext(ctx); info != nil {
			min = info.LogLevel
		}
		before, sent := out.notes.Load(), int64(0)
		for i, level := range []mcpgo.LoggingLevel{mcpgo.LoggingLevelDebug, mcpgo.LoggingLevelInfo, mcpgo.LoggingLevelError} {
			_ = s.SendLogMessageToClient(ctx, mcpgo.NewLoggingMessageNotification(level, "chatty", "message "+string(level)))
			if min != "" && level.ShouldSendTo(min) {
				sent++
			}
			if token != nil {
				_ = s.SendNotificationToClient(ctx, string(mcpgo.MethodNotificationProgress), map[string]any{
					"progressToken": token, "progress": i + 1, "total": 3,
				})
				sent++
			}
		}
		waittest.Poll(10*time.Second, func() bool { return out.notes.Load() >= before+sent })
		return mcpgo.NewToolResultText("chatted"), nil
	})
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReader(os.Stdin)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var req ModernRequest
				_ = json.Unmarshal(line, &req)
				switch {
				case req.Method != "" && !req.Modern() && len(req.ID) > 0:
					mu.Lock()
					if req.Method == "initialize" {
						seen = append(seen, "initialize refused")
					} else {
						seen = append(seen, "legacy "+req.Method)
					}
					mu.Unlock()
					_, _ = out.Write(append(LegacyRefusal(req.ID, req.Params.ProtocolVersion), '\n'))
					continue
				case req.Method != "":
					if p := req.Problems(); len(p) > 0 {
						mu.Lock()
						seen = append(seen, p...)
						mu.Unlock()
					}
				}
				if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				_ = pw.Close()
				return
			}
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := server.NewStdioServer(s).Listen(ctx, pr, out); err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}

// lineWriter writes whole lines, so that the front's refusals never land
// inside a line of the server's.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
	// notes counts the notifications written.
	notes atomic.Int64
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if i := bytes.LastIndexByte(l.buf, '\n'); i >= 0 {
		if _, err := l.w.Write(l.buf[:i+1]); err != nil {
			return 0, err
		}
		l.notes.Add(int64(bytes.Count(l.buf[:i+1], []byte(`"method":"notifications/`))))
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
	}
	return len(p), nil
}

// The credentials a test upstream is reached with: a bearer token and an
// HMAC signature (IM-4).
const (
	Token     = "tok-123"
	Secret    = "hmac-secret"
	SigHeader = "X-Toolgate-Signature"
)

// CheckAuth returns a ModernHTTP check of the credentials: the bearer
// Token, and a signature by Secret that verify accepts (the upstream
// package's VerifySignature, which this package cannot import).
func CheckAuth(verify func(secret []byte, header, method, url string, body []byte, now time.Time, tolerance time.Duration) error) func(*http.Request, []byte) []string {
	return func(r *http.Request, body []byte) []string {
		var problems []string
		if got := r.Header.Get("Authorization"); got != "Bearer "+Token {
			problems = append(problems, "authorization "+got)
		}
		var req struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &req)
		full := "http://" + r.Host + r.URL.RequestURI()
		if verify([]byte(Secret), r.Header.Get(SigHeader), r.Method, full, body, time.Now(), time.Minute) != nil {
			problems = append(problems, r.Method+" "+req.Method+": signature")
		}
		return problems
	}
}
