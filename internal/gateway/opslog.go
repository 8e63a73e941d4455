package gateway

import (
	"context"
	"log/slog"

	"github.com/toolgate/toolgate/core"
)

// MaxLoggedNames caps the tool names one refresh-diff record lists per
// kind of change (added, removed, changed): a 2,000-tool import is one
// record naming 20 tools and counting all 2,000.
const MaxLoggedNames = 20

// maxLoggedWarnings bounds the warnings remembered as already logged.
const maxLoggedWarnings = 1024

// opsLog writes what a headless operator must read (OP-7, IM-18, IM-26):
// every dropped tool, every collision and every refresh diff, each once,
// as a structured record. It follows the bus, so it never slows the
// importer down; the importer's events carry no secrets (IM-5).
//
// A refresh re-publishes what is still true: the upstream's whole list of
// drops, and the collisions it takes part in, forgotten and then recorded
// again. Only what is new is logged.
type opsLog struct {
	log  *slog.Logger
	sub  *core.BusSubscription
	done chan struct{}

	// Owned by the goroutine.
	drops    map[string]map[core.Drop]bool // by upstream: its drops when last listed
	logged   map[core.Collision]bool       // logged and still recorded
	pending  map[core.Collision]uint64     // forgotten by a refresh: the applies seen then
	applies  uint64                        // RefreshApplied events seen
	imported map[string]bool               // upstreams whose first import was logged
	warned   map[[2]string]bool            // warnings logged: {source, message}
	states   map[string]core.ConnState     // each upstream's state when last seen
	down     map[string]bool               // upstreams failed and not connected since
}

// opsLogBuffer is the operator log's subscription buffer: a 2,000-tool
// import is 2,000 events in a burst.
const opsLogBuffer = 4096

// startOpsLog follows bus with a subscription of buffer events.
func startOpsLog(log *slog.Logger, bus *core.Bus, buffer int) *opsLog {
	snap, sub := bus.Subscribe(buffer)
	l := &opsLog{
		log: log, sub: sub, done: make(chan struct{}),
		drops:    make(map[string]map[core.Drop]bool),
		logged:   make(map[core.Collision]bool),
		pending:  make(map[core.Collision]uint64),
		imported: make(map[string]bool),
		warned:   make(map[[2]string]bool),
		states:   make(map[string]core.ConnState),
		down:     make(map[string]bool),
	}
	go l.run(snap)
	return l
}

// close stops following the bus after logging what was published before.
func (l *opsLog) close() {
	l.sub.Close()
	<-l.done
}

func (l *opsLog) run(snap core.Snapshot) {
	defer close(l.done)
	l.resync(snap)
	// A closed subscription still delivers what it had buffered.
	for ev := range l.sub.C() {
		switch d := ev.Data.(type) {
		case core.ToolsDropped:
			l.dropped(d.Source, d.Drops)
		case core.CollisionRecorded:
			l.collision(d.Collision)
		case core.CollisionsForgotten:
			for c := range l.logged {
				if c.Kept.Source == d.Source || c.Refused.Source == d.Source {
					delete(l.logged, c)
					l.pending[c] = l.applies
				}
			}
		case core.RefreshApplied:
			l.applied(d.Diff)
		case core.Warning:
			l.warning(d)
		case core.UpstreamChanged:
			l.upstream(d.Status)
		case core.Resync:
			l.log.Warn("the operator log fell behind the gateway's events; refresh diffs in between are not logged",
				"events", l.sub.Dropped())
			l.resync(l.sub.Resync())
		}
	}
}

// resync logs what snap holds that was not logged yet, and takes it as
// what has been logged.
func (l *opsLog) resync(snap core.Snapshot) {
	bySource := make(map[string][]core.Drop)
	for _, d := range snap.Dropped {
		bySource[d.Source] = append(bySource[d.Source], d)
	}
	for src := range l.drops {
		if _, ok := bySource[src]; !ok {
			delete(l.drops, src)
		}
	}
	for src, drops := range bySource {
		l.dropped(src, drops)
	}
	held := make(map[core.Collision]bool, len(snap.Collisions))
	for _, c := range snap.Collisions {
		held[c] = true
		l.collision(c)
	}
	for c := range l.logged {
		if !held[c] {
			delete(l.logged, c)
		}
	}
	clear(l.pending)
	for _, st := range snap.Upstreams {
		l.states[st.Name] = st.State
	}
}

