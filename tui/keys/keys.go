// Package keys holds the console's key bindings (CO-8): one struct per pane,
// in the manner of gh-dash's keys package, plus the global keys the root
// handles and the list and scroll movement the panes share. A pane's
// handler, its key bar and its full help read the same struct, so they
// agree; the Collisions pane only lists, so ListKeys is all it has.
//
// A pane disables the bindings that do not apply in its current state,
// which leaves them out of the help; no two enabled bindings of a pane (the
// global ones active there included) share a key (TestNoSharedKeys).
package keys

import (
	"slices"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
)

// KeyMap is every pane's bindings.
type KeyMap struct {
	Global    GlobalKeys
	List      ListKeys
	Scroll    ScrollKeys
	Upstreams UpstreamKeys
	// Connections are the Upstreams pane's connections view's.
	Connections ConnectionKeys
	Tools       ToolKeys
	Sessions    SessionKeys
	Approvals   ApprovalKeys
	Activity    ActivityKeys
	Policies    PolicyKeys
	Dialog      DialogKeys
}

// Default returns the console's bindings.
func Default() *KeyMap {
	return &KeyMap{
		Global:      DefaultGlobal(),
		List:        DefaultList(),
		Scroll:      DefaultScroll(),
		Upstreams:   DefaultUpstreams(),
		Connections: DefaultConnections(),
		Tools:       DefaultTools(),
		Sessions:    DefaultSessions(),
		Approvals:   DefaultApprovals(),
		Activity:    DefaultActivity(),
		Policies:    DefaultPolicies(),
		Dialog:      DefaultDialog(),
	}
}

// GlobalKeys are the root's: it handles them before the pane does.
type GlobalKeys struct {
	Quit, ForceQuit  key.Binding
	Help, CloseHelp  key.Binding
	NextTab, PrevTab key.Binding
	Tabs             [7]key.Binding
}

// DefaultGlobal returns the global bindings.
func DefaultGlobal() GlobalKeys {
	g := GlobalKeys{
		Quit:      key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQuit: key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
		Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		// Only while the help is shown, in place of Help.
		CloseHelp: key.NewBinding(key.WithKeys("esc", "?"), key.WithHelp("esc/?", "close help")),
		NextTab:   key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next pane")),
		PrevTab:   key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous pane")),
	}
	names := []string{"upstreams", "tools", "collisions", "sessions", "approvals", "activity", "policies"}
	for i := range g.Tabs {
		n := string(rune('1' + i))
		g.Tabs[i] = key.NewBinding(key.WithKeys(n), key.WithHelp(n, names[i]))
	}
	return g
}

// Bindings is every global binding.
func (g GlobalKeys) Bindings() []key.Binding {
	return append([]key.Binding{g.Quit, g.ForceQuit, g.Help, g.CloseHelp, g.NextTab, g.PrevTab}, g.Tabs[:]...)
}

// ListKeys move through a table and filter it.
type ListKeys struct {
	Up, Down, Top, Bottom, PageUp, PageDown key.Binding
	Filter                                  key.Binding
	// KeepFilter ends typing and keeps the filter; ClearFilter drops it.
	KeepFilter, ClearFilter key.Binding
}

// DefaultList returns the list bindings.
func DefaultList() ListKeys {
	return ListKeys{
		Up:          key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:        key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Top:         key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "top")),
		Bottom:      key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "bottom")),
		PageUp:      key.NewBinding(key.WithKeys("pgup", "ctrl+u"), key.WithHelp("pgup", "page up")),
		PageDown:    key.NewBinding(key.WithKeys("pgdown", "ctrl+d"), key.WithHelp("pgdn", "page down")),
		Filter:      key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		KeepFilter:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "keep filter")),
		ClearFilter: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
	}
}

// ScrollKeys scroll a detail view (a viewport): the pager keys it has
// always had.
type ScrollKeys struct {
	Up, Down, PageUp, PageDown, HalfPageUp, HalfPageDown key.Binding
}

// DefaultScroll returns the scroll bindings.
func DefaultScroll() ScrollKeys {
	return ScrollKeys{
		Up:           key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:         key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:       key.NewBinding(key.WithKeys("pgup", "b"), key.WithHelp("b/pgup", "page up")),
		PageDown:     key.NewBinding(key.WithKeys("pgdown", " ", "f"), key.WithHelp("f/pgdn", "page down")),
		HalfPageUp:   key.NewBinding(key.WithKeys("u", "ctrl+u"), key.WithHelp("u", "½ page up")),
		HalfPageDown: key.NewBinding(key.WithKeys("d", "ctrl+d"), key.WithHelp("d", "½ page down")),
	}
}

// Viewport is the viewport's key map. Left and Right stay unbound: the
// console's detail views wrap their text and never scroll sideways.
func (s ScrollKeys) Viewport() viewport.KeyMap {
	return viewport.KeyMap{
		Up: s.Up, Down: s.Down, PageUp: s.PageUp, PageDown: s.PageDown,
		HalfPageUp: s.HalfPageUp, HalfPageDown: s.HalfPageDown,
	}
}

// Bindings is every scroll binding.
func (s ScrollKeys) Bindings() []key.Binding {
	return []key.Binding{s.Up, s.Down, s.PageUp, s.PageDown, s.HalfPageUp, s.HalfPageDown}
}

// Pressed reports whether msg is one of the bindings' keys, enabled or
// not: a pane uses it to say why a disabled action does nothing (lazygit's
// GetDisabledReason) instead of ignoring the key.
func Pressed(msg tea.KeyMsg, bs ...key.Binding) bool {
	s := msg.String()
	for _, b := range bs {
		if slices.Contains(b.Keys(), s) {
			return true
		}
	}
	return false
}

// Disable turns bindings off, so handlers skip them and help leaves them out.
func Disable(bs ...*key.Binding) {
	for _, b := range bs {
		b.SetEnabled(false)
	}
}
