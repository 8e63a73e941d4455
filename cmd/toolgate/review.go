package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/review"
	"github.com/toolgate/toolgate/internal/admin"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/report"
)

// The review command's entry in the command table.
const (
	reviewSynopsis = "export|import|list|approve|reject …"
	reviewSummary  = "review third-party tools: list, approve, reject, export and import approvals"
)

type reviewSub struct {
	name, args, summary string
	run                 func(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) int
}

func reviewSubs() []reviewSub {
	return []reviewSub{
		{"list", "[--config F] [--json]",
			"import the upstreams and print the review state, flags and fingerprint of each imported tool and of each prompt and resource they list", runReviewList},
		{"approve", "[--config F] [--by WHO] | --attach URL [--admin-key K]  NAME…|--all-new [--json]",
			"approve tools, prompts or resources as they are now (their current fingerprint); with --attach on the running gateway, at once", runReviewDecide(core.DecisionApproved)},
		{"reject", "[--config F] [--by WHO] | --attach URL [--admin-key K]  NAME…|--all-new [--json]",
			"reject tools, prompts or resources: they are withheld in every review mode but off; with --attach on the running gateway, at once", runReviewDecide(core.DecisionRejected)},
		{"export", "[--config F] [--out FILE]",
			"write the stored decisions as an approvals file to commit to a repository (default stdout)", runReviewExport},
		{"import", "[--config F] FILE",
			"store the decisions of an approvals file; a malformed file writes nothing", runReviewImport},
	}
}

// runReview is `toolgate review SUBCOMMAND` (RV-1…RV-4).
func runReview(ctx context.Context, c *cli, args []string) int {
	return c.runSubcommand(ctx, "review", reviewSubs(), c.reviewUsage, args)
}

// runSubcommand runs the subcommand of command named by args[0], or prints
// usage: to stdout for help, to stderr (exit 2) when none or an unknown
// one is named.
func (c *cli) runSubcommand(ctx context.Context, command string, subs []reviewSub, usage func(io.Writer), args []string) int {
	if len(args) == 0 {
		fmt.Fprintf(c.stderr, "toolgate %s: name a subcommand\n", command)
		usage(c.stderr)
		return 2
	}
	if isHelp(args[0]) || args[0] == "help" {
		usage(c.stdout)
		return 0
	}
	for _, sub := range subs {
		if sub.name == args[0] {
			return sub.run(ctx, c, c.flags(command+" "+sub.name, sub.args, sub.summary), args[1:])
		}
	}
	fmt.Fprintf(c.stderr, "toolgate %s: unknown subcommand %q\n", command, args[0])
	usage(c.stderr)
	return 2
}

// subcommandUsage prints a command's synopsis, summary and subcommands,
// their names in a column of width.
func subcommandUsage(w io.Writer, command, synopsis, summary string, subs []reviewSub, width int) {
	fmt.Fprintf(w, "Usage: toolgate %s %s\n\n%s\n\nSubcommands:\n", command, synopsis, summary)
	for _, sub := range subs {
		fmt.Fprintf(w, "  %-*s %s\n", width, sub.name, sub.args)
		fmt.Fprintf(w, "  %-*s %s\n", width, "", sub.summary)
	}
}

func (c *cli) reviewUsage(w io.Writer) {
	subcommandUsage(w, "review", reviewSynopsis, reviewSummary, reviewSubs(), 8)
	fmt.Fprintln(w, "\nNAME is a tool's name; else a prompt's (prefixed) name; else a resource's URI or URI template.")
	fmt.Fprintln(w, "prompt:NAME and resource:URI name a prompt or resource that shares its name with a tool.")
	fmt.Fprintln(w, "\nThe decisions live in gateway.store; gateway.review.mode decides what they gate. approve and reject")
	fmt.Fprintf(w, "with --attach URL (default $%s when --config is not given) decide on the running gateway through its\nadmin API, so the decision applies at once; the operator its admin key names is recorded.\n", admin.EnvAttach)
}

