package bench

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// The policed gateways of the bench serve its call unrefused: their rules
// never match it and their limits count it without refusing; a call the
// rules are written against is refused, so they are really evaluated, and
// the quota is really counted (QB-2, PO-1, PO-3).
func TestPolicedGatewayServesTheBenchCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	echoURL, err := serveEcho(ctx, &wg, nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := benchHTTPClient(2)
	t.Cleanup(hc.CloseIdleConnections)
	key := randomHex(24)
	for _, limits := range []bool{false, true} {
		gw, url, err := startPoliced(ctx, key, t.TempDir(), echoURL, limits)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { gw.Close(context.Background()) })
		if err := waitForTools(ctx, hc, url, key, 1, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		c, err := newHTTPCaller(ctx, hc, url, key, "http_echo")
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if err := c.call(ctx); err != nil {
				t.Fatalf("limits %v: the bench call: %v", limits, err)
			}
		}
		s, err := openSession(ctx, hc, url, key)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := s.Post(ctx, []byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"http_echo","arguments":{"message":"forbidden-7 plan"}}}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		res, rpcErr, err := resp.Result()
		if err != nil || rpcErr != nil || !strings.Contains(string(res), `"isError":true`) || !strings.Contains(string(res), "never matches") {
			t.Fatalf("limits %v: a call rule bench-rule-7 is written against: %s, %v, %v", limits, res, rpcErr, err)
		}
		rep, err := gw.Console().Policies(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if limits && (len(rep.Quotas) != 1 || len(rep.Quotas[0].Top) != 1 || rep.Quotas[0].Top[0].Count != 3) {
			t.Fatalf("the quota's count after three calls: %+v", rep.Quotas)
		}
		if !limits && len(rep.Quotas) != 0 {
			t.Fatalf("a gateway without limits reports quotas: %+v", rep.Quotas)
		}
	}
}
