package main

// The headless operator commands (CO-9): every console action against a
// running gateway's admin API, for scripts and for operators without the
// console. Each takes --attach URL (default $TOOLGATE_ATTACH), the admin key
// (--admin-key or $TOOLGATE_ADMIN_KEY) and --json, and exits non-zero on
// failure.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/review/scan"
	"github.com/toolgate/toolgate/internal/admin"
)

// adminCommands are the command table's entries of the headless verbs.
func adminCommands() []command {
	const conn = "[--attach URL] [--admin-key K] [--json]"
	return []command{
		{"refresh", "NAME|--all [--yes] " + conn, "refresh a running gateway's upstream: print the diff, then apply it (--yes, or y at the prompt)", runRefresh},
		{"approvals", conn, "list the confirmations waiting for an operator on a running gateway", runApprovals},
		{"approve", "ID " + conn, "approve a pending confirmation: the waiting call runs", runApprove},
		{"reject", "ID [--reason TEXT] " + conn, "reject a pending confirmation: the waiting call gets isError with the reason", runReject},
		{"sessions", conn, "list the live client sessions of a running gateway and of the other replicas on its store", runSessions},
		{"end-session", "KEY|ID " + conn, "end a client session of a running gateway, or of another replica on its store: its next request fails", runEndSession},
		{"connections", "[" + subVerb(admin.RouteRevokeConnection) + " ID | " + subVerb(admin.RouteRekeyConnections) + "] " + conn, "list a running gateway's upstream OAuth connections, revoke one, or re-seal them all with gateway.credentialsKey", runConnections},
		{"connect", "NAME " + conn, "print the link where an operator connects a shared OAuth upstream's account", runConnect},
	}
}

// adminFlags are the flags every headless verb has.
type adminFlags struct {
	attach, key *string
	asJSON      *bool
}

func addAdminFlags(fs *flag.FlagSet) *adminFlags {
	return &adminFlags{
		attach: fs.String("attach", os.Getenv(admin.EnvAttach), "the running gateway's admin API: http://host:port or unix:/path (default $"+admin.EnvAttach+")"),
		key:    fs.String("admin-key", "", "the admin key (default $"+admin.EnvAdminKey+"; the flag is visible to other users in the process list)"),
		asJSON: fs.Bool("json", false, "print the result as JSON (errors too, as {\"error\": …})"),
	}
}

// adminCall is one headless verb's connection and how it reports.
type adminCall struct {
	c      *cli
	name   string
	flags  *adminFlags
	client *admin.Client
}

// connect builds the client; a missing URL or key fails here, before any
// request.
func (c *cli) connect(name string, f *adminFlags) (*adminCall, bool) {
	a := &adminCall{c: c, name: name, flags: f}
	key := *f.key
	if key == "" {
		key = os.Getenv(admin.EnvAdminKey)
	}
	client, err := admin.NewClient(*f.attach, key, nil)
	if err != nil {
		a.fail(err)
		return nil, false
	}
	a.client = client
	return a, true
}

func (a *adminCall) close() {
	if a != nil && a.client != nil {
		a.client.Close()
	}
}

// fail reports err: one clear line on stderr and, with --json, the API's
// error shape on stdout. It returns the exit status.
func (a *adminCall) fail(err error) int {
	url := *a.flags.attach
	text := adminErrorText(url, err)
	fmt.Fprintf(a.c.stderr, "toolgate %s: %s\n", a.name, text)
	if *a.flags.asJSON {
		var ae *admin.Error
		if !errors.As(err, &ae) {
			code := "client"
			var ue *admin.UnreachableError
			if errors.As(err, &ue) {
				code = "unreachable"
			}
			ae = &admin.Error{Code: code, Message: text}
		}
		a.c.printJSON(admin.ErrorBody{Error: ae})
	}
	return 1
}

// adminErrorText is err as a line for the operator: who decided first,
// what a status means, never the key (the client keeps it out of errors).
func adminErrorText(url string, err error) string {
	var (
		de *confirm.DecidedError
		ae *admin.Error
	)
	switch {
	case errors.As(err, &de):
		return de.Error()
	case errors.As(err, &ae) && ae.Status == 401:
		return fmt.Sprintf("the gateway at %s did not accept the admin key (HTTP 401): check --admin-key or $%s", url, admin.EnvAdminKey)
	case errors.As(err, &ae) && ae.Status != 0:
		return fmt.Sprintf("%s (HTTP %d)", ae.Message, ae.Status)
	}
	return err.Error()
}

