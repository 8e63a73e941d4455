package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/gateway"
)

// Everything on against key, roles and pin only (OP-9, OP-10, PO-1, PO-3):
// the plain gateway (an API key whose actor has roles, the review pin, the
// audit chain with signed checkpoints) beside two more in front of the
// same HTTP echo, measured in interleaved rounds: one tracing every call
// (sampleRatio 1.0) to a collector, and one with everything a platform
// team turns on: those traces, the policed gateway's rules, rate and
// store-counted quota (none of which refuses a call), and the audit
// exported as JSON lines.

// profileResult is the traced and the everything-on gateway against the
// plain one.
type profileResult struct {
	Base       pathResult `json:"base"`
	Traced     policyStep `json:"traced"`
	Everything policyStep `json:"everything"`
	// Spans is how many spans the collector received; ExportedLines how
	// many audit lines the everything-on gateway wrote: proof that both
	// were on.
	Spans         int64  `json:"spans"`
	ExportedLines int    `json:"exportedLines"`
	Errors        int    `json:"errors"`
	Note          string `json:"note,omitempty"`
}

// Collector is an OTLP/HTTP receiver that reads every export in full and
// counts its spans from the protobuf wire format, without decoding them
// into messages: it stands for a collector on hardware of its own. In
// toolgate bench it runs in the bench's process, so its CPU (about 2 µs a
// call) is charged to the traced gateways: the figures are a little
// pessimistic. toolgate-lab collector runs one for gateways in processes
// of their own.
type Collector struct {
	// URL is the OTLP/HTTP base URL, http://host:port.
	URL   string
	spans atomic.Int64
	srv   *http.Server
	done  chan struct{}
}

// StartCollector serves a Collector on addr (host:port; port 0 picks one)
// until Stop.
func StartCollector(addr string) (*Collector, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &Collector{URL: "http://" + ln.Addr().String(), done: make(chan struct{})}
	var buf bytes.Buffer
	var mu sync.Mutex // one export read at a time, into buf
	c.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
			http.Error(w, "only POST /v1/traces", http.StatusNotFound)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		buf.Reset()
		if _, err := io.Copy(&buf, io.LimitReader(r.Body, 64<<20)); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n, err := countSpans(buf.Bytes())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.spans.Add(int64(n))
		w.Header().Set("Content-Type", "application/x-protobuf") // an empty response is no bytes
	})}
	go func() { defer close(c.done); _ = c.srv.Serve(ln) }()
	return c, nil
}

// Spans is how many spans the collector has received.
func (c *Collector) Spans() int64 { return c.spans.Load() }

// Stop closes the collector and waits for it.
func (c *Collector) Stop() {
	_ = c.srv.Close()
	<-c.done
}

// countSpans is how many spans an encoded ExportTraceServiceRequest holds:
// resource_spans (1) → scope_spans (2) → spans (2).
func countSpans(b []byte) (int, error) {
	n := 0
	err := eachField(b, 1, func(rs []byte) error {
		return eachField(rs, 2, func(ss []byte) error {
			return eachField(ss, 2, func([]byte) error { n++; return nil })
		})
	})
	return n, err
}

// eachField calls f with the bytes of every length-delimited field num of
// the message b.
func eachField(b []byte, num protowire.Number, f func([]byte) error) error {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return errors.New("a malformed export")
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return errors.New("a malformed export")
			}
			if err := f(v); err != nil {
				return err
			}
			b = b[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return errors.New("a malformed export")
		}
		b = b[l:]
	}
	return nil
}

// startProfiled starts a gateway like the plain one in front of the HTTP
// echo, with its own store, changed by with.
func startProfiled(ctx context.Context, key, store, echoURL string, with func(*config.Config) (*config.Config, error)) (*gateway.Gateway, string, error) {
	cfg, err := benchGatewayConfig(key, store, []config.Upstream{echoUpstream(echoURL)})
	if err != nil {
		return nil, "", err
	}
	if cfg, err = with(cfg); err != nil {
		return nil, "", err
	}
	gw, err := gateway.New(ctx, cfg, nil)
	if err != nil {
		return nil, "", err
	}
	if err := gw.Start(ctx); err != nil {
		gw.Close(context.Background())
		return nil, "", fmt.Errorf("gateway start-up: %w", err)
	}
	return gw, "http://" + gw.Addr() + cfg.Endpoints[0].Path, nil
}

