package upstream

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/upstreamtest"
	"github.com/toolgate/toolgate/internal/waittest"
)

// IM-2, IM-34: a modern upstream's resource subscriptions outlive its
// connection: when the server restarts and the upstream connects again,
// the new listen request names them, with list changes.
func TestModernUpstreamSubscriptionsSurviveReconnectHTTP(t *testing.T) {
	leakCheck(t)
	m := newModernHTTP()
	addr, stopServer := serveOn(t, "127.0.0.1:0", m)
	u := connect(t, modernOptions(addr))
	defer u.Close()
	cr := u.(core.CatalogRouter)
	for _, uri := range []string{"test://doc", "test://other"} {
		if err := cr.SubscribeResource(ctxT(t, 5*time.Second), uri); err != nil {
			t.Fatal(err)
		}
	}
	listeningTo(t, m, "test://doc,test://other")

	stopServer()
	m2 := newModernHTTP()
	serveOn(t, addr, m2)
	if _, err := u.Connect(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	listeningTo(t, m2, "test://doc,test://other")
	if err := cr.UnsubscribeResource(ctxT(t, 5*time.Second), "test://other"); err != nil {
		t.Fatal(err)
	}
	listeningTo(t, m2, "test://doc")
	if err := u.Close(); err != nil {
		t.Error(err)
	}
	_, bad := m2.Seen()
	for _, p := range bad {
		t.Error(p)
	}
}

// listeningTo waits until m holds exactly one listen request, naming the
// resources want.
func listeningTo(t *testing.T, m *upstreamtest.ModernHTTP, want string) {
	t.Helper()
	waittest.Succeeds(t, 10*time.Second, "the upstream's listen filter", func() error {
		if _, open := m.Listening(); len(open) != 1 || open[0] != want {
			return fmt.Errorf("open listen requests name %q, want one naming %q", open, want)
		}
		return nil
	})
}

// IM-2, IM-34: a modern stdio child that serves no resource subscriptions
// acknowledges a listen filter without the URI: subscribing fails with an
// error naming it, and list changes are still heard on the request that
// replaced the old one.
func TestModernUpstreamSubscriptionNotEstablishedStdio(t *testing.T) {
	leakCheck(t)
	opts := stdioOptions(t)
	opts.Args = []string{modernStdioServerArg}
	u, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	changed := make(chan struct{}, 16)
	u.(core.ToolsChangedNotifier).OnToolsChanged(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	if _, err := u.Connect(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	err = u.(core.CatalogRouter).SubscribeResource(ctxT(t, 5*time.Second), "test://doc")
	if err == nil || !strings.Contains(err.Error(), "test://doc") || !strings.Contains(err.Error(), "did not establish") {
		t.Errorf("subscribing where the server serves no subscriptions: %v", err)
	}
	if uris := u.(*stdioUpstream).mod.subs.list(); len(uris) != 0 {
		t.Errorf("kept %q for the next connection", uris)
	}
	for len(changed) > 0 {
		<-changed
	}
	if _, err := u.CallTool(ctxT(t, 5*time.Second), "grow", nil); err != nil {
		t.Fatal(err)
	}
	waittest.Recv(t, 10*time.Second, "list_changed on the re-opened listen request", changed)
	r, err := u.CallTool(ctxT(t, 5*time.Second), "problems", nil)
	if err != nil || resultText(t, r) != "initialize refused" {
		t.Errorf("what the child saw: %s %v", r.JSON, err)
	}
}
