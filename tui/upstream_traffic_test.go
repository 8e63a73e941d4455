package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/core"
)

// weatherTraffic is what TestUpstreamTraffic feeds the console and the
// golden files show: weather's calls in the window, 20 this minute (one
// failed) and 10 three minutes ago, latencies 1..30 ms, so 2.0 calls/min,
// 3.3% errors, p95 29ms; plus calls that must not count (a preview, a
// denial, one older than the window).
func weatherTraffic() []tea.Msg {
	var out []tea.Msg
	seq := uint64(10)
	finish := func(at time.Time, outcome string, latency time.Duration) {
		seq++
		out = append(out, eventMsg(core.Event{Seq: seq, Time: at, Data: core.CallFinished{Record: core.AuditRecord{
			Time: at, ActorID: "demo", Tool: "weather_forecast", Source: "weather", Outcome: outcome, Latency: latency,
		}}}))
	}
	for i := range 20 {
		outcome := "ok"
		if i == 0 {
			outcome = "error"
		}
		finish(t0.Add(-time.Duration(i)*time.Second), outcome, time.Duration(i+1)*time.Millisecond)
	}
	for i := range 10 {
		finish(t0.Add(-3*time.Minute), "ok", time.Duration(21+i)*time.Millisecond)
	}
	finish(t0, "preview", time.Hour)
	finish(t0, "denied", time.Hour)
	finish(t0.Add(-20*time.Minute), "ok", time.Hour)
	return out
}

// CO-1, OP-9: an upstream's detail shows its traffic of the last 15
// minutes from the calls the console saw: calls per minute with a
// sparkline, the error rate and p50/p95 latency. Calls that never reached
// the upstream (previews, denials) do not count, nor do calls older than
// the window, and the open detail follows new calls. Plain characters:
// readable at 80×24 without colour.
func TestUpstreamTraffic(t *testing.T) {
	f := newFake()
	m := ready(t, f, 80, 24)
	for _, msg := range weatherTraffic() {
		m.Update(msg)
	}
	finish := func(at time.Time, outcome string, latency time.Duration) {
		m.Update(eventMsg(core.Event{Seq: 99, Time: at, Data: core.CallFinished{Record: core.AuditRecord{
			Time: at, ActorID: "demo", Tool: "weather_forecast", Source: "weather", Outcome: outcome, Latency: latency,
		}}}))
	}

	press(t, m, "1", "j", "enter") // weather
	view := m.View()
	for _, want := range []string{
		"Upstream weather",
		"calls/min    2.0    ▁▁▁▁▁▁▁▁▁▁▁▅▁▁█",
		"errors       3.3% (1 of 30)",
		"latency      p50 15ms · p95 29ms",
	} {
		if !strings.Contains(view, want) {
			t.Errorf("the detail lacks %q:\n%s", want, view)
		}
	}
	checkSize(t, view, 80, 24)
	// The open detail follows new calls.
	finish(t0, "error", time.Millisecond)
	if view := m.View(); !strings.Contains(view, "errors       6.5% (2 of 31)") {
		t.Errorf("the open detail did not count a new call:\n%s", view)
	}
}

// row is the cells of the list's row of upstream name, split on spaces
// (the state's glyph is a cell of its own).
func row(t *testing.T, view, name string) []string {
	t.Helper()
	for _, l := range lines(view) {
		f := strings.Fields(strings.TrimPrefix(l, "▸"))
		if len(f) > 0 && f[0] == name {
			return f
		}
	}
	t.Fatalf("no row for %s:\n%s", name, view)
	return nil
}

