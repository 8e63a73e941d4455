// Package sidebyside is toolgate-lab's runs of other programs side by side:
// toolgate and other gateways in their own processes in front of one echo
// upstream (peers), and replicas on one PostgreSQL store behind a
// round-robin proxy (replicas). They measure with internal/bench's parts,
// so their figures are taken as toolgate bench takes its own. Lab tooling:
// the installed binary does not link it.
package sidebyside

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/bench"
)

// Peer is a gateway running in a process of its own, in front of the same
// echo upstream as PeerConfig.Direct: another gateway (TBXark/mcp-proxy,
// say) or toolgate serve itself, so every gateway is measured the same way.
type Peer struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// Key is the bearer token, if the gateway wants one.
	Key string `json:"-"`
	// Tool is the echo tool's name as the gateway serves it.
	Tool string `json:"tool"`
	// PID is the gateway's process, for its CPU and RSS (0: not measured).
	PID int `json:"pid,omitempty"`
	// Modern calls as a client of revision 2026-07-28 (no session, _meta
	// on every request) instead of opening a legacy session (SV-1).
	Modern bool `json:"modern,omitempty"`
}

// PeerConfig is a side-by-side run: one client calls the echo upstream
// directly and through each peer, in interleaved rounds.
type PeerConfig struct {
	Direct     string  `json:"direct"`
	DirectTool string  `json:"directTool"`
	Peers      []Peer  `json:"peers"`
	Calls      int     `json:"calls"`
	Sessions   int     `json:"sessions"`
	Seconds    float64 `json:"seconds"`
	Rounds     int     `json:"rounds"`
	Progress   io.Writer
}

// PeerPath is what was measured on one path.
type PeerPath struct {
	Name string `json:"name"`
	Seq  struct {
		P50 float64 `json:"p50Us"`
		P99 float64 `json:"p99Us"`
		// AddedP50 is the median over rounds of p50 via − p50 direct.
		AddedP50 float64 `json:"addedP50Us"`
		// CPUPerCall is the gateway process's CPU per sequential call.
		CPUPerCall float64 `json:"cpuPerCallUs,omitempty"`
	} `json:"seq"`
	Conc struct {
		CallsPerSec float64 `json:"callsPerSec"`
		P50         float64 `json:"p50Us"`
		P99         float64 `json:"p99Us"`
		CPUPerCall  float64 `json:"cpuPerCallUs,omitempty"`
	} `json:"conc"`
	// RSSMaxBytes is the gateway process's highest RSS seen under load.
	RSSMaxBytes int64  `json:"rssMaxBytes,omitempty"`
	Errors      int    `json:"errors"`
	LastError   string `json:"lastError,omitempty"`
}

// PeerResult is a side-by-side run's paths, direct first.
type PeerResult struct {
	Config PeerConfig `json:"config"`
	Paths  []PeerPath `json:"paths"`
	Method string     `json:"method"`
}

const peerMethod = "One client (JSON-RPC over pooled net/http, as toolgate bench) calls the echo directly and through each gateway, " +
	"paths interleaved in every round: sequential calls, then the sessions concurrently. Added p50 is p50 via − p50 direct per round, " +
	"median over rounds; calls/s is over all rounds. CPU is each gateway process's utime+stime from /proc/PID/stat (10 ms ticks) " +
	"around its phases, divided by its calls; RSS is the highest VmRSS of /proc/PID/status sampled during its concurrent phases."

