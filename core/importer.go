package core

import (
	"fmt"
)

// Empty reports whether the refresh changes nothing.
func (d Diff) Empty() bool {
	return len(d.Added)+len(d.Removed)+len(d.Changed)+len(d.Collisions)+len(d.Dropped) == 0
}

func (UpstreamChanged) EventName() string { return "upstream.changed" }

func (ToolsDropped) EventName() string { return "tool.dropped" }

func (RefreshApplied) EventName() string { return "refresh.applied" }

func (Warning) EventName() string { return "warning" }

func (e *RPCError) Error() string { return fmt.Sprintf("upstream error %d: %s", e.Code, e.Message) }
