package bench

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/gateway"
)

// TestIdleSessionProfile writes heap profiles before and after opening
// idle sessions (SV-2, issue 18), for `go tool pprof -base`, and fails if
// any handshake failed. Only with TOOLGATE_IDLE_PROFILE=dir.
func TestIdleSessionProfile(t *testing.T) {
	dir := os.Getenv("TOOLGATE_IDLE_PROFILE")
	if dir == "" {
		t.Skip("TOOLGATE_IDLE_PROFILE not set")
	}
	runtime.MemProfileRate = 1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	echoURL, err := serveEcho(ctx, &wg, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := randomHex(24)
	cfg, err := benchGatewayConfig(key, filepath.Join(t.TempDir(), "toolgate.db"), []config.Upstream{echoUpstream(echoURL)})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())
	if err := gw.Start(ctx); err != nil {
		t.Fatal(err)
	}
	hc := benchHTTPClient(16)
	defer hc.CloseIdleConnections()
	gwURL := "http://" + gw.Addr() + cfg.Endpoints[0].Path
	if err := waitForTools(ctx, hc, gwURL, key, 1, 1<<40); err != nil {
		t.Fatal(err)
	}
	write := func(name string) {
		runtime.GC()
		runtime.GC()
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			t.Fatal(err)
		}
	}
	var res Result
	measureIdleSessions(ctx, hc, gwURL, key, 50, &res) // warm up
	write("base.pprof")
	measureIdleSessions(ctx, hc, gwURL, key, 2000, &res)
	write("idle.pprof")
	t.Logf("idleSessionBytes %v freshSessionBytes %v", res.IdleSessionBytes, res.FreshSessionBytes)
	if res.IdleSessionErrors != 0 {
		t.Fatalf("%d of the idle sessions failed to open; the profile is of fewer", res.IdleSessionErrors)
	}
}
