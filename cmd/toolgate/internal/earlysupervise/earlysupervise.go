// Package earlysupervise runs toolgate's hidden _supervise command from its
// initialiser, before the binary's heavy packages initialise (QB-5).
//
// Every stdio upstream starts one supervisor, and the upstream's command
// starts only once the supervisor runs: a supervisor that first went
// through every package initialiser of the binary (the review scanner's
// tables, the phone-number metadata, the JSON Schema meta-schemas …)
// delayed each stdio upstream's start by as much and held their heap for
// its whole life. Go initialises a package once everything it imports is
// initialised, taking ready packages in import-path order; this one
// imports only the standard library and the supervisor, which imports
// nothing heavier than golang.org/x/sys, so it runs among the first.
//
// Only the form the gateway spawns, `toolgate _supervise -- CMD ARGS…`,
// is run here; anything else (no command, --help) is left to the command
// line as usual.
package earlysupervise

import (
	"context"
	"os"

	"github.com/toolgate/toolgate/mcp/upstream/supervisor"
)

func init() {
	if argv, ok := Args(os.Args); ok {
		os.Exit(supervisor.Run(context.Background(), argv, os.Stderr))
	}
}

// Args returns the command a supervisor's argument list names, when the
// list is the gateway's `PROGRAM _supervise -- CMD ARGS…`.
func Args(args []string) ([]string, bool) {
	if len(args) < 4 || args[1] != "_supervise" || args[2] != "--" || args[3] == "" {
		return nil, false
	}
	return args[3:], true
}
