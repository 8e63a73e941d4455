// Package upstreams is the Upstreams pane (CO-1) with refresh-with-diff
// preview and confirm (CO-4), and, where the gateway has oauth upstreams,
// each one's credential scope and connections, and the connections view
// (UI-3).
package upstreams

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/tui/common"
	"github.com/toolgate/toolgate/tui/connections"
	"github.com/toolgate/toolgate/tui/keys"
	"github.com/toolgate/toolgate/tui/table"
	"github.com/toolgate/toolgate/tui/theme"
)

type mode int

const (
	modeList mode = iota
	modeDiff
	modeDetail
	modeConnections
)

// Values carried by common.ResultMsg for this pane.
type (
	planResult    struct{ Plan *core.RefreshPlan }
	applyResult   struct{ Diff core.Diff }
	refreshAllRes struct{ Diffs []core.Diff }
	pingResult    struct {
		Name    string
		Latency time.Duration
	}
)

// Model is the Upstreams pane.
type Model struct {
	c     *common.Common
	table *table.Model
	vp    viewport.Model

	ups    []core.UpstreamStatus
	loaded bool
	mode   mode
	detail string // upstream shown in modeDetail

	nextID uint64
	// planID is the refresh plan being waited for; 0 when none. A plan
	// that arrives with another id was cancelled or superseded.
	planID  uint64
	planFor string
	plan    *core.RefreshPlan
	applyID uint64

	// traffic is each upstream's recent calls, from the activity feed;
	// rowsMinute is the minute the list's traffic cells were counted up
	// to, so a tick redraws them when it passes.
	traffic    map[string]*traffic
	rowsMinute time.Time
	// sums caches each upstream's summary for the list within rowsMinute;
	// a call drops its upstream's.
	sums map[string]trafficSummary

	// cols are the list's columns that fit the width (layout).
	cols []listColumn

	// oauth is each oauth upstream's credential scope, by name; conns is
	// the connections view, whose list the list and detail summarise.
	oauth map[string]string
	conns *connections.Model

	width, height int
}

// New returns the pane.
func New(c *common.Common) *Model {
	vp := viewport.New(0, 0)
	vp.KeyMap = c.Keys.Scroll.Viewport()
	m := &Model{c: c, vp: vp, conns: connections.New(c, common.PaneUpstreams),
		table: table.New(c.Theme, c.Keys.List, nil, "Loading upstreams…")}
	m.layout()
	return m
}

// tableColumns are the table widget's columns for cols.
func tableColumns(cols []listColumn) []table.Column {
	out := make([]table.Column, len(cols))
	for i, c := range cols {
		out[i] = c.col
	}
	return out
}

// col names a column of the list.
type col int

const (
	colName col = iota
	colTransport
	colState
	colTools
	colCalls
	colTrend
	colErrors
	colP95
	colLatency
	colServer
	colOAuth
	colLastError
)

// listColumn is a column of the list with its rank: when the pane is too
// narrow for every column, the lowest rank gives way first. NAME, STATE and
// LAST ERROR (rank 0) always stay; everything a column gives up is in the
// detail view.
type listColumn struct {
	id   col
	col  table.Column
	rank int
}

// listColumns are the list's columns, left to right. The order in which
// they give way (lowest rank first): SERVER, TRANSPORT, LATENCY (the last
// ping or connect, where P95 tells more about calls), TREND, P95, OAUTH,
// ERRORS, CALLS/MIN, TOOLS. At 100 columns the traffic columns and the
// sparkline fit beside the state and the last error; at 80 calls/min,
// errors and p95 stay.
var listColumns = []listColumn{
	{colName, table.Column{Title: "NAME", Width: 12}, 0},
	{colTransport, table.Column{Title: "TRANSPORT", Width: 9}, 2},
	{colState, table.Column{Title: "STATE", Width: 14}, 0},
	{colTools, table.Column{Title: "TOOLS", Width: 5}, 10},
	{colCalls, table.Column{Title: "CALLS/MIN", Width: 9}, 9},
	{colTrend, table.Column{Title: "TREND", Width: listTrendMinutes}, 4},
	{colErrors, table.Column{Title: "ERRORS", Width: 6}, 8},
	{colP95, table.Column{Title: "P95", Width: 6}, 6},
	{colLatency, table.Column{Title: "LATENCY", Width: 7}, 3},
	{colServer, table.Column{Title: "SERVER", Width: 16}, 1},
	{colOAuth, table.Column{Title: "OAUTH", Width: 11}, 7},
	{colLastError, table.Column{Title: "LAST ERROR", Width: 1, Flex: true}, 0},
}

