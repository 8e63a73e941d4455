package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core/auditchain"
	"github.com/toolgate/toolgate/internal/otlptest"
)

// receiverArg makes the test binary an OTLP receiver process (see init):
// a collector never runs inside the gateway's process, and its decoding
// must not be counted as the gateway's.
const receiverArg = "toolgate-bench-otlp-receiver"

func init() {
	if len(os.Args) < 2 || os.Args[1] != receiverArg {
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	r, stop := otlptest.Serve(ln, true)
	fmt.Println(r.URL)
	// Until the parent closes stdin (or dies): then the span count.
	_, _ = io.Copy(io.Discard, os.Stdin)
	stop()
	fmt.Println(r.Count())
	os.Exit(0)
}

// startReceiverProcess runs an OTLP receiver in a child process and
// returns its URL, a function that reads the child's CPU time so far, and
// a function that stops it and returns how many spans it received.
func startReceiverProcess(b *testing.B) (url string, cpu func() time.Duration, stop func() int) {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, receiverArg)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		b.Fatal("the receiver process printed no URL")
	}
	url = lines.Text()
	var once sync.Once
	count := 0
	stop = func() int {
		once.Do(func() {
			_ = stdin.Close()
			if lines.Scan() {
				count, _ = strconv.Atoi(strings.TrimSpace(lines.Text()))
			}
			_ = cmd.Wait()
		})
		return count
	}
	b.Cleanup(func() { stop() })
	stat := fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)
	cpu = func() time.Duration { d, _ := statCPU(stat); return d }
	return url, cpu, stop
}

