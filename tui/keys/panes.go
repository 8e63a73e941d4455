package keys

import "github.com/charmbracelet/bubbles/key"

// UpstreamKeys are the Upstreams pane's (CO-1, CO-4). Details and Apply
// are both enter: Details only in the list, Apply only in the refresh
// preview, where enter has nothing to drill into.
type UpstreamKeys struct {
	Refresh, RefreshAll, Ping key.Binding
	Details                   key.Binding
	Apply                     key.Binding
	// Connections opens the connections view (UI-3), where the gateway
	// has an oauth upstream.
	Connections key.Binding
	// Back leaves the detail view or cancels the refresh preview.
	Back key.Binding
}

// DefaultUpstreams returns the Upstreams bindings.
func DefaultUpstreams() UpstreamKeys {
	return UpstreamKeys{
		Refresh:     key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "refresh")),
		RefreshAll:  key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "refresh all")),
		Ping:        key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "ping")),
		Details:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "details")),
		Apply:       key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "apply")),
		Back:        key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Connections: key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "connections")),
	}
}

// ConnectionKeys are the connections view's, reached from the Upstreams
// pane (UI-3). Revoke is x like every negative action of the console;
// Back returns to the upstreams.
type ConnectionKeys struct {
	Revoke, Reload, Back key.Binding
}

// DefaultConnections returns the connections view's bindings.
func DefaultConnections() ConnectionKeys {
	return ConnectionKeys{
		Revoke: key.NewBinding(key.WithKeys("x", "delete"), key.WithHelp("x", "revoke")),
		Reload: key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "reload")),
		Back:   key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
	}
}

// ToolKeys are the Tools pane's (CO-2).
type ToolKeys struct {
	// Review opens the selected tool's review view; Back leaves it.
	Review, Back    key.Binding
	Approve, Reject key.Binding
}

// DefaultTools returns the Tools bindings.
func DefaultTools() ToolKeys {
	return ToolKeys{
		Review:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "details")),
		Back:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Approve: key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "approve")),
		Reject:  key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "reject")),
	}
}

// SessionKeys are the Sessions pane's (CO-5).
type SessionKeys struct {
	// End is x, the console's key for the negative action (reject in
	// Tools and Approvals), so k stays up as in every other list.
	End key.Binding
}

// DefaultSessions returns the Sessions bindings.
func DefaultSessions() SessionKeys {
	return SessionKeys{
		End: key.NewBinding(key.WithKeys("x", "delete"), key.WithHelp("x", "end session")),
	}
}

// ApprovalKeys are the Approvals pane's (CO-6).
type ApprovalKeys struct {
	Approve, Reject key.Binding
}

// DefaultApprovals returns the Approvals bindings.
func DefaultApprovals() ApprovalKeys {
	return ApprovalKeys{
		Approve: key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "approve")),
		Reject:  key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "reject")),
	}
}

// ActivityKeys are the Activity pane's (CO-7). Details opens a call's
// audit record (OP-10); Back leaves it.
type ActivityKeys struct {
	Follow        key.Binding
	Details, Back key.Binding
}

// DefaultActivity returns the Activity bindings.
func DefaultActivity() ActivityKeys {
	return ActivityKeys{
		Follow:  key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "follow/pause")),
		Details: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "audit record")),
		Back:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
	}
}

// PolicyKeys are the Policies pane's (PO-4, CO-8). In the list, Reload
// reads the rules and hits again, Try opens the dry run and Usage shows
// the quotas' use; the dry run's form reads text, so it has every key:
// its own are the ones below.
type PolicyKeys struct {
	Reload, Try, Usage key.Binding
	// NextField and PrevField move between the form's fields; NextTool
	// and PrevTool fill the tool field with the registry's tools.
	NextField, PrevField key.Binding
	NextTool, PrevTool   key.Binding
	// Run asks which rule decides; Back leaves the form.
	Run, Back key.Binding
}

// DefaultPolicies returns the Policies bindings.
func DefaultPolicies() PolicyKeys {
	return PolicyKeys{
		Reload:    key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "reload")),
		Try:       key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "dry run")),
		Usage:     key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "quotas")),
		NextField: key.NewBinding(key.WithKeys("tab", "down"), key.WithHelp("tab/↓", "next field")),
		PrevField: key.NewBinding(key.WithKeys("shift+tab", "up"), key.WithHelp("shift+tab/↑", "previous field")),
		NextTool:  key.NewBinding(key.WithKeys("ctrl+n"), key.WithHelp("ctrl+n", "next tool")),
		PrevTool:  key.NewBinding(key.WithKeys("ctrl+p"), key.WithHelp("ctrl+p", "previous tool")),
		Run:       key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "try")),
		Back:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
	}
}

// DialogKeys are the confirm dialog's: it has every key while it is open.
type DialogKeys struct {
	Left, Right key.Binding
	// Select chooses the focused button; Cancel closes without acting.
	Select, Cancel key.Binding
}

// DefaultDialog returns the dialog bindings.
func DefaultDialog() DialogKeys {
	return DialogKeys{
		Left:   key.NewBinding(key.WithKeys("left", "h", "shift+tab"), key.WithHelp("←/h", "left")),
		Right:  key.NewBinding(key.WithKeys("right", "l", "tab"), key.WithHelp("→/l", "right")),
		Select: key.NewBinding(key.WithKeys("enter", " "), key.WithHelp("enter", "select")),
		Cancel: key.NewBinding(key.WithKeys("esc", "n"), key.WithHelp("esc", "cancel")),
	}
}
