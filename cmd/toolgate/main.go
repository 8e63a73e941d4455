// Command toolgate is a governed gateway for the Model Context Protocol.
// main only wires process-level things (signals, exit code); everything a
// test wants lives in run and the packages it calls.
package main

import (
	"context"
	"os"

	// Runs the supervisor of a stdio upstream before the heavy packages
	// initialise, then holds the collector off while they do (QB-5).
	"github.com/toolgate/toolgate/cmd/toolgate/internal/earlygc"
	"github.com/toolgate/toolgate/internal/signals"
)

// Package main initialises after every package it imports: the heavy
// initialisers are done, so the collector earlygc held off resumes here,
// before main or a test binary's main runs, its first collection waiting
// until the heap has grown past them (QB-5).
func init() { earlygc.Resume() }

func main() {
	// The signals were caught since package signals' init (OP-12); here
	// they get their meaning: SIGINT/SIGTERM end ctx, SIGHUP is what the
	// command makes of it.
	ctx, sigs, release := signals.Start(context.Background())
	code := runWith(ctx, &cli{stdout: os.Stdout, stderr: os.Stderr, signals: sigs}, os.Args[1:])
	release()
	os.Exit(code)
}
