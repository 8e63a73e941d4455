package upstream

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"
)

// BenchmarkStdioCall is the gateway's side of one tools/call over stdio, to
// a child that answers each line at once (the wire server): framing the
// request, the pipe both ways, routing the answer to its caller. The
// child's own time is in it; run with -cpuprofile to see the gateway's
// share. sequential is one caller; parallel is GOMAXPROCS×16 callers on
// one connection, as sessions share an upstream.
func BenchmarkStdioCall(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	u, err := New(Options{Name: "wire", Command: exe, Args: []string{wireServerArg}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer u.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := u.Connect(ctx); err != nil {
		b.Fatalf("Connect: %v", err)
	}
	args := json.RawMessage(`{"text":"hello, world","n":42}`)
	// one reports a failed call with Errorf: RunParallel's goroutines
	// must not end the benchmark with Fatal.
	one := func(b *testing.B) bool {
		r, err := u.CallTool(ctx, "echo", args)
		if err != nil || r.IsError {
			b.Errorf("call: %v %s", err, r.JSON)
			return false
		}
		return true
	}
	b.Run("sequential", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !one(b) {
				return
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !one(b) {
					return
				}
			}
		})
	})
}
