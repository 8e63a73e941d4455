package core

import (
	"sync"
	"time"
)

// Event is one change in the gateway, in a single total order (Seq).
type Event struct {
	Seq  uint64
	Time time.Time
	Data EventData
}

// EventData is the typed payload of an event. The concrete types are listed
// below; consumers switch on them.
type EventData interface {
	// EventName is a stable, lower-case name for logs and the console.
	EventName() string
}

// ToolRegistered: a name was claimed.
type ToolRegistered struct {
	Tool ToolInfo `json:"tool"`
}

// ToolUpdated: the owner of a name replaced its definition (a refresh).
type ToolUpdated struct {
	Old ToolInfo `json:"old"`
	New ToolInfo `json:"new"`
}

// ToolUnregistered: a name was freed by its owner.
type ToolUnregistered struct {
	Tool ToolInfo `json:"tool"`
}

// CollisionRecorded: a claimant was refused a name (IM-13).
type CollisionRecorded struct {
	Collision Collision `json:"collision"`
}

// CollisionsForgotten: the collisions Source took part in were cleared
// before it is imported again.
type CollisionsForgotten struct {
	Source string `json:"source"`
}

// Resync tells a subscriber that it fell behind and events were dropped for
// it. It must call BusSubscription.Resync for a fresh snapshot; nothing more is
// delivered to it until it does.
type Resync struct{}

// Snapshot is the gateway state at one point of the event order: every event
// with a higher Seq happened after it.
type Snapshot struct {
	Seq        uint64                `json:"seq"`
	Tools      []ToolInfo            `json:"tools"`
	Collisions []Collision           `json:"collisions"`
	Upstreams  []UpstreamStatus      `json:"upstreams"`
	Dropped    []Drop                `json:"dropped"`
	Sessions   []Session             `json:"sessions"`
	Pending    []PendingConfirmation `json:"pending"`
	// Reviews is each imported tool's review state, by tool name (RV-3).
	Reviews map[string]ReviewState `json:"reviews,omitempty"`
}

// DefaultSubscriptionBuffer is the channel size of a subscription.
const DefaultSubscriptionBuffer = 256

// Bus orders state changes and fans them out to subscribers.
//
// State owners change their state inside Commit, so a change and its events
// are one step of the total order, and a Subscribe never sees a snapshot that
// disagrees with the events that follow it. Lock order: the bus lock, then
// the state owner's own lock (taken inside Commit and inside snapshot parts).
//
// Publishing never blocks: a subscriber whose buffer is full gets a Resync
// in a slot kept free for it and then nothing until it resyncs.
type Bus struct {
	now func() time.Time

	mu     sync.Mutex
	seq    uint64
	parts  []func(*Snapshot)
	subs   map[*BusSubscription]struct{}
	closed bool
}

// NewBus returns an empty bus.
func NewBus() *Bus {
	return &Bus{now: time.Now, subs: make(map[*BusSubscription]struct{})}
}

// BusSubscription is one subscriber's feed. C is closed when the subscription
// or the bus is closed. Its methods are safe for concurrent use.
type BusSubscription struct {
	bus *Bus
	ch  chan Event
	// Guarded by bus.mu.
	behind  bool
	dropped uint64
}

func (ToolRegistered) EventName() string { return "tool.registered" }

func (ToolUpdated) EventName() string { return "tool.updated" }

func (ToolUnregistered) EventName() string { return "tool.unregistered" }

func (CollisionRecorded) EventName() string { return "tool.collision" }

func (CollisionsForgotten) EventName() string { return "tool.collisions_forgotten" }

func (Resync) EventName() string { return "resync" }

// AddSnapshotPart registers a function that fills its owner's share of a
// snapshot. It is called with the bus lock held and must not call back into
// the bus.
func (b *Bus) AddSnapshotPart(fill func(*Snapshot)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.parts = append(b.parts, fill)
}

// Commit runs change with no other commit or snapshot in progress and
// publishes the events it returns, in order.
func (b *Bus) Commit(change func() []EventData) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, d := range change() {
		b.publishLocked(d)
	}
}

// Publish publishes one event that changes no state the snapshot holds
// (a warning, a call finished).
func (b *Bus) Publish(d EventData) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.publishLocked(d)
}

func (b *Bus) publishLocked(d EventData) {
	b.seq++
	if b.closed {
		return
	}
	ev := Event{Seq: b.seq, Time: b.now(), Data: d}
	for s := range b.subs {
		s.deliverLocked(ev)
	}
}

// Snapshot returns the current state.
func (b *Bus) Snapshot() Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.snapshotLocked()
}

func (b *Bus) snapshotLocked() Snapshot {
	s := Snapshot{Seq: b.seq}
	for _, fill := range b.parts {
		fill(&s)
	}
	return s
}

// Seq is the sequence number of the last event committed: a subscriber
// that has received that event has seen every change made before now.
func (b *Bus) Seq() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}

// Subscribe returns the current state and a subscription that receives every
// event after it. buffer <= 0 means DefaultSubscriptionBuffer.
func (b *Bus) Subscribe(buffer int) (Snapshot, *BusSubscription) {
	if buffer <= 0 {
		buffer = DefaultSubscriptionBuffer
	}
	// One slot more than asked: it stays free for the Resync marker.
	s := &BusSubscription{bus: b, ch: make(chan Event, buffer+1)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(s.ch)
		return b.snapshotLocked(), s
	}
	b.subs[s] = struct{}{}
	return b.snapshotLocked(), s
}

// Close ends every subscription; later events are numbered but not delivered.
func (b *Bus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	for s := range b.subs {
		close(s.ch)
		delete(b.subs, s)
	}
}

// C delivers events in Seq order.
func (s *BusSubscription) C() <-chan Event { return s.ch }

func (s *BusSubscription) deliverLocked(ev Event) {
	if s.behind {
		s.dropped++
		return
	}
	if len(s.ch) < cap(s.ch)-1 {
		s.ch <- ev
		return
	}
	// Only the reserved slot is left: the subscriber fell behind. The marker
	// carries this event's Seq so the order stays total.
	s.behind = true
	s.dropped++
	s.ch <- Event{Seq: ev.Seq, Time: ev.Time, Data: Resync{}}
}

// Resync returns a fresh snapshot and resumes delivery after it. Call it
// after receiving a Resync event.
func (s *BusSubscription) Resync() Snapshot {
	b := s.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	s.behind = false
	return b.snapshotLocked()
}

// Dropped counts the events this subscriber lost to a full buffer.
func (s *BusSubscription) Dropped() uint64 {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.dropped
}

// Close ends the subscription and closes C.
func (s *BusSubscription) Close() {
	b := s.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[s]; ok {
		delete(b.subs, s)
		close(s.ch)
	}
}