// traced turns on traces of every call to the collector at url.
func traced(url string) func(*config.Config) (*config.Config, error) {
	return func(cfg *config.Config) (*config.Config, error) {
		ratio := 1.0
		cfg.Telemetry.Traces = config.Traces{Endpoint: url, SampleRatio: &ratio}
		if _, err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("traced bench config: %w", err)
		}
		return cfg, nil
	}
}

// everythingOn is traced, the policed gateway's rules and limits, and the
// audit exported to exportPath.
func everythingOn(url, exportPath string) func(*config.Config) (*config.Config, error) {
	return func(cfg *config.Config) (*config.Config, error) {
		cfg, err := traced(url)(cfg)
		if err != nil {
			return nil, err
		}
		cfg.Audit.Export.Path = exportPath
		return policedConfig(cfg, true)
	}
}

// measureProfiles starts the collector and the two gateways, measures
// them against base in interleaved rounds, and stops them.
func measureProfiles(ctx context.Context, cfg Config, key, dir, echoURL string, hc *http.Client, base func() (caller, error), echoConns *countingListener) (profileResult, error) {
	var res profileResult
	col, err := StartCollector("127.0.0.1:0")
	if err != nil {
		return res, err
	}
	defer col.Stop()
	exportPath := filepath.Join(dir, "audit-export.jsonl")
	var mks []func() (caller, error)
	for i, with := range []func(*config.Config) (*config.Config, error){traced(col.URL), everythingOn(col.URL, exportPath)} {
		gw, url, err := startProfiled(ctx, key, filepath.Join(dir, fmt.Sprintf("profile-%d.db", i)), echoURL, with)
		if err != nil {
			return res, err
		}
		// Closed before the collector stops: the last spans are exported
		// and the export file flushed.
		defer gw.Close(context.Background())
		if err := waitForTools(ctx, hc, url, key, 1, 10*time.Second); err != nil {
			return res, err
		}
		mks = append(mks, func() (caller, error) { return newHTTPCaller(ctx, hc, url, key, "http_echo") })
	}
	steps, baseRun, err := measureSteps(ctx, cfg, base, []string{"http via gateway, traced", "http via gateway, everything on"}, mks, echoConns)
	if err != nil {
		return res, err
	}
	res.Base = baseRun.result("client →HTTP→ gateway (API key, roles, review pin, audit chain) →HTTP→ echo")
	res.Traced = steps[0].step("the same, every call traced (sampleRatio 1.0) to a collector", res.Base)
	res.Everything = steps[1].step(fmt.Sprintf("the same, traced, %d rules reading actor and arguments, a rate and a store-counted quota, audit exported as JSON lines", policyRules), res.Base)
	res.Errors = baseRun.errors + steps[0].run.errors + steps[1].run.errors
	for _, p := range []*pathRun{baseRun, steps[0].run, steps[1].run} {
		if p.lastErr != nil {
			res.Note += fmt.Sprintf(" Last error on %s: %v.", p.name, p.lastErr)
		}
	}
	res.Spans = col.Spans()
	if b, err := os.ReadFile(exportPath); err == nil {
		res.ExportedLines = bytes.Count(b, []byte{'\n'})
	}
	return res, nil
}

// measuredStep is one gateway measured against a base in the same rounds.
type measuredStep struct {
	run   *pathRun
	r     ratios
	added []float64
}

