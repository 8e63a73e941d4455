package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/mcp/demo"
	"github.com/toolgate/toolgate/mcp/serve"
	"github.com/toolgate/toolgate/mcp/upstream"
)

// Config is one run's sizes, echoed in the JSON so a result says what
// produced it.
type Config struct {
	Quick         bool    `json:"quick"`
	Calls         int     `json:"calls"`         // sequential calls per path
	Sessions      int     `json:"sessions"`      // concurrent sessions per path
	Seconds       float64 `json:"seconds"`       // concurrent phase per path
	Rounds        int     `json:"rounds"`        // interleaved rounds the above are split into
	IdleSessions  int     `json:"idleSessions"`  // sessions opened to measure memory
	Upstreams     int     `json:"upstreams"`     // start-up: upstreams
	UpstreamTools int     `json:"upstreamTools"` // start-up: tools per upstream
	ListDelayMs   float64 `json:"listDelayMs"`   // start-up: the slowest upstream's simulated list latency
	// StartupOrder is how list latency grows along the configuration:
	// "ascending" (the slowest upstream configured last), "descending" or
	// "shuffled".
	StartupOrder  string `json:"startupOrder"`
	StartupRounds int    `json:"startupRounds"`
	CPUs          int    `json:"cpus"`
	GOMAXPROCS    int    `json:"gomaxprocs"`
	GoVersion     string `json:"goVersion"`
	OS            string `json:"os"`
	// Self is the toolgate binary: the stdio echo upstream is its
	// demo-upstream echo.
	Self string `json:"-"`
	// CPUProfile, if set, is where the measured phases' CPU profile goes.
	CPUProfile string `json:"-"`
	// Progress, if not nil, gets a line per phase.
	Progress io.Writer `json:"-"`
}

func DefaultConfig(quick bool) Config {
	c := Config{
		Quick: quick, Calls: 2000, Sessions: 16, Seconds: 5, Rounds: 5, IdleSessions: 1000,
		Upstreams: 20, UpstreamTools: 100, ListDelayMs: 200, StartupRounds: 3, StartupOrder: "ascending",
	}
	if quick {
		c.Calls, c.Seconds, c.Rounds, c.IdleSessions, c.StartupRounds = 300, 2, 3, 200, 1
	}
	c.CPUs, c.GOMAXPROCS = runtime.NumCPU(), runtime.GOMAXPROCS(0)
	c.GoVersion, c.OS = runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH
	return c
}

type seqStats struct {
	Calls int     `json:"calls"`
	P50   float64 `json:"p50Us"`
	P90   float64 `json:"p90Us"`
	P99   float64 `json:"p99Us"`
}

type concStats struct {
	Calls       int     `json:"calls"`
	CallsPerSec float64 `json:"callsPerSec"`
	P50         float64 `json:"p50Us"`
	P99         float64 `json:"p99Us"`
	// CPUPerCall is this process's CPU time per call during the concurrent
	// phase (client, gateway and in-process upstream together).
	CPUPerCall float64 `json:"cpuPerCallUs"`
	// UpstreamConns counts TCP connections the HTTP echo upstream accepted
	// during the phase: a pooled client opens none once warm.
	UpstreamConns int64 `json:"upstreamConns,omitempty"`
}

type pathResult struct {
	Path   string    `json:"path"`
	Seq    seqStats  `json:"seq"`
	Conc   concStats `json:"conc"`
	Errors int       `json:"errors"`
}

type transportResult struct {
	Direct       pathResult `json:"direct"`
	Via          pathResult `json:"via"`
	SeqP50Ratio  float64    `json:"seqP50Ratio"`
	SeqP90Ratio  float64    `json:"seqP90Ratio"`
	SeqP99Ratio  float64    `json:"seqP99Ratio"`
	ConcRatio    float64    `json:"concRatio"` // calls/s via ÷ direct
	ConcP50Ratio float64    `json:"concP50Ratio"`
	ConcP99Ratio float64    `json:"concP99Ratio"`
	// GatewayCPUPerCall is CPU per call via minus CPU per call direct.
	GatewayCPUPerCall float64 `json:"gatewayCpuPerCallUs"`
	Errors            int     `json:"errors"`
	Note              string  `json:"note,omitempty"`
}

type startupRound struct {
	GatewayMs  float64 `json:"gatewayMs"`
	SlowestMs  float64 `json:"slowestUpstreamMs"`
	SerialMs   float64 `json:"serialMs"`
	ParallelMs float64 `json:"parallelMs"`
	Ratio      float64 `json:"ratio"`
}

type startupResult struct {
	Upstreams   int     `json:"upstreams"`
	ToolsEach   int     `json:"toolsEach"`
	ListDelayMs float64 `json:"listDelayMs"`
	GatewayMs   float64 `json:"gatewayMs"`
	SlowestMs   float64 `json:"slowestUpstreamMs"`
	SerialMs    float64 `json:"serialMs"`
	// ParallelMs is a plain client connecting to and listing every upstream
	// at once, for comparison: what the machine allows without a gateway.
	// The ratio is against SlowestMs.
	ParallelMs    float64        `json:"parallelMs"`
	Ratio         float64        `json:"ratio"`
	Rounds        []startupRound `json:"rounds"`
	Errors        int            `json:"errors"`
	ToolsServed   int            `json:"toolsServed"`
	ToolsExpected int            `json:"toolsExpected"`
}

type Result struct {
	Config Config          `json:"config"`
	HTTP   transportResult `json:"http"`
	Stdio  transportResult `json:"stdio"`
	// RSS of this process (clients, gateway and the HTTP upstream).
	RSSIdleBytes int64 `json:"rssIdleBytes"`
	RSSLoadBytes int64 `json:"rssLoadBytes"`
	// Per idle session: heap growth after GC (the headline number), RSS
	// growth and goroutines, once the sessions have been idle long enough
	// to be parked (mcp.DefaultSessionParkAfter); FreshSessionBytes is the
	// heap growth right after they opened, before any was parked.
	IdleSessionBytes      float64 `json:"idleSessionBytes"`
	FreshSessionBytes     float64 `json:"freshSessionBytes"`
	IdleSessionRSSBytes   float64 `json:"idleSessionRssBytes"`
	IdleSessionGoroutines float64 `json:"idleSessionGoroutines"`
	IdleSessionErrors     int     `json:"idleSessionErrors"`
	// HopFloor is a bare reverse proxy on the same loopback hop, measured
	// like the gateway: what adding the hop costs before any gateway work.
	HopFloor hopFloor `json:"httpHopFloor"`
	// Modern is the HTTP path for a client of revision 2026-07-28 (SV-1).
	Modern modernEra `json:"httpModern"`
	// Policy is the gateway with policies and limits against without.
	Policy policyResult `json:"policy"`
	// Profiles is the traced and the everything-on gateway against the
	// plain one (key, roles and pin only).
	Profiles       profileResult `json:"profiles"`
	Startup        startupResult `json:"startup"`
	StartupRatio   float64       `json:"startupRatio"`
	Errors         int           `json:"errors"`
	ElapsedSeconds float64       `json:"elapsedSeconds"`
	Method         string        `json:"method"`
}

