package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/admin"
	"github.com/toolgate/toolgate/internal/gateway"
)

func runAudit(ctx context.Context, c *cli, args []string) int {
	if len(args) > 0 && args[0] == "verify" {
		return runAuditVerify(ctx, c, args[1:])
	}
	fs := c.commandFlags("audit")
	path := fs.String("config", "", "config file (its gateway.store is read)")
	since := fs.String("since", "", "only records at or after this: a duration back from now (24h) or an RFC 3339 time")
	limit := fs.Int("limit", 0, "at most this many records (0: all)")
	asJSON := fs.Bool("json", false, "print the records as a JSON array")
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	var q core.AuditQuery
	q.Limit = *limit
	if *since != "" {
		t, err := admin.ParseSince(*since, time.Now())
		if err != nil {
			fmt.Fprintf(c.stderr, "toolgate audit: --since: %v\n", err)
			return 2
		}
		q.Since = t
	}
	cfg, ok := c.loadConfig("audit", *path)
	if !ok {
		return 1
	}
	store, err := gateway.OpenStore(ctx, cfg.Gateway.Store)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolgate audit: %v\n", err)
		return 1
	}
	defer store.Close()
	recs, err := store.Audit(ctx, q)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolgate audit: %v\n", err)
		return 1
	}
	if *asJSON {
		if recs == nil {
			recs = []core.AuditRecord{}
		}
		return c.printJSON(recs)
	}
	// A confirmed action has two records, its intent and its outcome (CF-3):
	// the table shows the call once, on its outcome's row. --json prints
	// every record as stored.
	finished := map[string]bool{}
	for _, r := range recs {
		if r.Outcome != core.AuditIntent && r.CallID != "" {
			finished[r.CallID] = true
		}
	}
	unfinished := 0
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tENDPOINT\tACTOR\tTOOL\tSOURCE\tOUTCOME\tLATENCY\tCONFIRM")
	for _, r := range recs {
		outcome := r.Outcome
		if outcome == core.AuditIntent {
			if finished[r.CallID] {
				continue
			}
			unfinished++
			outcome = "intent (no outcome)"
		}
		src, tool := r.Source, r.Tool
		switch {
		case r.Endpoint == gateway.AdminEndpoint:
			// An operator's action (CO-9): the tool column names the
			// action and its target; there is no source.
			src = "-"
			if r.RemoteName != "" {
				tool += " " + r.RemoteName
			}
		case src == "":
			src = core.NativeSource
		}
		tok := r.ConfirmTokenID
		if len(tok) > 12 {
			tok = tok[:12]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.Local().Format(time.DateTime), r.Endpoint, r.ActorID, tool, src, outcome, r.Latency.Round(time.Millisecond), tok)
	}
	_ = tw.Flush()
	if len(recs) == 0 {
		fmt.Fprintln(c.stdout, "(no records)")
	}
	if unfinished > 0 {
		fmt.Fprintf(c.stdout, "\n%d action call(s) started with no outcome recorded in this listing: the gateway stopped while they ran (they may have run), or the outcome lies past --limit.\n", unfinished)
	}
	return 0
}