// CO-1: the list shows each upstream's traffic as columns — calls/min, a
// sparkline of the last 10 minutes, error rate and p95 — from the same
// counts as the detail view; at 80 columns the sparkline and the
// columns ranked below it give way, the numbers stay. As minutes pass
// without calls (ticks), the numbers age out of the window.
func TestUpstreamTrafficColumns(t *testing.T) {
	now := t0
	f := newFake()
	m := New(Options{Console: f, Operator: "tester", Now: func() time.Time { return now }})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	snap, sub, _ := f.Subscribe(context.Background())
	t.Cleanup(sub.Close)
	m.Update(subscribedMsg{info: f.info, snap: snap, sub: sub})

	if got, want := row(t, m.View(), "weather"), []string{"weather", "●", "connected", "1", "0.0", "▁▁▁▁▁▁▁▁▁▁", "—", "—", "850µs"}; !cmp.Equal(got, want) {
		t.Errorf("weather before any call:\n%s", cmp.Diff(want, got))
	}
	for _, msg := range weatherTraffic() {
		m.Update(msg)
	}
	view := m.View()
	if got, want := row(t, view, "weather"), []string{"weather", "●", "connected", "1", "2.0", "▁▁▁▁▁▁▅▁▁█", "3.3%", "29ms", "850µs"}; !cmp.Equal(got, want) {
		t.Errorf("weather's traffic in the list at 100 columns (-want +got):\n%s\n%s", cmp.Diff(want, got), view)
	}
	if got, want := row(t, view, "notes"), []string{"notes", "●", "connected", "2", "0.0", "▁▁▁▁▁▁▁▁▁▁", "—", "—", "4ms"}; !cmp.Equal(got, want) {
		t.Errorf("notes, without calls (-want +got):\n%s", cmp.Diff(want, got))
	}
	for _, h := range []string{"CALLS/MIN", "TREND", "ERRORS", "P95", "LATENCY", "LAST ERROR"} {
		if !strings.Contains(view, h) {
			t.Errorf("no %s column at 100 columns:\n%s", h, view)
		}
	}
	checkSize(t, view, 100, 30)

	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	view = m.View()
	if got, want := row(t, view, "weather"), []string{"weather", "●", "connected", "1", "2.0", "3.3%", "29ms"}; !cmp.Equal(got, want) {
		t.Errorf("weather's traffic in the list at 80 columns (-want +got):\n%s\n%s", cmp.Diff(want, got), view)
	}
	for _, gone := range []string{"TREND", "LATENCY", "TRANSPORT", "SERVER"} {
		if strings.Contains(view, gone) {
			t.Errorf("%s did not give way at 80 columns:\n%s", gone, view)
		}
	}
	checkSize(t, view, 80, 24)

	// A new call lands at once; a tick within the minute changes nothing.
	m.Update(eventMsg(core.Event{Seq: 200, Time: now, Data: core.CallFinished{Record: core.AuditRecord{
		Time: now, ActorID: "demo", Tool: "weather_forecast", Source: "weather", Outcome: "error", Latency: 90 * time.Millisecond,
	}}}))
	if got, want := row(t, m.View(), "weather"), []string{"weather", "●", "connected", "1", "2.1", "6.5%", "30ms"}; !cmp.Equal(got, want) {
		t.Errorf("after one more call (-want +got):\n%s", cmp.Diff(want, got))
	}
	// Minutes pass: the calls of this minute leave the window after 15,
	// those of three minutes ago 3 minutes earlier.
	now = t0.Add(12 * time.Minute)
	m.Update(tickMsg(now))
	if got, want := row(t, m.View(), "weather"), []string{"weather", "●", "connected", "1", "1.4", "9.5%", "20ms"}; !cmp.Equal(got, want) {
		t.Errorf("12 minutes later (-want +got):\n%s", cmp.Diff(want, got))
	}
	now = t0.Add(15 * time.Minute)
	m.Update(tickMsg(now))
	if got, want := row(t, m.View(), "weather"), []string{"weather", "●", "connected", "1", "0.0", "—", "—"}; !cmp.Equal(got, want) {
		t.Errorf("15 minutes later (-want +got):\n%s", cmp.Diff(want, got))
	}
}