// adminArgs parses a verb's flags and wants exactly n positional arguments.
func (c *cli) adminArgs(fs *flag.FlagSet, args []string, n int, what string) ([]string, int, bool) {
	pos, code, ok := c.parseInterspersed(fs, args)
	if !ok {
		return nil, code, false
	}
	if len(pos) != n {
		if n == 0 {
			fmt.Fprintf(c.stderr, "toolgate %s: unexpected argument %q (see toolgate %s --help)\n", fs.Name(), pos[0], fs.Name())
		} else {
			fmt.Fprintf(c.stderr, "toolgate %s: want %s (see toolgate %s --help)\n", fs.Name(), what, fs.Name())
		}
		return nil, 2, false
	}
	return pos, 0, true
}

func runApprovals(ctx context.Context, c *cli, args []string) int {
	fs := c.commandFlags("approvals")
	f := addAdminFlags(fs)
	if _, code, ok := c.adminArgs(fs, args, 0, ""); !ok {
		return code
	}
	a, ok := c.connect("approvals", f)
	defer a.close()
	if !ok {
		return 1
	}
	list, err := a.client.Confirmations(ctx)
	if err != nil {
		return a.fail(err)
	}
	if *f.asJSON {
		if list == nil {
			list = []core.PendingConfirmation{}
		}
		return c.printJSON(list)
	}
	if len(list) == 0 {
		fmt.Fprintln(c.stdout, "(no confirmations waiting)")
		return 0
	}
	now := time.Now()
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTOOL\tSOURCE\tACTOR\tEXPIRES IN\tARGUMENTS")
	for _, p := range list {
		src := p.Source
		if src == "" {
			src = core.NativeSource
		}
		left := p.Deadline.Sub(now).Round(time.Second)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, p.Tool, src, p.Actor.ID, max(left, 0), clip(scan.VisibleText(string(p.Arguments)), 60))
	}
	_ = tw.Flush()
	return 0
}

// decision is what approve and reject print with --json.
type decision struct {
	ID       string        `json:"id"`
	Decision core.Decision `json:"decision"`
	Reason   string        `json:"reason,omitempty"`
}

func runApprove(ctx context.Context, c *cli, args []string) int {
	fs := c.commandFlags("approve")
	f := addAdminFlags(fs)
	pos, code, ok := c.adminArgs(fs, args, 1, "exactly one confirmation ID (toolgate approvals lists them)")
	if !ok {
		return code
	}
	a, ok := c.connect("approve", f)
	defer a.close()
	if !ok {
		return 1
	}
	if err := a.client.ApproveConfirmation(ctx, pos[0]); err != nil {
		return a.fail(err)
	}
	if *f.asJSON {
		return c.printJSON(decision{ID: pos[0], Decision: core.DecisionApprove})
	}
	fmt.Fprintf(c.stdout, "approved %s: the waiting call runs\n", pos[0])
	return 0
}

func runReject(ctx context.Context, c *cli, args []string) int {
	fs := c.commandFlags("reject")
	reason := fs.String("reason", "", "why, told to the waiting caller (default: the gateway's rejection message)")
	f := addAdminFlags(fs)
	pos, code, ok := c.adminArgs(fs, args, 1, "exactly one confirmation ID (toolgate approvals lists them)")
	if !ok {
		return code
	}
	a, ok := c.connect("reject", f)
	defer a.close()
	if !ok {
		return 1
	}
	if err := a.client.RejectConfirmation(ctx, pos[0], *reason); err != nil {
		return a.fail(err)
	}
	if *f.asJSON {
		return c.printJSON(decision{ID: pos[0], Decision: core.DecisionReject, Reason: *reason})
	}
	fmt.Fprintf(c.stdout, "rejected %s: the waiting call gets an error and nothing runs\n", pos[0])
	return 0
}

