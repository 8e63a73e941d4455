// Package connections is the console's view of upstream connections (UI-3):
// every account connected to an OAuth upstream, with its actor, scopes,
// expiry, last use and state, and revoke after a confirm. The Upstreams pane
// owns it: it opens the view and shows each upstream's summary from it.
//
// The list is read when the console subscribes, when the view opens and on
// r; connection.changed events keep it current in between. No token is
// ever held here: the gateway clears them before a connection crosses the
// console interface, and nothing here renders anything but the public
// fields.
package connections

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/tui/common"
	"github.com/toolgate/toolgate/tui/keys"
	"github.com/toolgate/toolgate/tui/table"
)

// Values carried by common.ResultMsg for the owning pane.
type (
	loadResult struct {
		List []core.Connection
		// Gen is the count of connection events when the read started.
		Gen uint64
	}
	revokeResult struct{ Conn core.Connection }
)

// Model is the connections view.
type Model struct {
	c     *common.Common
	pane  int
	table *table.Model
	list  []core.Connection
	// loaded: a read answered; err is the last read's failure.
	loaded bool
	err    string
	// gen counts connection events; a read that started before the last
	// one may miss it and is followed by another.
	gen     uint64
	loading bool
	nextID  uint64

	width, height int
}

// New returns the view; its console calls answer to pane.
func New(c *common.Common, pane int) *Model {
	cols := []table.Column{
		{Title: "ACTOR", Width: 12},
		{Title: "UPSTREAM", Width: 10},
		{Title: "SCOPES", Width: 18},
		{Title: "EXPIRES", Width: 9},
		{Title: "LAST USE", Width: 9},
		{Title: "STATE", Width: 10, Flex: true},
	}
	return &Model{c: c, pane: pane, table: table.New(c.Theme, c.Keys.List, cols, "Loading connections…")}
}

// SetSize gives the view its area: a title line, the table and a line
// about the selected connection.
func (m *Model) SetSize(w, h int) {
	m.width, m.height = w, h
	m.table.SetSize(w, max(h-2, 1))
}

// List is the connections known now.
func (m *Model) List() []core.Connection { return m.list }

// Loaded reports whether a read has answered.
func (m *Model) Loaded() bool { return m.loaded }

// Capturing is true while the filter reads text.
func (m *Model) Capturing() bool { return m.table.Filtering() }

// Load reads the connections in the background, without a spinner: it
// runs at every subscribe, and an empty list is the common answer.
func (m *Model) Load() tea.Cmd {
	m.loading = true
	ctx, con, pane, gen := m.c.Ctx, m.c.Console, m.pane, m.gen
	return func() tea.Msg {
		list, err := con.Connections(ctx)
		return common.ResultMsg{Pane: pane, Value: loadResult{List: list, Gen: gen}, Err: err}
	}
}

// Observe applies a connection.changed event; false for any other event.
func (m *Model) Observe(ev core.Event) bool {
	cc, ok := ev.Data.(core.ConnectionChanged)
	if !ok {
		return false
	}
	m.gen++
	c := cc.Connection
	c.Sealed = nil
	// Whatever the change, the connection of that id, and a connection it
	// replaced (a reconnect of the same actor), go.
	m.list = slices.DeleteFunc(slices.Clone(m.list), func(x core.Connection) bool {
		return x.ID == c.ID || cc.Change == "connected" && x.Upstream == c.Upstream && x.ActorID == c.ActorID
	})
	switch cc.Change {
	case "revoked", "disconnected":
	default: // connected, broken, or a change a newer gateway names
		m.list = append(m.list, c)
	}
	m.setRows()
	return true
}

// Result handles the answers to this view's calls; false for others.
func (m *Model) Result(r common.ResultMsg) (tea.Cmd, bool) {
	switch v := r.Value.(type) {
	case loadResult:
		m.loading = false
		if r.Err != nil {
			m.err = common.OneLine(r.Err.Error())
			m.table.SetEmpty("Cannot read the connections: " + m.err)
			return nil, true
		}
		m.loaded, m.err = true, ""
		m.list = v.List
		m.setRows()
		if v.Gen != m.gen {
			// An event came while reading: the answer may predate it.
			return m.Load(), true
		}
		return nil, true
	case revokeResult:
		if r.Err != nil {
			return common.Flash(fmt.Sprintf("%s failed: %v", r.Label, common.OneLine(r.Err.Error())), true), true
		}
		c := v.Conn
		m.list = slices.DeleteFunc(slices.Clone(m.list), func(x core.Connection) bool { return x.ID == c.ID })
		m.setRows()
		return common.Flash(fmt.Sprintf("revoked connection %s of %s on %s: their next call asks to connect again", c.ID, core.ActorLabel(c.ActorID), c.Upstream), false), true
	}
	return nil, false
}

func (m *Model) setRows() {
	slices.SortStableFunc(m.list, func(a, b core.Connection) int {
		return cmp.Or(cmp.Compare(a.Upstream, b.Upstream), cmp.Compare(a.ActorID, b.ActorID))
	})
	if m.err == "" {
		m.table.SetEmpty("No connections. An actor connects by following the link a call answers; a shared upstream is connected with `toolgate connect NAME`.")
	}
	th, now := m.c.Theme, m.c.Now()
	rows := make([]table.Row, len(m.list))
	for i, c := range m.list {
		state, style := "ok", th.OK
		if c.Broken != "" {
			state, style = "✖ broken: "+common.OneLine(c.Broken), th.Err
		}
		scopes := strings.Join(c.Scopes, " ")
		if scopes == "" {
			scopes = "—"
		}
		rows[i] = table.Row{Key: c.ID, Cells: []table.Cell{
			{Text: core.ActorLabel(c.ActorID)},
			{Text: c.Upstream},
			{Text: scopes},
			{Text: Expiry(now, c.Expiry)},
			{Text: lastUse(now, c.LastUsed)},
			{Text: state, Style: &style},
		}}
	}
	m.table.SetRows(rows)
}

