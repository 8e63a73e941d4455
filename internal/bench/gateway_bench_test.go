package bench

import (
	"context"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/gateway"
)

// BenchmarkGatewayToolsCall is one tools/call of the HTTP echo, in one
// process: directly, and through the gateway as serve assembles it (API
// key, role policy, validation, review pin, audit into SQLite). The
// difference of the two is the gateway's share (QB-2); allocs/op are
// deterministic where the machine's timings are not.
func BenchmarkGatewayToolsCall(b *testing.B) {
	g := startEchoGateway(b, 0x7fffffff)
	ctx, hc, echoURL, gwURL, key := g.ctx, g.hc, g.echoURL, g.url, g.key
	for _, p := range []struct{ name, url, key, tool string }{
		{"direct", echoURL, "", "echo"},
		{"via", gwURL, key, "http_echo"},
	} {
		b.Run(p.name+"/seq", func(b *testing.B) {
			c, err := newHTTPCaller(ctx, hc, p.url, p.key, p.tool)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := c.call(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(p.name+"/parallel", func(b *testing.B) {
			b.SetParallelism(8) // 16 sessions on 2 CPUs, as the bench's
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				c, err := newHTTPCaller(ctx, hc, p.url, p.key, p.tool)
				if err != nil {
					b.Error(err)
					return
				}
				for pb.Next() {
					if err := c.call(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// echoGateway is the HTTP echo and a gateway in front of it, in this
// process, as serve assembles it (API key, role policy, validation, review
// pin, audit into SQLite), already serving the echo's tool. All of it stops
// when the test or benchmark ends.
type echoGateway struct {
	ctx               context.Context
	hc                *http.Client
	echoURL, url, key string
	gw                *gateway.Gateway
}

// startEchoGateway starts an echoGateway and waits up to ready for the
// gateway to serve the echo's tool.
func startEchoGateway(tb testing.TB, ready time.Duration) echoGateway {
	tb.Helper()
	return startEchoGatewayWith(tb, ready, nil)
}

// startEchoGatewayWith is startEchoGateway with edit applied to the config.
func startEchoGatewayWith(tb testing.TB, ready time.Duration, edit func(*config.Config)) echoGateway {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	tb.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	echoURL, err := serveEcho(ctx, &wg, nil)
	if err != nil {
		tb.Fatal(err)
	}
	key := randomHex(24)
	cfg, err := benchGatewayConfig(key, filepath.Join(tb.TempDir(), "toolgate.db"), []config.Upstream{echoUpstream(echoURL)})
	if err != nil {
		tb.Fatal(err)
	}
	if edit != nil {
		edit(cfg)
	}
	gw, err := gateway.New(ctx, cfg, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { gw.Close(context.Background()) })
	if err := gw.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	hc := benchHTTPClient(16)
	tb.Cleanup(hc.CloseIdleConnections)
	gwURL := "http://" + gw.Addr() + cfg.Endpoints[0].Path
	if err := waitForTools(ctx, hc, gwURL, key, 1, ready); err != nil {
		tb.Fatal(err)
	}
	return echoGateway{ctx: ctx, hc: hc, echoURL: echoURL, url: gwURL, key: key, gw: gw}
}
