// Command confclient is toolgate as the client of the MCP conformance suite's
// client scenarios: `conformance client --command confclient --scenario X`
// runs it with the fixture server's URL as the last argument and the scenario
// in MCP_CONFORMANCE_SCENARIO. It imports the fixture's tools through the
// importer and, where the scenario asks for a call, makes it through the
// registry, exactly as the gateway would.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/upstreams"
	"github.com/toolgate/toolgate/mcp/upstream"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "confclient:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) < 2 {
		return errors.New("usage: confclient URL (the conformance suite appends it)")
	}
	url := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	up, err := upstream.New(upstream.Options{Name: "fixture", URL: url, Transport: "http", Logger: log})
	if err != nil {
		return err
	}
	reg := core.NewRegistry(nil)
	im := upstreams.NewImporter(reg, []upstreams.UpstreamSpec{{
		Name: "fixture", Prefix: "", Transport: "http", Required: true,
		Timeout: 20 * time.Second, Upstream: up,
	}}, nil)
	defer im.Close()
	if err := im.Start(ctx); err != nil {
		return err
	}
	for _, t := range im.ImportedTools() {
		fmt.Printf("imported %s (%s)\n", t.Name, t.Kind)
	}

	switch scenario {
	case "initialize":
		return nil
	case "tools_call":
		// The fixture's add_numbers records a pass when called with a and b.
		res, err := reg.Invoke(ctx, core.Actor{ID: "conformance"}, "add_numbers", json.RawMessage(`{"a":2,"b":3}`))
		if err != nil {
			return fmt.Errorf("add_numbers: %w", err)
		}
		fmt.Printf("add_numbers: %s\n", res.JSON)
		if res.IsError || !strings.Contains(string(res.JSON), "The sum of 2 and 3 is 5") {
			return fmt.Errorf("add_numbers: unexpected result %s", res.JSON)
		}
		return nil
	}
	return fmt.Errorf("scenario %q is not supported", scenario)
}