// parseInterspersed parses flags that may come before, between or after
// the positional arguments (`review approve NAME --config F`), and returns
// the positional ones. Everything after "--" is positional.
func (c *cli) parseInterspersed(fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	for {
		if code, ok := c.parse(fs, args); !ok {
			return nil, code, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, 0, true
		}
		if i := len(args) - len(rest) - 1; i >= 0 && args[i] == "--" {
			return append(pos, rest...), 0, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func configFlag(fs *flag.FlagSet) *string {
	return fs.String("config", "", "config file (default ./toolgate.yaml, then the user config dir)")
}

// reviewEnv is what every subcommand works with: the config and an
// import-only assembly over the store, its reviewer; its upstreams are
// imported only by the subcommands that need their current tools.
type reviewEnv struct {
	cfg *config.Config
	rev *review.Reviewer
	g   *gateway.Importer
}

func (e *reviewEnv) close() {
	if e.g != nil {
		_ = e.g.Close(context.Background())
	}
}

// openReview loads the config and the store; with upstreams it also imports
// every upstream. The caller closes the result, also when ok is false.
func (c *cli) openReview(ctx context.Context, name, path string, upstreams bool) (e *reviewEnv, ok bool) {
	e = &reviewEnv{}
	fail := func(err error) (*reviewEnv, bool) {
		fmt.Fprintf(c.stderr, "toolgate review %s: %v\n", name, err)
		return e, false
	}
	cfg, ok := c.loadConfig("review", path)
	if !ok {
		return e, false
	}
	e.cfg = cfg
	var err error
	if e.g, err = gateway.NewImporter(ctx, cfg, &gateway.ImporterOptions{Reviews: gateway.ReviewsStored}); err != nil {
		return fail(err)
	}
	e.rev = e.g.Reviewer()
	if !upstreams {
		return e, true
	}
	if err := e.g.Start(ctx); err != nil {
		return fail(err)
	}
	for _, st := range e.g.Importer().Statuses() {
		if st.State != core.StateConnected {
			fmt.Fprintf(c.stderr, "warning: upstream %s is %s: %s (its tools are not listed)\n", st.Name, st.State, st.LastError)
		}
	}
	return e, true
}

func runReviewList(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) int {
	path := configFlag(fs)
	asJSON := fs.Bool("json", false, "print the tools as a JSON array")
	pos, code, ok := c.parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(c.stderr, "toolgate review list: unexpected argument %q (see toolgate review list --help)\n", pos[0])
		return 2
	}
	e, ok := c.openReview(ctx, "list", *path, true)
	defer e.close()
	if !ok {
		return 1
	}
	rows := report.Reviews(e.rev, e.g.Registry().Bus().Snapshot().Tools, review.EntriesOf(e.g.Importer().Catalog()))
	if *asJSON {
		return c.printJSON(rows)
	}
	fmt.Fprintf(c.stdout, "review mode: %s\n", e.rev.Mode())
	if len(rows) == 0 {
		fmt.Fprintln(c.stdout, "(no imported tools, prompts or resources)")
		return 0
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTYPE\tSOURCE\tSTATE\tSERVED\tFLAGS\tFINGERPRINT")
	for _, r := range rows {
		served := "yes"
		if !r.Served {
			served = "withheld"
		}
		flags := strings.Join(report.Kinds(r.Flags), ",")
		if flags == "" {
			flags = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Type, r.Source, r.ReviewState, served, flags, shortFingerprint(r.Fingerprint))
	}
	_ = tw.Flush()
	for _, r := range rows {
		if r.ReviewNote != "" {
			fmt.Fprintf(c.stdout, "%s: %s: %s\n", r.Name, r.ReviewState, r.ReviewNote)
		}
	}
	return 0
}

// shortFingerprint keeps enough of a fingerprint to tell two apart in a
// table; --json has it whole.
func shortFingerprint(fp string) string {
	keep := strings.IndexByte(fp, ':') + 1 + 12
	if len(fp) <= keep {
		return fp
	}
	return fp[:keep]
}

func runReviewDecide(d core.ReviewDecision) func(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) int {
	verb := "approve"
	if d == core.DecisionRejected {
		verb = "reject"
	}
	return func(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) int {
		path := configFlag(fs)
		allNew := fs.Bool("all-new", false, "every imported tool that has no decision yet")
		by := fs.String("by", defaultReviewer(), "who decides, recorded with the decision (not with --attach: the admin key names the operator)")
		attach := fs.String("attach", "", "decide on a running gateway's admin API: http://host:port or unix:/path (default $"+admin.EnvAttach+" when --config is not given)")
		key := fs.String("admin-key", "", "the admin key for --attach (default $"+admin.EnvAdminKey+")")
		asJSON := fs.Bool("json", false, "print the decisions as a JSON array")
		names, code, ok := c.parseInterspersed(fs, args)
		if !ok {
			return code
		}
		if (len(names) > 0) == *allNew {
			fmt.Fprintf(c.stderr, "toolgate review %s: name the tools or pass --all-new, not both (see toolgate review %s --help)\n", verb, verb)
			return 2
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if *attach != "" && set["config"] {
			fmt.Fprintf(c.stderr, "toolgate review %s: --attach and --config exclude each other: with --attach the running gateway decides and stores\n", verb)
			return 2
		}
		if *attach == "" && !set["config"] {
			*attach = os.Getenv(admin.EnvAttach)
		}
		if *attach != "" {
			if set["by"] {
				fmt.Fprintf(c.stderr, "toolgate review %s: --by does not apply with --attach: the gateway records the operator its admin key names\n", verb)
				return 2
			}
			return c.reviewDecideAttached(ctx, verb, d, &adminFlags{attach: attach, key: key, asJSON: asJSON}, names, *allNew)
		}
		e, ok := c.openReview(ctx, verb, *path, true)
		defer e.close()
		if !ok {
			return 1
		}
		targets, bad := report.Targets(e.rev, e.g.Registry().Bus().Snapshot().Tools, review.EntriesOf(e.g.Importer().Catalog()), names, *allNew)
		for _, b := range bad {
			fmt.Fprintf(c.stderr, "toolgate review %s: %s\n", verb, b)
		}
		if len(bad) > 0 {
			return 1
		}
		if *allNew && len(targets) == 0 {
			if *asJSON {
				return c.printJSON([]reviewDecided{})
			}
			fmt.Fprintln(c.stdout, "no new tools")
			return 0
		}
		done := []reviewDecided{}
		for _, t := range targets {
			row, err := decideTarget(ctx, e.rev, t, d, *by)
			if err != nil {
				fmt.Fprintf(c.stderr, "toolgate review %s: %v\n", verb, err)
				return 1
			}
			if *asJSON {
				done = append(done, row)
				continue
			}
			fmt.Fprintf(c.stdout, "%s %s (%s/%s) %s\n", d, row.Name, row.Source, row.RemoteName, row.Fingerprint)
		}
		if *asJSON {
			return c.printJSON(done)
		}
		return 0
	}
}

// decideTarget records d for t, as it is now.
func decideTarget(ctx context.Context, rev *review.Reviewer, t report.Target, d core.ReviewDecision, by string) (reviewDecided, error) {
	if t.Entry != nil {
		var err error
		if d == core.DecisionApproved {
			err = rev.ApproveEntry(ctx, *t.Entry, by)
		} else {
			err = rev.RejectEntry(ctx, *t.Entry, by)
		}
		return reviewDecided{Type: string(t.Entry.Kind), Name: t.Name(), Source: t.Entry.Source, RemoteName: t.Entry.Key,
			Decision: d, Fingerprint: t.Entry.Fingerprint()}, err
	}
	var err error
	if d == core.DecisionApproved {
		err = rev.Approve(ctx, t.Tool, by)
	} else {
		err = rev.Reject(ctx, t.Tool, by)
	}
	return reviewDecided{Type: report.TypeTool, Name: t.Tool.Name, Source: t.Tool.Source, RemoteName: t.Tool.RemoteName,
		Decision: d, Fingerprint: review.ToolFingerprint(t.Tool)}, err
}

// reviewDecided is one decision as review approve|reject --json prints it;
// the fingerprint is known only when the command imported the tool itself.
// Name is a prompt's or resource's ref (core.ReviewRef).
type reviewDecided struct {
	Type        string              `json:"type,omitempty"`
	Name        string              `json:"name"`
	Source      string              `json:"source,omitempty"`
	RemoteName  string              `json:"remoteName,omitempty"`
	Decision    core.ReviewDecision `json:"decision"`
	Fingerprint string              `json:"fingerprint,omitempty"`
}

// reviewDecideAttached decides on the running gateway (CO-9), which stores
// the decision and applies it at once; --all-new is every tool the gateway
// has in review state new.
func (c *cli) reviewDecideAttached(ctx context.Context, verb string, d core.ReviewDecision, f *adminFlags, names []string, allNew bool) int {
	a, ok := c.connect("review "+verb, f)
	defer a.close()
	if !ok {
		return 1
	}
	if allNew {
		states, err := a.client.Reviews(ctx)
		if err != nil {
			return a.fail(err)
		}
		for name, st := range states {
			if st == core.ReviewNew {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		if len(names) == 0 {
			if *f.asJSON {
				return c.printJSON([]reviewDecided{})
			}
			fmt.Fprintln(c.stdout, "no new tools")
			return 0
		}
	}
	done := []reviewDecided{}
	for _, name := range names {
		var err error
		if d == core.DecisionApproved {
			err = a.client.ApproveTool(ctx, name)
		} else {
			err = a.client.RejectTool(ctx, name)
		}
		if err != nil {
			return a.fail(err)
		}
		row := reviewDecided{Name: name, Decision: d}
		if kind, _ := core.ParseReviewRef(name); kind != core.EntryTool {
			row.Type = string(kind)
		}
		done = append(done, row)
		if !*f.asJSON {
			fmt.Fprintf(c.stdout, "%s %s on %s\n", d, name, a.client.URL())
		}
	}
	if *f.asJSON {
		return c.printJSON(done)
	}
	return 0
}

// defaultReviewer names the person at the terminal.
func defaultReviewer() string {
	for _, k := range []string{"USER", "USERNAME", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "cli"
}

func runReviewExport(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) int {
	path := configFlag(fs)
	out := fs.String("out", "", "write to FILE instead of stdout")
	pos, code, ok := c.parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(c.stderr, "toolgate review export: unexpected argument %q (see toolgate review export --help)\n", pos[0])
		return 2
	}
	e, ok := c.openReview(ctx, "export", *path, false)
	defer e.close()
	if !ok {
		return 1
	}
	data, err := e.rev.Export(ctx)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolgate review export: %v\n", err)
		return 1
	}
	if *out == "" {
		_, _ = c.stdout.Write(data)
		return 0
	}
	if err := writeFileAtomic(*out, data); err != nil {
		fmt.Fprintf(c.stderr, "toolgate review export: %v\n", err)
		return 1
	}
	fmt.Fprintf(c.stderr, "wrote %s\n", *out)
	return 0
}

// writeFileAtomic replaces path in one step, so an interrupted export never
// leaves a half-written approvals file in a repository. The file holds no
// secrets and is meant to be shared: 0644.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".toolgate-approvals-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func runReviewImport(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) int {
	path := configFlag(fs)
	pos, code, ok := c.parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(c.stderr, "toolgate review import: want exactly one FILE (see toolgate review import --help)")
		return 2
	}
	data, err := os.ReadFile(pos[0])
	if err != nil {
		fmt.Fprintf(c.stderr, "toolgate review import: %v\n", err)
		return 1
	}
	// Validate before the store is even opened: a bad file touches nothing.
	if _, err := review.ParseApprovals(data); err != nil {
		fmt.Fprintf(c.stderr, "toolgate review import: %s: %v\n", pos[0], err)
		return 1
	}
	e, ok := c.openReview(ctx, "import", *path, false)
	defer e.close()
	if !ok {
		return 1
	}
	n, err := e.rev.Import(ctx, data)
	if err != nil {
		if n > 0 {
			fmt.Fprintf(c.stderr, "toolgate review import: %d decision(s) stored before the error\n", n)
		}
		fmt.Fprintf(c.stderr, "toolgate review import: %s: %v\n", pos[0], err)
		return 1
	}
	fmt.Fprintf(c.stdout, "imported %d decision(s) from %s\n", n, pos[0])
	return 0
}