const benchMethod = "Interleaved rounds (direct, then via the gateway) per transport; ratios are via/direct per round, median over rounds. " +
	"Latency is wall time of one tools/call as the client sees it. CPU is this process's utime+stime from /proc/self/stat around each concurrent phase " +
	"(10 ms ticks), divided by the calls; the gateway's share is via minus direct. Idle session memory is the heap growth after GC " +
	"(runtime.MemStats.HeapAlloc) over N initialize+initialized handshakes, divided by N."

// Run sets everything up, measures, and tears it down.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	self, cpuProfile, progress := cfg.Self, cfg.CPUProfile, cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	started := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := &Result{Config: cfg, Method: benchMethod}

	tmp, err := os.MkdirTemp("", "toolgate-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	hc := benchHTTPClient(cfg.Sessions)
	defer hc.CloseIdleConnections()

	// The echo upstream over Streamable HTTP, in-process.
	var echoCount *countingListener
	var servers sync.WaitGroup
	defer servers.Wait() // after cancel: the servers stop
	defer cancel()
	echoURL, err := serveEcho(ctx, &servers, func(ln net.Listener) net.Listener {
		echoCount = &countingListener{Listener: ln}
		return echoCount
	})
	if err != nil {
		return nil, err
	}

	// The echo upstream over stdio, for the direct path: a child process.
	direct, err := upstream.New(upstream.Options{Name: "echo-direct", Command: self, Args: []string{"demo-upstream", "echo"}})
	if err != nil {
		return nil, err
	}
	defer direct.Close()
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	_, err = direct.Connect(cctx)
	ccancel()
	if err != nil {
		return nil, fmt.Errorf("starting %s demo-upstream echo: %w", self, err)
	}

	// The gateway in front of both, assembled from config and started
	// exactly as serve does: sqlite store (audit, review) in a temp dir.
	key := randomHex(24)
	gcfg, err := benchGatewayConfig(key, filepath.Join(tmp, "toolgate.db"), []config.Upstream{
		echoUpstream(echoURL),
		{Name: "stdio", Command: self, Args: []string{"demo-upstream", "echo"}, Roles: []string{benchRole}},
	})
	if err != nil {
		return nil, err
	}
	gw, err := gateway.New(ctx, gcfg, nil)
	if err != nil {
		return nil, err
	}
	defer gw.Close(context.Background())
	if err := gw.Start(ctx); err != nil {
		return nil, fmt.Errorf("gateway start-up: %w", err)
	}
	gwURL := "http://" + gw.Addr() + gcfg.Endpoints[0].Path
	if err := waitForTools(ctx, hc, gwURL, key, 2, 10*time.Second); err != nil {
		return nil, err
	}

	// A bare reverse proxy in front of the same echo: no auth, no parse.
	hopLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hopTarget, _ := url.Parse(echoURL)
	hopTarget.Path = "" // the proxy adds the request's own path
	hop := httputil.NewSingleHostReverseProxy(hopTarget)
	hopTransport := http.DefaultTransport.(*http.Transport).Clone()
	hopTransport.MaxIdleConnsPerHost = 64 // as the gateway's upstream client
	hop.Transport = hopTransport
	hop.FlushInterval = -1
	hopSrv := &http.Server{Handler: hop, ReadHeaderTimeout: 10 * time.Second}
	servers.Go(func() { _ = hopSrv.Serve(hopLn) })
	context.AfterFunc(ctx, func() { _ = hopSrv.Close() })
	hopURL := "http://" + hopLn.Addr().String() + "/mcp"

	paths := benchPaths{
		httpHop:    func() (caller, error) { return newHTTPCaller(ctx, hc, hopURL, "", "echo") },
		httpDirect: func() (caller, error) { return newHTTPCaller(ctx, hc, echoURL, "", "echo") },
		httpVia:    func() (caller, error) { return newHTTPCaller(ctx, hc, gwURL, key, "http_echo") },
		httpModern: func() (caller, error) { return newModernCaller(hc, gwURL, key, "http_echo"), nil },
		stdioDirect: func() (caller, error) {
			return &upstreamCaller{up: direct, tool: "echo", args: echoArgs}, nil
		},
		stdioVia: func() (caller, error) { return newHTTPCaller(ctx, hc, gwURL, key, "stdio_echo") },
	}

	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}

	fmt.Fprintf(progress, "toolgate bench: calls (%d rounds)…\n", cfg.Rounds)
	if err := measureCalls(ctx, cfg, paths, echoCount, res); err != nil {
		return nil, err
	}
	fmt.Fprintln(progress, "toolgate bench: policies and limits on against off…")
	var policed [2]func() (caller, error)
	for i, limits := range []bool{false, true} {
		pgw, purl, err := startPoliced(ctx, key, tmp, echoURL, limits)
		if err != nil {
			return nil, err
		}
		defer pgw.Close(context.Background())
		if err := waitForTools(ctx, hc, purl, key, 1, 10*time.Second); err != nil {
			return nil, err
		}
		policed[i] = func() (caller, error) { return newHTTPCaller(ctx, hc, purl, key, "http_echo") }
	}
	if res.Policy, err = measurePolicy(ctx, cfg, paths.httpVia, policed[0], policed[1], echoCount); err != nil {
		return nil, err
	}
	fmt.Fprintln(progress, "toolgate bench: traces and everything on against key, roles and pin only…")
	if res.Profiles, err = measureProfiles(ctx, cfg, key, tmp, echoURL, hc, paths.httpVia, echoCount); err != nil {
		return nil, err
	}
	fmt.Fprintln(progress, "toolgate bench: idle sessions…")
	measureIdleSessions(ctx, hc, gwURL, key, cfg.IdleSessions, res)
	fmt.Fprintln(progress, "toolgate bench: start-up…")
	res.Startup = measureStartup(ctx, cfg, hc, tmp)
	res.StartupRatio = res.Startup.Ratio

	res.Errors = res.HTTP.Errors + res.Stdio.Errors + res.IdleSessionErrors + res.Startup.Errors + res.Policy.Errors + res.Profiles.Errors
	res.ElapsedSeconds = round3(time.Since(started).Seconds())
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return res, nil
}

