package bench

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"
)

// TestIdleSessionProfile writes heap profiles before and after opening
// idle sessions (SV-2), for `go tool pprof -base`, and fails if
// any handshake failed. Only with TOOLGATE_IDLE_PROFILE=dir.
func TestIdleSessionProfile(t *testing.T) {
	dir := os.Getenv("TOOLGATE_IDLE_PROFILE")
	if dir == "" {
		t.Skip("TOOLGATE_IDLE_PROFILE not set")
	}
	runtime.MemProfileRate = 1
	g := startEchoGateway(t, 1<<40)
	ctx, hc, gwURL, key := g.ctx, g.hc, g.url, g.key
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