func (s *measuredStep) step(path string, base pathResult) policyStep {
	ps := policyStep{Path: s.run.result(path), SeqP50Ratio: median(s.r.seq50), SeqP99Ratio: median(s.r.seq99),
		ConcRatio: median(s.r.conc), AddedP50Us: round1(median(s.added))}
	if base.Conc.CPUPerCall > 0 && ps.Path.Conc.CPUPerCall > 0 {
		ps.AddedCPUPerCall = round1(ps.Path.Conc.CPUPerCall - base.Conc.CPUPerCall)
	}
	return ps
}

// measureSteps runs base and each of mks in interleaved rounds, sequential
// then concurrent, as measureCalls does; the ratios are step ÷ base.
func measureSteps(ctx context.Context, cfg Config, base func() (caller, error), names []string, mks []func() (caller, error), echoConns *countingListener) ([]*measuredStep, *pathRun, error) {
	warm := min(50, cfg.Calls/10+5)
	baseRun, err := newPathRun(ctx, "http via gateway, key, roles and pin", base, cfg.Sessions, warm)
	if err != nil {
		return nil, nil, err
	}
	var steps []*measuredStep
	for i, mk := range mks {
		run, err := newPathRun(ctx, names[i], mk, cfg.Sessions, warm)
		if err != nil {
			return nil, nil, err
		}
		steps = append(steps, &measuredStep{run: run})
	}
	perRound := max(1, cfg.Calls/cfg.Rounds)
	for round := range cfg.Rounds {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		n := perRound
		if round == cfg.Rounds-1 {
			n = max(1, cfg.Calls-perRound*(cfg.Rounds-1))
		}
		o := baseRun.runSeq(ctx, n)
		for _, s := range steps {
			p := s.run.runSeq(ctx, n)
			s.r.addSeq(o, p)
			s.added = append(s.added, pct(p, 50)-pct(o, 50))
		}
	}
	phase := time.Duration(cfg.Seconds / float64(cfg.Rounds) * float64(time.Second))
	rss := &rssMax{}
	for round := range cfg.Rounds {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		// Which goes first alternates: the first of a round finds the
		// machine as the last of the one before left it.
		if round%2 == 0 {
			oRate, o := baseRun.runConc(ctx, phase, echoConns, rss)
			for _, s := range steps {
				pRate, p := s.run.runConc(ctx, phase, echoConns, rss)
				s.r.addConc(oRate, pRate, o, p)
			}
			continue
		}
		rates := make([]float64, len(steps))
		lats := make([][]time.Duration, len(steps))
		for i := len(steps) - 1; i >= 0; i-- {
			rates[i], lats[i] = steps[i].run.runConc(ctx, phase, echoConns, rss)
		}
		oRate, o := baseRun.runConc(ctx, phase, echoConns, rss)
		for i, s := range steps {
			s.r.addConc(oRate, rates[i], o, lats[i])
		}
	}
	return steps, baseRun, nil
}

// printProfiles writes the profiles' lines of Print.
func (r *Result) printProfiles(w io.Writer) {
	p := r.Profiles
	if p.Base.Seq.Calls == 0 {
		return
	}
	line := func(label string, s policyStep) {
		fmt.Fprintf(w, "%-23s on/off: sequential p50 %.2f, p99 %.2f; concurrent calls/s %.2f (%.0f against %.0f); the median call %s, CPU/call %s\n",
			label, s.SeqP50Ratio, s.SeqP99Ratio, s.ConcRatio, s.Path.Conc.CallsPerSec, p.Base.Conc.CallsPerSec, signedUs(s.AddedP50Us), signedUs(s.AddedCPUPerCall))
	}
	line("traces", p.Traced)
	line("everything on", p.Everything)
	fmt.Fprintf(w, "                       (against key, roles and pin only; traces: every call at sampleRatio 1.0 to an in-process collector; everything on: those traces, %d rules reading actor and arguments, a rate and a store-counted quota that never refuse, the audit exported as JSON lines; %d spans and %d exported lines received; same rounds)\n",
		policyRules, p.Spans, p.ExportedLines)
	if p.Note != "" {
		fmt.Fprintf(w, "                      %s\n", p.Note)
	}
}
