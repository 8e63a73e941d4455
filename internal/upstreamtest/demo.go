package upstreamtest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/toolgate/toolgate/mcp/demo"
)

// ServeDemo runs a built-in demo server over Streamable HTTP on loopback.
func ServeDemo(t testing.TB, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- demo.ServeHTTP(ctx, name, demo.Options{}, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("demo server did not stop")
		}
	})
	return "http://" + ln.Addr().String() + "/mcp"
}
