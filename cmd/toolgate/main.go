// Command toolgate is a governed gateway for the Model Context Protocol.
// main only wires process-level things (signals, exit code); everything a
// test wants lives in run and the packages it calls.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