// minLastError is the room LAST ERROR keeps: other columns give way
// before it gets less.
const minLastError = 12

// fitColumns chooses the columns that fit width, in listColumns' order:
// OAUTH only where the gateway has oauth upstreams, then, while the fixed
// columns leave LAST ERROR less than minLastError cells, the lowest-ranked
// column left gives way.
func fitColumns(width int, oauth bool) []listColumn {
	cols := make([]listColumn, 0, len(listColumns))
	used := 2 // the cursor
	for _, c := range listColumns {
		if c.id == colOAuth && !oauth {
			continue
		}
		cols = append(cols, c)
		if !c.col.Flex {
			used += c.col.Width + 1
		}
	}
	for used+minLastError > width {
		drop := -1
		for i, c := range cols {
			if c.rank > 0 && (drop < 0 || c.rank < cols[drop].rank) {
				drop = i
			}
		}
		if drop < 0 {
			break
		}
		used -= cols[drop].col.Width + 1
		cols = slices.Delete(cols, drop, drop+1)
	}
	return cols
}

// SetOAuth sets the oauth upstreams' credential scopes, from the gateway's
// details, and reads their connections.
func (m *Model) SetOAuth(scopes map[string]string) tea.Cmd {
	m.oauth = scopes
	m.layout()
	return m.LoadConnections()
}

// LoadConnections reads the connections again (a fresh view of the
// gateway); nothing when it has no oauth upstream.
func (m *Model) LoadConnections() tea.Cmd {
	if len(m.oauth) == 0 {
		return nil
	}
	return m.conns.Load()
}

// Connections is the connections view.
func (m *Model) Connections() *connections.Model { return m.conns }

// oauthCell summarises an upstream's connections for the list: its scope
// and count, and how many are broken.
func (m *Model) oauthCell(name string) string {
	scope, ok := m.oauth[name]
	if !ok {
		return ""
	}
	if scope == "perActor" {
		scope = "actor"
	}
	if !m.conns.Loaded() {
		return scope
	}
	s := m.conns.Summary(name)
	cell := fmt.Sprintf("%s %d", scope, s.Count)
	if s.Broken > 0 {
		cell += fmt.Sprintf(" ✖%d", s.Broken)
	}
	return cell
}

func (m *Model) Init() tea.Cmd { return nil }

func (m *Model) Title() string { return "Upstreams" }

func (m *Model) Count() int { return len(m.ups) }

func (m *Model) Capturing() bool {
	return m.mode == modeList && m.table.Filtering() || m.mode == modeConnections && m.conns.Capturing()
}

// SetSize lays the pane out.
func (m *Model) SetSize(w, h int) {
	m.width, m.height = w, h
	m.vp.Width, m.vp.Height = w, max(h-1, 1)
	m.conns.SetSize(w, h)
	m.layout()
	m.refreshView()
}

// layout is the pane's one resize path: the list's columns that fit the
// width (fitColumns), the table sized to the pane, and the rows, whose
// cells follow the columns, rebuilt when the columns changed.
func (m *Model) layout() {
	cols := fitColumns(m.width, len(m.oauth) > 0)
	changed := !slices.EqualFunc(cols, m.cols, func(a, b listColumn) bool { return a.id == b.id })
	m.cols = cols
	if changed {
		m.table.SetColumns(tableColumns(cols))
	}
	m.table.SetSize(m.width, m.height)
	if changed && m.loaded {
		m.setRows()
	}
}

// SetUpstreams replaces the upstream list.
func (m *Model) SetUpstreams(ups []core.UpstreamStatus) {
	m.ups = ups
	m.loaded = true
	m.table.SetEmpty("No upstreams configured.")
	m.setRows()
	if m.mode == modeDetail {
		m.refreshView()
	}
}