func runSessions(ctx context.Context, c *cli, args []string) int {
	fs := c.commandFlags("sessions")
	f := addAdminFlags(fs)
	if _, code, ok := c.adminArgs(fs, args, 0, ""); !ok {
		return code
	}
	a, ok := c.connect("sessions", f)
	defer a.close()
	if !ok {
		return 1
	}
	list, err := a.client.Sessions(ctx)
	if err != nil {
		return a.fail(err)
	}
	if *f.asJSON {
		if list == nil {
			list = []core.Session{}
		}
		return c.printJSON(list)
	}
	if len(list) == 0 {
		fmt.Fprintln(c.stdout, "(no live sessions)")
		return 0
	}
	// Named by their keys, as the console names them: an id continues its
	// session (SV-2); end-session takes either. The gateway's own replica
	// is marked, and listed first.
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tREPLICA\tENDPOINT\tACTOR\tCLIENT\tPROTOCOL\tSTARTED\tLAST ACTIVITY\tCALLS")
	for _, s := range list {
		client := strings.TrimSpace(s.ClientName + " " + s.ClientVersion)
		if client == "" {
			client = "-"
		}
		replica := orDash(s.Replica)
		if !s.Elsewhere {
			replica += " (this)"
		}
		if s.Stateless {
			// A 2026-07-28 client: ending it ends its listen streams.
			client += fmt.Sprintf(" [stateless, %d listening]", s.Listening)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", s.Key(), replica, s.Endpoint, s.Actor.ID, client, orDash(s.Protocol),
			s.Started.Local().Format(time.DateTime), s.LastActivity.Local().Format(time.DateTime), s.Calls)
	}
	_ = tw.Flush()
	return 0
}

func runEndSession(ctx context.Context, c *cli, args []string) int {
	fs := c.commandFlags("end-session")
	f := addAdminFlags(fs)
	pos, code, ok := c.adminArgs(fs, args, 1, "exactly one session ID or key (toolgate sessions lists them)")
	if !ok {
		return code
	}
	a, ok := c.connect("end-session", f)
	defer a.close()
	if !ok {
		return 1
	}
	if err := a.client.EndSession(ctx, pos[0]); err != nil {
		return a.fail(err)
	}
	if *f.asJSON {
		return c.printJSON(struct {
			ID    string `json:"id"`
			Ended bool   `json:"ended"`
		}{pos[0], true})
	}
	fmt.Fprintf(c.stdout, "ended session %s: its next request fails\n", pos[0])
	return 0
}

// refreshResult is what refresh prints with --json: each upstream's diff,
// and whether it was applied.
type refreshResult struct {
	Applied bool            `json:"applied"`
	Diffs   []core.Diff     `json:"diffs"`
	Errors  []upstreamError `json:"errors,omitempty"`
}

type upstreamError struct {
	Upstream string `json:"upstream"`
	Error    string `json:"error"`
}

// runRefresh is `refresh NAME|--all` (CO-4 headless): plan, print the diff,
// then apply with --yes or after a y at the prompt. Without a terminal and
// without --yes nothing is applied and the exit status says so; a plan
// with nothing to change is cancelled and is a success.
func runRefresh(ctx context.Context, c *cli, args []string) int {
	fs := c.commandFlags("refresh")
	all := fs.Bool("all", false, "every upstream, in configuration order (a collision freed by one goes to the next)")
	yes := fs.Bool("yes", false, "apply without asking")
	f := addAdminFlags(fs)
	pos, code, ok := c.parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if *all == (len(pos) == 1) || len(pos) > 1 {
		fmt.Fprintln(c.stderr, "toolgate refresh: name one upstream or pass --all (see toolgate refresh --help)")
		return 2
	}
	a, ok := c.connect("refresh", f)
	defer a.close()
	if !ok {
		return 1
	}
	if *all && *yes {
		// Nothing to preview: apply as one refresh of all.
		diffs, err := a.client.RefreshAll(ctx)
		if err != nil {
			return a.fail(err)
		}
		return c.refreshApplied(f, diffs)
	}

	var plans []admin.UpstreamPlan
	if *all {
		var err error
		if plans, err = a.client.PlanEach(ctx); err != nil {
			return a.fail(err)
		}
	} else {
		p, err := a.client.PlanRefresh(ctx, pos[0])
		if err != nil {
			return a.fail(err)
		}
		plans = []admin.UpstreamPlan{{Upstream: pos[0], Plan: &p}}
	}
	res := refreshResult{Diffs: []core.Diff{}}
	changes := false
	for _, p := range plans {
		if p.Err != nil {
			res.Errors = append(res.Errors, upstreamError{Upstream: p.Upstream, Error: adminErrorText(*f.attach, p.Err)})
			continue
		}
		res.Diffs = append(res.Diffs, p.Plan.Diff)
		changes = changes || !p.Plan.Diff.Empty()
	}
	if !*f.asJSON {
		for _, d := range res.Diffs {
			printDiff(c.stdout, d)
		}
		for _, e := range res.Errors {
			fmt.Fprintf(c.stderr, "toolgate refresh: %s: cannot plan: %s\n", e.Upstream, e.Error)
		}
	}
	if !changes {
		a.client.CancelPlans(plans)
		if *f.asJSON {
			c.printJSON(res)
		} else if len(res.Errors) == 0 {
			fmt.Fprintln(c.stdout, "nothing to change")
		}
		return exitFor(len(res.Errors) == 0)
	}

	apply := *yes
	if !apply {
		if *f.asJSON || !c.interactive() {
			a.client.CancelPlans(plans)
			if *f.asJSON {
				c.printJSON(res)
			}
			fmt.Fprintln(c.stderr, "toolgate refresh: not applied (no terminal to ask at): re-run with --yes to apply")
			return 1
		}
		apply = c.confirm("Apply this refresh? [y/N] ")
		if !apply {
			a.client.CancelPlans(plans)
			fmt.Fprintln(c.stderr, "toolgate refresh: cancelled; nothing changed")
			return 1
		}
	}
	if *all {
		// The preview's plans are dropped and all is refreshed at once, in
		// configuration order, as the console's R does (IM-22).
		a.client.CancelPlans(plans)
		diffs, err := a.client.RefreshAll(ctx)
		if err != nil {
			return a.fail(err)
		}
		return c.refreshApplied(f, diffs)
	}
	d, err := a.client.ApplyRefresh(ctx, plans[0].Plan.ID)
	if err != nil {
		return a.fail(err)
	}
	return c.refreshApplied(f, []core.Diff{d})
}

