package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
)

// CO-1, OP-9: an upstream's detail shows its traffic of the last 15
// minutes from the calls the console saw: calls per minute with a
// sparkline, the error rate and p50/p95 latency. Calls that never reached
// the upstream (previews, denials) do not count, nor do calls older than
// the window, and the open detail follows new calls. Plain characters:
// readable at 80×24 without colour.
func TestUpstreamTraffic(t *testing.T) {
	f := newFake()
	m := ready(t, f, 80, 24)
	seq := uint64(10)
	finish := func(at time.Time, outcome string, latency time.Duration) {
		seq++
		m.Update(eventMsg(core.Event{Seq: seq, Time: at, Data: core.CallFinished{Record: core.AuditRecord{
			Time: at, ActorID: "demo", Tool: "weather_forecast", Source: "weather", Outcome: outcome, Latency: latency,
		}}}))
	}
	// 20 calls this minute (one failed), 10 three minutes ago; latencies
	// 1..30 ms; plus what must not count.
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