// setRows builds the list's rows for the columns that fit, the traffic
// counted up to now.
func (m *Model) setRows() {
	now := m.c.Now()
	if minute := now.Truncate(time.Minute); !minute.Equal(m.rowsMinute) {
		m.rowsMinute, m.sums = minute, nil // every window moved
	}
	traffic := m.needsTraffic()
	rows := make([]table.Row, 0, len(m.ups))
	for _, u := range m.ups {
		var tr trafficSummary
		if traffic {
			tr = m.cachedSummary(u.Name, now)
		}
		cells := make([]table.Cell, len(m.cols))
		for i, c := range m.cols {
			cells[i] = m.cell(c.id, u, tr)
		}
		rows = append(rows, table.Row{Key: u.Name, Cells: cells})
	}
	m.table.SetRows(rows)
}

// needsTraffic reports whether a traffic column is shown.
func (m *Model) needsTraffic() bool {
	for _, c := range m.cols {
		switch c.id {
		case colCalls, colTrend, colErrors, colP95:
			return true
		}
	}
	return false
}

// cell is u's cell in column id; tr is its traffic. Styles point into the
// theme, built once.
func (m *Model) cell(id col, u core.UpstreamStatus, tr trafficSummary) table.Cell {
	th := m.c.Theme
	switch id {
	case colName:
		return table.Cell{Text: u.Name}
	case colTransport:
		return table.Cell{Text: u.Transport}
	case colState:
		glyph, st := th.State(u.State)
		return table.Cell{Text: glyph + " " + string(u.State), Style: &st}
	case colTools:
		if u.State != core.StateConnected && u.Tools == 0 {
			return table.Cell{Text: "—"}
		}
		return table.Cell{Text: fmt.Sprint(u.Tools)}
	case colCalls:
		return table.Cell{Text: tr.rateText()}
	case colTrend:
		return table.Cell{Text: tr.trend(), Style: &th.Muted}
	case colErrors:
		if tr.errors > 0 {
			return table.Cell{Text: tr.errorText(), Style: &th.Err}
		}
		return table.Cell{Text: tr.errorText()}
	case colP95:
		return table.Cell{Text: common.Duration(tr.p95)}
	case colLatency:
		return table.Cell{Text: common.Duration(u.Latency)}
	case colServer:
		server := u.Server.Version
		if u.Server.Protocol != "" {
			server = strings.TrimSpace(server + " " + u.Server.Protocol)
		}
		if server == "" {
			server = "—"
		}
		return table.Cell{Text: server}
	case colOAuth:
		return table.Cell{Text: m.oauthCell(u.Name)}
	case colLastError:
		return table.Cell{Text: u.LastError, Style: &th.Err}
	}
	return table.Cell{}
}

// Counting reports whether an upstream waits for its next attempt, or has
// calls in the traffic window, so the console keeps a tick running for the
// countdown and for the traffic columns, which age by the minute.
func (m *Model) Counting() bool {
	for _, u := range m.ups {
		if !u.NextAttempt.IsZero() {
			return true
		}
	}
	cut := m.c.Now().Truncate(time.Minute).Add(-trafficMinutes * time.Minute)
	for _, t := range m.traffic {
		if n := len(t.minutes); n > 0 && t.minutes[n-1].start.After(cut) {
			return true
		}
	}
	return false
}

// Tick re-renders the countdown of the upstream shown in detail, and the
// list's traffic columns when a minute has passed since they were counted.
func (m *Model) Tick() {
	switch m.mode {
	case modeDetail:
		m.refreshView()
	case modeConnections:
		m.conns.Tick()
	}
	if m.loaded && m.needsTraffic() && !m.c.Now().Truncate(time.Minute).Equal(m.rowsMinute) {
		m.setRows()
	}
}

func (m *Model) selected() (core.UpstreamStatus, bool) {
	k, ok := m.table.SelectedKey()
	if !ok {
		return core.UpstreamStatus{}, false
	}
	for _, u := range m.ups {
		if u.Name == k {
			return u, true
		}
	}
	return core.UpstreamStatus{}, false
}

func (m *Model) id() uint64 {
	m.nextID++
	return m.nextID
}

// Update handles keys and the results of this pane's console calls.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case common.ResultMsg:
		return m, m.result(msg)
	case tea.KeyMsg:
		return m, m.key(msg)
	}
	if m.mode == modeConnections {
		cmd, _ := m.conns.Update(msg)
		return m, cmd
	}
	if m.mode == modeList {
		cmd, _ := m.table.Update(msg)
		return m, cmd
	}
	return m, nil
}