func (c *cli) refreshApplied(f *adminFlags, diffs []core.Diff) int {
	if diffs == nil {
		diffs = []core.Diff{}
	}
	if *f.asJSON {
		return c.printJSON(refreshResult{Applied: true, Diffs: diffs})
	}
	for _, d := range diffs {
		fmt.Fprintf(c.stdout, "applied refresh of %s: %s\n", d.Upstream, d.Summary())
	}
	return 0
}

func exitFor(ok bool) int {
	if ok {
		return 0
	}
	return 1
}

// printDiff writes a refresh diff (IM-26) as text; every line is marked by
// what it is, and the lines an operator must not miss — a tool clients
// lose, a description that changed — say so in words, not only colour.
func printDiff(w io.Writer, d core.Diff) {
	fmt.Fprintf(w, "refresh of %s: %s\n", d.Upstream, d.Summary())
	for _, t := range d.Added {
		fmt.Fprintf(w, "  + added     %s (%s): %s\n", t.Name, t.Kind, clip(scan.VisibleText(t.Description), 100))
	}
	for _, t := range d.Removed {
		fmt.Fprintf(w, "  - REMOVED   %s   <- clients lose this tool\n", t.Name)
	}
	for _, ch := range d.Changed {
		fmt.Fprintf(w, "  ~ changed   %s: %s\n", ch.New.Name, strings.Join(ch.Fields, ", "))
		for _, field := range ch.Fields {
			switch field {
			case "description":
				fmt.Fprintf(w, "      old description: %s\n", scan.VisibleText(ch.Old.Description))
				fmt.Fprintf(w, "    ! NEW DESCRIPTION: %s\n", scan.VisibleText(ch.New.Description))
			case "kind":
				fmt.Fprintf(w, "      kind: %s -> %s\n", ch.Old.Kind, ch.New.Kind)
			case "inputSchema":
				fmt.Fprintf(w, "      schema: %s\n      -> %s\n", clip(string(ch.Old.InputSchema), 200), clip(string(ch.New.InputSchema), 200))
			}
		}
	}
	for _, col := range d.Collisions {
		fmt.Fprintf(w, "  ! collision %s: kept by %s, %s refused\n", col.Name, col.Kept, col.Refused)
	}
	for _, dr := range d.Dropped {
		fmt.Fprintf(w, "  x dropped   %s (%s): %s\n", dr.RemoteName, dr.Kind, clip(dr.Reason, 160))
	}
}

// clip folds s to one line of at most n runes.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// interactive is whether a person can answer a prompt: stdin is a terminal.
func (c *cli) interactive() bool {
	if c.tty != nil {
		return c.tty()
	}
	return isTerminal(os.Stdin)
}

// confirm asks a yes/no question; only y or yes is a yes.
func (c *cli) confirm(prompt string) bool {
	in := c.stdin
	if in == nil {
		in = os.Stdin
	}
	fmt.Fprint(c.stdout, prompt)
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
