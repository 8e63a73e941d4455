package bench

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/gateway"
)

// BenchmarkGatewayToolsCall is one tools/call of the HTTP echo, in one
// process: directly, and through the gateway as serve assembles it (API
// key, role policy, validation, review pin, audit into SQLite). The
// difference of the two is the gateway's share (QB-2); allocs/op are
// deterministic where the machine's timings are not.
func BenchmarkGatewayToolsCall(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	echoURL, err := serveEcho(ctx, &wg, nil)
	if err != nil {
		b.Fatal(err)
	}

	key := randomHex(24)
	cfg, err := benchGatewayConfig(key, filepath.Join(b.TempDir(), "toolgate.db"), []config.Upstream{echoUpstream(echoURL)})
	if err != nil {
		b.Fatal(err)
	}
	gw, err := gateway.New(ctx, cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer gw.Close(context.Background())
	if err := gw.Start(ctx); err != nil {
		b.Fatal(err)
	}
	hc := benchHTTPClient(16)
	defer hc.CloseIdleConnections()
	gwURL := "http://" + gw.Addr() + cfg.Endpoints[0].Path
	if err := waitForTools(ctx, hc, gwURL, key, 1, 0x7fffffff); err != nil {
		b.Fatal(err)
	}
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