func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	k := m.keys()
	switch m.mode {
	case modeConnections:
		cmd, back := m.conns.Update(msg)
		if back {
			m.mode = modeList
		}
		return cmd
	case modeDiff:
		switch {
		case key.Matches(msg, k.Back):
			cancel := m.cancelPlan()
			m.mode, m.plan, m.planID = modeList, nil, 0
			return tea.Batch(cancel, common.Flash("refresh cancelled: nothing changed", false))
		case key.Matches(msg, k.Apply): // off until the plan is there
			return m.apply()
		default:
			m.vp, _ = m.vp.Update(msg)
		}
		return nil
	case modeDetail:
		switch {
		case key.Matches(msg, k.Back):
			m.mode = modeList
		case key.Matches(msg, k.Refresh):
			return m.planRefresh()
		case key.Matches(msg, k.Ping):
			return m.ping()
		case key.Matches(msg, k.Connections):
			return m.openConnections()
		default:
			m.vp, _ = m.vp.Update(msg)
		}
		return nil
	}
	if cmd, handled := m.table.Update(msg); handled {
		return cmd
	}
	switch {
	case key.Matches(msg, k.RefreshAll):
		return m.refreshAll()
	case key.Matches(msg, k.Refresh):
		return m.planRefresh()
	case key.Matches(msg, k.Ping):
		return m.ping()
	case key.Matches(msg, k.Connections):
		return m.openConnections()
	case key.Matches(msg, k.Details):
		if u, ok := m.selected(); ok {
			m.mode, m.detail = modeDetail, u.Name
			m.refreshView()
			m.vp.GotoTop()
		}
	case keys.Pressed(msg, k.Connections):
		return common.Flash("no upstream has oauth: there are no connections to show", true)
	case keys.Pressed(msg, k.Refresh, k.Ping, k.Details):
		return common.Flash("no upstream selected", true)
	}
	return nil
}

// openConnections shows the connections view, read afresh (last use
// changes without an event).
func (m *Model) openConnections() tea.Cmd {
	m.mode = modeConnections
	return m.conns.Load()
}

// keys is the pane's bindings in its mode. The list's actions need a
// selected upstream; the detail view keeps refresh and ping; the preview
// applies once the plan is there (until then the spinner and the view say
// it is listing).
func (m *Model) keys() keys.UpstreamKeys {
	k := m.c.Keys.Upstreams
	if len(m.oauth) == 0 {
		k.Connections.SetEnabled(false)
	}
	switch m.mode {
	case modeConnections:
		keys.Disable(&k.Refresh, &k.RefreshAll, &k.Ping, &k.Details, &k.Apply, &k.Back, &k.Connections)
	case modeDiff:
		keys.Disable(&k.Refresh, &k.RefreshAll, &k.Ping, &k.Details, &k.Connections)
		k.Apply.SetEnabled(m.plan != nil)
		k.Back.SetHelp("esc", "cancel")
	case modeDetail:
		keys.Disable(&k.RefreshAll, &k.Details, &k.Apply)
	default:
		keys.Disable(&k.Apply, &k.Back)
		if m.table.Filtering() {
			keys.Disable(&k.RefreshAll, &k.Connections)
		}
		if _, ok := m.selected(); !ok || m.table.Filtering() {
			keys.Disable(&k.Refresh, &k.Ping, &k.Details)
		}
	}
	return k
}

func (m *Model) ping() tea.Cmd {
	u, ok := m.selected()
	if !ok {
		return nil
	}
	ctx, con, name := m.c.Ctx, m.c.Console, u.Name
	return common.Call(common.PaneUpstreams, m.id(), "pinging "+name, func() (any, error) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		d, err := con.Ping(ctx, name)
		return pingResult{Name: name, Latency: d}, err
	})
}

func (m *Model) planRefresh() tea.Cmd {
	u, ok := m.selected()
	if !ok {
		return nil
	}
	id := m.id()
	m.mode, m.planID, m.planFor, m.plan = modeDiff, id, u.Name, nil
	m.refreshView()
	ctx, con, name := m.c.Ctx, m.c.Console, u.Name
	return common.Call(common.PaneUpstreams, id, "listing "+name, func() (any, error) {
		p, err := con.PlanRefresh(ctx, name)
		return planResult{Plan: &p}, err
	})
}

