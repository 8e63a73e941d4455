package gateway_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/mcptest"
)

// Short deadlines, so the tests see them pass; margin bounds "on time".
const (
	testReadTimeout  = 300 * time.Millisecond
	testWriteTimeout = 400 * time.Millisecond
	testIdleTimeout  = 500 * time.Millisecond
	testHeartbeat    = 100 * time.Millisecond
	deadlineMargin   = 3 * time.Second
)

// deadlineGateway serves the echo demo with the short deadlines above.
func deadlineGateway(t *testing.T) *gateway.Gateway {
	t.Helper()
	yaml := gatewayYAML(filepath.Join(t.TempDir(), "toolgate.db"), upstreamYAML("echo", serveDemo(t, "echo"), true))
	yaml = strings.Replace(yaml, "gateway:\n", fmt.Sprintf("gateway:\n  readTimeout: %s\n  writeTimeout: %s\n  idleTimeout: %s\n  heartbeatInterval: %s\n",
		testReadTimeout, testWriteTimeout, testIdleTimeout, testHeartbeat), 1)
	g := newGateway(t, loadConfig(t, yaml), nil)
	if err := g.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return g
}

// dial is a raw TCP connection to the gateway, read with a deadline that
// bounds the test.
func dial(t *testing.T, g *gateway.Gateway) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", g.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(deadlineMargin + 2*time.Second))
	return c
}

// closedAfter reads c to its end and says how long after start it closed,
// with what it read. A reset counts as closed: a client still writing into
// a socket the gateway has closed is answered with RST, which may end the
// read before or after the FIN would have.
func closedAfter(t *testing.T, c net.Conn, start time.Time) (time.Duration, string) {
	t.Helper()
	got, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the connection was not closed (read: %v) after %v; read %q", err, time.Since(start), got)
	}
	return time.Since(start), string(got)
}

// SV-9: a body sent slowly, or shorter than its Content-Length, is refused
// with 408 and its connection closed at the body-read deadline (
// both held a goroutine and a descriptor indefinitely).
func TestSlowBodiesAreCutSV9(t *testing.T) {
	g := deadlineGateway(t)
	head := func(length int) string {
		return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", g.Addr(), testKey, length)
	}
	t.Run("lying Content-Length", func(t *testing.T) {
		c := dial(t, g)
		start := time.Now()
		if _, err := io.WriteString(c, head(1000)+`{"jsonrpc":"2.0"`); err != nil {
			t.Fatal(err)
		}
		took, got := closedAfter(t, c, start)
		if !strings.HasPrefix(got, "HTTP/1.1 408") || took < testReadTimeout || took > testReadTimeout+deadlineMargin {
			t.Fatalf("closed after %v with %q, want 408 after about %v", took, got, testReadTimeout)
		}
	})
	t.Run("slow body", func(t *testing.T) {
		c := dial(t, g)
		start := time.Now()
		if _, err := io.WriteString(c, head(1000)); err != nil {
			t.Fatal(err)
		}
		// A byte every 20ms: always something arriving, never the whole
		// body. It stops when the gateway closes the connection.
		go func() {
			for range 1000 {
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		took, got := closedAfter(t, c, start)
		if !strings.HasPrefix(got, "HTTP/1.1 408") || took < testReadTimeout || took > testReadTimeout+deadlineMargin {
			t.Fatalf("closed after %v with %q, want 408 after about %v", took, got, testReadTimeout)
		}
	})
}

// SV-9: an idle keep-alive connection is closed after idleTimeout (issue
// 16: never).
func TestIdleConnectionsAreClosedSV9(t *testing.T) {
	g := deadlineGateway(t)
	c := dial(t, g)
	if _, err := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", g.Addr()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("/healthz: %d (close %v), want 200 on a kept-alive connection", resp.StatusCode, resp.Close)
	}
	idle := time.Now()
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("the idle connection was not closed: %v", err)
	}
	// The server's idle clock starts when it has written the answer, a
	// moment before this side read it: the lower bound only shows the close
	// came from the idle timeout, not at once.
	if took := time.Since(idle); took < testIdleTimeout/2 || took > testIdleTimeout+deadlineMargin {
		t.Fatalf("the idle connection closed after %v, want about %v", took, testIdleTimeout)
	}
}

// SV-9: a GET stream lives well past the write timeout: heartbeats (SSE
// comments) keep it flowing, each write moving the deadline on.
func TestStreamsOutliveWriteTimeoutSV9(t *testing.T) {
	g := deadlineGateway(t)
	ctx := testCtx(t)
	c := mcptest.New("http://"+g.Addr()+"/mcp", &mcptest.Options{Authorization: "Bearer " + testKey})
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	req, err := c.NewRequest(ctx, http.MethodGet, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Bounded: without heartbeats the stream would sit silent.
	hc := &http.Client{Timeout: 3*testWriteTimeout + deadlineMargin}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	start, pings := time.Now(), 0
	for time.Since(start) < 3*testWriteTimeout {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended after %v (%d pings): %v", time.Since(start), pings, err)
		}
		if line == ": ping\n" {
			pings++
		}
	}
	if min := int(3*testWriteTimeout/testHeartbeat) / 2; pings < min {
		t.Fatalf("%d heartbeats in %v, want at least %d", pings, 3*testWriteTimeout, min)
	}
}

// SV-9: a call that runs longer than both the body-read and the write
// timeout still gets its answer: the read deadline ends with the body, the
// write deadline moves on when the answer is written.
func TestLongCallsOutliveDeadlinesSV9(t *testing.T) {
	yaml := gatewayYAML(filepath.Join(t.TempDir(), "toolgate.db"), upstreamYAML("flaky", serveDemo(t, "flaky"), true))
	yaml = strings.Replace(yaml, "gateway:\n", fmt.Sprintf("gateway:\n  readTimeout: %s\n  writeTimeout: %s\n  heartbeatInterval: %s\n",
		testReadTimeout, testWriteTimeout, testHeartbeat), 1)
	g := newGateway(t, loadConfig(t, yaml), nil)
	ctx := testCtx(t)
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c := mcptest.New("http://"+g.Addr()+"/mcp", &mcptest.Options{Authorization: "Bearer " + testKey})
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	stall := 3 * testWriteTimeout
	res, rpcErr, err := c.CallTool(ctx, "flaky_stall", map[string]any{"seconds": stall.Seconds()})
	if err != nil || rpcErr != nil || res.IsError || res.Text() != "done stalling" {
		t.Fatalf("a %v call: %v %v %+v", stall, err, rpcErr, res)
	}
}