const benchRole = "bench"

// echoArgs is every call's arguments: a short message, checked on return.
var echoArgs = json.RawMessage(`{"message":"toolgate bench: the quick brown fox jumps over the lazy dog"}`)

const echoMessage = "toolgate bench: the quick brown fox jumps over the lazy dog"

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// serveEcho serves the built-in echo upstream over Streamable HTTP on a
// free loopback port, in a goroutine of servers' that ends with ctx; wrap,
// if not nil, wraps its listener (to count connections). It returns the
// upstream's MCP URL.
func serveEcho(ctx context.Context, servers *sync.WaitGroup, wrap func(net.Listener) net.Listener) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	served := ln
	if wrap != nil {
		served = wrap(ln)
	}
	servers.Go(func() { _ = demo.ServeHTTP(ctx, "echo", demo.Options{}, served) })
	return "http://" + ln.Addr().String() + "/mcp", nil
}

// echoUpstream is the gateway's upstream entry for the echo at url, its
// tools for the bench's role.
func echoUpstream(url string) config.Upstream {
	return config.Upstream{Name: "http", URL: url, Transport: config.TransportHTTP, Roles: []string{benchRole}}
}

// benchGatewayConfig is a realistic gateway config: one endpoint behind an
// API key whose actor has the role every upstream's tools require, a
// confirm secret, the store (audit, review approvals) in the given file.
func benchGatewayConfig(key, store string, ups []config.Upstream) (*config.Config, error) {
	cfg := &config.Config{
		Gateway: config.Gateway{Listen: "127.0.0.1:0", Store: store, Confirm: config.Confirm{Secret: config.Secret(randomHex(32))}},
		Endpoints: []config.Endpoint{{
			Path: "/mcp", Name: "toolgate-bench",
			Auth: &config.Auth{APIKeys: []config.APIKey{{Key: config.Secret(key), Actor: config.Actor{ID: "bench-client", Roles: []string{benchRole}}}}},
		}},
		Upstreams: ups,
	}
	cfg.SetDefaults("bench")
	// One actor opens every session of the run, the idle ones included:
	// the per-actor cap would refuse most of those.
	cfg.Gateway.MaxSessionsPerActor = cfg.Gateway.MaxSessions
	if _, err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("bench config: %w", err)
	}
	return cfg, nil
}

