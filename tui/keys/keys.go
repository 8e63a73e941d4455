// Package keys holds every key binding of the console in one place, so the
// key bar, the full help and the handlers agree (CO-8).
package keys

import "github.com/charmbracelet/bubbles/key"

// KeyMap is every binding. Panes pick the ones that apply to them; a binding
// that does not apply right now is disabled and so left out of the help.
type KeyMap struct {
	// Global.
	Quit, ForceQuit, Help, NextTab, PrevTab key.Binding
	Tabs                                    [6]key.Binding

	// Movement and lists.
	Up, Down, Top, Bottom, PageUp, PageDown key.Binding
	Filter, ClearFilter, Enter, Back        key.Binding

	// Upstreams.
	Refresh, RefreshAll, Ping, Apply key.Binding
	// Tools and approvals.
	Approve, Reject key.Binding
	// Sessions.
	EndSession key.Binding
	// Activity.
	Follow key.Binding

	// Dialog.
	Left, Right key.Binding
}

// Default returns the console's bindings.
func Default() *KeyMap {
	k := &KeyMap{
		Quit:        key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQuit:   key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
		Help:        key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		NextTab:     key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next pane")),
		PrevTab:     key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous pane")),
		Up:          key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:        key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Top:         key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "top")),
		Bottom:      key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "bottom")),
		PageUp:      key.NewBinding(key.WithKeys("pgup", "ctrl+u"), key.WithHelp("pgup", "page up")),
		PageDown:    key.NewBinding(key.WithKeys("pgdown", "ctrl+d"), key.WithHelp("pgdn", "page down")),
		Filter:      key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		ClearFilter: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
		Enter:       key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "details")),
		Back:        key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Refresh:     key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "refresh")),
		RefreshAll:  key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "refresh all")),
		Ping:        key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "ping")),
		Apply:       key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "apply")),
		Approve:     key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "approve")),
		Reject:      key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "reject")),
		EndSession:  key.NewBinding(key.WithKeys("k", "delete"), key.WithHelp("k", "end session")),
		Follow:      key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "follow/pause")),
		Left:        key.NewBinding(key.WithKeys("left", "h", "shift+tab"), key.WithHelp("←/h", "left")),
		Right:       key.NewBinding(key.WithKeys("right", "l", "tab"), key.WithHelp("→/l", "right")),
	}
	names := []string{"upstreams", "tools", "collisions", "sessions", "approvals", "activity"}
	for i := range k.Tabs {
		n := string(rune('1' + i))
		k.Tabs[i] = key.NewBinding(key.WithKeys(n), key.WithHelp(n, names[i]))
	}
	return k
}

// Nav is the list movement bindings, for help.
func (k *KeyMap) Nav() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown}
}

// Global is the bindings every pane has, for help.
func (k *KeyMap) Global() []key.Binding {
	return []key.Binding{k.NextTab, k.PrevTab, k.Tabs[0], k.Help, k.Quit, k.ForceQuit}
}
