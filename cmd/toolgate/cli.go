package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/toolgate/toolgate/internal/admin"
	"github.com/toolgate/toolgate/internal/signals"
)

// Set at build time with -ldflags "-X main.version=… -X main.commit=…".
var (
	version = ""
	commit  = ""
)

// cli is one invocation's world: where output goes, and where a prompt's
// answer comes from.
type cli struct {
	stdout, stderr io.Writer
	// stdin answers prompts (nil: os.Stdin); tty says whether a person is
	// there to answer (nil: stdin is a terminal). Tests set both.
	stdin io.Reader
	tty   func() bool
	// signals is the process's signal router (nil when run from a test):
	// commands say through it what a SIGHUP means to them.
	signals *signals.Router
}

type command struct {
	name    string
	args    string // synopsis after the name
	summary string
	run     func(ctx context.Context, c *cli, args []string) int
}

func commands() []command {
	return append([]command{
		{"console", "[--config F] | --attach URL [--admin-key K]", "console and in-process gateway (no config file starts the demo), or attached to a running gateway", runConsole},
		{"serve", "[--config F] [--listen ADDR] [--insecure-open]", "headless gateway with JSON logs", runServe},
		{"check", "[--config F] [--json] [--offline]", "validate the config, probe upstreams, report", runCheck},
		{"tools", "[--config F] [--json]", "print the registry", runTools},
		{"import-config", "FILE", "print upstreams YAML converted from an mcpServers JSON file", runImportConfig},
		{"demo-upstream", "NAME [--http ADDR] [--state DIR]", "run a built-in MCP server over stdio or Streamable HTTP", runDemoUpstream},
		{"bench", "[--json] [--quick] [--soak]", "gateway overhead against a direct call, same run", runBench},
		{"review", reviewSynopsis, reviewSummary, runReview},
		{"audit", "[--config F] [--since 24h|TIME] [--limit N] [--json] | verify [--config F] [--json]", "print the audit log of served calls, or verify its chains", runAudit},
		{"policy", policySynopsis, policySummary, runPolicy},
	}, append(adminCommands(),
		command{"version", "", "print version, commit and Go version", runVersion},
		command{"_supervise", "-- CMD ARGS…", "(internal) run CMD in this process group and stop the group when toolgate dies", runSupervise},
	)...)
}

// run executes one command line and returns the process exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runWith(ctx, &cli{stdout: stdout, stderr: stderr}, args)
}

// runWith is run with the invocation's world given whole.
func runWith(ctx context.Context, c *cli, args []string) int {
	stdout, stderr := c.stdout, c.stderr
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && !isHelp(args[0]) {
		return runConsole(ctx, c, args)
	}
	if isHelp(args[0]) || args[0] == "help" {
		c.usage(stdout)
		return 0
	}
	for _, cmd := range commands() {
		if cmd.name == args[0] {
			return cmd.run(ctx, c, args[1:])
		}
	}
	fmt.Fprintf(stderr, "toolgate: unknown command %q\n\n", args[0])
	c.usage(stderr)
	return 2
}

func isHelp(arg string) bool { return arg == "-h" || arg == "--help" || arg == "-help" }

func (c *cli) usage(w io.Writer) {
	fmt.Fprintln(w, "toolgate — a governed gateway for the Model Context Protocol")
	fmt.Fprintln(w, "\nUsage:\n  toolgate [command] [flags]\n\nCommands:")
	for _, cmd := range commands() {
		if strings.HasPrefix(cmd.name, "_") {
			continue // internal
		}
		fmt.Fprintf(w, "  %-14s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintln(w, "\nWith no command, toolgate runs the console. `toolgate COMMAND --help` shows a command's flags.")
	fmt.Fprintf(w, "refresh, approvals, approve, reject, sessions, end-session, console --attach and review --attach act on a\nrunning gateway's admin API: --attach URL (or $%s) and the admin key (--admin-key or $%s).\n", admin.EnvAttach, admin.EnvAdminKey)
}

// flags returns a flag set whose --help prints to stdout and whose errors
// print to stderr, so `toolgate X --help` exits 0 and a bad flag exits 2.
func (c *cli) flags(name, synopsis, summary string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(c.stdout, "Usage: toolgate %s %s\n\n%s\n", name, synopsis, summary)
		var any bool
		fs.VisitAll(func(*flag.Flag) { any = true })
		if any {
			fmt.Fprintln(c.stdout, "\nFlags:")
			fs.SetOutput(c.stdout)
			fs.PrintDefaults()
			fs.SetOutput(io.Discard)
		}
	}
	return fs
}

// parse parses args; ok is false when the command should exit with code.
func (c *cli) parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		// The flag package has already printed the usage.
		return 0, false
	default:
		fmt.Fprintf(c.stderr, "toolgate %s: %v (see toolgate %s --help)\n", fs.Name(), err, fs.Name())
		return 2, false
	}
}

func (c *cli) commandFlags(name string) *flag.FlagSet {
	for _, cmd := range commands() {
		if cmd.name == name {
			return c.flags(name, cmd.args, cmd.summary)
		}
	}
	panic("unknown command " + name)
}

func runVersion(_ context.Context, c *cli, args []string) int {
	fs := c.commandFlags("version")
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	v, rev := buildVersion()
	fmt.Fprintf(c.stdout, "toolgate %s (commit %s, %s %s/%s)\n", v, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}

// buildVersion prefers the linker-set values, then what the Go toolchain
// recorded in the binary.
func buildVersion() (v, rev string) {
	v, rev = version, commit
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && rev == "" {
				rev = s.Value
			}
		}
	}
	if v == "" {
		v = "dev"
	}
	if rev == "" {
		rev = "unknown"
	}
	return v, rev
}
