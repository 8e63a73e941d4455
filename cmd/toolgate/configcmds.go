package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/report"
	"github.com/toolgate/toolgate/internal/store/postgres"
)

// loadConfig resolves --config (or the default path) and loads it, printing
// warnings. ok is false when the command should exit with status 1.
func (c *cli) loadConfig(cmd, path string) (*config.Config, bool) {
	cfg, err := c.readConfig(cmd, path)
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return nil, false
	}
	return cfg, true
}

// readConfig is loadConfig returning the error instead of printing it. Its
// text is the config package's, which names the key path and never a
// secret's value (IM-5).
func (c *cli) readConfig(cmd, path string) (*config.Config, error) {
	if path == "" {
		path = config.DefaultPath()
	}
	if path == "" {
		return nil, fmt.Errorf("toolgate %s: no config file: pass --config FILE or create ./toolgate.yaml", cmd)
	}
	v, _ := buildVersion()
	cfg, warnings, err := config.Load(path, config.LoadOptions{Version: v, LookupEnv: gateway.LookupEnv})
	for _, w := range warnings {
		fmt.Fprintf(c.stderr, "warning: %s\n", w)
	}
	return cfg, err
}

// checkFailed is what check --json prints when there is no report to print:
// the config does not load, or the gateway cannot be built from it.
type checkFailed struct {
	Error string `json:"error"`
}

func runCheck(ctx context.Context, c *cli, args []string) int {
	fs := c.commandFlags("check")
	path := fs.String("config", "", "config file (default ./toolgate.yaml, then the user config dir)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	offline := fs.Bool("offline", false, "validate the config only; connect to no upstream")
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	// With --json, stdout is one object whatever happens (OP-3).
	fail := func(err error) int {
		fmt.Fprintln(c.stderr, err)
		if *asJSON {
			_ = c.printJSON(checkFailed{Error: err.Error()})
		}
		return 1
	}
	cfg, err := c.readConfig("check", *path)
	if err != nil {
		return fail(err)
	}
	// --offline reaches no server, a PostgreSQL store included: review
	// states then read as if nothing were approved.
	reviews := gateway.ReviewsIfStored
	if *offline && postgres.IsDSN(cfg.Gateway.Store) {
		reviews = gateway.ReviewsInMemory
	}
	g, err := gateway.NewImporter(ctx, cfg, &gateway.ImporterOptions{Reviews: reviews})
	if err != nil {
		return fail(fmt.Errorf("toolgate check: %w", err))
	}
	defer g.Close(context.Background())
	var startErr error
	if *offline {
		fmt.Fprintln(c.stderr, "toolgate check: --offline: upstreams not probed")
	} else {
		startErr = g.Start(ctx)
	}

	report := report.NewCheck(g.Reviewer(), g.Registry().Bus().Snapshot(), !*offline)
	report.Admin = adminReport(cfg)
	problems := report.Problems || startErr != nil
	code := 0
	if problems {
		code = 2
	}
	if *asJSON {
		if c.printJSON(report) != 0 {
			return 1
		}
		return code
	}
	fmt.Fprintf(c.stdout, "config ok: %d endpoint(s), %d upstream(s), %d tool(s)\n", len(cfg.Endpoints), len(cfg.Upstreams), len(report.Tools))
	if a := report.Admin; a.Enabled {
		where := "this machine only"
		if !a.Loopback {
			where = "reachable from other machines"
		}
		fmt.Fprintf(c.stdout, "  admin API on %s (%s), operators: %s\n", a.Listen, where, strings.Join(a.Operators, ", "))
	} else {
		fmt.Fprintln(c.stdout, "  admin API: none (no gateway.admin): console --attach and the headless operator commands cannot reach this gateway")
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	for _, u := range report.Upstreams {
		fmt.Fprintf(tw, "  upstream %s\t%s\t%s\t%d tools\t%s\n", u.Name, u.Transport, u.State, u.Tools, u.Error)
	}
	_ = tw.Flush()
	for _, col := range report.Collisions {
		fmt.Fprintf(c.stdout, "  collision %s: kept %s, refused %s\n", col.Name, col.Kept, col.Refused)
	}
	for _, d := range report.Dropped {
		fmt.Fprintf(c.stdout, "  dropped %s/%s: %s\n", d.Source, d.RemoteName, d.Reason)
	}
	if startErr != nil {
		fmt.Fprintf(c.stderr, "toolgate check: %v\n", startErr)
	}
	return code
}

// adminReport is what check says of gateway.admin (CO-9).
func adminReport(cfg *config.Config) report.Admin {
	a := cfg.Gateway.Admin
	if a == nil {
		return report.Admin{}
	}
	r := report.Admin{Enabled: true, Listen: a.Listen, Loopback: a.IsLoopback()}
	for _, k := range a.Keys {
		r.Operators = append(r.Operators, k.Operator)
	}
	return r
}

func runTools(ctx context.Context, c *cli, args []string) int {
	fs := c.commandFlags("tools")
	path := fs.String("config", "", "config file (default ./toolgate.yaml, then the user config dir)")
	asJSON := fs.Bool("json", false, "print the tools as a JSON array")
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	cfg, ok := c.loadConfig("tools", *path)
	if !ok {
		return 1
	}
	g, err := gateway.NewImporter(ctx, cfg, &gateway.ImporterOptions{Reviews: gateway.ReviewsIfStored})
	if err != nil {
		fmt.Fprintf(c.stderr, "toolgate tools: %v\n", err)
		return 1
	}
	defer g.Close(context.Background())
	if err := g.Start(ctx); err != nil {
		fmt.Fprintf(c.stderr, "toolgate tools: %v\n", err)
		return 1
	}
	for _, st := range g.Importer().Statuses() {
		if st.State != core.StateConnected {
			fmt.Fprintf(c.stderr, "warning: upstream %s is %s: %s\n", st.Name, st.State, st.LastError)
		}
	}
	tools := report.Tools(g.Reviewer(), g.Registry().Bus().Snapshot())
	if *asJSON {
		return c.printJSON(tools)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tREMOTE\tKIND")
	for _, t := range tools {
		src := t.Source
		if src == "" {
			src = core.NativeSource
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, src, t.RemoteName, t.Kind)
	}
	_ = tw.Flush()
	if len(tools) == 0 {
		fmt.Fprintln(c.stdout, "(no tools)")
	}
	return 0
}

func (c *cli) printJSON(v any) int {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintln(c.stderr, err)
		return 1
	}
	return 0
}

func runImportConfig(_ context.Context, c *cli, args []string) int {
	fs := c.commandFlags("import-config")
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(c.stderr, "toolgate import-config: want exactly one FILE (see toolgate import-config --help)")
		return 2
	}
	file := fs.Arg(0)
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolgate import-config: %v\n", err)
		return 1
	}
	abs, _ := filepath.Abs(file)
	imp, err := config.ParseMCPServers(data, filepath.Dir(abs))
	if err != nil {
		fmt.Fprintf(c.stderr, "toolgate import-config: %s: %v\n", file, err)
		return 1
	}
	// The rest of the file is still printed; the YAML names them too.
	for _, s := range imp.Skipped {
		fmt.Fprintf(c.stderr, "toolgate import-config: %s: skipped %s\n", file, s)
	}
	out, err := imp.YAML()
	if err != nil {
		fmt.Fprintf(c.stderr, "toolgate import-config: %v\n", err)
		return 1
	}
	_, _ = c.stdout.Write(out)
	return 0
}