// RunPeers measures the direct path and every peer in interleaved rounds.
func RunPeers(ctx context.Context, cfg PeerConfig) (*PeerResult, error) {
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	hc := bench.HTTPClient(cfg.Sessions * (len(cfg.Peers) + 1))
	defer hc.CloseIdleConnections()
	warm := min(50, cfg.Calls/10+5)
	type peerRun struct {
		peer            Peer
		run             *bench.Path
		added           []float64
		seqCPU, concCPU time.Duration
		seqN            int
		cpuOK           bool
		rss             int64
	}
	paths := []*peerRun{{peer: Peer{Name: "direct", URL: cfg.Direct, Tool: cfg.DirectTool}}}
	for _, p := range cfg.Peers {
		paths = append(paths, &peerRun{peer: p})
	}
	for _, p := range paths {
		fmt.Fprintf(progress, "toolgate-lab peers: opening %d sessions on %s…\n", cfg.Sessions+1, p.peer.Name)
		r, err := bench.NewPath(ctx, p.peer.Name, func() (bench.Caller, error) {
			if p.peer.Modern {
				return bench.ModernCaller(hc, p.peer.URL, p.peer.Key, p.peer.Tool), nil
			}
			return bench.PeerCaller(ctx, hc, p.peer.URL, p.peer.Key, p.peer.Tool)
		}, cfg.Sessions, warm)
		if err != nil {
			return nil, err
		}
		p.run = r
	}
	cpuOf := func(p *peerRun) (time.Duration, bool) {
		if p.peer.PID == 0 {
			return 0, false
		}
		return pidCPU(p.peer.PID)
	}
	perRound := max(1, cfg.Calls/cfg.Rounds)
	for round := range cfg.Rounds {
		fmt.Fprintf(progress, "toolgate-lab peers: round %d of %d…\n", round+1, cfg.Rounds)
		var direct float64
		for i, p := range paths {
			c0, ok0 := cpuOf(p)
			lat := p.run.RunSeq(ctx, perRound)
			c1, ok1 := cpuOf(p)
			if ok0 && ok1 {
				p.seqCPU += c1 - c0
				p.seqN += len(lat)
				p.cpuOK = true
			}
			if i == 0 {
				direct = bench.Pct(lat, 50)
			}
			p.added = append(p.added, bench.Pct(lat, 50)-direct)
		}
		phase := time.Duration(cfg.Seconds / float64(cfg.Rounds) * float64(time.Second))
		for _, p := range paths {
			c0, ok0 := cpuOf(p)
			stop := func() {}
			if p.peer.PID != 0 {
				stop = sampleRSS(p.peer.PID, &p.rss)
			}
			ok := p.run.ConcCalls()
			p.run.RunConc(ctx, phase)
			stop()
			c1, ok1 := cpuOf(p)
			if ok0 && ok1 && p.run.ConcCalls() > ok {
				p.concCPU += c1 - c0
			}
		}
	}
	// End the sessions, so that runs one after another stay under the
	// gateways' session caps.
	for _, p := range paths {
		p.run.EndSessions(ctx)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := &PeerResult{Config: cfg, Method: peerMethod}
	for _, p := range paths {
		r := p.run.Result(p.peer.Name)
		var out PeerPath
		out.Name = p.peer.Name
		out.Seq.P50, out.Seq.P99 = r.Seq.P50, r.Seq.P99
		out.Seq.AddedP50 = bench.Round1(bench.Median(p.added))
		out.Conc.CallsPerSec, out.Conc.P50, out.Conc.P99 = r.Conc.CallsPerSec, r.Conc.P50, r.Conc.P99
		if p.cpuOK && p.seqN > 0 {
			out.Seq.CPUPerCall = bench.Round1(float64(p.seqCPU) / float64(time.Microsecond) / float64(p.seqN))
		}
		if p.cpuOK && p.run.ConcCalls() > 0 {
			out.Conc.CPUPerCall = bench.Round1(float64(p.concCPU) / float64(time.Microsecond) / float64(p.run.ConcCalls()))
		}
		out.RSSMaxBytes = p.rss
		var lastErr error
		if out.Errors, lastErr = p.run.Failures(); lastErr != nil {
			out.LastError = lastErr.Error()
		}
		res.Paths = append(res.Paths, out)
	}
	return res, nil
}

// PrintPeers writes res as a table: each gateway's figures, and its ratios
// to the first peer (the one the others are compared with).
func PrintPeers(w io.Writer, res *PeerResult) {
	fmt.Fprintf(w, "%-24s %10s %10s %12s %12s %12s %12s %9s %8s %10s\n",
		"path", "seq p50", "seq p99", "added p50", "conc call/s", "cpu/call seq", "cpu/call conc", "rss MiB", "errors", "÷ first")
	var first *PeerPath
	if len(res.Paths) > 1 {
		first = &res.Paths[1]
	}
	for i, p := range res.Paths {
		rel := ""
		if first != nil && i > 0 {
			rel = fmt.Sprintf("conc %.2f, added %.2f", bench.Ratio(p.Conc.CallsPerSec, first.Conc.CallsPerSec), bench.Ratio(p.Seq.AddedP50, first.Seq.AddedP50))
			if p.Seq.CPUPerCall > 0 && first.Seq.CPUPerCall > 0 {
				rel += fmt.Sprintf(", cpu %.2f/%.2f", bench.Ratio(p.Seq.CPUPerCall, first.Seq.CPUPerCall), bench.Ratio(p.Conc.CPUPerCall, first.Conc.CPUPerCall))
			}
		}
		fmt.Fprintf(w, "%-24s %8.0fµs %8.0fµs %10.0fµs %12.0f %10.0fµs %11.0fµs %9.1f %8d   %s\n",
			p.Name, p.Seq.P50, p.Seq.P99, p.Seq.AddedP50, p.Conc.CallsPerSec, p.Seq.CPUPerCall, p.Conc.CPUPerCall,
			float64(p.RSSMaxBytes)/(1<<20), p.Errors, rel)
	}
}

// ParsePeer reads name=URL[,tool=T][,key=K][,pid=N][,era=2026-07-28].
func ParsePeer(s string) (Peer, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return Peer{}, fmt.Errorf("peer %q: want name=URL[,tool=T][,key=K][,pid=N][,era=2026-07-28]", s)
	}
	parts := strings.Split(rest, ",")
	p := Peer{Name: name, URL: parts[0], Tool: "echo"}
	for _, kv := range parts[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "tool":
			p.Tool = v
		case "key":
			p.Key = v
		case "pid":
			n, err := strconv.Atoi(v)
			if err != nil {
				return Peer{}, fmt.Errorf("peer %q: pid %q", s, v)
			}
			p.PID = n
		case "era":
			switch v {
			case "2026-07-28":
				p.Modern = true
			case "legacy":
			default:
				return Peer{}, fmt.Errorf("peer %q: era %q: want 2026-07-28 or legacy", s, v)
			}
		default:
			return Peer{}, fmt.Errorf("peer %q: unknown field %q", s, k)
		}
	}
	return p, nil
}

// pidCPU is another process's user+system CPU time.
func pidCPU(pid int) (time.Duration, bool) {
	return bench.StatCPU("/proc/" + strconv.Itoa(pid) + "/stat")
}

// pidRSS is another process's VmRSS.
func pidRSS(pid int) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// sampleRSS keeps the highest RSS of pid in *max until stop is called.
func sampleRSS(pid int, maxRSS *int64) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if v, ok := pidRSS(pid); ok && v > *maxRSS {
				*maxRSS = v
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-ended }
}
