package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/mcp/demo"
)

// demoListen is where the demo serves; if it is taken, a free port is used.
const demoListen = "127.0.0.1:7331"

// DemoNotice is the header line of the demo (OP-4).
const DemoNotice = "demo: built-in upstreams, open mode on loopback; confirm secret generated for this session"

// DemoConfig builds the demo's configuration in code (OP-4): open mode on
// loopback, upstreams spawned from this binary — a collision (notes and
// weather both offer search with prefixes off), a flagged description, a
// dangerous pattern and a broken schema (sneaky), a rug pull (shifty), an
// action tool whose confirmations wait for the operator (notes) and one
// upstream that is down — a generated confirm secret, and a store in dir.
// Its policy rules and limit (DemoPolicies, DemoLimits) give the Policies
// pane and its dry run something to show (PO-1, PO-3, PO-4). It needs no
// network, npm or secrets.
func DemoConfig(exe, dir, version string) (*config.Config, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("generating the demo's confirm secret: %w", err)
	}
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, err
	}
	noPrefix := ""
	self := func(name string) config.Upstream {
		return config.Upstream{
			Name: name, Command: exe, Args: []string{"demo-upstream", name},
			Env: map[string]config.Secret{demo.StateEnv: config.Secret(state)},
		}
	}
	notes := self("notes")
	notes.Prefix = &noPrefix
	notes.Approval = config.ApprovalOperator
	weather := self("weather")
	weather.Prefix = &noPrefix
	cfg := &config.Config{
		Gateway: config.Gateway{
			Listen:  demoListen,
			Store:   filepath.Join(dir, "demo.db"),
			Confirm: config.Confirm{Secret: config.Secret(hex.EncodeToString(raw))},
			Review:  config.Review{Mode: config.ReviewPin},
		},
		Endpoints: []config.Endpoint{{
			Path: "/mcp", Name: "toolgate demo",
			Actor: &config.Actor{ID: "demo", Roles: []string{"ADMIN"}},
		}},
		Upstreams: []config.Upstream{
			notes, weather, self("sneaky"), self("shifty"),
			{Name: "offline", URL: "http://127.0.0.1:1/mcp", Transport: config.TransportHTTP, Timeout: 2 * time.Second},
		},
		Policies: DemoPolicies(),
		Limits:   DemoLimits(),
	}
	cfg.SetDefaults(version)
	if _, err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("demo config: %w", err)
	}
	return cfg, nil
}

// The demo's rule and limit ids, for the tests that call through them.
const (
	DemoDenyRule    = "no-secrets-in-notes"
	DemoApproveRule = "list-all-needs-operator"
	DemoRateLimit   = "forecast-rate"
)

// DemoPolicies are the demo's rules, one of each kind an operator meets
// (PO-1): a deny that reads the arguments (a note that looks like it holds
// a password or a key is refused, whatever else it says), an approve on a
// read (listing every note at once waits for an operator in the Approvals
// pane) and, by default, allow. Both name tools of the notes upstream,
// which the demo serves without prefix.
func DemoPolicies() *config.Policies {
	return &config.Policies{
		Default: config.PolicyAllow,
		Rules: []config.PolicyRule{
			{
				ID:     DemoDenyRule,
				When:   `tool.name == "create_note" && args.text.matches("(?i)(passw(or)?d|api[ _-]?key|secret)")`,
				Effect: config.PolicyDeny,
				Reason: "notes must not hold passwords, API keys or secrets",
			},
			{
				ID:     DemoApproveRule,
				When:   `tool.name == "list_notes"`,
				Effect: config.PolicyApprove,
				Reason: "listing every note at once needs an operator's approval",
			},
		},
	}
}

// DemoLimits is the demo's rate limit (PO-3): three quick forecasts per
// actor, then one every 20 seconds, so a few calls in a row show the
// refusal and when to retry.
func DemoLimits() []config.Limit {
	return []config.Limit{{
		ID: DemoRateLimit, Per: "actor+tool", Match: `tool.name == "forecast"`, Rate: "3/min", Burst: 3,
	}}
}
