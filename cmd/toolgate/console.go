package main

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/config"
)

func runConsole(_ context.Context, c *cli, args []string) int {
	fs := c.commandFlags("console")
	path := fs.String("config", "", "config file (default ./toolgate.yaml, then the user config dir; none starts the demo)")
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	if *path == "" && config.DefaultPath() == "" {
		fmt.Fprintln(c.stdout, "toolgate: no config file, so this would start the built-in demo,")
		fmt.Fprintln(c.stdout, "but the console and the demo are not available in this version yet.")
		fmt.Fprintln(c.stdout, "Try: toolgate check --config testdata/toolgate.example.yaml   (toolgate --help lists the commands)")
		return 0
	}
	if _, ok := c.loadConfig("console", *path); !ok {
		return 1
	}
	fmt.Fprintln(c.stderr, "toolgate console: the console is not available in this version yet; the config is valid")
	return 2
}
