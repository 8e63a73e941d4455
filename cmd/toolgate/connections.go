package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/admin"
)

// subVerb is the word after the command in r's CLI verb: "revoke" of
// "connections revoke"; the admin API declares it with the route.
func subVerb(r admin.Route) string {
	_, sub, _ := strings.Cut(r.Verb, " ")
	return sub
}

// runConnections is `connections [revoke ID | rekey]` (UI-3): a running
// gateway's upstream connections, never a token.
func runConnections(ctx context.Context, c *cli, args []string) int {
	fs := c.commandFlags("connections")
	f := addAdminFlags(fs)
	pos, code, ok := c.parseInterspersed(fs, args)
	if !ok {
		return code
	}
	revoke, rekey := subVerb(admin.RouteRevokeConnection), subVerb(admin.RouteRekeyConnections)
	switch {
	case len(pos) == 0:
	case pos[0] == revoke && len(pos) == 2, pos[0] == rekey && len(pos) == 1:
	default:
		fmt.Fprintf(c.stderr, "toolgate connections: want no argument, %s ID or %s (see toolgate connections --help)\n", revoke, rekey)
		return 2
	}
	a, ok := c.connect("connections", f)
	defer a.close()
	if !ok {
		return 1
	}
	if len(pos) > 0 && pos[0] == revoke {
		conn, err := a.client.RevokeConnection(ctx, pos[1])
		if err != nil {
			return a.fail(err)
		}
		if *f.asJSON {
			return c.printJSON(conn)
		}
		fmt.Fprintf(c.stdout, "revoked connection %s of %s on %s: the next call asks to connect again\n", conn.ID, core.ActorLabel(conn.ActorID), conn.Upstream)
		return 0
	}
	if len(pos) > 0 && pos[0] == rekey {
		r, err := a.client.RekeyConnections(ctx)
		if err != nil {
			return a.fail(err)
		}
		if *f.asJSON {
			return c.printJSON(r)
		}
		fmt.Fprintf(c.stdout, "re-sealed %d connections with gateway.credentialsKey; %d were already; %d cannot be opened with either key", r.Resealed, r.Current, len(r.Unsealable))
		if len(r.Unsealable) > 0 {
			fmt.Fprintf(c.stdout, " (%s)", strings.Join(r.Unsealable, ", "))
		}
		fmt.Fprintln(c.stdout)
		return exitFor(len(r.Unsealable) == 0)
	}
	list, err := a.client.Connections(ctx)
	if err != nil {
		return a.fail(err)
	}
	if *f.asJSON {
		if list == nil {
			list = []core.Connection{}
		}
		return c.printJSON(list)
	}
	if len(list) == 0 {
		fmt.Fprintln(c.stdout, "(no upstream connections)")
		return 0
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPSTREAM\tACTOR\tSCOPES\tEXPIRES\tLAST USE\tSTATE")
	for _, cn := range list {
		state := "ok"
		if cn.Broken != "" {
			state = "broken: " + cn.Broken
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cn.ID, cn.Upstream, core.ActorLabel(cn.ActorID), orDash(strings.Join(cn.Scopes, " ")),
			timeOrDash(cn.Expiry), timeOrDash(cn.LastUsed), state)
	}
	_ = tw.Flush()
	return 0
}

func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.DateTime)
}

// runConnect is `connect NAME` (UI-2): the URL where an operator connects a
// shared upstream's account, to open in a browser.
func runConnect(ctx context.Context, c *cli, args []string) int {
	fs := c.commandFlags("connect")
	f := addAdminFlags(fs)
	pos, code, ok := c.adminArgs(fs, args, 1, "exactly one upstream NAME (a shared oauth upstream)")
	if !ok {
		return code
	}
	a, ok := c.connect("connect", f)
	defer a.close()
	if !ok {
		return 1
	}
	u, err := a.client.SharedConnectURL(ctx, pos[0])
	if err != nil {
		return a.fail(err)
	}
	if *f.asJSON {
		return c.printJSON(struct {
			Upstream string `json:"upstream"`
			URL      string `json:"url"`
		}{pos[0], u})
	}
	fmt.Fprintf(c.stdout, "open this link in a browser within 10 minutes to connect %s's shared account (single use):\n%s\n", pos[0], u)
	return 0
}
