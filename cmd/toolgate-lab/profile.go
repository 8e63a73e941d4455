package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/toolgate/toolgate/internal/bench"
)

// The gateways `peers` compares with other gateways, as configs for
// `toolgate serve`, so that every run of the side by side starts the same
// ones: open (no auth, review off), governed (an API key, roles and review
// pin) and everything (governed plus bench's rules and limits, traces of
// every call to a collector and the audit exported as JSON lines: the
// profile `toolgate bench` measures as "everything on"; PO-1, PO-3, OP-9).
var profiles = []string{"open", "governed", "everything"}

func runProfile(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:18201", "the gateway's listen `ADDRESS`")
	store := fs.String("store", "", "the store file's `PATH` (required)")
	httpURL := fs.String("http", "", "the HTTP echo upstream's `URL`, imported as upstream \"http\"")
	stdio := fs.Bool("stdio", true, "import \"toolgate demo-upstream echo\" over stdio as upstream \"stdio\" (--stdio=false: none)")
	keyEnv := fs.String("key-env", "KEY", "environment `VARIABLE` holding the API key (governed and everything)")
	collector := fs.String("collector", "http://127.0.0.1:4318", "OTLP/HTTP `URL` the everything profile sends its traces to")
	export := fs.String("export", "audit.jsonl", "`PATH` the everything profile exports its audit to")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: toolgate-lab profile [flags] %s\n\nPrints the config of one of the gateways the side by side runs, for toolgate serve --config.\nserve reads the API key from the variable --key-env names and the confirm secret from TOOLGATE_GATEWAY_CONFIRM_SECRET.\n\n", strings.Join(profiles, "|"))
		fs.PrintDefaults()
	}
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "toolgate-lab profile: name one profile: %s\n", strings.Join(profiles, ", "))
		return 2
	}
	y, err := profileYAML(fs.Arg(0), profileOptions{
		Listen: *listen, Store: *store, HTTP: *httpURL, Stdio: *stdio,
		KeyEnv: *keyEnv, Collector: *collector, Export: *export,
	})
	if err != nil {
		fmt.Fprintf(stderr, "toolgate-lab profile: %v\n", err)
		return 2
	}
	_, _ = io.WriteString(stdout, y)
	return 0
}

// profileOptions are what differs between two runs of one profile.
type profileOptions struct {
	Listen, Store, HTTP string
	Stdio               bool
	KeyEnv              string
	Collector, Export   string
}

// profileYAML is the config of profile name.
func profileYAML(name string, o profileOptions) (string, error) {
	switch {
	case name != "open" && name != "governed" && name != "everything":
		return "", fmt.Errorf("unknown profile %q (want %s)", name, strings.Join(profiles, ", "))
	case o.Store == "":
		return "", errors.New("--store is required")
	case o.HTTP == "" && !o.Stdio:
		return "", errors.New("no upstream: give --http, or leave --stdio on")
	case name != "open" && !validEnvName(o.KeyEnv):
		return "", fmt.Errorf("--key-env %q is not an environment variable's name", o.KeyEnv)
	}
	open := name == "open"
	var b strings.Builder
	line := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	line("# toolgate-lab profile %s", name)
	line("gateway:")
	line("  listen: %s", quote(o.Listen))
	line("  store: %s", quote(o.Store))
	line("  review:")
	if open {
		line("    mode: \"off\"")
	} else {
		line("    mode: pin")
	}
	line("endpoints:")
	line("  - path: /mcp")
	line("    name: %s", name)
	line("    version: 1.0.0")
	if open {
		line("    actor: {id: bench, roles: [MEMBER]}")
	} else {
		line("    auth:")
		line("      apiKeys:")
		line("        - key: ${%s}", o.KeyEnv)
		line("          actor: {id: bench, roles: [MEMBER]}")
	}
	line("upstreams:")
	roles := ""
	if !open {
		roles = "\n    roles: [MEMBER]"
	}
	if o.HTTP != "" {
		line("  - name: http\n    url: %s%s", quote(o.HTTP), roles)
	}
	if o.Stdio {
		line("  - name: stdio\n    command: ${TOOLGATE_SELF}\n    args: [demo-upstream, echo]%s", roles)
	}
	if name != "everything" {
		return b.String(), nil
	}
	line("telemetry:")
	line("  traces: {endpoint: %s, sampleRatio: 1.0}", quote(o.Collector))
	line("audit:")
	line("  export: {path: %s}", quote(o.Export))
	line("limits:")
	for _, l := range bench.PolicedLimits() {
		if l.Rate != "" {
			line("  - {id: %s, per: %s, rate: %s, burst: %d}", quote(l.ID), quote(l.Per), quote(l.Rate), l.Burst)
		} else {
			line("  - {id: %s, per: %s, quota: %s}", quote(l.ID), quote(l.Per), quote(l.Quota))
		}
	}
	line("policies:")
	line("  default: allow")
	line("  rules:")
	for _, r := range bench.PolicedRules() {
		line("    - id: %s", quote(r.ID))
		line("      when: %s", quote(r.When))
		line("      effect: %s", r.Effect)
		line("      reason: %s", quote(r.Reason))
	}
	return b.String(), nil
}

// quote is s as a single-quoted YAML scalar: nothing in it is read as
// YAML, and ${…} is still expanded by the config loader.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
