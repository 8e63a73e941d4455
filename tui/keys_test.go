package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"
)

// activeKeys is every binding that acts in m's current state: the root's,
// then the full help of the dialog or pane that gets the other keys; bar is
// that dialog's or pane's key bar.
func activeKeys(m *Model) (active, bar []key.Binding) {
	active = m.globalKeys().Bindings()
	var groups [][]key.Binding
	switch {
	case m.dialog != nil:
		groups, bar = m.dialog.FullHelp(), m.dialog.ShortHelp()
	case m.showHelp:
		// The root has every key.
	default:
		p := m.panes[m.active]
		groups, bar = p.FullHelp(), p.ShortHelp()
	}
	for _, g := range groups {
		active = append(active, g...)
	}
	return active, bar
}

// TestNoSharedKeys: in every pane, and in each state of a pane where the
// enabled bindings change, no two enabled bindings share a key, the global
// ones active there included, so a key does one thing (CO-8). The key bar
// shows only keys that act, and each state has the bindings that say it
// was reached (want) and lacks those that do not apply there (off).
func TestNoSharedKeys(t *testing.T) {
	cases := []struct {
		name  string
		hold  bool // hold the refresh plan, so the preview keeps listing
		setup func(*fakeConsole)
		keys  []string
		want  []string // "key=description" of bindings that must be enabled
		off   []string // keys no enabled binding may have
	}{
		{name: "upstreams", want: []string{"enter=details", "r=refresh", "tab=next pane", "1=upstreams"}, off: []string{"esc"}},
		{name: "upstreams/filtering", keys: []string{"/"}, want: []string{"enter=keep filter", "esc=clear filter", "up=up", "ctrl+c=quit"}, off: []string{"q", "1", "k", "r", "?"}},
		{name: "upstreams/filtered", keys: []string{"/", "n", "o", "enter"}, want: []string{"esc=clear filter", "enter=details"}},
		{name: "upstreams/detail", keys: []string{"enter"}, want: []string{"esc=back", "r=refresh", "p=ping", "f=page down"}, off: []string{"R", "g"}},
		{name: "upstreams/listing", hold: true, keys: []string{"r"}, want: []string{"esc=cancel"}, off: []string{"enter", "r"}},
		{name: "upstreams/diff", keys: []string{"r"}, want: []string{"enter=apply", "esc=cancel", "k=up"}, off: []string{"r", "p"}},
		{name: "upstreams/none", setup: func(f *fakeConsole) { f.snap.Upstreams = nil }, want: []string{"R=refresh all"}, off: []string{"enter", "r", "p"}},
		{name: "upstreams/oauth", setup: withConnections, want: []string{"c=connections", "enter=details"}},
		{name: "upstreams/oauth detail", setup: withConnections, keys: []string{"enter"}, want: []string{"c=connections", "esc=back", "p=ping"}},
		{name: "upstreams/no oauth", off: []string{"c"}},
		{name: "upstreams/connections", setup: withConnections, keys: []string{"c"}, want: []string{"x=revoke", "delete=revoke", "r=reload", "esc=back", "k=up", "/=filter"},
			off: []string{"R", "p", "enter", "c"}},
		{name: "upstreams/connections filtering", setup: withConnections, keys: []string{"c", "/"}, want: []string{"enter=keep filter", "esc=clear filter"}, off: []string{"x", "r", "q", "1"}},
		{name: "upstreams/connections filtered", setup: withConnections, keys: []string{"c", "/", "b", "o", "b", "enter"}, want: []string{"esc=clear filter", "x=revoke"}},
		{name: "upstreams/connections none", setup: func(f *fakeConsole) { withConnections(f); f.conns = nil }, keys: []string{"c"}, want: []string{"esc=back"}, off: []string{"x"}},
		{name: "upstreams/revoke dialog", setup: withConnections, keys: []string{"c", "x"}, want: []string{"enter=select", "esc=cancel"}, off: []string{"x", "q"}},
		{name: "tools", keys: []string{"2"}, want: []string{"enter=details", "a=approve", "x=reject", "k=up"}, off: []string{"esc"}},
		{name: "tools/native", keys: []string{"2", "down", "down"}, want: []string{"enter=details"}, off: []string{"a", "x"}},
		{name: "tools/filtering", keys: []string{"2", "/"}, want: []string{"enter=keep filter", "down=down"}, off: []string{"a", "x", "j"}},
		{name: "tools/filtered", keys: []string{"2", "/", "n", "o", "t", "e", "enter"}, want: []string{"esc=clear filter", "a=approve"}},
		{name: "tools/review", keys: []string{"2", "G", "enter"}, want: []string{"esc=back", "a=approve", "x=reject", "d=½ page down"}, off: []string{"enter", "/"}},
		{name: "tools/review native", keys: []string{"2", "down", "down", "enter"}, want: []string{"esc=back"}, off: []string{"a", "x", "enter"}},
		{name: "tools/reject dialog", keys: []string{"2", "x"}, want: []string{"enter=select", "esc=cancel", "tab=right"}, off: []string{"q", "1", "?", "a"}},
		{name: "collisions", keys: []string{"3"}, want: []string{"/=filter", "g=top"}, off: []string{"enter", "esc"}},
		{name: "sessions", keys: []string{"4"}, want: []string{"x=end session", "delete=end session", "k=up"}},
		{name: "sessions/none", setup: func(f *fakeConsole) { f.snap.Sessions = nil }, keys: []string{"4"}, off: []string{"x", "delete"}},
		{name: "sessions/end dialog", keys: []string{"4", "x"}, want: []string{"enter=select", "n=cancel"}, off: []string{"x", "q"}},
		{name: "approvals", keys: []string{"5"}, want: []string{"a=approve", "x=reject"}},
		{name: "approvals/none", setup: func(f *fakeConsole) { f.snap.Pending = nil }, keys: []string{"5"}, off: []string{"a", "x"}},
		{name: "activity", keys: []string{"6"}, want: []string{" =pause"}},
		{name: "activity/paused", keys: []string{"6", "space"}, want: []string{" =follow"}},
		{name: "activity/filtering", keys: []string{"6", "/"}, off: []string{" "}},
		{name: "policies", keys: []string{"7"}, want: []string{"t=dry run", "r=reload", "k=up", "7=policies", "tab=next pane"}, off: []string{"enter", "esc"}},
		{name: "policies/filtering", keys: []string{"7", "/"}, want: []string{"enter=keep filter"}, off: []string{"t", "r", "q"}},
		{name: "policies/dry run", keys: []string{"7", "t"}, want: []string{"enter=try", "tab=next field", "down=next field", "shift+tab=previous field", "ctrl+n=next tool", "esc=back", "ctrl+c=quit"},
			off: []string{"q", "1", "7", "r", "t", "?", "k", "/"}},
		{name: "help", keys: []string{"?"}, want: []string{"esc=close help", "?=close help", "q=quit"}, off: []string{"tab", "1", "r", "enter"}},
		{name: "quit dialog", keys: []string{"q"}, want: []string{"enter=select", "ctrl+c=quit"}, off: []string{"q"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			if tc.setup != nil {
				tc.setup(f)
			}
			if tc.hold {
				gate := make(chan struct{})
				f.planGate = gate
				t.Cleanup(func() { close(gate) })
			}
			m := ready(t, f, 100, 30)
			press(t, m, tc.keys...)
			active, bar := activeKeys(m)
			owner := map[string]string{} // key → description of its binding
			for _, b := range active {
				if !b.Enabled() {
					continue
				}
				for _, k := range b.Keys() {
					if other, ok := owner[k]; ok {
						t.Errorf("%q is both %q and %q", k, other, b.Help().Desc)
					}
					owner[k] = b.Help().Desc
				}
			}
			for _, b := range bar {
				if !b.Enabled() {
					continue
				}
				for _, k := range b.Keys() {
					if _, ok := owner[k]; !ok {
						t.Errorf("the key bar shows %q (%s), which does nothing here", k, b.Help().Desc)
					}
				}
			}
			for _, w := range tc.want {
				k, desc, _ := strings.Cut(w, "=")
				if got, ok := owner[k]; !ok || got != desc {
					t.Errorf("%q is %q, want %q", k, got, desc)
				}
			}
			for _, k := range tc.off {
				if desc, ok := owner[k]; ok {
					t.Errorf("%q is %q here, want it unbound", k, desc)
				}
			}
		})
	}
}
