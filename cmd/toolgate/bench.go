package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/internal/bench"
	"github.com/toolgate/toolgate/internal/gateway"
)

// benchHidden names the flags `bench --help` leaves out: sizes for tests
// and experiments.
var benchHidden = map[string]bool{
	"calls": true, "sessions": true, "seconds": true, "rounds": true, "idle-sessions": true,
	"upstreams": true, "upstream-tools": true, "list-delay": true, "startup-rounds": true, "startup-order": true,
	"soak-clients": true, "soak-idle-timeout": true,
}

func runBench(ctx context.Context, c *cli, args []string) int {
	fs := c.commandFlags("bench")
	asJSON := fs.Bool("json", false, "print one JSON object instead of the table")
	quick := fs.Bool("quick", false, "a shorter run (under a minute): fewer calls, shorter phases")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the measured phases to `FILE` (go tool pprof)")
	// Hidden sizes; 0 keeps the default of the mode.
	calls := fs.Int("calls", 0, "sequential calls per path")
	sessions := fs.Int("sessions", 0, "concurrent sessions per path")
	seconds := fs.Float64("seconds", 0, "seconds of concurrent calls per path")
	rounds := fs.Int("rounds", 0, "interleaved rounds")
	idle := fs.Int("idle-sessions", 0, "sessions opened to measure idle memory")
	upstreams := fs.Int("upstreams", 0, "start-up: upstreams")
	upstreamTools := fs.Int("upstream-tools", 0, "start-up: tools per upstream")
	listDelay := fs.Duration("list-delay", 0, "start-up: the slowest upstream's simulated list latency")
	startupRounds := fs.Int("startup-rounds", 0, "start-up rounds")
	startupOrder := fs.String("startup-order", "", "start-up: list latency along the configuration: ascending, descending or shuffled")
	soak := fs.Bool("soak", false, "a soak instead: sessions opening, calling, expiring for --soak-duration, memory sampled")
	soakDuration := fs.Duration("soak-duration", bench.DefaultSoakConfig().Duration, "how long the soak's load runs")
	soakClients := fs.Int("soak-clients", 0, "soak: concurrent clients")
	soakIdle := fs.Duration("soak-idle-timeout", 0, "soak: the gateway's sessionIdleTimeout")
	// Side by side with other gateways, and replicas behind a proxy, are
	// toolgate-lab's (docs/performance.md): lab tooling, not installed.
	fs.Usage = benchUsage(c, fs)
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(c.stderr, "toolgate bench: unexpected argument %q (see toolgate bench --help)\n", fs.Arg(0))
		return 2
	}
	if *soak {
		return runSoak(ctx, c, bench.SoakConfig{Duration: *soakDuration, Clients: *soakClients, IdleTimeout: *soakIdle}, *asJSON)
	}
	cfg := bench.DefaultConfig(*quick)
	for _, o := range []struct {
		name string
		v    int
		dst  *int
	}{
		{"calls", *calls, &cfg.Calls}, {"sessions", *sessions, &cfg.Sessions}, {"rounds", *rounds, &cfg.Rounds},
		{"idle-sessions", *idle, &cfg.IdleSessions}, {"upstreams", *upstreams, &cfg.Upstreams},
		{"upstream-tools", *upstreamTools, &cfg.UpstreamTools}, {"startup-rounds", *startupRounds, &cfg.StartupRounds},
	} {
		if o.v < 0 {
			fmt.Fprintf(c.stderr, "toolgate bench: --%s must not be negative\n", o.name)
			return 2
		}
		if o.v > 0 {
			*o.dst = o.v
		}
	}
	if *seconds < 0 || *listDelay < 0 {
		fmt.Fprintln(c.stderr, "toolgate bench: --seconds and --list-delay must not be negative")
		return 2
	}
	if *seconds > 0 {
		cfg.Seconds = *seconds
	}
	if *listDelay > 0 {
		cfg.ListDelayMs = float64(*listDelay) / float64(time.Millisecond)
	}
	switch *startupOrder {
	case "":
	case "ascending", "descending", "shuffled":
		cfg.StartupOrder = *startupOrder
	default:
		fmt.Fprintf(c.stderr, "toolgate bench: --startup-order must be ascending, descending or shuffled, not %q\n", *startupOrder)
		return 2
	}
	self, ok := gateway.LookupEnv(gateway.SelfEnv)
	if !ok {
		fmt.Fprintf(c.stderr, "toolgate bench: cannot find the toolgate binary; set %s\n", gateway.SelfEnv)
		return 1
	}

	cfg.Self, cfg.CPUProfile, cfg.Progress = self, *cpuProfile, c.stderr
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolgate bench: %v\n", err)
		return 1
	}
	if *asJSON {
		if code := c.printJSON(res); code != 0 {
			return code
		}
	} else {
		res.Print(c.stdout)
	}
	if res.Errors > 0 {
		fmt.Fprintf(c.stderr, "toolgate bench: %d calls failed; the numbers above include only the ones that succeeded\n", res.Errors)
	}
	return 0
}

// runSoak runs `bench --soak` and prints its samples.
func runSoak(ctx context.Context, c *cli, cfg bench.SoakConfig, asJSON bool) int {
	if cfg.Duration <= 0 || cfg.Duration > bench.MaxSoakDuration || cfg.Clients < 0 || cfg.IdleTimeout < 0 {
		fmt.Fprintf(c.stderr, "toolgate bench: --soak-duration must be within (0, %v]; --soak-clients and --soak-idle-timeout must not be negative\n", bench.MaxSoakDuration)
		return 2
	}
	cfg.Progress = c.stderr
	res, err := bench.Soak(ctx, cfg)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolgate bench --soak: %v\n", err)
		return 1
	}
	if asJSON {
		if code := c.printJSON(res); code != 0 {
			return code
		}
	} else {
		res.Print(c.stdout)
	}
	if res.Errors > 0 {
		fmt.Fprintf(c.stderr, "toolgate bench --soak: %d requests failed\n", res.Errors)
	}
	return 0
}

// benchUsage prints the public flags only.
func benchUsage(c *cli, fs *flag.FlagSet) func() {
	return func() {
		var synopsis, summary string
		for _, cmd := range commands() {
			if cmd.name == "bench" {
				synopsis, summary = cmd.args, cmd.summary
			}
		}
		fmt.Fprintf(c.stdout, "Usage: toolgate bench %s\n\n%s\n", synopsis, summary)
		fmt.Fprintln(c.stdout, "\nThe built-in echo upstream is served over Streamable HTTP and over stdio; each is")
		fmt.Fprintln(c.stdout, "called directly and through a gateway (API-key auth, role policy, schema validation,")
		fmt.Fprintln(c.stdout, "audit) in interleaved rounds, all on 127.0.0.1. Ratios are via / direct, medians over rounds.")
		pub := flag.NewFlagSet("bench", flag.ContinueOnError)
		fs.VisitAll(func(f *flag.Flag) {
			if !benchHidden[f.Name] {
				pub.Var(f.Value, f.Name, f.Usage)
			}
		})
		fmt.Fprintln(c.stdout, "\nFlags:")
		pub.SetOutput(c.stdout)
		pub.PrintDefaults()
	}
}

// Results.