// upstream logs an upstream that was lost while connected, and one that
// had failed and came back, once per change (IM-37): a headless gateway
// says when it runs without an upstream's tools and when they return. A
// failure at start-up is serve's own record.
func (l *opsLog) upstream(st core.UpstreamStatus) {
	prev := l.states[st.Name]
	l.states[st.Name] = st.State
	switch {
	case st.State == core.StateFailed && prev == core.StateConnected:
		l.down[st.Name] = true
		attrs := []any{"upstream", st.Name, "err", st.LastError}
		if !st.NextAttempt.IsZero() {
			attrs = append(attrs, "nextAttempt", st.NextAttempt)
		}
		l.log.Warn("upstream lost", attrs...)
	case st.State == core.StateFailed:
		l.down[st.Name] = true
	case st.State == core.StateConnected && l.down[st.Name]:
		delete(l.down, st.Name)
		l.log.Info("upstream back", "upstream", st.Name, "tools", st.Tools)
	}
}

// dropped logs the drops of src's latest listing that its previous one did
// not have. A filtered tool is the operator's own choice (IM-14).
func (l *opsLog) dropped(src string, drops []core.Drop) {
	prev := l.drops[src]
	cur := make(map[core.Drop]bool, len(drops))
	for _, d := range drops {
		cur[d] = true
		if prev[d] {
			continue
		}
		level := slog.LevelWarn
		if d.Kind == core.DropFilter {
			level = slog.LevelDebug
		}
		l.log.Log(context.Background(), level, "tool dropped", "upstream", d.Source, "tool", d.RemoteName, "kind", string(d.Kind), "reason", d.Reason)
	}
	l.drops[src] = cur
}

// collision logs c unless it is one a refresh forgot and recorded again.
func (l *opsLog) collision(c core.Collision) {
	if l.logged[c] {
		return
	}
	l.logged[c] = true
	if _, ok := l.pending[c]; ok {
		delete(l.pending, c)
		return
	}
	l.log.Warn("tool name collision", "upstream", c.Refused.Source, "tool", c.Refused.RemoteName, "name", c.Name,
		"reason", "the name is held by "+c.Kept.String(), "kept", c.Kept.String())
}

// applied logs a refresh's diff as one record, and forgets the collisions
// that a refresh before it forgot and nobody recorded again. The importer
// offers freed names to the other upstreams after it publishes the diff,
// so a collision forgotten in one apply is recorded again at the latest
// before the next apply's diff.
func (l *opsLog) applied(d core.Diff) {
	l.applies++
	for c, at := range l.pending {
		if at+1 < l.applies {
			delete(l.pending, c)
		}
	}
	first := !l.imported[d.Upstream]
	l.imported[d.Upstream] = true
	if !first && len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0 {
		return // IM-25: a refresh that changed nothing says nothing
	}
	changed := make([]string, 0, min(len(d.Changed), MaxLoggedNames))
	for _, c := range d.Changed[:min(len(d.Changed), MaxLoggedNames)] {
		changed = append(changed, c.New.RemoteName)
	}
	msg := "tools refreshed"
	if first {
		msg = "tools imported"
	}
	l.log.Info(msg, "upstream", d.Upstream,
		"added", len(d.Added), "removed", len(d.Removed), "changed", len(d.Changed),
		"addedTools", remoteNames(d.Added), "removedTools", remoteNames(d.Removed), "changedTools", changed)
}

// remoteNames lists at most MaxLoggedNames of tools' remote names.
func remoteNames(tools []core.ToolInfo) []string {
	out := make([]string, 0, min(len(tools), MaxLoggedNames))
	for _, t := range tools[:min(len(tools), MaxLoggedNames)] {
		out = append(out, t.RemoteName)
	}
	return out
}

// warning logs w the first time its text is seen: the importer repeats a
// standing condition (a refused prompt name) on every refresh.
func (l *opsLog) warning(w core.Warning) {
	key := [2]string{w.Source, w.Message}
	if l.warned[key] {
		return
	}
	if len(l.warned) >= maxLoggedWarnings {
		clear(l.warned)
	}
	l.warned[key] = true
	l.log.Warn("upstream warning", "upstream", w.Source, "detail", w.Message)
}