// cancelPlan tells the gateway to forget the plan on screen, so it does not
// hold a listing nobody will apply. A failure is not the operator's concern:
// the gateway expires plans by itself.
func (m *Model) cancelPlan() tea.Cmd {
	if m.plan == nil {
		return nil
	}
	ctx, con, id := m.c.Ctx, m.c.Console, m.plan.ID
	return func() tea.Msg {
		_ = con.CancelRefresh(ctx, id)
		return nil
	}
}

func (m *Model) apply() tea.Cmd {
	plan := m.plan
	id := m.id()
	m.applyID = id
	m.mode, m.plan, m.planID = modeList, nil, 0
	ctx, con := m.c.Ctx, m.c.Console
	return common.Call(common.PaneUpstreams, id, "applying refresh of "+plan.Diff.Upstream, func() (any, error) {
		d, err := con.ApplyRefresh(ctx, plan.ID)
		return applyResult{Diff: d}, err
	})
}

func (m *Model) refreshAll() tea.Cmd {
	ctx, con := m.c.Ctx, m.c.Console
	return common.Call(common.PaneUpstreams, m.id(), "refreshing all upstreams", func() (any, error) {
		ds, err := con.RefreshAll(ctx)
		return refreshAllRes{Diffs: ds}, err
	})
}

func (m *Model) result(r common.ResultMsg) tea.Cmd {
	if cmd, ok := m.conns.Result(r); ok {
		m.SetUpstreams(m.ups)
		return cmd
	}
	switch v := r.Value.(type) {
	case planResult:
		if r.ID != m.planID {
			return nil // cancelled or superseded: stale
		}
		if r.Err != nil {
			m.mode, m.planID = modeList, 0
			return common.Flash(fmt.Sprintf("refresh of %s failed: %v (nothing changed)", m.planFor, r.Err), true)
		}
		m.plan = v.Plan
		m.refreshView()
		m.vp.GotoTop()
	case applyResult:
		if r.ID != m.applyID {
			return nil
		}
		if r.Err != nil {
			return common.Flash(fmt.Sprintf("refresh failed: %v", r.Err), true)
		}
		return common.Flash(fmt.Sprintf("refresh of %s applied: %s", v.Diff.Upstream, Summary(v.Diff)), false)
	case refreshAllRes:
		var parts []string
		for _, d := range v.Diffs {
			if !d.Empty() {
				parts = append(parts, d.Upstream+": "+Summary(d))
			}
		}
		text := "refreshed all upstreams: no changes"
		if len(parts) > 0 {
			text = "refreshed all upstreams: " + strings.Join(parts, "; ")
		}
		if r.Err != nil {
			return common.Flash(text+" — "+common.OneLine(r.Err.Error()), true)
		}
		return common.Flash(text, false)
	case pingResult:
		if r.Err != nil {
			return common.Flash(fmt.Sprintf("ping %s failed: %v", v.Name, r.Err), true)
		}
		return common.Flash(fmt.Sprintf("ping %s: %s", v.Name, common.Duration(v.Latency)), false)
	}
	return nil
}

// Summary counts what a diff changes.
func Summary(d core.Diff) string { return d.Summary() }

func (m *Model) refreshView() {
	switch m.mode {
	case modeDiff:
		if m.plan == nil {
			m.vp.SetContent(m.c.Theme.Muted.Render(fmt.Sprintf("Listing %s's tools… (esc cancels)", m.planFor)))
			return
		}
		m.vp.SetContent(RenderDiff(m.c.Theme, m.plan.Diff, m.width))
	case modeDetail:
		m.vp.SetContent(m.renderDetail())
	}
}

