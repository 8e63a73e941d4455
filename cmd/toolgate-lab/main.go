// Command toolgate-lab runs the measurements that need more than the
// installed toolgate: toolgate beside other gateways in processes of their
// own (peers), the time from starting a gateway to its first tools/list
// (startup), and calls per second of replicas on PostgreSQL behind a
// round-robin proxy (replicas). It is built from the repository, never
// installed with toolgate: its side-by-side runs (internal/lab/sidebyside)
// and proxy (internal/lab/rrproxy) are lab tooling, and the layering test
// keeps them out of cmd/toolgate. `toolgate bench`, the
// gateway's overhead against a direct call, stays in toolgate for
// operators (QB-2).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/toolgate/toolgate/internal/bench"
	"github.com/toolgate/toolgate/internal/lab/rrproxy"
	"github.com/toolgate/toolgate/internal/lab/sidebyside"
)

// postgresEnv holds the replicas database's URL, kept off the command line
// (it may carry a password).
const postgresEnv = "TOOLGATE_BENCH_POSTGRES"

const usage = `Usage: toolgate-lab COMMAND [flags]

Commands:
  peers     the echo upstream called directly and through each --peer gateway, same rounds
  replicas  calls/s of one gateway on SQLite, one on PostgreSQL, and replicas behind a round-robin proxy
  collector an OTLP/HTTP receiver that counts the spans gateways send it, for peers with traces on
  startup   time from starting a gateway to its first tools/list that names a tool
  profile   print the config of a gateway the side by side runs: open, governed or everything

toolgate-lab COMMAND --help lists the command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command line; it returns the exit status: 0 done, 1 the run
// failed, 2 a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	switch args[0] {
	case "peers":
		return runPeers(ctx, args[1:], stdout, stderr)
	case "replicas":
		return runReplicas(ctx, args[1:], stdout, stderr)
	case "collector":
		return runCollector(ctx, args[1:], stdout, stderr)
	case "startup":
		return runStartup(ctx, args[1:], stdout, stderr)
	case "profile":
		return runProfile(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "toolgate-lab: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// sizes are the flags both commands share; 0 keeps the mode's default.
type sizes struct {
	quick, asJSON           *bool
	calls, sessions, rounds *int
	seconds                 *float64
}

func sizeFlags(fs *flag.FlagSet) sizes {
	return sizes{
		quick:    fs.Bool("quick", false, "a shorter run"),
		asJSON:   fs.Bool("json", false, "print one JSON object instead of the table"),
		calls:    fs.Int("calls", 0, "sequential calls per path (0: the mode's default)"),
		sessions: fs.Int("sessions", 0, "concurrent sessions per path"),
		rounds:   fs.Int("rounds", 0, "interleaved rounds"),
		seconds:  fs.Float64("seconds", 0, "seconds of concurrent calls per path"),
	}
}

func (s sizes) check() error {
	if *s.calls < 0 || *s.sessions < 0 || *s.rounds < 0 || *s.seconds < 0 {
		return errors.New("--calls, --sessions, --rounds and --seconds must not be negative")
	}
	return nil
}

// parse parses args into fs; ok false means return code.
func parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "toolgate-lab %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return 2, false
	}
	return 0, true
}

// peerFlags collects repeated --peer flags.
type peerFlags []sidebyside.Peer

func (p *peerFlags) String() string { return fmt.Sprint(len(*p)) }
func (p *peerFlags) Set(s string) error {
	peer, err := sidebyside.ParsePeer(s)
	if err == nil {
		*p = append(*p, peer)
	}
	return err
}

func runPeers(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	sz := sizeFlags(fs)
	var peers peerFlags
	fs.Var(&peers, "peer", "a gateway `NAME=URL[,tool=T][,key=K][,pid=N][,era=2026-07-28]` in front of the --direct echo (repeatable)")
	direct := fs.String("direct", "", "the echo upstream's own `URL`")
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if err := sz.check(); err != nil {
		fmt.Fprintf(stderr, "toolgate-lab peers: %v\n", err)
		return 2
	}
	if *direct == "" || len(peers) == 0 {
		fmt.Fprintln(stderr, "toolgate-lab peers: --direct and at least one --peer are needed")
		return 2
	}
	cfg := bench.DefaultConfig(*sz.quick)
	pc := sidebyside.PeerConfig{Direct: *direct, DirectTool: "echo", Peers: peers,
		Calls: cfg.Calls, Sessions: cfg.Sessions, Seconds: cfg.Seconds, Rounds: cfg.Rounds, Progress: stderr}
	override(&pc.Calls, *sz.calls)
	override(&pc.Sessions, *sz.sessions)
	override(&pc.Rounds, *sz.rounds)
	override(&pc.Seconds, *sz.seconds)
	res, err := sidebyside.RunPeers(ctx, pc)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate-lab peers: %v\n", err)
		return 1
	}
	if *sz.asJSON {
		return printJSON(stdout, stderr, res)
	}
	sidebyside.PrintPeers(stdout, res)
	return 0
}

func runReplicas(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replicas", flag.ContinueOnError)
	sz := sizeFlags(fs)
	dsn := fs.String("postgres", "", "a postgres:// `URL` of a database where toolgate_bench_* schemas may be created and dropped (default $"+postgresEnv+")")
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	if err := sz.check(); err != nil {
		fmt.Fprintf(stderr, "toolgate-lab replicas: %v\n", err)
		return 2
	}
	if *dsn == "" {
		*dsn = os.Getenv(postgresEnv)
	}
	if *dsn == "" {
		fmt.Fprintf(stderr, "toolgate-lab replicas: no database: pass --postgres postgres://… or set %s\n", postgresEnv)
		return 2
	}
	rc := sidebyside.DefaultReplicasConfig(*sz.quick)
	rc.Postgres, rc.Progress = *dsn, stderr
	rc.NewProxy = func(backends []string) (sidebyside.ReplicaProxy, error) { return rrproxy.New(backends, nil) }
	override(&rc.Calls, *sz.calls)
	override(&rc.Sessions, *sz.sessions)
	override(&rc.Rounds, *sz.rounds)
	override(&rc.Seconds, *sz.seconds)
	res, err := sidebyside.RunReplicas(ctx, rc)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate-lab replicas: %v\n", err)
		return 1
	}
	if *sz.asJSON {
		if code := printJSON(stdout, stderr, res); code != 0 {
			return code
		}
	} else {
		sidebyside.PrintReplicas(stdout, res)
	}
	if res.Errors > 0 {
		fmt.Fprintf(stderr, "toolgate-lab replicas: %d calls failed; the numbers above include only the ones that succeeded\n", res.Errors)
	}
	return 0
}

// override sets *dst to v when v was given (positive).
func override[T int | float64](dst *T, v T) {
	if v > 0 {
		*dst = v
	}
}

func printJSON(stdout, stderr io.Writer, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// runCollector serves a span-counting OTLP/HTTP receiver until interrupted,
// then prints how many spans it received: the collector a gateway under
// `peers` exports its traces to, standing for one on hardware of its own.
func runCollector(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("collector", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:4318", "the `address` to serve OTLP/HTTP on")
	if code, ok := parse(fs, args, stdout, stderr); !ok {
		return code
	}
	c, err := bench.StartCollector(*listen)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate-lab collector: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "toolgate-lab collector: OTLP/HTTP on %s (set telemetry.traces.endpoint to it); interrupt to stop\n", c.URL)
	<-ctx.Done()
	c.Stop()
	fmt.Fprintf(stdout, "toolgate-lab collector: %d spans received\n", c.Spans())
	return 0
}
