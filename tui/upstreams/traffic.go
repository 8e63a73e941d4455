package upstreams

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/tui/common"
)

// trafficMinutes is how far back an upstream's traffic is shown.
const trafficMinutes = 15

// listTrendMinutes is how many minutes the list's sparkline (TREND) shows.
const listTrendMinutes = 10

// samplesPerMinute bounds the latencies kept per minute for p50/p95.
const samplesPerMinute = 512

// minute is one minute of calls that reached an upstream.
type minute struct {
	start  time.Time
	calls  int
	errors int
	lat    []time.Duration // sorted
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
		// Kept sorted, so a summary finds quantiles without sorting the
		// window on every call (kth).
		j, _ := slices.BinarySearch(mi.lat, d.Record.Latency)
		mi.lat = slices.Insert(mi.lat, j, d.Record.Latency)
	}
	if m.mode == modeDetail && m.detail == d.Record.Source {
		defer m.refreshView()
	}
	delete(m.sums, d.Record.Source)
	defer m.setRows()
	if cut := t.minutes[len(t.minutes)-1].start.Add(-trafficMinutes * time.Minute); !t.minutes[0].start.After(cut) {
		t.minutes = slices.DeleteFunc(t.minutes, func(x minute) bool { return !x.start.After(cut) })
	}
}

// trafficSummary is one upstream's traffic over the trafficMinutes
// minutes up to a moment: calls per minute (oldest first), the calls that
// reached it and failed, and the p50/p95 latency.
type trafficSummary struct {
	perMinute     []int
	calls, errors int
	p50, p95      time.Duration
}

// summary counts name's traffic over the last trafficMinutes minutes up to
// now.
func (m *Model) summary(name string, now time.Time) trafficSummary {
	s := trafficSummary{perMinute: make([]int, trafficMinutes)}
	t := m.traffic[name]
	if t == nil {
		return s
	}
	end := now.Truncate(time.Minute)
	lat := make([][]time.Duration, 0, trafficMinutes)
	n := 0
	for _, mi := range t.minutes {
		ago := int(end.Sub(mi.start) / time.Minute)
		if ago < 0 || ago >= trafficMinutes {
			continue
		}
		s.perMinute[trafficMinutes-1-ago] = mi.calls
		s.calls += mi.calls
		s.errors += mi.errors
		lat = append(lat, mi.lat)
		n += len(mi.lat)
	}
	s.p50, s.p95 = kth(lat, rank(n, 0.50)), kth(lat, rank(n, 0.95))
	return s
}

// cachedSummary is summary, kept until a call of name or the next minute.
func (m *Model) cachedSummary(name string, now time.Time) trafficSummary {
	if s, ok := m.sums[name]; ok {
		return s
	}
	s := m.summary(name, now)
	if m.sums == nil {
		m.sums = map[string]trafficSummary{}
	}
	m.sums[name] = s
	return s
}

// rateText is the calls per minute, averaged over the window.
func (s trafficSummary) rateText() string {
	return fmt.Sprintf("%.1f", float64(s.calls)/trafficMinutes)
}

// trend is the sparkline of the last listTrendMinutes minutes.
func (s trafficSummary) trend() string {
	per := make([]int, listTrendMinutes)
	copy(per[max(0, listTrendMinutes-len(s.perMinute)):], s.perMinute[max(0, len(s.perMinute)-listTrendMinutes):])
	return sparkline(per)
}

// errorText is the share of calls that failed; a dash without calls.
func (s trafficSummary) errorText() string {
	if s.calls == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(s.errors)/float64(s.calls))
}

// trafficLines renders name's traffic over the last trafficMinutes
// minutes up to now: calls per minute with a sparkline, the error rate and
// the p50/p95 latency. Plain characters, readable without colour.
func (m *Model) trafficLines(name string, now time.Time, line func(label, value string) string) []string {
	th := m.c.Theme
	s := m.summary(name, now)
	if s.calls == 0 {
		return []string{line("traffic", th.Muted.Render(fmt.Sprintf("no calls in the last %d min", trafficMinutes)))}
	}
	return []string{
		line("calls/min", fmt.Sprintf("%-6s %s", s.rateText(), sparkline(s.perMinute))+th.Muted.Render(fmt.Sprintf("  last %d min", trafficMinutes))),
		line("errors", fmt.Sprintf("%s (%d of %d)", s.errorText(), s.errors, s.calls)),
		line("latency", "p50 "+common.Duration(s.p50)+" · p95 "+common.Duration(s.p95)),
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

// rank is the 0-based index of the q-quantile in a sorted sample of n
// (nearest rank); -1 when n is 0.
func rank(n int, q float64) int {
	if n == 0 {
		return -1
	}
	i := int(q*float64(n)+0.999999) - 1
	return max(0, min(i, n-1))
}

// kth is the element of index k in the sorted union of the sorted lists
// (0 when k < 0): the least value v with more than k elements ≤ v, found
// by bisecting the values and counting by binary search in each list, so
// a summary costs O(lists × log² samples), not a sort of the window.
func kth(lists [][]time.Duration, k int) time.Duration {
	if k < 0 {
		return 0
	}
	lo, hi := time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
	for _, l := range lists {
		if len(l) > 0 {
			lo, hi = min(lo, l[0]), max(hi, l[len(l)-1])
		}
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		atMost := 0
		for _, l := range lists {
			atMost += sort.Search(len(l), func(i int) bool { return l[i] > mid })
		}
		if atMost > k {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}
