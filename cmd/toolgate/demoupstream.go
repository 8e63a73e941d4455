package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/toolgate/toolgate/mcp/demo"
)

func runDemoUpstream(ctx context.Context, c *cli, args []string) int {
	fs := c.commandFlags("demo-upstream")
	httpAddr := fs.String("http", "", "serve Streamable HTTP at http://ADDR/mcp instead of stdio")
	envOpts, envErr := demo.OptionsFromEnv(os.Getenv)
	stateDir := fs.String("state", envOpts.StateDir, "directory for side-effect logs and crash markers (env "+demo.StateEnv+")")
	// Flags may follow the name: toolgate demo-upstream notes --http 127.0.0.1:0
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	if name == "" && fs.NArg() == 1 {
		name = fs.Arg(0)
	}
	if name == "" {
		fmt.Fprintf(c.stderr, "toolgate demo-upstream: name one of %s\n", strings.Join(demo.Names(), ", "))
		return 2
	}
	if envErr != nil {
		fmt.Fprintf(c.stderr, "toolgate demo-upstream: %v\n", envErr)
		return 2
	}
	opts := envOpts
	opts.StateDir = *stateDir
	if _, err := demo.New(name, opts); err != nil {
		fmt.Fprintf(c.stderr, "toolgate demo-upstream: %v\n", err)
		return 2
	}
	if *httpAddr == "" {
		if err := demo.ServeStdio(ctx, name, opts, os.Stdin, c.stdout); err != nil {
			fmt.Fprintf(c.stderr, "toolgate demo-upstream: %v\n", err)
			return 1
		}
		return 0
	}
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolgate demo-upstream: %v\n", err)
		return 1
	}
	// Tests parse this line to learn the port of ADDR :0.
	fmt.Fprintf(c.stderr, "demo upstream %s listening on http://%s/mcp\n", name, ln.Addr())
	if err := demo.ServeHTTP(ctx, name, opts, ln); err != nil {
		fmt.Fprintf(c.stderr, "toolgate demo-upstream: %v\n", err)
		return 1
	}
	return 0
}
