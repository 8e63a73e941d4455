package gateway_test

import (
	"net"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/eventbustest"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/mcp/demo"
)

// IM-37: an upstream that is down when the gateway starts and comes up
// later is imported in the background, with no operator action, and a live
// client session hears of its tools through list_changed, within the
// upstream's backoff bound.
func TestUpstreamUpLaterIsServedIM37(t *testing.T) {
	ctx := testCtx(t)
	down := closedURL(t, "/mcp")
	const (
		maxDelay = time.Second
		opTime   = 5 * time.Second // the upstream's timeout, per connect and list
	)
	late := "  - name: late\n    url: " + down + "\n    transport: http\n    timeout: 5s\n" +
		"    reconnect: {initialDelay: 200ms, maxDelay: 1s}\n"
	cfg := loadConfig(t, gatewayYAML(filepath.Join(t.TempDir(), "toolgate.db"), late))
	g := newGateway(t, cfg, &gateway.Options{NoListen: true})
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

	u, err := url.Parse(down)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Fatalf("the upstream's port was taken meanwhile: %v", err)
	}
	up := time.Now()
	serveDemoOn(t, "echo", demo.Options{}, ln)
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
