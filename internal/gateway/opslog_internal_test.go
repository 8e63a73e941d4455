package gateway

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/core"
)

// gatedWriter holds every write until open is closed; started is closed
// when the first write is waiting.
type gatedWriter struct {
	started chan struct{}
	open    chan struct{}
	once    sync.Once

	mu sync.Mutex
	b  bytes.Buffer
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.started) })
	<-w.open
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *gatedWriter) lines(msg string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, l := range strings.Split(w.b.String(), "\n") {
		if strings.Contains(l, "msg="+msg) || strings.Contains(l, `msg="`+msg) {
			out = append(out, l)
		}
	}
	return out
}

func newGated() *gatedWriter {
	return &gatedWriter{started: make(chan struct{}), open: make(chan struct{})}
}

var (
	collA = core.Collision{Name: "x_t", Kept: core.Claimant{Source: "x", RemoteName: "t"}, Refused: core.Claimant{Source: "y", RemoteName: "t"}}
	dropA = core.Drop{Source: "x", RemoteName: "a", Kind: core.DropSchema, Reason: "broken"}
	dropB = core.Drop{Source: "x", RemoteName: "b", Kind: core.DropPattern, Reason: "nested quantifiers"}
)

// IM-13, IM-26: a collision a refresh forgets and records again is not
// logged again; one that went away and comes back is.
func TestOpsLogCollisionOnceUntilGone(t *testing.T) {
	w := newGated()
	close(w.open)
	bus := core.NewBus()
	l := startOpsLog(slog.New(slog.NewTextHandler(w, nil)), bus, 0)
	applied := func(src string) { bus.Publish(core.RefreshApplied{Diff: core.Diff{Upstream: src}}) }

	bus.Publish(core.CollisionRecorded{Collision: collA})
	applied("x")
	applied("y")
	// A refresh of x: forgotten, x re-registers, its diff, and y is
	// refused again when freed names are offered after it.
	bus.Publish(core.CollisionsForgotten{Source: "x"})
	applied("x")
	bus.Publish(core.CollisionRecorded{Collision: collA})
	// A refresh of y: forgotten and refused again before its diff.
	bus.Publish(core.CollisionsForgotten{Source: "y"})
	bus.Publish(core.CollisionRecorded{Collision: collA})
	applied("y")
	// x drops the tool: forgotten and not recorded again ...
	bus.Publish(core.CollisionsForgotten{Source: "x"})
	applied("x")
	applied("y")
	// ... and brings it back later: a new collision.
	bus.Publish(core.CollisionRecorded{Collision: collA})
	applied("x")
	l.close()
	if got := w.lines("tool name collision"); len(got) != 2 {
		t.Fatalf("%d collision records, want 2 (first, and after it was gone):\n%s", len(got), strings.Join(got, "\n"))
	}
}

// OP-7: a logger that falls behind the bus resyncs from the snapshot and
// still logs each drop and collision it had not logged, once, and says it
// fell behind.
func TestOpsLogResyncLogsWhatItMissed(t *testing.T) {
	w := newGated()
	bus := core.NewBus()
	var mu sync.Mutex
	var drops []core.Drop
	var colls []core.Collision
	bus.AddSnapshotPart(func(s *core.Snapshot) {
		mu.Lock()
		defer mu.Unlock()
		s.Dropped = append(s.Dropped, drops...)
		s.Collisions = append(s.Collisions, colls...)
	})
	l := startOpsLog(slog.New(slog.NewTextHandler(w, nil)), bus, 2)

	mu.Lock()
	drops = []core.Drop{dropA}
	mu.Unlock()
	bus.Publish(core.ToolsDropped{Source: "x", Drops: []core.Drop{dropA}})
	<-w.started // the logger is stuck writing dropA's record
	for range 10 {
		bus.Publish(core.ToolRegistered{})
	}
	// Behind by now: these events are lost to it, the snapshot has them.
	mu.Lock()
	drops = []core.Drop{dropA, dropB}
	colls = []core.Collision{collA}
	mu.Unlock()
	bus.Publish(core.ToolsDropped{Source: "x", Drops: []core.Drop{dropA, dropB}})
	bus.Publish(core.CollisionRecorded{Collision: collA})
	close(w.open)
	l.close()
	if got := w.lines("tool dropped"); len(got) != 2 || !strings.Contains(got[0], "tool=a") || !strings.Contains(got[1], "tool=b") {
		t.Errorf("drop records:\n%s", strings.Join(got, "\n"))
	}
	if got := w.lines("tool name collision"); len(got) != 1 {
		t.Errorf("collision records:\n%s", strings.Join(got, "\n"))
	}
	if got := w.lines("the operator log fell behind"); len(got) != 1 {
		t.Errorf("no record that the log fell behind:\n%s", w.b.String())
	}
}

// IM-18, IM-26: a drop is logged when a listing first has it, not on every
// listing that still has it; one that went away and is back is new again.
func TestOpsLogDropOncePerAppearance(t *testing.T) {
	w := newGated()
	close(w.open)
	bus := core.NewBus()
	l := startOpsLog(slog.New(slog.NewTextHandler(w, nil)), bus, 0)
	for _, drops := range [][]core.Drop{{dropA}, {dropA}, {dropA, dropB}, {dropB}, {dropA, dropB}} {
		bus.Publish(core.ToolsDropped{Source: "x", Drops: drops})
	}
	l.close()
	got := w.lines("tool dropped")
	var tools []string
	for _, g := range got {
		tools = append(tools, g[strings.Index(g, "tool="):][:6])
	}
	if strings.Join(tools, " ") != "tool=a tool=b tool=a" {
		t.Fatalf("drop records:\n%s", strings.Join(got, "\n"))
	}
}

// IM-37, OP-7: a headless gateway logs an upstream lost while connected and
// the same upstream coming back, once each; a failure at start-up (serve's
// own record) and the retries in between write nothing more.
func TestOperatorLogUpstreamLostAndBack(t *testing.T) {
	var out bytes.Buffer
	bus := core.NewBus()
	l := startOpsLog(slog.New(slog.NewJSONHandler(&out, nil)), bus, 64)
	for _, st := range []core.ConnState{
		core.StateConnecting, core.StateFailed, // down at start-up: not "lost"
		core.StateConnecting, core.StateConnected, // back
		core.StateConnected,
		core.StateFailed, core.StateConnecting, core.StateFailed, // lost, retried
		core.StateConnecting, core.StateConnected, // back again
	} {
		bus.Publish(core.UpstreamChanged{Status: core.UpstreamStatus{Name: "up", State: st, LastError: "connection refused"}})
	}
	l.close()
	logs := out.String()
	if n := strings.Count(logs, `"msg":"upstream lost"`); n != 1 {
		t.Errorf("%d \"upstream lost\" records, want 1:\n%s", n, logs)
	}
	if n := strings.Count(logs, `"msg":"upstream back"`); n != 2 {
		t.Errorf("%d \"upstream back\" records, want 2:\n%s", n, logs)
	}
}
