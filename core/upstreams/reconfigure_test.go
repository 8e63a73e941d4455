package upstreams

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/coretest"
	"github.com/toolgate/toolgate/core/eventbustest"
)

// keep is the spec Reconfigure reads as "leave this one running".
func keep(name string) UpstreamSpec { return UpstreamSpec{Name: name} }

// OP-8: a reload adds, removes and replaces upstreams like a refresh: the
// removed one's tools are unregistered and its connection closed, the added
// one is connected and imported, a kept one is left alone, and each change
// is published as a refresh diff.
func TestReconfigureOP8(t *testing.T) {
	reg := core.NewRegistry(nil)
	a := coretest.NewFakeUpstream("a", coretest.FakeTool("x", "X", ""))
	b := coretest.NewFakeUpstream("b", coretest.FakeTool("y", "Y", ""))
	im := newImporter(t, reg, spec("a", a), spec("b", b))
	coretest.Must(t, im.Start(context.Background()))
	_, sub := reg.Bus().Subscribe(0)
	defer sub.Close()

	c := coretest.NewFakeUpstream("c", coretest.FakeTool("z", "Z", ""))
	res, err := im.Reconfigure(context.Background(), []UpstreamSpec{keep("a"), spec("c", c)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a_x", "c_z"}, toolNames(reg)); diff != "" {
		t.Errorf("tools after reload (-want +got):\n%s", diff)
	}
	if !slices.Equal(res.Added, []string{"c"}) || !slices.Equal(res.Removed, []string{"b"}) || len(res.Replaced) != 0 {
		t.Errorf("result: %+v", res)
	}
	if b.Connected() {
		t.Error("the removed upstream is still connected")
	}
	if a.Connects() != 1 {
		t.Errorf("the kept upstream connected %d times, want once", a.Connects())
	}
	eventbustest.Expect(t, sub, func(e core.UpstreamChanged) bool {
		return e.Status.Name == "b" && e.Status.Removed && e.Status.Tools == 0
	})
	eventbustest.Expect(t, sub, func(e core.RefreshApplied) bool {
		return e.Diff.Upstream == "b" && len(e.Diff.Removed) == 1 && e.Diff.Removed[0].Name == "b_y"
	})
	eventbustest.Expect(t, sub, func(e core.RefreshApplied) bool {
		return e.Diff.Upstream == "c" && len(e.Diff.Added) == 1
	})
	var names []string
	for _, st := range im.Statuses() {
		names = append(names, st.Name)
	}
	if !slices.Equal(names, []string{"a", "c"}) {
		t.Errorf("statuses: %v", names)
	}
	if _, err := im.Refresh(context.Background(), "b"); err == nil {
		t.Error("a removed upstream can still be refreshed")
	}
}

// OP-8: a changed upstream is reconnected through its new spec and
// re-imported; the diff is old listing against new (a prefix change renames
// every tool), and calls go to the new connection.
func TestReconfigureReplaceOP8(t *testing.T) {
	reg := core.NewRegistry(nil)
	old := coretest.NewFakeUpstream("a", coretest.FakeTool("x", "X", ""))
	im := newImporter(t, reg, spec("a", old))
	coretest.Must(t, im.Start(context.Background()))

	repl := coretest.NewFakeUpstream("a", coretest.FakeTool("x", "X", ""), coretest.FakeTool("w", "W", ""))
	s := spec("a", repl)
	s.Prefix = "new"
	s.DefaultKind = core.KindRead
	res, err := im.Reconfigure(context.Background(), []UpstreamSpec{s})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Replaced, []string{"a"}) || len(res.Diffs) != 1 {
		t.Fatalf("result: %+v", res)
	}
	d := res.Diffs[0]
	if len(d.Added) != 2 || len(d.Removed) != 1 || d.Removed[0].Name != "a_x" {
		t.Errorf("diff: %+v", d)
	}
	if diff := cmp.Diff([]string{"new_w", "new_x"}, toolNames(reg)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if old.Connected() {
		t.Error("the old connection is still open")
	}
	if _, err := reg.Invoke(context.Background(), core.Actor{ID: "t"}, "new_x", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if repl.Calls("x") != 1 || old.Calls("x") != 0 {
		t.Errorf("calls: new %d, old %d", repl.Calls("x"), old.Calls("x"))
	}
}

// OP-8, IM-37: an added upstream that is down, and a replaced one whose new
// spec does not answer, serve nothing (the replaced one's old tools go with
// its old config), and are imported by the background retry once they
// answer, with no further reload.
func TestReconfigureDownOP8(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := core.NewRegistry(nil)
		a := coretest.NewFakeUpstream("a", coretest.FakeTool("x", "X", ""))
		im := newImporter(t, reg, spec("a", a))
		coretest.Must(t, im.Start(context.Background()))

		repl := coretest.NewFakeUpstream("a", coretest.FakeTool("x2", "X2", ""))
		failConnects(repl, 3)
		late := coretest.NewFakeUpstream("late", coretest.FakeTool("l", "L", ""))
		failConnects(late, 3)
		sa, sl := spec("a", repl), spec("late", late)
		sa.Reconnect = Reconnect{InitialDelay: time.Second, MaxDelay: time.Second}
		sl.Reconnect = sa.Reconnect
		res, err := im.Reconfigure(context.Background(), []UpstreamSpec{sa, sl})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Pending) != 2 {
			t.Fatalf("pending: %v", res.Pending)
		}
		if got := toolNames(reg); len(got) != 0 {
			t.Fatalf("tools while down: %v", got)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if diff := cmp.Diff([]string{"a_x2", "late_l"}, toolNames(reg)); diff != "" {
			t.Errorf("tools after the retry (-want +got):\n%s", diff)
		}
	})
}

// OP-8, IM-22: a name freed by a removed upstream goes to the next upstream
// in configuration order that wanted it, in the same reload.
func TestReconfigureFreedNameOP8(t *testing.T) {
	reg := core.NewRegistry(nil)
	first := coretest.NewFakeUpstream("p", coretest.FakeTool("t", "first", ""))
	second := coretest.NewFakeUpstream("q", coretest.FakeTool("t", "second", ""))
	s1, s2 := spec("p", first), spec("q", second)
	s1.Prefix, s2.Prefix = "", ""
	im := newImporter(t, reg, s1, s2)
	coretest.Must(t, im.Start(context.Background()))
	if tl, _ := reg.Get("t"); tl.Source != "p" {
		t.Fatalf("t held by %q", tl.Source)
	}
	if _, err := im.Reconfigure(context.Background(), []UpstreamSpec{keep("q")}); err != nil {
		t.Fatal(err)
	}
	if tl, ok := reg.Get("t"); !ok || tl.Source != "q" {
		t.Errorf("t after p was removed: %+v %v", tl.Info(), ok)
	}
}

// OP-8: reconfigure refuses a spec list it cannot apply, and changes nothing.
func TestReconfigureRefusesOP8(t *testing.T) {
	reg := core.NewRegistry(nil)
	a := coretest.NewFakeUpstream("a", coretest.FakeTool("x", "X", ""))
	im := newImporter(t, reg, spec("a", a))
	coretest.Must(t, im.Start(context.Background()))
	for _, specs := range [][]UpstreamSpec{
		{keep("nope")},
		{keep("a"), keep("a")},
	} {
		if _, err := im.Reconfigure(context.Background(), specs); err == nil {
			t.Errorf("%v accepted", specs)
		}
	}
	if diff := cmp.Diff([]string{"a_x"}, toolNames(reg)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}
