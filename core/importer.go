package core

import (
	"fmt"
	"strings"
)

// Empty reports whether the refresh changes nothing.
func (d Diff) Empty() bool {
	return len(d.Added)+len(d.Removed)+len(d.Changed)+len(d.Collisions)+len(d.Dropped) == 0
}

// Summary counts what d changes, for one line of a log, a console or a
// command's output.
func (d Diff) Summary() string {
	if d.Empty() {
		return "no changes"
	}
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(len(d.Added), "added")
	add(len(d.Removed), "removed")
	add(len(d.Changed), "changed")
	add(len(d.Collisions), "collisions")
	add(len(d.Dropped), "dropped")
	return strings.Join(parts, ", ")
}

func (UpstreamChanged) EventName() string { return "upstream.changed" }

func (ToolsDropped) EventName() string { return "tool.dropped" }

func (RefreshApplied) EventName() string { return "refresh.applied" }

func (Warning) EventName() string { return "warning" }

func (e *RPCError) Error() string { return fmt.Sprintf("upstream error %d: %s", e.Code, e.Message) }
