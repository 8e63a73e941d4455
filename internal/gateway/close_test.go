package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolgate/toolgate/auth/authtest"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/gateway"
)

// oauthEndpointYAML is an endpoint verifying issuer's tokens (AU-1).
func oauthEndpointYAML(path, issuer string) string {
	return fmt.Sprintf("  - path: %s\n    auth:\n      oauth:\n        issuer: %s\n        audience: any\n", path, issuer)
}

// withEndpoints replaces the endpoints of a gatewayYAML config.
func withEndpoints(yaml string, endpoints ...string) string {
	head, rest, _ := strings.Cut(yaml, "endpoints:\n")
	_, ups, _ := strings.Cut(rest, "upstreams:\n")
	return head + "endpoints:\n" + strings.Join(endpoints, "") + "upstreams:\n" + ups
}

// A New that fails part-way releases everything it had built — the store
// first of all, opened before anything else — and says why with the
// culprit's name: the address (a taken port), the issuer (OAuth discovery,
// AU-1), the confirm gate (CF-3). No goroutine is left and another store
// can open the file (OP-5).
func TestNewFailsReleasesEverything(t *testing.T) {
	echo := serveDemo(t, "echo")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { taken.Close() })
	deadIssuer := strings.TrimSuffix(closedURL(t, ""), "/")
	idp := authtest.NewProvider(t)

	for _, tc := range []struct {
		name string
		edit func(c *config.Config, yaml string) *config.Config
		want []string // in the error
		is   error    // wrapped by the error, when callers test for it
	}{
		{"listen address taken", func(c *config.Config, _ string) *config.Config {
			c.Gateway.Listen = taken.Addr().String()
			return c
		}, []string{"listen", taken.Addr().String()}, syscall.EADDRINUSE}, // the console's demo then takes any port
		{"oauth issuer unreachable", func(_ *config.Config, yaml string) *config.Config {
			return loadConfig(t, withEndpoints(yaml, oauthEndpointYAML("/mcp", deadIssuer)))
		}, []string{"endpoints[0] /mcp", "oauth " + deadIssuer}, nil},
		// The first endpoint's strategy is built, and fetches its key set in
		// the background, before the second fails.
		{"second oauth issuer unreachable", func(_ *config.Config, yaml string) *config.Config {
			return loadConfig(t, withEndpoints(yaml, oauthEndpointYAML("/a", idp.Issuer()), oauthEndpointYAML("/b", deadIssuer)))
		}, []string{"endpoints[1] /b", "oauth " + deadIssuer}, nil},
		// Validation refuses a short secret in a file; New is also called
		// with configs built in code.
		{"confirm secret too short", func(c *config.Config, _ string) *config.Config {
			c.Gateway.Confirm.Secret = "short"
			return c
		}, []string{"confirm gate", "confirm secret: 5 bytes"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "toolgate.db")
			yaml := gatewayYAML(store, upstreamYAML("echo", echo, true))
			cfg := tc.edit(loadConfig(t, yaml), yaml)
			baseline := goroutineBaseline()
			g, err := gateway.New(testCtx(t), cfg, nil)
			if err == nil {
				closeGateway(t, g)
				t.Fatal("New succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q does not wrap %v", err, tc.is)
			}
			assertGoroutinesSettle(t, baseline)
			assertStoreReleased(t, store)
		})
	}
}

// AU-1: an OAuth strategy refreshes the issuer's key set in the background
// for as long as the gateway lives. Close stops that, however long the
// context given to New lives (the console's lives as long as the process).
func TestCloseStopsOAuthRefresh(t *testing.T) {
	idp := authtest.NewProvider(t)
	store := filepath.Join(t.TempDir(), "toolgate.db")
	yaml := gatewayYAML(store, upstreamYAML("echo", serveDemo(t, "echo"), true))
	cfg := loadConfig(t, withEndpoints(yaml, oauthEndpointYAML("/mcp", idp.Issuer())))
	baseline := goroutineBaseline()

	ctx := testCtx(t)
	g, err := gateway.NewHandler(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	s := connect(t, ctx, srv.URL+"/mcp", idp.Token(t, map[string]any{"sub": "alice"}))
	if res := call(t, ctx, s, "echo_echo", map[string]any{"message": "over oauth"}); resultText(res) != "over oauth" {
		t.Errorf("echo_echo: %q", resultText(res))
	}
	s.end()
	srv.Close()
	closeGateway(t, g)
	assertGoroutinesSettle(t, baseline)
	assertStoreReleased(t, store)
}

// A New whose context ends while it runs fails with the context's error and
// releases what it built: a gateway bound to a cancelled start-up (SIGINT
// during boot) must not linger.
func TestNewContextDone(t *testing.T) {
	store := filepath.Join(t.TempDir(), "toolgate.db")
	cfg := loadConfig(t, gatewayYAML(store, upstreamYAML("echo", serveDemo(t, "echo"), true)))
	baseline := goroutineBaseline()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g, err := gateway.New(ctx, cfg, nil)
	if err == nil || g != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("New with a cancelled context: %v, %v", g, err)
	}
	assertGoroutinesSettle(t, baseline)
	if _, err := os.Stat(store); err == nil {
		assertStoreReleased(t, store)
	}
}
