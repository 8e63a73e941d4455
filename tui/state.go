package tui

import (
	"cmp"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/core"
)

// part says which parts of the state an event changed.
type part uint

const (
	partUpstreams part = 1 << iota
	partTools
	partReviews
	partCollisions
	partSessions
	partPending
	partAll = partUpstreams | partTools | partReviews | partCollisions | partSessions | partPending
)

// apply folds one event into the snapshot and says what changed. Events the
// snapshot already reflects (Seq not after it) change nothing.
func apply(s *core.Snapshot, ev core.Event) part {
	if ev.Seq <= s.Seq {
		return 0
	}
	s.Seq = ev.Seq
	switch d := ev.Data.(type) {
	case core.ToolRegistered:
		s.Tools = putTool(s.Tools, d.Tool)
		return partTools
	case core.ToolUpdated:
		s.Tools = putTool(s.Tools, d.New)
		return partTools
	case core.ToolUnregistered:
		if i, ok := findTool(s.Tools, d.Tool.Name); ok {
			s.Tools = slices.Delete(s.Tools, i, i+1)
		}
		delete(s.Reviews, d.Tool.Name)
		return partTools
	case core.CollisionRecorded:
		if !slices.Contains(s.Collisions, d.Collision) {
			s.Collisions = append(s.Collisions, d.Collision)
		}
		return partCollisions
	case core.CollisionsForgotten:
		s.Collisions = slices.DeleteFunc(s.Collisions, func(c core.Collision) bool {
			return c.Kept.Source == d.Source || c.Refused.Source == d.Source
		})
		return partCollisions
	case core.UpstreamChanged:
		i := slices.IndexFunc(s.Upstreams, func(u core.UpstreamStatus) bool { return u.Name == d.Status.Name })
		if d.Status.Removed { // a config reload took it out (OP-8)
			if i >= 0 {
				s.Upstreams = slices.Delete(s.Upstreams, i, i+1)
			}
			return partUpstreams
		}
		if i < 0 {
			s.Upstreams = append(s.Upstreams, d.Status)
		} else {
			s.Upstreams[i] = d.Status
		}
		return partUpstreams
	case core.ToolsDropped:
		s.Dropped = slices.DeleteFunc(s.Dropped, func(x core.Drop) bool { return x.Source == d.Source })
		s.Dropped = append(s.Dropped, d.Drops...)
		order := map[string]int{}
		for i, u := range s.Upstreams {
			order[u.Name] = i
		}
		slices.SortStableFunc(s.Dropped, func(a, b core.Drop) int { return cmp.Compare(order[a.Source], order[b.Source]) })
		return partCollisions
	case core.ToolReviewed:
		if s.Reviews == nil {
			s.Reviews = map[string]core.ReviewState{}
		}
		if d.Name != "" {
			s.Reviews[d.Name] = d.State
			return partReviews
		}
		if d.Kind != core.EntryTool {
			return 0 // a prompt's or resource's: read with the entries
		}
		for _, t := range s.Tools {
			if t.Source == d.Source && t.RemoteName == d.RemoteName {
				s.Reviews[t.Name] = d.State
			}
		}
		return partReviews
	case core.SessionStarted:
		s.Sessions = slices.DeleteFunc(s.Sessions, func(x core.Session) bool { return x.ID == d.Session.ID })
		s.Sessions = append(s.Sessions, d.Session)
		return partSessions
	case core.SessionEnded:
		s.Sessions = slices.DeleteFunc(s.Sessions, func(x core.Session) bool { return x.ID == d.Session.ID })
		return partSessions
	case core.SessionsElsewhere:
		s.Sessions = slices.DeleteFunc(s.Sessions, func(x core.Session) bool { return x.Elsewhere })
		s.Sessions = append(s.Sessions, d.Sessions...)
		return partSessions
	case core.CallFinished:
		r := d.Record
		if r.Session == "" {
			return 0
		}
		for i := range s.Sessions {
			if s.Sessions[i].ID == r.Session {
				s.Sessions[i].Calls++
				if r.Time.After(s.Sessions[i].LastActivity) {
					s.Sessions[i].LastActivity = r.Time
				}
				return partSessions
			}
		}
	case core.ConfirmationPending:
		s.Pending = slices.DeleteFunc(s.Pending, func(x core.PendingConfirmation) bool { return x.ID == d.Pending.ID })
		s.Pending = append(s.Pending, d.Pending)
		return partPending
	case core.ConfirmationDecided:
		s.Pending = slices.DeleteFunc(s.Pending, func(x core.PendingConfirmation) bool { return x.ID == d.ID })
		return partPending
	}
	return 0
}

func findTool(tools []core.ToolInfo, name string) (int, bool) {
	return slices.BinarySearchFunc(tools, name, func(t core.ToolInfo, n string) int { return strings.Compare(t.Name, n) })
}

// putTool inserts or replaces t, keeping tools sorted by name.
func putTool(tools []core.ToolInfo, t core.ToolInfo) []core.ToolInfo {
	i, ok := findTool(tools, t.Name)
	if ok {
		tools[i] = t
		return tools
	}
	return slices.Insert(tools, i, t)
}