// BenchmarkTracingOverhead is the cost of OP-9 and OP-10 together: parallel
// tools/calls of the HTTP echo through two gateways in one process, one
// with neither (no tracing; no checkpoint signed — the chain's record
// hashes are computed by every store and cannot be turned off), one tracing every
// call (sampleRatio 1.0, exported over OTLP/HTTP to a real receiver in a
// process of its own, as a collector is) with signed checkpoints. Each
// iteration is one round of calls on each, alternating which goes first.
// "on/off" is the ratio of their calls per second; the process's CPU time
// per call (client, gateway and echo together) is reported for each, and
// the receiver's per traced call. The gateway's whole cost of exporting
// (encoding every span, the HTTP exchange) is in the figure; the
// receiver reads every export in full and counts its spans from the wire
// format rather than building each span's Go objects: a collector runs on
// cores of its own, and decoding on the two this machine has would be
// charged to the gateway.
func BenchmarkTracingOverhead(b *testing.B) {
	url, receiverCPU, received := startReceiverProcess(b)
	off := startEchoGateway(b, time.Minute)
	// The same gateway but for what is measured: its chain signs no
	// checkpoints (the key would otherwise come from the confirm secret).
	cs, ok := off.gw.Store().(auditchain.Store)
	if !ok {
		b.Fatalf("the store %T keeps no audit chain", off.gw.Store())
	}
	cs.AuditChain().SetKey(nil)
	on := startEchoGatewayWith(b, time.Minute, func(cfg *config.Config) {
		ratio := 1.0
		cfg.Telemetry.Traces = config.Traces{Endpoint: url, SampleRatio: &ratio}
		cfg.Audit.CheckpointKey = config.Secret(randomHex(32))
	})
	const sessions, perRound = 16, 256
	open := func(g echoGateway) []caller {
		cs := make([]caller, sessions)
		for i := range cs {
			c, err := newHTTPCaller(g.ctx, g.hc, g.url, g.key, "http_echo")
			if err != nil {
				b.Fatal(err)
			}
			cs[i] = c
		}
		return cs
	}
	offCallers, onCallers := open(off), open(on)
	// round runs perRound calls over cs and returns the wall and CPU time.
	round := func(ctx context.Context, cs []caller) (wall, cpu time.Duration) {
		cpu0, _ := processCPU()
		start := time.Now()
		var wg sync.WaitGroup
		for _, c := range cs {
			wg.Go(func() {
				for range perRound / sessions {
					if err := c.call(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		wall = time.Since(start)
		cpu1, _ := processCPU()
		return wall, cpu1 - cpu0
	}
	// Warm both: connections, pools, the first records.
	round(off.ctx, offCallers)
	round(on.ctx, onCallers)
	var tOff, tOn, cOff, cOn time.Duration
	rcpu0 := receiverCPU()
	add := func(t, c *time.Duration, wall, cpu time.Duration) { *t += wall; *c += cpu }
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			w, c := round(off.ctx, offCallers)
			add(&tOff, &cOff, w, c)
			w, c = round(on.ctx, onCallers)
			add(&tOn, &cOn, w, c)
		} else {
			w, c := round(on.ctx, onCallers)
			add(&tOn, &cOn, w, c)
			w, c = round(off.ctx, offCallers)
			add(&tOff, &cOff, w, c)
		}
		i++
	}
	b.StopTimer()
	rcpu := receiverCPU() - rcpu0
	calls := float64(i * perRound)
	offRate, onRate := calls/tOff.Seconds(), calls/tOn.Seconds()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(offRate, "off-calls/s")
	b.ReportMetric(onRate, "on-calls/s")
	b.ReportMetric(onRate/offRate, "on/off")
	b.ReportMetric(float64(cOff.Microseconds())/calls, "off-cpu-µs/call")
	b.ReportMetric(float64(cOn.Microseconds())/calls, "on-cpu-µs/call")
	b.ReportMetric(float64(rcpu.Microseconds())/calls, "receiver-cpu-µs/call")
	// Close flushes the last spans; then the receiver says what it got.
	closeCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = on.gw.Close(closeCtx)
	if n := received(); n < i*perRound {
		b.Errorf("the receiver got %d spans for %d traced calls: the traced gateway did not trace every call", n, i*perRound)
	}
}

// BenchmarkTracingCost is BenchmarkTracingOverhead's two gateways apart
// (OP-9, OP-10): each sub-benchmark runs only its own, so that a CPU or
// allocation profile of one (-cpuprofile, -memprofile) can be compared
// with the other's (go tool pprof -diff_base). It reports the process's
// CPU time per call; ns/op and, with -benchmem, the allocations are per round of
// perRound calls; the ratio of calls per second is
// BenchmarkTracingOverhead's to measure. Run one sub-benchmark per
// process (-bench 'TracingCost/on'), or the profiles mix.
func BenchmarkTracingCost(b *testing.B) {
	for _, traced := range []bool{false, true} {
		name := "off"
		if traced {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			url, _, _ := startReceiverProcess(b)
			g := startEchoGatewayWith(b, time.Minute, func(cfg *config.Config) {
				if traced {
					ratio := 1.0
					cfg.Telemetry.Traces = config.Traces{Endpoint: url, SampleRatio: &ratio}
					cfg.Audit.CheckpointKey = config.Secret(randomHex(32))
				}
			})
			if !traced {
				cs, ok := g.gw.Store().(auditchain.Store)
				if !ok {
					b.Fatalf("the store %T keeps no audit chain", g.gw.Store())
				}
				cs.AuditChain().SetKey(nil)
			}
			const sessions, perRound = 16, 256
			callers := make([]caller, sessions)
			for i := range callers {
				c, err := newHTTPCaller(g.ctx, g.hc, g.url, g.key, "http_echo")
				if err != nil {
					b.Fatal(err)
				}
				callers[i] = c
			}
			round := func() {
				var wg sync.WaitGroup
				for _, c := range callers {
					wg.Go(func() {
						for range perRound / sessions {
							if err := c.call(g.ctx); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
			}
			round() // warm: connections, pools, the first records
			cpu0, _ := processCPU()
			n := 0
			for b.Loop() {
				round()
				n++
			}
			cpu1, _ := processCPU()
			b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(n*perRound), "cpu-µs/call")
		})
	}
}
