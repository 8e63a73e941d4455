package upstreams

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/tui/common"
)

// trafficMinutes is how far back an upstream's traffic is shown.
const trafficMinutes = 15

// samplesPerMinute bounds the latencies kept per minute for p50/p95.
const samplesPerMinute = 512

// minute is one minute of calls that reached an upstream.
type minute struct {
	start  time.Time
	calls  int
	errors int
	lat    []time.Duration
}

// traffic is one upstream's last trafficMinutes minutes, oldest first.
type traffic struct {
	minutes []minute
}

// reached: the call went to the upstream (whatever came back); previews,
// refusals and denials never left the gateway.
func reached(outcome string) (counted, failed bool) {
	switch outcome {
	case "ok":
		return true, false
	case "error", "outcome-unknown":
		return true, true
	}
	return false, false
}

// Observe counts a finished call towards its upstream's traffic (the
// call's source); other events are ignored.
func (m *Model) Observe(ev core.Event) {
	if m.conns.Observe(ev) {
		m.SetUpstreams(m.ups) // the OAUTH column and the detail count them
		return
	}
	d, ok := ev.Data.(core.CallFinished)
	if !ok || d.Record.Source == "" {
		return
	}
	counted, failed := reached(d.Record.Outcome)
	if !counted {
		return
	}
	at := d.Record.Time
	if at.IsZero() {
		at = ev.Time
	}
	if m.traffic == nil {
		m.traffic = map[string]*traffic{}
	}
	t := m.traffic[d.Record.Source]
	if t == nil {
		t = &traffic{}
		m.traffic[d.Record.Source] = t
	}
	start := at.Truncate(time.Minute)
	// Records arrive nearly in order; a late one counts in its own minute.
	i, found := slices.BinarySearchFunc(t.minutes, start, func(x minute, s time.Time) int { return x.start.Compare(s) })
	if !found {
		if n := len(t.minutes); n > 0 && !start.After(t.minutes[n-1].start.Add(-trafficMinutes*time.Minute)) {
			return // older than the window
		}
		t.minutes = slices.Insert(t.minutes, i, minute{start: start})
	}
	mi := &t.minutes[i]
	mi.calls++
	if failed {
		mi.errors++
	}
	if len(mi.lat) < samplesPerMinute {
		mi.lat = append(mi.lat, d.Record.Latency)
	}
	if m.mode == modeDetail && m.detail == d.Record.Source {
		defer m.refreshView()
	}
	if cut := t.minutes[len(t.minutes)-1].start.Add(-trafficMinutes * time.Minute); !t.minutes[0].start.After(cut) {
		t.minutes = slices.DeleteFunc(t.minutes, func(x minute) bool { return !x.start.After(cut) })
	}
}

// trafficLines renders name's traffic over the last trafficMinutes
// minutes up to now: calls per minute with a sparkline, the error rate and
// the p50/p95 latency. Plain characters, readable without colour.
func (m *Model) trafficLines(name string, now time.Time, line func(label, value string) string) []string {
	th := m.c.Theme
	t := m.traffic[name]
	end := now.Truncate(time.Minute)
	per := make([]int, trafficMinutes)
	calls, errs := 0, 0
	var lat []time.Duration
	if t != nil {
		for _, mi := range t.minutes {
			ago := int(end.Sub(mi.start) / time.Minute)
			if ago < 0 || ago >= trafficMinutes {
				continue
			}
			per[trafficMinutes-1-ago] = mi.calls
			calls += mi.calls
			errs += mi.errors
			lat = append(lat, mi.lat...)
		}
	}
	if calls == 0 {
		return []string{line("traffic", th.Muted.Render(fmt.Sprintf("no calls in the last %d min", trafficMinutes)))}
	}
	slices.Sort(lat)
	rate := float64(calls) / trafficMinutes
	return []string{
		line("calls/min", fmt.Sprintf("%-6s %s", fmt.Sprintf("%.1f", rate), sparkline(per))+th.Muted.Render(fmt.Sprintf("  last %d min", trafficMinutes))),
		line("errors", fmt.Sprintf("%.1f%% (%d of %d)", 100*float64(errs)/float64(calls), errs, calls)),
		line("latency", "p50 "+common.Duration(quantile(lat, 0.50))+" · p95 "+common.Duration(quantile(lat, 0.95))),
	}
}

// sparkline draws v as one row of block characters, the highest value a
// full block; zero is the lowest block, so the row keeps its width.
func sparkline(v []int) string {
	const blocks = "▁▂▃▄▅▆▇█"
	runes := []rune(blocks)
	top := slices.Max(v)
	var b strings.Builder
	for _, x := range v {
		i := 0
		if top > 0 && x > 0 {
			i = 1 + (x*(len(runes)-2)+top-1)/top
			i = min(i, len(runes)-1)
		}
		b.WriteRune(runes[i])
	}
	return b.String()
}

// quantile is the q-quantile of the sorted sample s (nearest rank).
func quantile(s []time.Duration, q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}
