package gateway_test

import (
	"net"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/eventbustest"
	"github.com/toolgate/toolgate/mcp/demo"
)

// IM-37: an upstream that is down when the gateway starts and comes up
// later is imported in the background, with no operator action, and a live
// client session hears of its tools through list_changed, within the
// upstream's backoff bound.
func TestUpstreamUpLaterIsServedIM37(t *testing.T) {
	ctx := testCtx(t)
	// The upstream's port is held for the whole test, so nothing else can
	// take it: until the upstream comes up, every connection is closed
	// as it is accepted.
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gate := &downListener{Listener: inner}
	down := serveDemoOn(t, "echo", demo.Options{}, gate)
	const (
		maxDelay = time.Second
		opTime   = 5 * time.Second // the upstream's timeout, per connect and list
	)
	late := "  - name: late\n    url: " + down + "\n    transport: http\n    timeout: 5s\n" +
		"    reconnect: {initialDelay: 200ms, maxDelay: 1s}\n"
	cfg := loadConfig(t, gatewayYAML(filepath.Join(t.TempDir(), "toolgate.db"), late))
	g := newHandlerGateway(t, cfg, nil)
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	_, sub := g.Registry().Bus().Subscribe(0)
	defer sub.Close()
	if err := g.Start(ctx); err != nil {
		t.Fatalf("Start with an optional upstream down: %v", err)
	}
	eventbustest.Expect(t, sub, func(e core.UpstreamChanged) bool {
		return e.Status.State == core.StateFailed && !e.Status.NextAttempt.IsZero()
	})
	s := connect(t, ctx, srv.URL+"/mcp", testKey)
	if names := toolNames(t, ctx, s); slices.Contains(names, "late_echo") {
		t.Fatalf("late_echo served before its upstream is up: %q", names)
	}

	up := time.Now()
	gate.up.Store(true)
	waitServed(t, ctx, s, []string{"late_echo"}, nil)
	if took := time.Since(up); took > maxDelay+2*opTime {
		t.Errorf("served %v after the upstream came up, want within %v (the backoff cap, then a connect and a list)", took, maxDelay+2*opTime)
	} else {
		t.Logf("served %v after the upstream came up", took)
	}
	if res := call(t, ctx, s, "late_echo", map[string]any{"message": "back"}); resultText(res) != "back" {
		t.Errorf("late_echo: %q", resultText(res))
	}
	if st := g.Importer().Statuses()[0]; st.State != core.StateConnected || st.Tools == 0 || !st.NextAttempt.IsZero() {
		t.Errorf("status once served: %+v", st)
	}
}

// downListener closes every connection it accepts until up is set, as a
// server that is not there yet would refuse it; then it hands them on.
type downListener struct {
	net.Listener
	up atomic.Bool
}

func (l *downListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.up.Load() {
			return c, err
		}
		_ = c.Close()
	}
}
