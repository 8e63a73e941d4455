package session

import (
	"container/heap"
	"math"
	"time"
)

// Tombstones: ended ids, so a seal cannot bring them back. Bounded in
// number and in time. What closes the gap a forgotten tombstone would open
// is the issue time sealed into every id: an id older than adoptWindow is
// never continued by a replica that does not hold it, and a tombstone is
// kept longer than that after the end, so by the time it is forgotten its
// id is too old anyway. A tombstone dropped early to make room raises a
// floor instead: no id issued at or before the dropped one's issue time is
// adopted again (the replicas holding such sessions keep serving them).
const maxTombstones = 1 << 16

// minAdoptWindow is the least age at which a sealed id stops being
// continued elsewhere; a longer idle timeout lengthens it. A client past it
// whose replica went away initializes again.
const minAdoptWindow = 24 * time.Hour

// clockSlack covers replicas whose clocks disagree about an issue time.
const clockSlack = 5 * time.Minute

// adoptWindow is how old a sealed id may be and still be continued by a
// replica that does not hold it: idle an idle timeout, a session would have
// expired anyway.
func adoptWindow(idle time.Duration) time.Duration {
	return max(idle, minAdoptWindow)
}

// ContinuableFor is how long past its issue a sealed id may still be
// continued by some replica, the clocks' disagreement included: what is
// kept of a session elsewhere (its flow labels) is kept at least as long.
func ContinuableFor(idle time.Duration) time.Duration {
	return adoptWindow(idle) + clockSlack
}

type tombstones struct {
	window time.Duration // ids older than this are not adopted
	ttl    time.Duration // how long a tombstone is kept: longer than window
	// issued reads an id's sealed issue time (false: not a sealed id).
	issued func(id string) (time.Time, bool)

	// The table's lock guards the rest.
	at map[string]*tombstone
	// byIssue holds every kept tombstone, the earliest issued at its root:
	// the one dropped when room is needed.
	byIssue issueHeap
	// byEnd is the tombstones in the order they were added, which is the
	// order they lapse in (the ttl is fixed): lapsed ones are taken from
	// its front. Those dropped otherwise stay in it, marked, until they
	// reach the front or outnumber the kept ones.
	byEnd   []*tombstone
	dropped int // marked entries in byEnd
	// floor: ids issued at or before it are refused, since a tombstone of
	// one that old was dropped to make room.
	floor time.Time
}

// tombstone keeps its times as Unix nanoseconds (stampOf): 65,536 of them
// are kept for a day, and a time.Time is three times the size.
type tombstone struct {
	id            string
	until, issued int64
	heapAt        int // index in byIssue; -1 once dropped
}

// stampOf is t in Unix nanoseconds, clamped to what an int64 holds.
func stampOf(t time.Time) int64 {
	switch {
	case t.Before(minStamp):
		return math.MinInt64
	case t.After(maxStamp):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var minStamp, maxStamp = time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)

// issueHeap is a container/heap of tombstones by issue time.
type issueHeap []*tombstone

func (h issueHeap) Len() int           { return len(h) }
func (h issueHeap) Less(i, j int) bool { return h[i].issued < h[j].issued }
func (h issueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapAt, h[j].heapAt = i, j
}
func (h *issueHeap) Push(x any) {
	ts := x.(*tombstone)
	ts.heapAt = len(*h)
	*h = append(*h, ts)
}
func (h *issueHeap) Pop() any {
	old := *h
	ts := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return ts
}

func (t *tombstones) init(idle time.Duration, seal *Seal) {
	t.window = adoptWindow(idle)
	t.ttl = t.window + clockSlack
	t.issued = func(id string) (time.Time, bool) {
		if seal == nil {
			return time.Time{}, false
		}
		c, ok := seal.Open(id)
		return time.Unix(c.Issued, 0), ok
	}
}

// add records id as ended; false if it was already. At the bound it costs
// O(log n), not a pass over every tombstone: each session end pays it.
func (t *tombstones) add(id string, now time.Time) bool {
	issued, _ := t.issued(id)
	stamp := stampOf(now)
	if t.at == nil {
		t.at = map[string]*tombstone{}
	}
	if ts, ok := t.at[id]; ok {
		if stamp < ts.until {
			return false
		}
		t.drop(ts)
	}
	t.lapse(stamp)
	if len(t.at) >= maxTombstones {
		oldest := t.byIssue[0]
		t.drop(oldest)
		if oldest.issued > stampOf(t.floor) {
			t.floor = time.Unix(0, oldest.issued)
		}
	}
	ts := &tombstone{id: id, until: stampOf(now.Add(t.ttl)), issued: stampOf(issued)}
	heap.Push(&t.byIssue, ts)
	t.byEnd = append(t.byEnd, ts)
	t.at[id] = ts
	return true
}

// drop forgets ts; its entry in byEnd stays, marked.
func (t *tombstones) drop(ts *tombstone) {
	delete(t.at, ts.id)
	heap.Remove(&t.byIssue, ts.heapAt)
	ts.heapAt = -1
	t.dropped++
}

// lapse forgets the tombstones at byEnd's front that lapsed by now (a
// stamp), and compacts byEnd once the marked entries are the greater part.
func (t *tombstones) lapse(now int64) {
	for len(t.byEnd) > 0 {
		ts := t.byEnd[0]
		if ts.heapAt >= 0 {
			if now < ts.until {
				break
			}
			t.drop(ts)
		}
		t.dropped--
		t.byEnd[0] = nil
		t.byEnd = t.byEnd[1:]
	}
	if t.dropped > len(t.byEnd)/2 && t.dropped > 64 {
		kept := make([]*tombstone, 0, len(t.byEnd)-t.dropped)
		for _, ts := range t.byEnd {
			if ts.heapAt >= 0 {
				kept = append(kept, ts)
			}
		}
		t.byEnd, t.dropped = kept, 0
	}
}

func (t *tombstones) has(id string, now time.Time) bool {
	ts, ok := t.at[id]
	if ok && stampOf(now) >= ts.until {
		t.drop(ts)
		return false
	}
	return ok
}

// tooOld reports whether an id issued then may no longer be adopted: past
// the window, or at or before the floor.
func (t *tombstones) tooOld(issued, now time.Time) bool {
	return now.Sub(issued) > t.window || !issued.After(t.floor)
}