func (m *Model) renderDetail() string {
	th := m.c.Theme
	var u core.UpstreamStatus
	found := false
	for _, x := range m.ups {
		if x.Name == m.detail {
			u, found = x, true
		}
	}
	if !found {
		return th.Muted.Render(m.detail + " is no longer configured.")
	}
	glyph, st := th.State(u.State)
	line := func(label, value string) string {
		return th.Label.Render(common.Pad(label, 12)) + " " + value
	}
	lines := []string{
		th.Section.Render("Upstream " + u.Name),
		line("state", st.Render(glyph+" "+string(u.State))),
		line("transport", u.Transport),
		line("required", fmt.Sprint(u.Required)),
		line("tools", fmt.Sprint(u.Tools)),
		line("latency", common.Duration(u.Latency)),
		line("server", strings.TrimSpace(u.Server.Name+" "+u.Server.Version)),
		line("protocol", u.Server.Protocol),
	}
	if u.LastError != "" {
		at := ""
		if !u.LastErrorAt.IsZero() {
			at = " (" + common.Ago(m.c.Now(), u.LastErrorAt) + ")"
		}
		lines = append(lines, line("last error", th.Err.Render(u.LastError)+th.Muted.Render(at)))
	}
	if !u.NextAttempt.IsZero() {
		lines = append(lines, line("next attempt", "in "+common.Countdown(m.c.Now(), u.NextAttempt)+th.Muted.Render(" · retrying in the background")))
	}
	if scope, ok := m.oauth[u.Name]; ok {
		lines = append(lines, m.oauthLines(u.Name, scope, line)...)
	}
	lines = append(lines, m.trafficLines(u.Name, m.c.Now(), line)...)
	return lipgloss.NewStyle().Width(max(m.width, 10)).Render(strings.Join(lines, "\n"))
}

// oauthLines are an oauth upstream's credential scope and its connections
// in the detail view (UI-2, UI-3).
func (m *Model) oauthLines(name, scope string, line func(label, value string) string) []string {
	th := m.c.Theme
	what := th.Muted.Render(" · each actor connects their own account")
	if scope == "shared" {
		what = th.Muted.Render(" · one account for every actor, connected by an operator")
	}
	out := []string{line("credentials", scope+what)}
	if !m.conns.Loaded() {
		return append(out, line("connections", th.Muted.Render("not read yet")))
	}
	s := m.conns.Summary(name)
	conns := fmt.Sprint(s.Count)
	if s.Broken > 0 {
		conns += " · " + th.Err.Render(fmt.Sprintf("%d broken", s.Broken))
	}
	if !s.Soonest.IsZero() {
		conns += " · soonest expiry " + connections.Expiry(m.c.Now(), s.Soonest)
	}
	if k := m.keys().Connections; k.Enabled() {
		conns += th.Muted.Render(" · " + k.Help().Key + " lists them")
	}
	return append(out, line("connections", conns))
}

// RenderDiff renders a refresh's diff (IM-26) for the operator to confirm
// (CO-4); removals and changed descriptions are highlighted.
func RenderDiff(th *theme.Theme, d core.Diff, width int) string {
	return renderDiff(th, d, width)
}

func (m *Model) ShortHelp() []key.Binding {
	k, sk := m.keys(), m.c.Keys.Scroll
	switch m.mode {
	case modeConnections:
		return m.conns.ShortHelp()
	case modeDiff:
		return []key.Binding{k.Apply, k.Back, sk.Up, sk.Down}
	case modeDetail:
		return []key.Binding{k.Back, k.Refresh, k.Ping, k.Connections, sk.Up, sk.Down}
	}
	return append([]key.Binding{k.Refresh, k.RefreshAll, k.Ping, k.Details, k.Connections}, m.table.ShortHelp()...)
}

func (m *Model) FullHelp() [][]key.Binding {
	k, sk := m.keys(), m.c.Keys.Scroll
	switch m.mode {
	case modeConnections:
		return m.conns.FullHelp()
	case modeDiff:
		return [][]key.Binding{{k.Apply, k.Back}, sk.Bindings()}
	case modeDetail:
		return [][]key.Binding{{k.Back, k.Refresh, k.Ping, k.Connections}, sk.Bindings()}
	}
	return [][]key.Binding{{k.Refresh, k.RefreshAll, k.Ping, k.Details, k.Connections}, m.table.Bindings()}
}

// View renders the pane.
func (m *Model) View() string {
	th, k := m.c.Theme, m.keys()
	switch m.mode {
	case modeConnections:
		return m.conns.View()
	case modeDiff:
		hint := k.Back.Help().Key + " cancels"
		if k.Apply.Enabled() {
			hint = k.Apply.Help().Key + " applies · " + hint
		}
		title := th.Section.Render("Refresh preview: "+m.planFor) + th.Muted.Render("  "+hint)
		return common.Truncate(title, m.width) + "\n" + m.vp.View()
	case modeDetail:
		return common.Truncate(th.Muted.Render(common.Hint(k.Back)), m.width) + "\n" + m.vp.View()
	}
	return m.table.View()
}
