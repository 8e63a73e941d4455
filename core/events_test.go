package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A subscription starts from the current state and then receives every
// later change, in order (STYLE §service 6).
func TestSubscribeSnapshotThenEvents(t *testing.T) {
	r := NewRegistry(nil)
	must(t, r.Register(nativeTool("before")))

	snap, sub := r.Bus().Subscribe(0)
	defer sub.Close()
	if len(snap.Tools) != 1 || snap.Tools[0].Name != "before" {
		t.Fatalf("snapshot tools: %+v", snap.Tools)
	}

	must(t, r.Register(nativeTool("after")))
	clash := importedTool("x", "y")
	clash.Name = "after"
	_ = r.Register(clash)
	must(t, r.Unregister("", "before"))

	var got []string
	var seqs []uint64
	for range 3 {
		ev := <-sub.C()
		got = append(got, ev.Data.EventName())
		seqs = append(seqs, ev.Seq)
	}
	if diff := cmp.Diff([]string{"tool.registered", "tool.collision", "tool.unregistered"}, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	for i, s := range seqs {
		if s != snap.Seq+uint64(i)+1 {
			t.Fatalf("seqs %v do not follow snapshot seq %d", seqs, snap.Seq)
		}
	}
}

// A slow subscriber never blocks the publisher: it gets one Resync, nothing
// more until it resyncs, and the fresh snapshot holds everything it missed.
func TestSlowSubscriberGetsResync(t *testing.T) {
	r := NewRegistry(nil)
	_, slow := r.Bus().Subscribe(2)
	defer slow.Close()
	_, fast := r.Bus().Subscribe(100)
	defer fast.Close()

	for _, n := range []string{"a", "b", "c", "d", "e"} {
		must(t, r.Register(nativeTool(n))) // would deadlock here if publishing blocked
	}

	var names []string
	for range 3 {
		names = append(names, (<-slow.C()).Data.EventName())
	}
	if diff := cmp.Diff([]string{"tool.registered", "tool.registered", "resync"}, names); diff != "" {
		t.Fatalf("slow subscriber (-want +got):\n%s", diff)
	}
	select {
	case ev := <-slow.C():
		t.Fatalf("delivered %s after Resync before resyncing", ev.Data.EventName())
	default:
	}
	if d := slow.Dropped(); d != 3 {
		t.Fatalf("dropped = %d, want 3", d)
	}
	snap := slow.Resync()
	if len(snap.Tools) != 5 {
		t.Fatalf("resync snapshot has %d tools, want 5", len(snap.Tools))
	}
	must(t, r.Register(nativeTool("f")))
	ev := <-slow.C()
	if ev.Data.EventName() != "tool.registered" || ev.Seq != snap.Seq+1 {
		t.Fatalf("after resync got %s seq %d (snapshot %d)", ev.Data.EventName(), ev.Seq, snap.Seq)
	}
	if len(fast.C()) != 6 {
		t.Fatalf("fast subscriber has %d events, want 6", len(fast.C()))
	}
}

func TestBusClose(t *testing.T) {
	b := NewBus()
	_, sub := b.Subscribe(1)
	b.Close()
	if _, ok := <-sub.C(); ok {
		t.Fatal("channel still open after bus close")
	}
	sub.Close() // no double close panic
	b.Publish(Resync{})
	_, late := b.Subscribe(1)
	if _, ok := <-late.C(); ok {
		t.Fatal("subscription on a closed bus is open")
	}
}
