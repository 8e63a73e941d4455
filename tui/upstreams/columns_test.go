package upstreams

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/tui/common"
	"github.com/toolgate/toolgate/tui/keys"
	"github.com/toolgate/toolgate/tui/theme"
)

func titles(cols []listColumn) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.col.Title
	}
	return out
}

// CO-1, CO-8: the list keeps what fits. At every width the fixed columns
// leave LAST ERROR its room unless only NAME, STATE and LAST ERROR are
// left; a column shown at one width is shown at every wider one; columns
// give way in the order listColumns' comment documents; at 100 columns the
// traffic columns and the sparkline are there, at 80 the numbers are.
func TestFitColumns(t *testing.T) {
	for _, oauth := range []bool{false, true} {
		var gaveWay []string
		prev := fitColumns(240, oauth)
		for w := 239; w >= 0; w-- {
			cols := fitColumns(w, oauth)
			used := 2
			for _, c := range cols {
				if !c.col.Flex {
					used += c.col.Width + 1
				}
			}
			if used+minLastError > w && slices.ContainsFunc(cols, func(c listColumn) bool { return c.rank > 0 }) {
				t.Errorf("oauth %v, width %d: %v take %d cells, leaving LAST ERROR less than %d", oauth, w, titles(cols), used, minLastError)
			}
			for _, c := range prev {
				if !slices.ContainsFunc(cols, func(x listColumn) bool { return x.id == c.id }) {
					gaveWay = append(gaveWay, c.col.Title)
				}
			}
			for _, c := range cols {
				if !slices.ContainsFunc(prev, func(x listColumn) bool { return x.id == c.id }) {
					t.Errorf("oauth %v: %s is back at width %d after giving way at %d", oauth, c.col.Title, w, w+1)
				}
			}
			prev = cols
		}
		want := []string{"SERVER", "TRANSPORT", "LATENCY", "TREND", "P95", "OAUTH", "ERRORS", "CALLS/MIN", "TOOLS"}
		if !oauth {
			want = slices.DeleteFunc(want, func(s string) bool { return s == "OAUTH" })
		}
		if d := cmp.Diff(want, gaveWay); d != "" {
			t.Errorf("oauth %v: the order columns give way in (-documented +got):\n%s", oauth, d)
		}
		if got := titles(prev); !cmp.Equal(got, []string{"NAME", "STATE", "LAST ERROR"}) {
			t.Errorf("oauth %v: at width 0 the list keeps %v", oauth, got)
		}
	}
	for _, tc := range []struct {
		width int
		oauth bool
		want  []string
	}{
		{140, false, []string{"NAME", "TRANSPORT", "STATE", "TOOLS", "CALLS/MIN", "TREND", "ERRORS", "P95", "LATENCY", "SERVER", "LAST ERROR"}},
		{140, true, []string{"NAME", "TRANSPORT", "STATE", "TOOLS", "CALLS/MIN", "TREND", "ERRORS", "P95", "LATENCY", "SERVER", "OAUTH", "LAST ERROR"}},
		{100, false, []string{"NAME", "STATE", "TOOLS", "CALLS/MIN", "TREND", "ERRORS", "P95", "LATENCY", "LAST ERROR"}},
		{100, true, []string{"NAME", "STATE", "TOOLS", "CALLS/MIN", "TREND", "ERRORS", "P95", "OAUTH", "LAST ERROR"}},
		{80, false, []string{"NAME", "STATE", "TOOLS", "CALLS/MIN", "ERRORS", "P95", "LAST ERROR"}},
		{80, true, []string{"NAME", "STATE", "TOOLS", "CALLS/MIN", "ERRORS", "OAUTH", "LAST ERROR"}},
	} {
		if got := titles(fitColumns(tc.width, tc.oauth)); !cmp.Equal(got, tc.want) {
			t.Errorf("width %d, oauth %v (-want +got):\n%s", tc.width, tc.oauth, cmp.Diff(tc.want, got))
		}
	}
}

// BenchmarkObserve is the cost of one finished call reaching the pane
// (counting it and redrawing the list's cells) with 8 upstreams, the one
// called holding a full window of latencies (15 minutes of 512).
func BenchmarkObserve(b *testing.B) {
	now := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	c := &common.Common{Ctx: context.Background(), Theme: theme.New(), Keys: keys.Default(), Now: func() time.Time { return now }}
	m := New(c)
	m.SetSize(140, 30)
	ups := make([]core.UpstreamStatus, 8)
	for i := range ups {
		ups[i] = core.UpstreamStatus{Name: fmt.Sprintf("up%d", i), Transport: "stdio", State: core.StateConnected, Tools: 3}
	}
	m.SetUpstreams(ups)
	call := func(at time.Time, lat time.Duration) core.Event {
		return core.Event{Time: at, Data: core.CallFinished{Record: core.AuditRecord{Time: at, Source: "up0", Outcome: "ok", Latency: lat}}}
	}
	for mi := range trafficMinutes {
		for i := range samplesPerMinute {
			m.Observe(call(now.Add(-time.Duration(mi)*time.Minute), time.Duration(i)*time.Microsecond))
		}
	}
	ev := call(now, time.Millisecond)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m.Observe(ev)
	}
}

// kth over sorted lists agrees with sorting their union, for every rank,
// duplicates and empty lists included. (CO-1)
func TestKth(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		lists := make([][]time.Duration, r.IntN(16))
		var all []time.Duration
		for i := range lists {
			for range r.IntN(40) {
				v := time.Duration(r.IntN(50)) * time.Millisecond // duplicates on purpose
				lists[i] = append(lists[i], v)
				all = append(all, v)
			}
			slices.Sort(lists[i])
		}
		slices.Sort(all)
		for k := range all {
			if got := kth(lists, k); got != all[k] {
				t.Fatalf("trial %d: kth(%d) = %v, want %v", trial, k, got, all[k])
			}
		}
		if got := kth(lists, rank(len(all), 0.95)); len(all) == 0 && got != 0 {
			t.Fatalf("trial %d: p95 of nothing = %v", trial, got)
		}
	}
}

// The pane needs the console's tick while a call is in the traffic window
// (its columns age by the minute), and no longer once none is: the last
// tick redraws the list without it. (CO-1)
func TestCountingFollowsTrafficWindow(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	now := t0
	c := &common.Common{Ctx: context.Background(), Theme: theme.New(), Keys: keys.Default(), Now: func() time.Time { return now }}
	m := New(c)
	m.SetSize(100, 20)
	m.SetUpstreams([]core.UpstreamStatus{{Name: "weather", Transport: "stdio", State: core.StateConnected, Tools: 1}})
	if m.Counting() {
		t.Fatal("counting without calls or countdowns")
	}
	m.Observe(core.Event{Time: t0, Data: core.CallFinished{Record: core.AuditRecord{Time: t0, Source: "weather", Outcome: "ok", Latency: time.Millisecond}}})
	for _, tc := range []struct {
		after    time.Duration
		counting bool
		calls    string
	}{{0, true, "0.1"}, {14 * time.Minute, true, "0.1"}, {15 * time.Minute, false, "0.0"}} {
		now = t0.Add(tc.after)
		m.Tick()
		if m.Counting() != tc.counting {
			t.Errorf("%v after the call: counting %v, want %v", tc.after, m.Counting(), tc.counting)
		}
		if r, _ := m.table.Selected(); r.Cells[3].Text != tc.calls {
			t.Errorf("%v after the call: CALLS/MIN %q, want %q", tc.after, r.Cells[3].Text, tc.calls)
		}
	}
}
