package upstreams

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/coretest"
)

// stuckConnect is a fake upstream whose Connect waits until its context
// ends, as a server stuck initializing does.
type stuckConnect struct {
	*coretest.FakeUpstream
	entered chan struct{}
}

func (s *stuckConnect) Connect(ctx context.Context) (core.ServerInfo, error) {
	_, _ = s.FakeUpstream.Connect(ctx) // counts the attempt
	_ = s.FakeUpstream.Close()
	close(s.entered)
	<-ctx.Done()
	return core.ServerInfo{}, ctx.Err()
}

// IM-10: Close while an upstream is still initializing cuts the connect
// instead of waiting out its timeout, and nothing connects, retries or is
// imported after it: an upstream that would connect after shutdown began
// is closed, not imported.
func TestCloseCutsAConnectUnderWay(t *testing.T) {
	reg := core.NewRegistry(nil)
	up := &stuckConnect{FakeUpstream: coretest.NewFakeUpstream("slow", coretest.FakeTool("t", "d", `{"type":"object"}`)), entered: make(chan struct{})}
	s := spec("slow", up)
	s.Timeout = time.Hour
	im := NewImporter(reg, []UpstreamSpec{s}, &ImporterOptions{Backoff: noBackoff})
	started := make(chan error, 1)
	go func() { started <- im.Start(context.Background()) }()
	<-up.entered
	closed := make(chan error, 1)
	go func() { closed <- im.Close() }()
	for _, c := range []chan error{closed, started} {
		select {
		case <-c:
		case <-time.After(30 * time.Second):
			t.Fatal("Close or Start still waits on the connect 30 s later")
		}
	}
	if n := up.ConnectAttempts(); n != 1 {
		t.Errorf("%d connect attempts, want the one Close cut", n)
	}
	if up.Connected() || len(toolNames(reg)) != 0 {
		t.Errorf("connected %v, tools %v after Close", up.Connected(), toolNames(reg))
	}
}

// IM-10: after Close a refresh connects nothing.
func TestNoConnectAfterClose(t *testing.T) {
	reg := core.NewRegistry(nil)
	up := coretest.NewFakeUpstream("a", coretest.FakeTool("t", "d", `{"type":"object"}`))
	im := NewImporter(reg, []UpstreamSpec{spec("a", up)}, &ImporterOptions{Backoff: noBackoff, NoBackground: true})
	if err := im.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := im.Close(); err != nil {
		t.Fatal(err)
	}
	attempts := up.ConnectAttempts()
	if _, err := im.Refresh(context.Background(), "a"); !errors.Is(err, ErrClosed) {
		t.Errorf("refresh after Close: %v, want ErrClosed", err)
	}
	if up.ConnectAttempts() != attempts || up.Connected() {
		t.Errorf("a refresh after Close connected the upstream (%d attempts, was %d)", up.ConnectAttempts(), attempts)
	}
}
