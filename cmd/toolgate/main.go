// Command toolgate is a governed gateway for the Model Context Protocol.
// main only wires process-level things (signals, exit code); everything a
// test wants lives in run and the packages it calls.
package main

import (
	"context"
	"os"

	// Runs the supervisor of a stdio upstream before the heavy packages
	// initialise (QB-5).
	_ "github.com/toolgate/toolgate/cmd/toolgate/internal/earlysupervise"
	"github.com/toolgate/toolgate/internal/signals"
)

func main() {
	// The signals were caught since package signals' init (OP-12); here
	// they get their meaning: SIGINT/SIGTERM end ctx, SIGHUP is what the
	// command makes of it.
	ctx, sigs, release := signals.Start(context.Background())
	code := runWith(ctx, &cli{stdout: os.Stdout, stderr: os.Stderr, signals: sigs}, os.Args[1:])
	release()
	os.Exit(code)
}
