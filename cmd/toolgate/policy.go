package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/policy"
	"github.com/toolgate/toolgate/internal/admin"
	"github.com/toolgate/toolgate/internal/gateway"
)

// The policy command's entry in the command table.
const (
	policySynopsis = "test|list …"
	policySummary  = "which policy rule decides a call, without making it; the rules in force"
)

func policySubs() []reviewSub {
	return []reviewSub{
		{"test", "[--config F | --attach URL [--admin-key K]] --actor ID [--roles a,b] [--tenant T] --tool NAME [--args JSON] [--endpoint PATH] [--via call_tool] [--session-labels a,b] [--json]",
			"print the rule that decides the call, its effect and reason; nothing is called. With --config the upstreams are imported\n" +
				"        to find the tool; with --attach the running gateway answers over its admin API, with the rules it runs.\n" +
				"        --via call_tool tries the call as made through the endpoint's tool search;\n" +
				"        --session-labels untrusted,private tries it from a session that gathered those labels", runPolicyTest},
		{"list", "[--config F] [--json]",
			"print each endpoint's rules in evaluation order and its default", runPolicyList},
	}
}

// runPolicy is `toolgate policy SUBCOMMAND` (PO-4).
func runPolicy(ctx context.Context, c *cli, args []string) int {
	return c.runSubcommand(ctx, "policy", policySubs(), c.policyUsage, args)
}

func (c *cli) policyUsage(w io.Writer) {
	subcommandUsage(w, "policy", policySynopsis, policySummary, policySubs(), 5)
}

func runPolicyTest(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) int {
	path := configFlag(fs)
	actorID := fs.String("actor", "", "the caller's id; its roles and tenant are those of the config's API key or open endpoint with that id")
	roles := fs.String("roles", "", "the caller's roles, comma-separated (instead of the config's)")
	tenant := fs.String("tenant", "", "the caller's tenant (instead of the config's)")
	tool := fs.String("tool", "", "the tool's registry name")
	argsJSON := fs.String("args", "{}", "the call's arguments, a JSON object")
	endpoint := fs.String("endpoint", "", "the endpoint's path (default: the first)")
	via := fs.String("via", "", "call_tool: try the call as made through the endpoint's tool search, which finds only what the listing shows")
	sessionLabels := fs.String("session-labels", "", "the calling session's flow labels, comma-separated (untrusted,private): what session.labels reads")
	asJSON := fs.Bool("json", false, "print the decision as JSON")
	attach := fs.String("attach", "", "ask a running gateway's admin API instead: http://host:port or unix:/path")
	key := fs.String("admin-key", "", "the admin key for --attach (default $"+admin.EnvAdminKey+")")
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(c.stderr, "toolgate policy test: unexpected argument %q\n", fs.Arg(0))
		return 2
	case *actorID == "" || *tool == "":
		fmt.Fprintln(c.stderr, "toolgate policy test: --actor and --tool are required")
		return 2
	case !json.Valid([]byte(*argsJSON)) || !strings.HasPrefix(strings.TrimSpace(*argsJSON), "{"):
		fmt.Fprintln(c.stderr, "toolgate policy test: --args must be a JSON object")
		return 2
	case *via != "" && *via != gateway.ViaCallTool:
		fmt.Fprintf(c.stderr, "toolgate policy test: --via must be %s, not %q\n", gateway.ViaCallTool, *via)
		return 2
	}
	var rolesList []string
	for r := range strings.SplitSeq(*roles, ",") {
		if r = strings.TrimSpace(r); r != "" {
			rolesList = append(rolesList, r)
		}
	}
	if *attach != "" {
		if set["config"] {
			fmt.Fprintln(c.stderr, "toolgate policy test: --attach and --config exclude each other: with --attach the running gateway's rules decide")
			return 2
		}
		req := admin.PolicyTestRequest{Endpoint: *endpoint, Actor: *actorID, Tool: *tool, Args: json.RawMessage(*argsJSON), Via: *via,
			SessionLabels: splitList(*sessionLabels)}
		if set["roles"] {
			req.Roles = &rolesList
		}
		if set["tenant"] {
			req.Tenant = tenant
		}
		a, ok := c.connect("policy test", &adminFlags{attach: attach, key: key, asJSON: asJSON})
		if !ok {
			return 1
		}
		defer a.close()
		trial, err := a.client.TryPolicy(ctx, req)
		if err != nil {
			return a.fail(err)
		}
		return c.printTrial(trial, *asJSON)
	}
	cfg, ok := c.loadConfig("policy test", *path)
	if !ok {
		return 1
	}
	actor, found := gateway.ConfigActor(cfg, *actorID)
	if !found {
		actor = core.Actor{ID: *actorID}
	}
	if set["roles"] {
		actor.Roles = rolesList
	}
	if set["tenant"] {
		actor.Tenant = *tenant
	}
	g, err := gateway.NewImporter(ctx, cfg, &gateway.ImporterOptions{Reviews: gateway.ReviewsIfStored})
	if err != nil {
		fmt.Fprintf(c.stderr, "toolgate policy test: %v\n", err)
		return 1
	}
	defer g.Close(context.Background())
	if err := g.Start(ctx); err != nil {
		fmt.Fprintf(c.stderr, "toolgate policy test: %v\n", err)
		return 1
	}
	trial, err := g.TryPolicy(ctx, *endpoint, actor, *tool, json.RawMessage(*argsJSON), *via, splitList(*sessionLabels))
	if err != nil {
		fmt.Fprintf(c.stderr, "toolgate policy test: %v\n", err)
		return 1
	}
	return c.printTrial(trial, *asJSON)
}

