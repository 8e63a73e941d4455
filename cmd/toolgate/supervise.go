package main

import (
	"context"
	"fmt"
	"os"

	"github.com/toolgate/toolgate/mcp"
)

// The hidden _supervise command: what mcp.UpstreamOptions.Supervisor runs.
const (
	superviseSynopsis = "-- CMD ARGS…"
	superviseSummary  = "(internal) run CMD in this process group and stop the group when toolgate dies"
)

// supervisorArgs is the mcp.UpstreamOptions.Supervisor of stdio upstreams:
// this binary running _supervise, to which the adapter appends the
// upstream's command and args. nil (no supervisor) if the binary cannot be
// found.
func supervisorArgs() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{exe, "_supervise", "--"}
}

// runSupervise runs CMD under mcp.Supervise (IM-10) and exits with CMD's
// status. CMD's stdin, stdout and stderr are this process's own, inherited,
// so an MCP stdio stream passes straight through; c.stderr carries only the
// supervisor's own messages.
func runSupervise(ctx context.Context, c *cli, args []string) int {
	fs := c.flags("_supervise", superviseSynopsis, superviseSummary)
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(c.stderr, "toolgate _supervise: no command (usage: toolgate _supervise %s)\n", superviseSynopsis)
		return mcp.SuperviseUsage
	}
	return mcp.Supervise(ctx, fs.Args(), c.stderr)
}