// waitForTools waits until the gateway serves at least want tools to the
// bench actor: the endpoint follows the registry asynchronously.
func waitForTools(ctx context.Context, hc *http.Client, url, key string, want int, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	s, err := openSession(ctx, hc, url, key)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	for {
		n, err := countTools(ctx, s)
		if err == nil && n >= want {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("gateway serves %d of %d tools after %v (last error: %v)", n, want, limit, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The client: one implementation of MCP over Streamable HTTP for both the
// direct and the gateway path, so a ratio measures the gateway and not a
// difference between clients. It speaks raw JSON-RPC with net/http and a
// connection pool sized for the concurrent sessions.

func benchHTTPClient(sessions int) *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: 2*sessions + 8,
		IdleConnTimeout:     90 * time.Second,
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

const benchProtocol = "2025-06-18"

// openSession opens one MCP session (initialize, then initialized) at url,
// with key as its bearer when not empty.
func openSession(ctx context.Context, hc *http.Client, url, key string) (*mcpClient, error) {
	c := newMCPClient(url, hc, key)
	if err := c.initialize(ctx); err != nil {
		return nil, err
	}
	if c.Session() == "" {
		return nil, fmt.Errorf("initialize at %s: no session id", url)
	}
	return c, nil
}

// countTools lists every page of tools/list. It decodes only the count and
// the cursor, once: the start-up phase polls it while it times.
func countTools(ctx context.Context, c *mcpClient) (int, error) {
	n, cursor := 0, ""
	for range 1000 {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":` + strconv.Quote(cursor) + `}`
		}
		resp, err := c.Post(ctx, []byte(`{"jsonrpc":"2.0","id":`+strconv.FormatInt(c.NextID(), 10)+`,"method":"tools/list","params":`+params+`}`), nil)
		if err != nil {
			return n, err
		}
		var m struct {
			Result *struct {
				Tools      []struct{} `json:"tools"`
				NextCursor string     `json:"nextCursor"`
			} `json:"result"`
		}
		if resp.Status != http.StatusOK || resp.Decode(&m) != nil || m.Result == nil {
			return n, fmt.Errorf("tools/list: HTTP %d: %.200s", resp.Status, resp.Body)
		}
		n += len(m.Result.Tools)
		if cursor = m.Result.NextCursor; cursor == "" {
			return n, nil
		}
	}
	return n, errors.New("tools/list: too many pages")
}

// caller makes one checked tools/call of the echo tool.
type caller interface {
	call(ctx context.Context) error
}

// httpCaller is one session's tools/call: the body is built in a buffer it
// reuses, around the only part that changes, the id.
type httpCaller struct {
	c              *mcpClient
	prefix, suffix string
	body           []byte
}

func newHTTPCaller(ctx context.Context, hc *http.Client, url, key, tool string) (caller, error) {
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := openSession(ictx, hc, url, key)
	if err != nil {
		return nil, err
	}
	return &httpCaller{
		c:      c,
		prefix: `{"jsonrpc":"2.0","id":`,
		suffix: `,"method":"tools/call","params":{"name":` + strconv.Quote(tool) + `,"arguments":` + string(echoArgs) + `}}`,
	}, nil
}

func (c *httpCaller) call(ctx context.Context) error {
	body := append(c.body[:0], c.prefix...)
	body = strconv.AppendInt(body, c.c.NextID(), 10)
	body = append(body, c.suffix...)
	c.body = body
	resp, err := c.c.Post(ctx, body, nil)
	if err != nil {
		return err
	}
	if resp.Status != http.StatusOK {
		return fmt.Errorf("HTTP %d: %.200s", resp.Status, resp.Body)
	}
	result, rpcErr, err := resp.Result()
	if err != nil {
		return err
	}
	if rpcErr != nil {
		return fmt.Errorf("JSON-RPC error %d: %s", rpcErr.Code, rpcErr.Message)
	}
	return checkEcho(result)
}

// modernCaller is a client of revision 2026-07-28: no session, each
// tools/call carries its protocol version, client info and capabilities
// in _meta, and the Mcp-Method and Mcp-Name headers.
type modernCaller struct {
	httpCaller
	header http.Header
}

func newModernCaller(hc *http.Client, url, key, tool string) caller {
	c := newMCPClient(url, hc, key)
	return &modernCaller{
		httpCaller: httpCaller{
			c:      c,
			prefix: `{"jsonrpc":"2.0","id":`,
			suffix: `,"method":"tools/call","params":{"name":` + strconv.Quote(tool) + `,"arguments":` + string(echoArgs) +
				`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"toolgate-bench","version":"1"},` +
				`"io.modelcontextprotocol/clientCapabilities":{}}}}`,
		},
		header: http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {tool}},
	}
}

func (c *modernCaller) call(ctx context.Context) error {
	body := append(c.body[:0], c.prefix...)
	body = strconv.AppendInt(body, c.c.NextID(), 10)
	body = append(body, c.suffix...)
	c.body = body
	resp, err := c.c.Post(ctx, body, c.header)
	if err != nil {
		return err
	}
	if resp.Status != http.StatusOK {
		return fmt.Errorf("HTTP %d: %.200s", resp.Status, resp.Body)
	}
	result, rpcErr, err := resp.Result()
	if err != nil {
		return err
	}
	if rpcErr != nil {
		return fmt.Errorf("JSON-RPC error %d: %s", rpcErr.Code, rpcErr.Message)
	}
	return checkEcho(result)
}

// upstreamCaller calls through toolgate's own upstream client (mcp-go's
// stdio transport underneath): the direct stdio path.
type upstreamCaller struct {
	up   core.Upstream
	tool string
	args json.RawMessage
}

func (c *upstreamCaller) call(ctx context.Context) error {
	res, err := c.up.CallTool(ctx, c.tool, c.args)
	if err != nil {
		return err
	}
	return checkEcho(res.JSON)
}

// checkEcho checks a tools/call result: not an error, one text block
// carrying the message back.
func checkEcho(result json.RawMessage) error {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if len(result) == 0 {
		return errors.New("no result")
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return err
	}
	if r.IsError || len(r.Content) != 1 || r.Content[0].Text != echoMessage {
		return fmt.Errorf("unexpected result %.200s", result)
	}
	return nil
}

// callTimeout bounds one call, so a stuck call cannot hold a phase.
const callTimeout = 10 * time.Second

func timedCall(ctx context.Context, c caller) (time.Duration, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	start := time.Now()
	err := c.call(cctx)
	return time.Since(start), err
}

// Measurement.

type benchPaths struct {
	httpDirect, httpVia, stdioDirect, stdioVia func() (caller, error)
	// httpHop goes through a bare reverse proxy to the HTTP echo.
	httpHop func() (caller, error)
	// httpModern is httpVia for a client of revision 2026-07-28, which has
	// no session.
	httpModern func() (caller, error)
}

// modernEra is a 2026-07-28 client's calls through the gateway beside a
// legacy session's, in the same rounds: the ratios are modern/legacy, so
// 1.00 is "costs the same", and the added p50s are each era's p50 minus
// the direct path's.
type modernEra struct {
	Via             pathResult `json:"via"`
	SeqP50Ratio     float64    `json:"seqP50RatioToLegacy"`
	ConcRatio       float64    `json:"concRatioToLegacy"`
	ConcP50Ratio    float64    `json:"concP50RatioToLegacy"`
	AddedSeqP50     float64    `json:"addedSeqP50Micros"`
	LegacyAddedP50  float64    `json:"legacyAddedSeqP50Micros"`
	AddedConcP50    float64    `json:"addedConcP50Micros"`
	LegacyAddedConc float64    `json:"legacyAddedConcP50Micros"`
}

// hopFloor is the bare proxy's ratios to the direct path.
type hopFloor struct {
	Path        string  `json:"path"`
	SeqP50Ratio float64 `json:"seqP50Ratio"`
	SeqP99Ratio float64 `json:"seqP99Ratio"`
	ConcRatio   float64 `json:"concRatio"`
	CPUPerCall  float64 `json:"cpuPerCallMicros"`
}

// pathRun is one path's callers and what was measured on it.
type pathRun struct {
	name    string
	seq     caller
	workers []caller

	seqLat   []time.Duration
	concLat  []time.Duration
	concOK   int
	concTime time.Duration
	cpu      time.Duration
	cpuOK    bool
	conns    int64
	errors   int
	lastErr  error
}

func (p *pathRun) fail(err error) {
	p.errors++
	p.lastErr = err
}

func newPathRun(ctx context.Context, name string, mk func() (caller, error), sessions, warm int) (*pathRun, error) {
	p := &pathRun{name: name}
	var err error
	if p.seq, err = mk(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for range sessions {
		w, err := mk()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		p.workers = append(p.workers, w)
	}
	// Warm-up, not measured: connections, caches, the JIT of the runtime's
	// allocator size classes. Failures still count.
	for range warm {
		if _, err := timedCall(ctx, p.seq); err != nil {
			p.fail(err)
		}
	}
	// The workers warm up together, so each has its connection before
	// the first measured round.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, w := range p.workers {
		wg.Go(func() {
			for range 3 {
				if _, err := timedCall(ctx, w); err != nil {
					mu.Lock()
					p.fail(err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return p, nil
}

func (p *pathRun) runSeq(ctx context.Context, n int) []time.Duration {
	lat := make([]time.Duration, 0, n)
	for range n {
		if ctx.Err() != nil {
			break
		}
		d, err := timedCall(ctx, p.seq)
		if err != nil {
			p.fail(err)
			continue
		}
		lat = append(lat, d)
	}
	p.seqLat = append(p.seqLat, lat...)
	return lat
}

// runConc runs every worker for d and returns calls/s and the latencies
// of this round.
func (p *pathRun) runConc(ctx context.Context, d time.Duration, conns *countingListener, rss *rssMax) (float64, []time.Duration) {
	cpu0, cpuOK0 := processCPU()
	conns0 := conns.n.Load()
	stopRSS := rss.sample()
	start := time.Now()
	deadline := start.Add(d)
	lats := make([][]time.Duration, len(p.workers))
	errs := make([]error, len(p.workers))
	nerr := make([]int, len(p.workers))
	var wg sync.WaitGroup
	for i, w := range p.workers {
		wg.Go(func() {
			lat := make([]time.Duration, 0, 1024)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				dur, err := timedCall(ctx, w)
				if err != nil {
					nerr[i]++
					errs[i] = err
					continue
				}
				lat = append(lat, dur)
			}
			lats[i] = lat
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopRSS()
	cpu1, cpuOK1 := processCPU()
	p.conns += conns.n.Load() - conns0
	if cpuOK0 && cpuOK1 {
		p.cpu += cpu1 - cpu0
		p.cpuOK = true
	}
	var round []time.Duration
	for i := range p.workers {
		round = append(round, lats[i]...)
		p.errors += nerr[i]
		if errs[i] != nil {
			p.lastErr = errs[i]
		}
	}
	p.concLat = append(p.concLat, round...)
	p.concOK += len(round)
	p.concTime += elapsed
	return float64(len(round)) / elapsed.Seconds(), round
}

func (p *pathRun) result(path string) pathResult {
	r := pathResult{Path: path, Errors: p.errors}
	r.Seq = seqStats{Calls: len(p.seqLat), P50: pct(p.seqLat, 50), P90: pct(p.seqLat, 90), P99: pct(p.seqLat, 99)}
	r.Conc = concStats{Calls: p.concOK, P50: pct(p.concLat, 50), P99: pct(p.concLat, 99), UpstreamConns: p.conns}
	if p.concTime > 0 {
		r.Conc.CallsPerSec = round1(float64(p.concOK) / p.concTime.Seconds())
	}
	if p.cpuOK && p.concOK > 0 {
		r.Conc.CPUPerCall = round1(float64(p.cpu) / float64(time.Microsecond) / float64(p.concOK))
	}
	return r
}

// ratios collects each round's via/direct ratios.
type ratios struct{ seq50, seq90, seq99, conc, conc50, conc99 []float64 }

func (r *ratios) addSeq(direct, via []time.Duration) {
	r.seq50 = append(r.seq50, ratio(pct(via, 50), pct(direct, 50)))
	r.seq90 = append(r.seq90, ratio(pct(via, 90), pct(direct, 90)))
	r.seq99 = append(r.seq99, ratio(pct(via, 99), pct(direct, 99)))
}

func (r *ratios) addConc(directRate, viaRate float64, direct, via []time.Duration) {
	r.conc = append(r.conc, ratio(viaRate, directRate))
	r.conc50 = append(r.conc50, ratio(pct(via, 50), pct(direct, 50)))
	r.conc99 = append(r.conc99, ratio(pct(via, 99), pct(direct, 99)))
}

// measureCalls runs the sequential and the concurrent phases for both
// transports in interleaved rounds.
func measureCalls(ctx context.Context, cfg Config, paths benchPaths, echoConns *countingListener, res *Result) error {
	warm := min(50, cfg.Calls/10+5)
	type transport struct {
		direct, via *pathRun
		r           ratios
		// hop is the bare proxy, for HTTP only; hr its ratios to direct.
		hop *pathRun
		hr  ratios
		// modern is the 2026-07-28 client via the gateway, for HTTP only;
		// mr its ratios to the legacy session's (via).
		modern *pathRun
		mr     ratios
		// seqs and concs are the direct, legacy and modern latencies of
		// each round, for the added p50s.
		added [][3][]time.Duration
	}
	mk := func(name string, direct, via func() (caller, error)) (*transport, error) {
		d, err := newPathRun(ctx, name+" direct", direct, cfg.Sessions, warm)
		if err != nil {
			return nil, err
		}
		v, err := newPathRun(ctx, name+" via gateway", via, cfg.Sessions, warm)
		if err != nil {
			return nil, err
		}
		return &transport{direct: d, via: v}, nil
	}
	h, err := mk("http", paths.httpDirect, paths.httpVia)
	if err != nil {
		return err
	}
	s, err := mk("stdio", paths.stdioDirect, paths.stdioVia)
	if err != nil {
		return err
	}
	if h.hop, err = newPathRun(ctx, "http via bare proxy", paths.httpHop, cfg.Sessions, warm); err != nil {
		return err
	}
	if paths.httpModern != nil {
		if h.modern, err = newPathRun(ctx, "http via gateway, 2026-07-28", paths.httpModern, cfg.Sessions, warm); err != nil {
			return err
		}
	}
	rss := &rssMax{}
	if v, ok := processRSS(); ok {
		res.RSSIdleBytes = v
	}

	perRound := max(1, cfg.Calls/cfg.Rounds)
	for round := range cfg.Rounds {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		n := perRound
		if round == cfg.Rounds-1 {
			n = max(1, cfg.Calls-perRound*(cfg.Rounds-1))
		}
		for _, t := range []*transport{h, s} {
			d := t.direct.runSeq(ctx, n)
			v := t.via.runSeq(ctx, n)
			t.r.addSeq(d, v)
			if t.hop != nil {
				t.hr.addSeq(d, t.hop.runSeq(ctx, n))
			}
			if t.modern != nil {
				m := t.modern.runSeq(ctx, n)
				t.mr.addSeq(v, m)
				t.added = append(t.added, [3][]time.Duration{d, v, m})
			}
		}
	}
	phase := time.Duration(cfg.Seconds / float64(cfg.Rounds) * float64(time.Second))
	for range cfg.Rounds {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, t := range []*transport{h, s} {
			dRate, d := t.direct.runConc(ctx, phase, echoConns, rss)
			vRate, v := t.via.runConc(ctx, phase, echoConns, rss)
			t.r.addConc(dRate, vRate, d, v)
			if t.hop != nil {
				hRate, hl := t.hop.runConc(ctx, phase, echoConns, rss)
				t.hr.addConc(dRate, hRate, d, hl)
			}
			if t.modern != nil {
				mRate, ml := t.modern.runConc(ctx, phase, echoConns, rss)
				t.mr.addConc(vRate, mRate, v, ml)
			}
		}
	}
	res.RSSLoadBytes = rss.max.Load()

	summarize := func(t *transport, directPath, viaPath, note string) transportResult {
		out := transportResult{
			Direct: t.direct.result(directPath), Via: t.via.result(viaPath),
			SeqP50Ratio: median(t.r.seq50), SeqP90Ratio: median(t.r.seq90), SeqP99Ratio: median(t.r.seq99),
			ConcRatio: median(t.r.conc), ConcP50Ratio: median(t.r.conc50), ConcP99Ratio: median(t.r.conc99),
			Errors: t.direct.errors + t.via.errors, Note: note,
		}
		if out.Direct.Conc.CPUPerCall > 0 && out.Via.Conc.CPUPerCall > 0 {
			out.GatewayCPUPerCall = round1(out.Via.Conc.CPUPerCall - out.Direct.Conc.CPUPerCall)
		}
		for _, p := range []*pathRun{t.direct, t.via} {
			if p.lastErr != nil {
				out.Note = strings.TrimSpace(out.Note + fmt.Sprintf(" Last error on %s: %v.", p.name, p.lastErr))
			}
		}
		return out
	}
	res.HTTP = summarize(h,
		"client →HTTP→ echo (in-process)",
		"client →HTTP→ gateway →HTTP→ echo (all in-process)",
		"")
	hopRes := h.hop.result("client →HTTP→ bare reverse proxy →HTTP→ echo (all in-process)")
	res.HopFloor = hopFloor{Path: hopRes.Path, SeqP50Ratio: median(h.hr.seq50), SeqP99Ratio: median(h.hr.seq99), ConcRatio: median(h.hr.conc)}
	if d := res.HTTP.Direct.Conc.CPUPerCall; d > 0 && hopRes.Conc.CPUPerCall > 0 {
		res.HopFloor.CPUPerCall = round1(hopRes.Conc.CPUPerCall - d)
	}
	res.HTTP.Errors += h.hop.errors
	if h.modern != nil {
		res.Modern = modernEra{Via: h.modern.result("client →HTTP (2026-07-28, no session)→ gateway →HTTP→ echo (all in-process)"),
			SeqP50Ratio: median(h.mr.seq50), ConcRatio: median(h.mr.conc), ConcP50Ratio: median(h.mr.conc50)}
		var legacy, modern []float64
		for _, a := range h.added {
			base := pct(a[0], 50)
			legacy = append(legacy, pct(a[1], 50)-base)
			modern = append(modern, pct(a[2], 50)-base)
		}
		res.Modern.LegacyAddedP50, res.Modern.AddedSeqP50 = round1(median(legacy)), round1(median(modern))
		res.Modern.LegacyAddedConc = round1(res.HTTP.Via.Conc.P50 - res.HTTP.Direct.Conc.P50)
		res.Modern.AddedConcP50 = round1(res.Modern.Via.Conc.P50 - res.HTTP.Direct.Conc.P50)
		res.HTTP.Errors += h.modern.errors
		if h.modern.lastErr != nil {
			res.HTTP.Note = strings.TrimSpace(res.HTTP.Note + fmt.Sprintf(" Last error on %s: %v.", h.modern.name, h.modern.lastErr))
		}
	}
	res.Stdio = summarize(s,
		"client →stdio→ echo child process",
		"client →HTTP→ gateway →stdio→ echo child process",
		"The transports differ: the direct path speaks stdio to its own echo child, the gateway path adds an HTTP hop; "+
			"the ratio includes that hop. The gateway's CPU share includes the HTTP client's side of the hop, and neither includes the children's CPU.")
	return nil
}

// Idle sessions.

// measureIdleSessions opens n sessions (initialize + initialized) against
// the gateway and leaves them idle; the heap growth after GC divided by n is
// what one idle session costs, measured right after they opened and once
// they were idle long enough to be parked. The client keeps only the
// session ids.
func measureIdleSessions(ctx context.Context, hc *http.Client, url, key string, n int, res *Result) {
	settle := func() {
		// Connections are not sessions: close the idle ones and give the
		// server's connection goroutines a moment to end.
		hc.CloseIdleConnections()
		time.Sleep(100 * time.Millisecond)
		runtime.GC()
		debug.FreeOSMemory()
	}
	settle()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap0, gr0 := ms.HeapAlloc, runtime.NumGoroutine()
	rss0, rssOK := processRSS()

	ids := make([]string, n)
	var next atomic.Int64
	var errs atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				ictx, cancel := context.WithTimeout(ctx, callTimeout)
				s, err := openSession(ictx, hc, url, key)
				cancel()
				if err != nil {
					errs.Add(1)
					continue
				}
				ids[i] = s.Session()
			}
		})
	}
	wg.Wait()
	settle()
	runtime.ReadMemStats(&ms)
	opened := n - int(errs.Load())
	res.IdleSessionErrors = int(errs.Load())
	if opened <= 0 {
		return
	}
	res.FreshSessionBytes = math.Round((float64(ms.HeapAlloc) - float64(heap0)) / float64(opened))
	// Idle: long enough for the gateway to park them (one wait, and the
	// sweep's half of it, with room to spare).
	time.Sleep(2 * serve.DefaultSessionParkAfter)
	settle()
	runtime.ReadMemStats(&ms)
	res.IdleSessionBytes = math.Round((float64(ms.HeapAlloc) - float64(heap0)) / float64(opened))
	res.IdleSessionGoroutines = round3(float64(runtime.NumGoroutine()-gr0) / float64(opened))
	if rss1, ok := processRSS(); ok && rssOK {
		res.IdleSessionRSSBytes = math.Round(float64(rss1-rss0) / float64(opened))
	}
	runtime.KeepAlive(ids)
}

// Start-up.

// slowLister delays the answer to tools/list, standing in for an upstream
// that takes a while to answer: the in-process servers answer in about a
// millisecond, where real ones take tens to hundreds. Every other request
// passes straight through.
func slowLister(next http.Handler, delay time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && delay > 0 {
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				http.Error(w, "reading the body failed", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/list"`)) {
				t := time.NewTimer(delay)
				select {
				case <-r.Context().Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// serveBulk serves the built-in bulk upstream with tools tools over
// Streamable HTTP at the returned URL, answering tools/list after delay,
// until ctx is done.
func serveBulk(ctx context.Context, wg *sync.WaitGroup, tools int, delay time.Duration) (string, error) {
	// The bulk server reads its size from the environment when built.
	old, had := os.LookupEnv(demo.BulkToolsEnv)
	_ = os.Setenv(demo.BulkToolsEnv, strconv.Itoa(tools))
	s, err := demo.New("bulk", demo.Options{})
	if had {
		_ = os.Setenv(demo.BulkToolsEnv, old)
	} else {
		_ = os.Unsetenv(demo.BulkToolsEnv)
	}
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", slowLister(server.NewStreamableHTTPServer(s), delay))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	wg.Go(func() { _ = hs.Serve(ln) })
	wg.Go(func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if hs.Shutdown(sctx) != nil {
			_ = hs.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/mcp", nil
}

// measureStartup times, in interleaved rounds, each of U bulk upstreams
// connected to and listed alone (direct), then a gateway importing all of
// them until an MCP client is served every tool. Upstream i answers
// tools/list after listDelay·(i+1)/U, so the slowest takes listDelay; with
// the descending order it is upstream U-1-i, with shuffled a fixed
// permutation.
func measureStartup(ctx context.Context, cfg Config, hc *http.Client, tmp string) startupResult {
	out := startupResult{Upstreams: cfg.Upstreams, ToolsEach: cfg.UpstreamTools, ListDelayMs: cfg.ListDelayMs, ToolsExpected: cfg.Upstreams * cfg.UpstreamTools}
	sctx, stop := context.WithCancel(ctx)
	var servers sync.WaitGroup
	defer servers.Wait()
	defer stop()
	ups := make([]config.Upstream, cfg.Upstreams)
	rank := startupRanks(cfg.Upstreams, cfg.StartupOrder)
	for i := range ups {
		delay := time.Duration(cfg.ListDelayMs * float64(time.Millisecond) * float64(rank[i]+1) / float64(cfg.Upstreams))
		url, err := serveBulk(sctx, &servers, cfg.UpstreamTools, delay)
		if err != nil {
			out.Errors++
			return out
		}
		ups[i] = config.Upstream{Name: fmt.Sprintf("bulk%02d", i), URL: url, Transport: config.TransportHTTP, Roles: []string{benchRole}}
	}
	var gws, slows, serials, pars, rs []float64
	for round := range cfg.StartupRounds {
		if ctx.Err() != nil {
			break
		}
		slowest, serial, ok := startupDirect(ctx, ups, cfg.UpstreamTools)
		if !ok {
			out.Errors++
		}
		parallel, ok := startupDirectParallel(ctx, ups, cfg.UpstreamTools)
		if !ok {
			out.Errors++
		}
		store := filepath.Join(tmp, fmt.Sprintf("startup-%d.db", round))
		gwTime, served, ok := startupGateway(ctx, hc, ups, store, out.ToolsExpected)
		if !ok {
			out.Errors++
		}
		out.ToolsServed = served
		r := startupRound{GatewayMs: ms(gwTime), SlowestMs: ms(slowest), SerialMs: ms(serial), ParallelMs: ms(parallel),
			Ratio: round3(ratio(float64(gwTime), float64(slowest)))}
		out.Rounds = append(out.Rounds, r)
		gws, slows, serials, pars, rs = append(gws, r.GatewayMs), append(slows, r.SlowestMs), append(serials, r.SerialMs), append(pars, r.ParallelMs), append(rs, r.Ratio)
	}
	out.GatewayMs, out.SlowestMs, out.SerialMs, out.ParallelMs, out.Ratio = median(gws), median(slows), median(serials), median(pars), median(rs)
	return out
}

// startupRanks gives each configured upstream its rank in list latency
// (0 fastest): in configuration order, reversed, or a fixed permutation.
func startupRanks(n int, order string) []int {
	rank := make([]int, n)
	for i := range rank {
		rank[i] = i
	}
	switch order {
	case "descending":
		slices.Reverse(rank)
	case "shuffled":
		r := mrand.New(mrand.NewPCG(8, 8)) // the same permutation every run
		r.Shuffle(n, func(i, j int) { rank[i], rank[j] = rank[j], rank[i] })
	}
	return rank
}

// startupDirect connects to and lists each upstream alone, one after the
// other, with the gateway's own upstream client; it returns the slowest and
// the sum.
func startupDirect(ctx context.Context, ups []config.Upstream, want int) (slowest, serial time.Duration, ok bool) {
	ok = true
	for _, u := range ups {
		up, err := gateway.NewUpstream(u)
		if err != nil {
			return 0, 0, false
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		start := time.Now()
		_, err = up.Connect(cctx)
		var tools []core.RemoteTool
		if err == nil {
			tools, err = up.ListTools(cctx)
		}
		d := time.Since(start)
		cancel()
		_ = up.Close()
		if err != nil || len(tools) != want {
			ok = false
			continue
		}
		slowest = max(slowest, d)
		serial += d
	}
	return slowest, serial, ok
}

// startupDirectParallel connects to and lists every upstream at once with
// the gateway's own upstream client, and returns when all have answered.
func startupDirectParallel(ctx context.Context, ups []config.Upstream, want int) (time.Duration, bool) {
	clients := make([]core.Upstream, len(ups))
	for i, u := range ups {
		up, err := gateway.NewUpstream(u)
		if err != nil {
			return 0, false
		}
		clients[i] = up
	}
	defer func() {
		for _, up := range clients {
			_ = up.Close()
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var failed atomic.Bool
	var wg sync.WaitGroup
	start := time.Now()
	for _, up := range clients {
		wg.Go(func() {
			_, err := up.Connect(cctx)
			var tools []core.RemoteTool
			if err == nil {
				tools, err = up.ListTools(cctx)
			}
			if err != nil || len(tools) != want {
				failed.Store(true)
			}
		})
	}
	wg.Wait()
	return time.Since(start), !failed.Load()
}

// startupGateway starts a gateway over ups as serve does (opening the
// store, building the endpoints, then importing) and times it until a
// client's tools/list returns every tool.
func startupGateway(ctx context.Context, hc *http.Client, ups []config.Upstream, store string, want int) (time.Duration, int, bool) {
	key := randomHex(24)
	gcfg, err := benchGatewayConfig(key, store, ups)
	if err != nil {
		return 0, 0, false
	}
	start := time.Now()
	gw, err := gateway.New(ctx, gcfg, nil)
	if err != nil {
		return 0, 0, false
	}
	defer gw.Close(context.Background())
	if err := gw.Start(ctx); err != nil {
		return 0, 0, false
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	s, err := openSession(wctx, hc, "http://"+gw.Addr()+gcfg.Endpoints[0].Path, key)
	if err != nil {
		return 0, 0, false
	}
	for {
		n, err := countTools(wctx, s)
		if err == nil && n >= want {
			return time.Since(start), n, n == want
		}
		if wctx.Err() != nil {
			return time.Since(start), n, false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Process measurements. /proc is Linux; elsewhere these report !ok and the
// numbers are left out.

// processCPU is this process's user+system CPU time, from the utime and
// stime fields of /proc/self/stat (in USER_HZ ticks, 100 per second on
// Linux).
func processCPU() (time.Duration, bool) { return statCPU("/proc/self/stat") }

// statCPU reads utime+stime from a /proc/PID/stat file.
func statCPU(path string) (time.Duration, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const tick = 10 * time.Millisecond
	return time.Duration(u+s) * tick, true
}

// processRSS is VmRSS from /proc/self/status.
func processRSS() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, false
			}
			return kb << 10, true
		}
	}
	return 0, false
}

// rssMax keeps the highest RSS seen while sampling.
type rssMax struct{ max atomic.Int64 }

func (r *rssMax) observe() {
	if v, ok := processRSS(); ok && v > r.max.Load() {
		r.max.Store(v)
	}
}

// sample observes every 100 ms until the returned stop is called.
func (r *rssMax) sample() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			r.observe()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		r.observe()
	}
}

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// Statistics.

// pct is the p-th percentile (nearest rank) in microseconds; 0 for none.
func pct(lat []time.Duration, p float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	i = max(0, min(i, len(s)-1))
	return round1(float64(s[i]) / float64(time.Microsecond))
}

// ratio is a/b, or 0 when b is 0 (JSON has no NaN or infinity).
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return round3(m)
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func ms(d time.Duration) float64 { return round1(float64(d) / float64(time.Millisecond)) }

// Output.

func fmtUs(us float64) string {
	switch {
	case us == 0:
		return "–"
	case us < 1000:
		return fmt.Sprintf("%.0fµs", us)
	default:
		return fmt.Sprintf("%.2fms", us/1000)
	}
}

func fmtBytes(b float64) string {
	switch {
	case b == 0:
		return "n/a"
	case math.Abs(b) >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case math.Abs(b) >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

func (r *Result) Print(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "toolgate bench — gateway overhead against a direct call, same run\n")
	fmt.Fprintf(w, "%s %s, %d CPUs, GOMAXPROCS %d; %d interleaved rounds; store (audit, review): sqlite in a temp dir\n\n",
		c.GoVersion, c.OS, c.CPUs, c.GOMAXPROCS, c.Rounds)
	const row = "%-20s %9s %9s %9s   %9s %9s %9s %9s\n"
	fmt.Fprintf(w, "%-20s %-29s   %s\n", "", fmt.Sprintf("sequential (%d calls)", c.Calls), fmt.Sprintf("concurrent (%d sessions, %gs)", c.Sessions, c.Seconds))
	fmt.Fprintf(w, row, "", "p50", "p90", "p99", "calls/s", "p50", "p99", "CPU/call")
	path := func(label string, p pathResult) {
		fmt.Fprintf(w, row, label, fmtUs(p.Seq.P50), fmtUs(p.Seq.P90), fmtUs(p.Seq.P99),
			fmt.Sprintf("%.0f", p.Conc.CallsPerSec), fmtUs(p.Conc.P50), fmtUs(p.Conc.P99), fmtUs(p.Conc.CPUPerCall))
	}
	f2 := func(v float64) string { return fmt.Sprintf("%.2f", v) }
	for _, t := range []struct {
		name string
		r    transportResult
	}{{"http", r.HTTP}, {"stdio", r.Stdio}} {
		path(t.name+" direct", t.r.Direct)
		path(t.name+" via gateway", t.r.Via)
		fmt.Fprintf(w, row, "  ratio via/direct", f2(t.r.SeqP50Ratio), f2(t.r.SeqP90Ratio), f2(t.r.SeqP99Ratio),
			f2(t.r.ConcRatio), f2(t.r.ConcP50Ratio), f2(t.r.ConcP99Ratio), "+"+fmtUs(t.r.GatewayCPUPerCall))
	}
	fmt.Fprintf(w, row, "http bare proxy/dir", f2(r.HopFloor.SeqP50Ratio), "", f2(r.HopFloor.SeqP99Ratio), f2(r.HopFloor.ConcRatio), "", "", "+"+fmtUs(r.HopFloor.CPUPerCall))
	fmt.Fprintln(w, "  (a bare reverse proxy on the same hop, same rounds: what the extra loopback HTTP hop costs before any gateway work)")
	if m := r.Modern; m.Via.Seq.Calls > 0 {
		path("http via, 2026-07-28", m.Via)
		fmt.Fprintf(w, row, "  ratio modern/legacy", f2(m.SeqP50Ratio), "", "", f2(m.ConcRatio), f2(m.ConcP50Ratio), "", "")
		fmt.Fprintf(w, "  (a 2026-07-28 client, no session, same rounds; added p50 over direct: modern %s, legacy %s sequential; %s and %s concurrent)\n",
			fmtUs(m.AddedSeqP50), fmtUs(m.LegacyAddedP50), fmtUs(m.AddedConcP50), fmtUs(m.LegacyAddedConc))
	}
	fmt.Fprintln(w, "\nratios are medians over rounds; CPU/call is this whole process (client, gateway, in-process upstream)")
	fmt.Fprintf(w, "paths: http direct   %s\n       http via      %s\n       stdio direct  %s\n       stdio via     %s\n",
		r.HTTP.Direct.Path, r.HTTP.Via.Path, r.Stdio.Direct.Path, r.Stdio.Via.Path)
	fmt.Fprintf(w, "stdio: %s\n\n", r.Stdio.Note)
	fmt.Fprintf(w, "gateway CPU per call   %s over HTTP, %s over stdio (CPU/call via minus direct, concurrent phase)\n",
		fmtUs(r.HTTP.GatewayCPUPerCall), fmtUs(r.Stdio.GatewayCPUPerCall))
	fmt.Fprintf(w, "upstream connections   %d opened by the gateway to the HTTP echo during its concurrent phases (direct client: %d)\n",
		r.HTTP.Via.Conc.UpstreamConns, r.HTTP.Direct.Conc.UpstreamConns)
	fmt.Fprintf(w, "RSS (whole process)    %s idle, %s under load\n", fmtBytes(float64(r.RSSIdleBytes)), fmtBytes(float64(r.RSSLoadBytes)))
	fmt.Fprintf(w, "idle session           %s heap each (%d sessions; RSS %s, %.2f goroutines each; %s right after opening, before they were parked)\n",
		fmtBytes(r.IdleSessionBytes), c.IdleSessions, fmtBytes(r.IdleSessionRSSBytes), r.IdleSessionGoroutines, fmtBytes(r.FreshSessionBytes))
	s := r.Startup
	fmt.Fprintf(w, "start-up               %d upstreams × %d tools served in %.0f ms; slowest upstream alone %.0f ms, all one after another %.0f ms; ratio %.2f\n",
		s.Upstreams, s.ToolsEach, s.GatewayMs, s.SlowestMs, s.SerialMs, s.Ratio)
	fmt.Fprintf(w, "                       (for comparison, not the ratio's base: a plain client listing all at once %.0f ms)\n", s.ParallelMs)
	fmt.Fprintf(w, "                       (the upstream of rank i answers tools/list after %g ms·i/%d, simulated, ranks %s along the configuration; %d round(s))\n",
		s.ListDelayMs, s.Upstreams, c.StartupOrder, len(s.Rounds))
	r.printPolicy(w)
	r.printProfiles(w)
	fmt.Fprintf(w, "errors                 %d\n", r.Errors)
	for _, t := range []transportResult{r.HTTP, r.Stdio} {
		if t.Errors > 0 {
			fmt.Fprintf(w, "                       %s\n", t.Note)
		}
	}
	fmt.Fprintf(w, "elapsed                %.1fs\n", r.ElapsedSeconds)
}