// printTrial prints policy test's answer.
func (c *cli) printTrial(trial policy.Trial, asJSON bool) int {
	if asJSON {
		return c.printJSON(trial)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "rule:\t%s\n", trial.Rule)
	fmt.Fprintf(tw, "effect:\t%s\n", trial.Effect)
	if trial.Reason != "" {
		fmt.Fprintf(tw, "reason:\t%s\n", trial.Reason)
	}
	if trial.Error != "" {
		fmt.Fprintf(tw, "error:\t%s\n", trial.Error)
	}
	listed := "yes"
	if !trial.Listed {
		listed = "no (denied whatever the arguments)"
	}
	fmt.Fprintf(tw, "listed:\t%s\n", listed)
	if len(trial.ToolLabels)+len(trial.SessionLabels) > 0 {
		fmt.Fprintf(tw, "labels:\ttool %s; session %s\n", orNone(trial.ToolLabels), orNone(trial.SessionLabels))
	}
	if trial.Via != "" {
		fmt.Fprintf(tw, "via:\t%s\n", trial.Via)
	}
	fmt.Fprintf(tw, "actor:\t%s roles=%s tenant=%s\n", trial.Actor.ID, strings.Join(trial.Actor.Roles, ","), trial.Actor.Tenant)
	fmt.Fprintf(tw, "endpoint:\t%s\n", trial.Endpoint)
	_ = tw.Flush()
	return 0
}

// policyListing is one endpoint's rules as `policy list --json` prints them.
type policyListing struct {
	Endpoint string              `json:"endpoint"`
	Default  string              `json:"default"`
	Rules    []policyListingRule `json:"rules"`
}

type policyListingRule struct {
	config.PolicyRule
	// From is where the rule is configured: policies or endpoints[i].policies.
	From string `json:"from"`
}

func runPolicyList(_ context.Context, c *cli, fs *flag.FlagSet, args []string) int {
	path := configFlag(fs)
	asJSON := fs.Bool("json", false, "print the rules as JSON")
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(c.stderr, "toolgate policy list: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg, ok := c.loadConfig("policy list", *path)
	if !ok {
		return 1
	}
	var out []policyListing
	for i, e := range cfg.Endpoints {
		p, err := gateway.EndpointPolicy(cfg, i)
		if err != nil {
			fmt.Fprintf(c.stderr, "toolgate policy list: %v\n", err)
			return 1
		}
		l := policyListing{Endpoint: e.Path, Default: config.PolicyAllow, Rules: []policyListingRule{}}
		if p != nil {
			l.Default = string(p.Default())
		}
		for _, layer := range []struct {
			from string
			ps   *config.Policies
		}{{"policies", cfg.Policies}, {fmt.Sprintf("endpoints[%d].policies", i), e.Policies}} {
			if layer.ps == nil {
				continue
			}
			for _, r := range layer.ps.Rules {
				l.Rules = append(l.Rules, policyListingRule{PolicyRule: r, From: layer.from})
			}
		}
		out = append(out, l)
	}
	if *asJSON {
		return c.printJSON(out)
	}
	for i, l := range out {
		if i > 0 {
			fmt.Fprintln(c.stdout)
		}
		fmt.Fprintf(c.stdout, "%s (default: %s)\n", l.Endpoint, l.Default)
		if len(l.Rules) == 0 {
			fmt.Fprintln(c.stdout, "  (no rules)")
			continue
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  ID\tEFFECT\tWHEN\tREASON\tFROM")
		for _, r := range l.Rules {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", r.ID, r.Effect, r.When, r.Reason, r.From)
		}
		_ = tw.Flush()
	}
	return 0
}

// splitList reads a comma-separated flag: its non-empty items, trimmed.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// orNone lists labels, or says there are none.
func orNone(labels []string) string {
	if len(labels) == 0 {
		return "none"
	}
	return strings.Join(labels, ",")
}
