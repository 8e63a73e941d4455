package bench

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/toolgate/toolgate/config"
)

// The measuring parts toolgate-lab's side-by-side runs reuse
// (internal/lab/sidebyside), so a figure there is taken exactly as toolgate
// bench takes its own: one client, one pooled transport, the same checked
// echo call, the same statistics.

// Caller makes one checked tools/call of the echo tool.
type Caller = caller

// PathResult is what was measured on one path.
type PathResult = pathResult

// Path is one path's callers — one sequential, the others concurrent —
// and what was measured on them. Not safe for concurrent use.
type Path struct{ r *pathRun }

// NewPath makes sessions+1 callers with mk and warms them with warm
// sequential calls and a few concurrent ones, not measured.
func NewPath(ctx context.Context, name string, mk func() (Caller, error), sessions, warm int) (*Path, error) {
	r, err := newPathRun(ctx, name, mk, sessions, warm)
	if err != nil {
		return nil, err
	}
	return &Path{r: r}, nil
}

// RunSeq makes n sequential calls and returns their latencies.
func (p *Path) RunSeq(ctx context.Context, n int) []time.Duration { return p.r.runSeq(ctx, n) }

// RunConc runs every concurrent caller for d and returns the calls per
// second of that phase.
func (p *Path) RunConc(ctx context.Context, d time.Duration) float64 {
	rate, _ := p.r.runConc(ctx, d, &countingListener{}, &rssMax{})
	return rate
}

// ConcCalls is how many concurrent calls succeeded so far.
func (p *Path) ConcCalls() int { return p.r.concOK }

// Result is every phase so far, named name.
func (p *Path) Result(name string) PathResult { return p.r.result(name) }

// Failures is how many calls failed, and the last one's error.
func (p *Path) Failures() (int, error) { return p.r.errors, p.r.lastErr }

// EndSessions ends each caller's session, if it has one: runs one after
// another stay under the gateways' session caps.
func (p *Path) EndSessions(ctx context.Context) {
	for _, c := range append([]caller{p.r.seq}, p.r.workers...) {
		if h, ok := c.(*httpCaller); ok && h.c.Session() != "" {
			_, _ = h.c.Delete(ctx)
		}
	}
}

// HTTPClient is the bench's client transport, pooled for sessions
// concurrent sessions.
func HTTPClient(sessions int) *http.Client { return benchHTTPClient(sessions) }

// SessionCaller opens a legacy session at url and calls tool in it.
func SessionCaller(ctx context.Context, hc *http.Client, url, key, tool string) (Caller, error) {
	return newHTTPCaller(ctx, hc, url, key, tool)
}

// PeerCaller is SessionCaller for a gateway that may serve without
// sessions (mcp-proxy's Streamable HTTP is stateless).
func PeerCaller(ctx context.Context, hc *http.Client, url, key, tool string) (Caller, error) {
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c := newMCPClient(url, hc, key)
	if err := c.initialize(ictx); err != nil {
		return nil, err
	}
	return &httpCaller{
		c:      c,
		prefix: `{"jsonrpc":"2.0","id":`,
		suffix: `,"method":"tools/call","params":{"name":` + strconv.Quote(tool) + `,"arguments":` + string(echoArgs) + `}}`,
	}, nil
}

// ModernCaller calls tool as a client of revision 2026-07-28: no session,
// _meta on every request.
func ModernCaller(hc *http.Client, url, key, tool string) Caller {
	return newModernCaller(hc, url, key, tool)
}

// ServeEcho serves the built-in echo upstream over Streamable HTTP on a
// free loopback port until ctx ends, in a goroutine of servers'; it
// returns the upstream's MCP URL.
func ServeEcho(ctx context.Context, servers *sync.WaitGroup) (string, error) {
	return serveEcho(ctx, servers, nil)
}

// EchoUpstream is a gateway's upstream entry for the echo at url.
func EchoUpstream(url string) config.Upstream { return echoUpstream(url) }

// GatewayConfig is the bench's gateway config: one endpoint behind key,
// the role every upstream's tools require, a confirm secret, the store.
func GatewayConfig(key, store string, ups []config.Upstream) (*config.Config, error) {
	return benchGatewayConfig(key, store, ups)
}

// WaitForTools waits, up to limit, until the gateway at url serves at
// least want tools to key's actor.
func WaitForTools(ctx context.Context, hc *http.Client, url, key string, want int, limit time.Duration) error {
	return waitForTools(ctx, hc, url, key, want, limit)
}

// RandomHex is n random bytes in hex.
func RandomHex(n int) string { return randomHex(n) }

// Pct is the p-th percentile of lat (nearest rank) in microseconds; 0 for
// none.
func Pct(lat []time.Duration, p float64) float64 { return pct(lat, p) }

// Median is the median of v to three decimals; 0 for none.
func Median(v []float64) float64 { return median(v) }

// Ratio is a/b, or 0 when b is 0.
func Ratio(a, b float64) float64 { return ratio(a, b) }

// Round1 and Round3 round to one and three decimals.
func Round1(v float64) float64 { return round1(v) }
func Round3(v float64) float64 { return round3(v) }

// FmtUs prints microseconds as the bench's tables do.
func FmtUs(us float64) string { return fmtUs(us) }

// StatCPU reads utime+stime from a /proc/PID/stat file.
func StatCPU(path string) (time.Duration, bool) { return statCPU(path) }