// Tick re-renders the relative times.
func (m *Model) Tick() { m.setRows() }

// Expiry spells when an access token expires: "in 42m", "expired", or "—"
// when the server gave no expiry.
func Expiry(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := t.Sub(now)
	switch {
	case d <= 0:
		return "expired"
	case d < time.Minute:
		return fmt.Sprintf("in %ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("in %dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("in %dh", int(d.Hours()))
	}
	return fmt.Sprintf("in %dd", int(d.Hours()/24))
}

func lastUse(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return common.Ago(now, t)
}

// Summary is one upstream's connections at a glance.
type Summary struct {
	Count, Broken int
	// Soonest is the earliest expiry of its working connections; zero when
	// none has one.
	Soonest time.Time
}

// Summary counts upstream's connections.
func (m *Model) Summary(upstream string) Summary {
	var s Summary
	for _, c := range m.list {
		if c.Upstream != upstream {
			continue
		}
		s.Count++
		switch {
		case c.Broken != "":
			s.Broken++
		case !c.Expiry.IsZero() && (s.Soonest.IsZero() || c.Expiry.Before(s.Soonest)):
			s.Soonest = c.Expiry
		}
	}
	return s
}

func (m *Model) selected() (core.Connection, bool) {
	k, ok := m.table.SelectedKey()
	if !ok {
		return core.Connection{}, false
	}
	for _, c := range m.list {
		if c.ID == k {
			return c, true
		}
	}
	return core.Connection{}, false
}

// Keys is the view's bindings now: revoke needs a selected connection;
// none acts while the filter reads text.
func (m *Model) Keys() keys.ConnectionKeys {
	k := m.c.Keys.Connections
	if m.table.Filtering() {
		keys.Disable(&k.Revoke, &k.Reload, &k.Back)
		return k
	}
	if _, ok := m.selected(); !ok {
		k.Revoke.SetEnabled(false)
	}
	if m.table.Query() != "" {
		k.Back.SetEnabled(false) // esc clears the kept filter first
	}
	return k
}

// Update handles a key or message; back is true when the operator leaves
// the view.
func (m *Model) Update(msg tea.Msg) (cmd tea.Cmd, back bool) {
	if cmd, handled := m.table.Update(msg); handled {
		return cmd, false
	}
	if km, ok := msg.(tea.KeyMsg); ok {
		k := m.Keys()
		switch {
		case key.Matches(km, k.Back):
			return nil, true
		case key.Matches(km, k.Reload):
			return m.Load(), false
		case key.Matches(km, k.Revoke):
			return m.revoke(), false
		case keys.Pressed(km, k.Revoke):
			return common.Flash("no connection selected", true), false
		}
	}
	return nil, false
}

func (m *Model) revoke() tea.Cmd {
	c, ok := m.selected()
	if !ok {
		return nil
	}
	m.nextID++
	ctx, con, by, id := m.c.Ctx, m.c.Console, m.c.Operator, c.ID
	run := common.Call(m.pane, m.nextID, "revoking connection "+id, func() (any, error) {
		got, err := con.RevokeConnection(ctx, id, by)
		if got.ID == "" {
			got = c
		}
		got.Sealed = nil
		return revokeResult{Conn: got}, err
	})
	who := core.ActorLabel(c.ActorID) + "'s connection"
	if c.ActorID == core.SharedActor {
		who = "the shared connection"
	}
	return common.Ask("Revoke connection?",
		fmt.Sprintf("Revoke %s to %s (%s)? The gateway forgets its tokens and asks the authorization server to revoke them; the next call through it asks to connect again.", who, c.Upstream, id),
		"Revoke", run)
}

// ShortHelp is the view's key bar.
func (m *Model) ShortHelp() []key.Binding {
	k := m.Keys()
	return append([]key.Binding{k.Back, k.Revoke, k.Reload}, m.table.ShortHelp()...)
}

// FullHelp is every binding of the view now.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.Keys()
	return [][]key.Binding{{k.Back, k.Revoke, k.Reload}, m.table.Bindings()}
}

// View renders the title line, the table and the selected connection's id
// and state in full.
func (m *Model) View() string {
	th := m.c.Theme
	title := th.Section.Render("Upstream connections") + th.Muted.Render(fmt.Sprintf("  %d", len(m.list)))
	if m.loading && !m.loaded {
		title += th.Muted.Render(" · reading…")
	}
	foot := ""
	if c, ok := m.selected(); ok {
		foot = th.Muted.Render("id "+c.ID+" · connected "+common.Ago(m.c.Now(), c.CreatedAt)) + " "
		if c.Broken != "" {
			foot += th.Err.Render("broken: " + common.OneLine(c.Broken))
		}
	} else if m.err != "" {
		foot = th.Err.Render("cannot read the connections: " + m.err)
	}
	return common.Truncate(title, m.width) + "\n" + m.table.View() + "\n" + common.Truncate(foot, m.width)
}
