package admin

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/eventbustest"
)

// The client against the real server of this package (not the fake):
// what one sends, the other reads.

// busBackend is the least of a gateway a Server needs for its event
// stream: a bus.
type busBackend struct{ bus *core.Bus }

type busConsole struct {
	core.Console // nil: only Subscribe is called here
	bus          *core.Bus
}

type streamBusSub struct{ *core.BusSubscription }

func (s streamBusSub) Resync(context.Context) (core.Snapshot, error) {
	return s.BusSubscription.Resync(), nil
}

func (c busConsole) Subscribe(context.Context) (core.Snapshot, core.Subscription, error) {
	snap, sub := c.bus.Subscribe(0)
	return snap, streamBusSub{sub}, nil
}

func (b busBackend) ConsoleAs(string) core.Console             { return busConsole{bus: b.bus} }
func (b busBackend) Snapshot() core.Snapshot                   { return b.bus.Snapshot() }
func (b busBackend) Confirmations() []core.PendingConfirmation { return nil }
func (b busBackend) Sessions() []core.Session                  { return nil }
func (b busBackend) Audit(context.Context, core.AuditQuery) ([]core.AuditRecord, error) {
	return nil, errors.New("no audit here")
}

// CO-9: A quiet stream of a live server stays open, however long: heartbeats
// keep it, and neither side's deadlines end it. Then the server closes:
// the loss shows at once.
func TestRemoteOverRealServerStaysOpen(t *testing.T) {
	if testing.Short() {
		t.Skip("watches a quiet stream for 35 s")
	}
	t.Parallel() // the package's TestMain checks for leaks at the end
	bus := core.NewBus()
	srv, err := NewServer(Options{Backend: busBackend{bus}, Keys: []Key{{Key: fakeKey, Operator: "alice"}}, HeartbeatInterval: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	c, err := NewClient(hs.URL, fakeKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	o := fastOpts
	o.Idle = 2 * time.Second
	_, sub, err := NewRemoteConsole(c, &o).Subscribe(bg(t))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	bus.Publish(core.OperatorAction{Operator: "bob", Action: core.ActionEndSession, Target: "s1"})
	eventbustest.ExpectExactly(t, sub, func(a core.OperatorAction) bool { return a.Operator == "bob" && a.Target == "s1" })

	// Longer than any deadline either side sets on a request (30 s).
	quiet := time.NewTimer(35 * time.Second)
	defer quiet.Stop()
	select {
	case ev := <-sub.C():
		t.Fatalf("a live server's quiet stream delivered %T %+v", ev.Data, ev.Data)
	case <-quiet.C:
	}
	bus.Publish(core.Warning{Message: "still here"})
	eventbustest.ExpectExactly(t, sub, func(w core.Warning) bool { return w.Message == "still here" })

	srv.Close()
	hs.CloseClientConnections()
	eventbustest.Expect(t, sub, eventbustest.Type[core.ConnectionLost]())
}
