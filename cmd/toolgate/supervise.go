package main

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/mcp/upstream"
)

// The hidden _supervise command: what upstream.Options.Supervisor runs.
const (
	superviseSynopsis = "-- CMD ARGS…"
	superviseSummary  = "(internal) run CMD in this process group and stop the group when toolgate dies"
)

// runSupervise runs CMD under upstream.Supervise (IM-10) and exits with CMD's
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
		return upstream.SuperviseUsage
	}
	return upstream.Supervise(ctx, fs.Args(), c.stderr)
}
