// Package tui is toolgate's console (CO-1 … CO-9 in docs/behaviour.md): a
// Bubble Tea program over a core.Console. The root model owns the state (a
// snapshot kept current from the event subscription), the header with the
// pending-approvals badge, the tabs, the confirm dialog, the status line and
// the key bar; each pane is a widget package of its own.
//
// The update loop never blocks: every Console call runs in a command, live
// updates come from one command that reads the next event and is re-issued
// only from its own handler, and results carry the id of who asked so stale
// ones are dropped.
package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/tui/activity"
	"github.com/toolgate/toolgate/tui/approvals"
	"github.com/toolgate/toolgate/tui/collisions"
	"github.com/toolgate/toolgate/tui/common"
	"github.com/toolgate/toolgate/tui/dialog"
	"github.com/toolgate/toolgate/tui/keys"
	"github.com/toolgate/toolgate/tui/policies"
	"github.com/toolgate/toolgate/tui/sessions"
	"github.com/toolgate/toolgate/tui/theme"
	"github.com/toolgate/toolgate/tui/tools"
	"github.com/toolgate/toolgate/tui/upstreams"
)

// FlashDuration is how long a status message stays.
const FlashDuration = 5 * time.Second

// ReviewsDelay debounces re-reading review states after tools change.
const ReviewsDelay = 500 * time.Millisecond

// SubscribeRetry is how long an attached console waits before subscribing
// again when it could not.
const SubscribeRetry = 2 * time.Second

// Options configure the console; zero fields take defaults.
type Options struct {
	Console core.Console
	// Operator is recorded as who approved or rejected (default "console").
	Operator string
	// Now is the clock (default time.Now); tests fix it.
	Now func() time.Time
	// Context bounds console calls; it is cancelled when the model closes.
	Context context.Context
	// Theme defaults to theme.New().
	Theme *theme.Theme
	// Attached is the admin URL of the gateway in another process the
	// console is attached to (CO-9); empty for an in-process gateway. The
	// header shows it, and quitting leaves that gateway running.
	Attached string
}

// Messages of the root model.
type (
	subscribedMsg struct {
		info core.ConsoleInfo
		snap core.Snapshot
		sub  core.Subscription
	}
	eventMsg    core.Event
	resyncedMsg struct {
		snap core.Snapshot
		info *core.ConsoleInfo // re-read after a lost link; nil otherwise
	}
	// resyncFailedMsg: Resync failed while the link is down; the
	// subscription delivers Resync again once it is back.
	resyncFailedMsg struct{ lost core.ConnectionLost }
	subClosedMsg    struct{ err error } // err nil: the gateway ended the stream
	// retrySubscribeMsg runs the subscription again (attached consoles).
	retrySubscribeMsg struct{ init tea.Cmd }
	tickMsg           time.Time
	clearFlashMsg     struct{ id uint64 }
	reviewsTickMsg    struct{ gen uint64 }
	reviewsMsg        struct {
		gen     uint64
		reviews map[string]core.ReviewState
		// entries are the upstreams' prompts and resources; nil when they
		// could not be read (the last ones stay).
		entries []core.ReviewEntry
	}
)

// Model is the root model.
type Model struct {
	c        *common.Common
	cancel   context.CancelFunc
	guard    *linkGuard
	attached string

	info      core.ConsoleInfo
	sub       core.Subscription
	state     core.Snapshot
	loaded    bool
	closed    bool
	closedErr error // why the stream could not be read, if it was not the gateway ending it
	// lost is set from a ConnectionLost until the Resync after it: the
	// view is not live, and actions are refused (linkGuard).
	lost *core.ConnectionLost

	panes     [common.NumPanes]common.Pane
	upstreams *upstreams.Model
	tools     *tools.Model
	colls     *collisions.Model
	sessions  *sessions.Model
	approvals *approvals.Model
	activity  *activity.Model
	policies  *policies.Model
	active    int

	dialog   *dialog.Model
	showHelp bool
	help     help.Model
	spin     spinner.Model
	inflight int
	busy     string
	flash    string
	flashErr bool
	flashID  uint64
	ticking  bool
	revGen   uint64

	width, height int
	headerH       int
	bodyH         int
}

// New builds the console model. Nothing is read from the console until the
// program runs Init.
func New(o Options) *Model {
	if o.Operator == "" {
		o.Operator = "console"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	if o.Theme == nil {
		o.Theme = theme.New()
	}
	ctx, cancel := context.WithCancel(o.Context)
	guard := &linkGuard{Console: o.Console}
	c := &common.Common{Ctx: ctx, Console: guard, Theme: o.Theme, Keys: keys.Default(), Operator: o.Operator, Now: o.Now}
	m := &Model{c: c, cancel: cancel, guard: guard, attached: o.Attached, help: help.New(), spin: spinner.New(spinner.WithSpinner(spinner.MiniDot), spinner.WithStyle(c.Theme.Spinner))}
	m.help.Styles.ShortKey = c.Theme.Bold
	m.help.Styles.ShortDesc = c.Theme.KeyBar
	m.help.Styles.FullKey = c.Theme.Bold
	m.help.Styles.FullDesc = c.Theme.KeyBar
	m.upstreams = upstreams.New(c)
	m.tools = tools.New(c)
	m.colls = collisions.New(c)
	m.sessions = sessions.New(c)
	m.approvals = approvals.New(c)
	m.activity = activity.New(c)
	m.policies = policies.New(c)
	m.panes = [common.NumPanes]common.Pane{m.upstreams, m.tools, m.colls, m.sessions, m.approvals, m.activity, m.policies}
	m.width, m.height = 80, 24
	m.layout()
	return m
}

// Close ends the subscription and cancels console calls in flight.
func (m *Model) Close() {
	m.cancel()
	if m.sub != nil {
		m.sub.Close()
	}
}

// Active is the index of the active pane.
func (m *Model) Active() int { return m.active }

// Dialog is the open confirm dialog, or nil.
func (m *Model) Dialog() *dialog.Model { return m.dialog }

// Snapshot is the console's current view of the gateway.
func (m *Model) Snapshot() core.Snapshot { return m.state }

// Tools is the Tools pane.
func (m *Model) Tools() *tools.Model { return m.tools }

// Activity is the Activity pane.
func (m *Model) Activity() *activity.Model { return m.activity }

// Policies is the Policies pane.
func (m *Model) Policies() *policies.Model { return m.policies }

// Flash is the status message shown now.
func (m *Model) Flash() string { return m.flash }

// Lost is the link's failure while the console is disconnected from the
// gateway it is attached to, or nil.
func (m *Model) Lost() *core.ConnectionLost { return m.lost }

// Init subscribes to the gateway.
func (m *Model) Init() tea.Cmd {
	ctx, con := m.c.Ctx, m.c.Console
	return func() tea.Msg {
		snap, sub, err := con.Subscribe(ctx)
		if err != nil {
			return subClosedMsg{err: err}
		}
		info, err := con.Info(ctx)
		if err != nil {
			sub.Close()
			return subClosedMsg{err: err}
		}
		return subscribedMsg{info: info, snap: snap, sub: sub}
	}
}

// waitEvent reads the next event. It is issued once the subscription is
// there and re-issued only from the eventMsg handler, so events stay in
// order.
func waitEvent(sub core.Subscription) tea.Cmd {
	return func() tea.Msg {
		ev, ok := <-sub.C()
		if !ok {
			return subClosedMsg{}
		}
		return eventMsg(ev)
	}
}

// resync reads the fresh snapshot after a Resync event; after a lost link
// (reread) it reads the gateway's details again too, since the gateway
// there now may have been restarted with another config.
func resync(ctx context.Context, con core.Console, sub core.Subscription, reread bool) tea.Cmd {
	return func() tea.Msg {
		snap, err := sub.Resync(ctx)
		var ll lostLink
		switch {
		case errors.As(err, &ll) && ctx.Err() == nil:
			return resyncFailedMsg{lost: ll.ConnectionLost()}
		case err != nil:
			return subClosedMsg{err: err}
		}
		msg := resyncedMsg{snap: snap}
		if reread {
			if info, err := con.Info(ctx); err == nil {
				msg.info = &info
			}
		}
		return msg
	}
}

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Update is the root update: global keys first, sizes to every pane, results
// to the pane that asked, everything else to the active pane.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layout()
		return m, nil
	case tea.KeyMsg:
		return m, m.key(msg)
	case subscribedMsg:
		if m.lost != nil {
			m.setLost(nil)
		}
		m.info, m.sub = msg.info, msg.sub
		m.setSnapshot(msg.snap)
		m.layout()
		return m, tea.Batch(waitEvent(m.sub), m.setParts(partAll), m.askReviews(), m.reloadPolicies(), m.upstreams.SetOAuth(m.info.OAuth))
	case eventMsg:
		return m, tea.Batch(m.event(core.Event(msg)), m.nextEvent(core.Event(msg)))
	case resyncedMsg:
		// The fresh snapshot replaces the whole view; after a lost link
		// the banner goes with it.
		var cmds []tea.Cmd
		if m.lost != nil {
			m.setLost(nil)
			m.activity.Reconnected(m.c.Now())
			cmds = append(cmds, m.setFlash("reconnected to the gateway", false))
		}
		if msg.info != nil {
			m.info = *msg.info
		}
		m.setSnapshot(msg.snap)
		m.layout()
		// Connections are not in the snapshot: read again, with the
		// oauth upstreams of the gateway there now.
		cmds = append(cmds, m.setParts(partAll), waitEvent(m.sub), m.askReviews(), m.reloadPolicies(), m.upstreams.SetOAuth(m.info.OAuth))
		return m, tea.Batch(cmds...)
	case resyncFailedMsg:
		if m.lost == nil {
			m.activity.Add(core.Event{Time: m.c.Now(), Data: msg.lost})
		}
		m.setLost(&msg.lost)
		return m, tea.Batch(waitEvent(m.sub), m.ensureTick())
	case subClosedMsg:
		if m.attached != "" && m.sub == nil && msg.err != nil && m.c.Ctx.Err() == nil {
			// An attached console that could not subscribe (the gateway
			// went away since it was checked) keeps trying, like a lost
			// link, instead of showing a screen that never updates.
			m.setLost(&core.ConnectionLost{Error: msg.err.Error(), Retry: m.c.Now().Add(SubscribeRetry)})
			init := m.Init()
			return m, tea.Batch(m.ensureTick(), tea.Tick(SubscribeRetry, func(time.Time) tea.Msg { return retrySubscribeMsg{init} }))
		}
		m.closed, m.closedErr = true, msg.err
		return m, nil
	case retrySubscribeMsg:
		return m, msg.init
	case tickMsg:
		m.ticking = false
		m.approvals.Tick()
		m.sessions.Tick()
		m.upstreams.Tick()
		m.policies.Tick()
		return m, m.ensureTick()
	case reviewsTickMsg:
		if msg.gen != m.revGen || m.sub == nil {
			return m, nil
		}
		console, gen := m.c.Console, msg.gen
		ctx := m.c.Ctx
		return m, func() tea.Msg {
			reviews, err := console.ReviewStates(ctx)
			if err != nil {
				return nil // the next tool event asks again
			}
			// Prompts and resources have no events of their own: they
			// are read with the states.
			entries, err := console.ReviewEntries(ctx)
			if err == nil && entries == nil {
				entries = []core.ReviewEntry{}
			}
			return reviewsMsg{gen: gen, reviews: reviews, entries: entries}
		}
	case reviewsMsg:
		if msg.gen != m.revGen {
			return m, nil // tools changed again: a later read follows
		}
		m.state.Reviews = msg.reviews
		m.tools.SetReviews(msg.reviews)
		if msg.entries != nil {
			m.tools.SetEntries(msg.entries)
		}
		return m, nil
	case common.FlashMsg:
		return m, m.setFlash(msg.Text, msg.Err)
	case clearFlashMsg:
		if msg.id == m.flashID {
			m.flash, m.flashErr = "", false
		}
		return m, nil
	case common.AskMsg:
		m.dialog = dialog.New(m.c.Theme, m.c.Keys.Dialog, msg.Title, msg.Prompt, msg.Confirm, msg.Then)
		m.dialog.SetWidth(m.width)
		return m, nil
	case common.StartMsg:
		m.inflight++
		m.busy = msg.Label
		if m.inflight == 1 {
			return m, m.spin.Tick
		}
		return m, nil
	case spinner.TickMsg:
		if m.inflight <= 0 {
			return m, nil
		}
		var cmd tea.Cmd
		m.spin, cmd = m.spin.Update(msg)
		return m, cmd
	case common.ResultMsg:
		if msg.Label != "" {
			m.inflight = max(m.inflight-1, 0)
		}
		if msg.Pane < 0 || msg.Pane >= common.NumPanes {
			return m, nil
		}
		_, cmd := m.panes[msg.Pane].Update(msg)
		return m, cmd
	}
	_, cmd := m.panes[m.active].Update(msg)
	return m, cmd
}

// nextEvent decides what follows an event: the next read, or on Resync a
// fresh snapshot (whose handler then resumes reading).
func (m *Model) nextEvent(ev core.Event) tea.Cmd {
	if _, ok := ev.Data.(core.Resync); ok {
		return resync(m.c.Ctx, m.guard.Console, m.sub, m.lost != nil)
	}
	return waitEvent(m.sub)
}

// setLost shows or clears the lost-link banner and refuses or allows
// actions with it.
func (m *Model) setLost(l *core.ConnectionLost) {
	m.lost = l
	m.guard.down.Store(l != nil)
	m.layout()
}

func (m *Model) event(ev core.Event) tea.Cmd {
	if l, ok := ev.Data.(core.ConnectionLost); ok {
		// Shown at once; the subscription reconnects by itself and a
		// Resync follows. Each failed attempt updates the banner; the
		// feed records the loss once.
		if m.lost == nil {
			m.activity.Add(ev)
		}
		m.setLost(&l)
		return m.ensureTick()
	}
	m.activity.Add(ev)
	m.upstreams.Observe(ev)
	var cmds []tea.Cmd
	if w, ok := ev.Data.(core.Warning); ok {
		cmds = append(cmds, m.setFlash("warning: "+common.OneLine(w.Message), true))
	}
	p := apply(&m.state, ev)
	_, refreshed := ev.Data.(core.RefreshApplied)
	_, reviewed := ev.Data.(core.ToolReviewed)
	if p&partTools != 0 || refreshed || reviewed {
		// A tool event does not carry its review state, and prompts and
		// resources have no events: read them again once the registry is
		// quiet.
		cmds = append(cmds, m.askReviews())
	}
	cmds = append(cmds, m.setParts(p))
	return tea.Batch(cmds...)
}

// askReviews reads the review states and the prompts and resources after
// ReviewsDelay, unless another ask follows first.
func (m *Model) askReviews() tea.Cmd {
	m.revGen++
	gen := m.revGen
	return tea.Tick(ReviewsDelay, func(time.Time) tea.Msg { return reviewsTickMsg{gen: gen} })
}

func (m *Model) setSnapshot(s core.Snapshot) {
	if s.Reviews == nil {
		s.Reviews = map[string]core.ReviewState{}
	}
	m.state = s
	m.loaded = true
}

// setParts hands the changed parts of the state to their panes.
func (m *Model) setParts(p part) tea.Cmd {
	var cmd tea.Cmd
	s := &m.state
	if p&partUpstreams != 0 {
		m.upstreams.SetUpstreams(s.Upstreams)
	}
	if p&partTools != 0 {
		m.policies.SetTools(s.Tools)
		cmd = m.tools.SetTools(s.Tools, s.Reviews)
	} else if p&partReviews != 0 {
		m.tools.SetReviews(s.Reviews)
	}
	if p&partCollisions != 0 {
		m.colls.Set(s.Collisions, s.Dropped)
	}
	if p&partSessions != 0 {
		m.sessions.SetSessions(s.Sessions)
	}
	if p&partPending != 0 {
		m.approvals.SetPending(s.Pending)
	}
	return tea.Batch(cmd, m.ensureTick())
}

// ensureTick keeps a one-second tick running while something counts down.
func (m *Model) ensureTick() tea.Cmd {
	if m.ticking || len(m.state.Pending)+len(m.state.Sessions) == 0 && !m.upstreams.Counting() && m.lost == nil {
		return nil
	}
	m.ticking = true
	return tick()
}

func (m *Model) setFlash(text string, isErr bool) tea.Cmd {
	m.flashID++
	m.flash, m.flashErr = text, isErr
	id := m.flashID
	return tea.Tick(FlashDuration, func(time.Time) tea.Msg { return clearFlashMsg{id: id} })
}

func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	// Keys typed faster than the terminal is read arrive as one message
	// with several runes: outside a text input, each is a key of its own.
	if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste && !m.panes[m.active].Capturing() {
		var cmds []tea.Cmd
		for i, r := range msg.Runes {
			if m.panes[m.active].Capturing() {
				rest := tea.KeyMsg{Type: tea.KeyRunes, Runes: msg.Runes[i:]}
				cmds = append(cmds, m.key1(rest))
				break
			}
			cmds = append(cmds, m.key1(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt}))
		}
		return tea.Batch(cmds...)
	}
	return m.key1(msg)
}

func (m *Model) key1(msg tea.KeyMsg) tea.Cmd {
	g := m.globalKeys()
	if key.Matches(msg, g.ForceQuit) {
		return tea.Quit
	}
	if m.dialog != nil {
		done, ok := m.dialog.Update(msg)
		if !done {
			return nil
		}
		then := m.dialog.Then
		m.dialog = nil
		if ok {
			return then
		}
		return common.Flash("cancelled", false)
	}
	if m.showHelp {
		switch {
		case key.Matches(msg, g.Quit):
			return m.quit()
		case key.Matches(msg, g.CloseHelp):
			m.showHelp = false
		}
		return nil
	}
	pane := m.panes[m.active]
	if pane.Capturing() {
		_, cmd := pane.Update(msg)
		return cmd
	}
	switch {
	case key.Matches(msg, g.Quit):
		return m.quit()
	case key.Matches(msg, g.Help):
		m.showHelp = true
		return nil
	case key.Matches(msg, g.NextTab):
		return m.show((m.active + 1) % common.NumPanes)
	case key.Matches(msg, g.PrevTab):
		return m.show((m.active + common.NumPanes - 1) % common.NumPanes)
	}
	for i, b := range g.Tabs {
		if key.Matches(msg, b) {
			return m.show(i)
		}
	}
	_, cmd := pane.Update(msg)
	return cmd
}

// show makes pane i the active one. The Policies pane has no events to
// keep it current: its rules and hits are read each time it is shown.
func (m *Model) show(i int) tea.Cmd {
	m.active = i
	if i == common.PanePolicies && m.sub != nil {
		return m.policies.Load()
	}
	return nil
}

// reloadPolicies reads the rules again when the Policies pane is shown: a
// fresh view of the gateway (after a lost link, perhaps another config)
// must not keep the old ones.
func (m *Model) reloadPolicies() tea.Cmd {
	if m.active != common.PanePolicies {
		return nil
	}
	return m.policies.Load()
}

// globalKeys is the root's bindings in the current state. An open dialog
// or a pane reading text gets every key but ctrl+c; the help view has only
// close and quit.
func (m *Model) globalKeys() keys.GlobalKeys {
	g := m.c.Keys.Global
	switch {
	case m.dialog != nil || (!m.showHelp && m.panes[m.active].Capturing()):
		keys.Disable(&g.Quit, &g.Help, &g.CloseHelp, &g.NextTab, &g.PrevTab)
		for i := range g.Tabs {
			g.Tabs[i].SetEnabled(false)
		}
	case m.showHelp:
		keys.Disable(&g.Help, &g.NextTab, &g.PrevTab)
		for i := range g.Tabs {
			g.Tabs[i].SetEnabled(false)
		}
	default:
		g.CloseHelp.SetEnabled(false)
	}
	return g
}

// quit leaves at once unless operators' decisions are pending: then it asks,
// saying what quitting does to them — the gateway rejects them as it shuts
// down (SV-9).
func (m *Model) quit() tea.Cmd {
	if m.attached != "" {
		return tea.Quit // the gateway, and what waits there, carry on
	}
	if n := len(m.state.Pending); n > 0 {
		m.dialog = dialog.New(m.c.Theme, m.c.Keys.Dialog, "Quit?", quitPrompt(n), "Quit", tea.Quit)
		m.dialog.SetWidth(m.width)
		return nil
	}
	return tea.Quit
}

// quitPrompt says what quitting does to n pending approvals.
func quitPrompt(n int) string {
	what := fmt.Sprintf("%d pending approvals", n)
	if n == 1 {
		what = "1 pending approval"
	}
	return what + " will be rejected: their callers are told the gateway is shutting down, and nothing runs."
}

// layout is the one place layout arithmetic happens: the header, tabs,
// status line and key bar take fixed lines and the body gets the rest.
func (m *Model) layout() {
	m.headerH = len(m.headerLines())
	const tabs, status, keybar = 1, 1, 1
	m.bodyH = max(m.height-m.headerH-tabs-status-keybar, 3)
	for _, p := range m.panes {
		p.SetSize(m.width, m.bodyH)
	}
	m.help.Width = m.width
	if m.dialog != nil {
		m.dialog.SetWidth(m.width)
	}
}

func (m *Model) headerLines() []string {
	th := m.c.Theme
	title := th.Title.Render("toolgate")
	if m.info.Demo {
		title += th.Notice.Render(" demo")
	}
	eps := th.Muted.Render("  connecting…")
	if m.loaded {
		eps = "  " + strings.Join(m.info.Endpoints, "  ")
		if len(m.info.Endpoints) == 0 {
			eps = th.Muted.Render("  no endpoints")
		}
	}
	first := title + eps
	if m.attached != "" {
		first = title + th.Bold.Render(" ⇄ "+m.attached) + th.Muted.Render(" as "+m.c.Operator) + eps
	}
	badge := ""
	if n := len(m.state.Pending); n > 0 {
		badge = th.Badge.Render(fmt.Sprintf(" ⚑ %d pending approval%s ", n, plural(n)))
	}
	lines := []string{joinRight(first, badge, m.width)}
	if m.lost != nil {
		first, second := lostBanner(*m.lost, m.c.Now(), m.width)
		lines = append(lines, th.StatusErr.Render(first), th.Err.Render(second))
	}
	if len(m.info.OpenEndpoints) > 0 {
		lines = append(lines, common.Truncate(th.OpenWarn.Render(fmt.Sprintf("⚠ open mode, no auth: %s — anyone who can reach it acts as its configured actor",
			strings.Join(m.info.OpenEndpoints, ", "))), m.width))
	}
	if m.info.Notice != "" {
		lines = append(lines, common.Truncate(th.Notice.Render(m.info.Notice), m.width))
	}
	return lines
}

// lostBanner says the link is down, why and when the next attempt is, in
// width cells: the error is what gets cut, so the countdown always shows;
// a second line says what that means for the screen.
func lostBanner(l core.ConnectionLost, now time.Time, width int) (string, string) {
	next := "reconnecting…"
	if wait := l.Retry.Sub(now); wait > 0 {
		next = fmt.Sprintf("reconnecting in %ds", int((wait+time.Second-1)/time.Second))
	}
	const prefix = "⚠ connection to the gateway lost: "
	suffix := "; " + next
	room := max(width-lipgloss.Width(prefix)-lipgloss.Width(suffix), 1)
	first := common.Truncate(prefix+common.Truncate(common.OneLine(l.Error), room)+suffix, width)
	return first, common.Truncate("  the view below is the last state seen, not live; actions are refused until the link is back", width)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// joinRight puts right at the right edge of a line starting with left.
func joinRight(left, right string, width int) string {
	if right == "" {
		return common.Truncate(left, width)
	}
	rw := lipgloss.Width(right)
	left = common.Truncate(left, max(width-rw-1, 0))
	gap := max(width-lipgloss.Width(left)-rw, 1)
	return left + strings.Repeat(" ", gap) + right
}

// Tab titles when the panes' own do not fit: first only the longest are
// cut, so 100 columns still read as words; then all are.
var (
	mediumTitles = [common.NumPanes]string{"Upstreams", "Tools", "Coll", "Sessions", "Approvals", "Activity", "Pol"}
	shortTitles  = [common.NumPanes]string{"Ups", "Tools", "Coll", "Sess", "Appr", "Act", "Pol"}
)

func (m *Model) tabs() string {
	th := m.c.Theme
	render := func(titles *[common.NumPanes]string) string {
		parts := make([]string, common.NumPanes)
		for i, p := range m.panes {
			title := p.Title()
			if titles != nil {
				title = titles[i]
			}
			label := fmt.Sprintf("%d %s %d", i+1, title, p.Count())
			if c, ok := p.(interface{ Counted() bool }); ok && !c.Counted() {
				label = fmt.Sprintf("%d %s", i+1, title) // not read yet: no count rather than a wrong one
			}
			if i == m.active {
				parts[i] = th.TabActive.Render("[" + label + "]")
			} else {
				parts[i] = th.Tab.Render(" " + label + " ")
			}
		}
		return strings.Join(parts, th.TabSep.Render("│"))
	}
	s := render(nil)
	if lipgloss.Width(s) > m.width {
		s = render(&mediumTitles)
	}
	if lipgloss.Width(s) > m.width {
		s = render(&shortTitles)
	}
	return common.Truncate(s, m.width)
}

func (m *Model) statusLine() string {
	th := m.c.Theme
	switch {
	case m.inflight > 0:
		return common.Truncate(m.spin.View()+" "+m.busy+"…", m.width)
	case m.flash != "":
		if m.flashErr {
			return common.Truncate(th.StatusErr.Render(m.flash), m.width)
		}
		return common.Truncate(th.Status.Render(m.flash), m.width)
	case m.closed:
		if m.closedErr != nil {
			return common.Truncate(th.StatusErr.Render("cannot read the gateway's events: "+m.closedErr.Error()+"; the view no longer updates"), m.width)
		}
		return common.Truncate(th.StatusErr.Render("the gateway closed the event stream; the view no longer updates"), m.width)
	case !m.loaded:
		return th.Muted.Render("loading…")
	}
	mode := string(m.info.ReviewMode)
	if mode == "" {
		mode = "—"
	}
	return common.Truncate(th.Muted.Render(fmt.Sprintf("review mode %s · %d tools · %d upstreams", mode, len(m.state.Tools), len(m.state.Upstreams))), m.width)
}

// keyBar shows the focused pane's keys; the global ones (tab, help, quit)
// stay at the right edge however narrow the terminal is.
func (m *Model) keyBar() string {
	g := m.globalKeys()
	var b, global []key.Binding
	switch {
	case m.dialog != nil:
		b = m.dialog.ShortHelp()
	case m.showHelp:
		b = []key.Binding{g.CloseHelp, g.Quit}
	default:
		b = m.panes[m.active].ShortHelp()
		if g.NextTab.Enabled() { // off while the pane reads text
			global = []key.Binding{g.NextTab, g.Help, g.Quit}
		}
	}
	left := m.help.ShortHelpView(b)
	if len(global) == 0 {
		return common.Truncate(left, m.width)
	}
	right := m.help.ShortHelpView(global)
	sep := m.help.Styles.ShortSeparator.Render(m.help.ShortSeparator)
	room := m.width - lipgloss.Width(right) - lipgloss.Width(sep)
	if room < 10 {
		return common.Truncate(right, m.width)
	}
	return common.Truncate(left, room) + sep + right
}

// fullHelp shows the pane's bindings in its current state and the global
// ones it has (not the help view's own).
func (m *Model) fullHelp() string {
	g := m.c.Keys.Global
	pane := m.panes[m.active]
	tabs := g.Tabs[0]
	tabs.SetHelp("1–7", "go to pane")
	groups := append(pane.FullHelp(), []key.Binding{g.NextTab, g.PrevTab, tabs, g.Help, g.Quit, g.ForceQuit})
	th := m.c.Theme
	return th.Section.Render("Keys: "+pane.Title()) + "\n\n" + m.help.FullHelpView(groups)
}

// View renders the whole screen: exactly height lines of at most width
// cells.
func (m *Model) View() string {
	var body string
	switch {
	case m.dialog != nil:
		body = lipgloss.Place(m.width, m.bodyH, lipgloss.Center, lipgloss.Center, m.dialog.View())
	case m.showHelp:
		body = m.fullHelp()
	default:
		body = m.panes[m.active].View()
	}
	var b strings.Builder
	for _, l := range m.headerLines() {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteString(m.tabs())
	b.WriteByte('\n')
	writeBlock(&b, body, m.width, m.bodyH)
	b.WriteString(m.statusLine())
	b.WriteByte('\n')
	b.WriteString(m.keyBar())
	return b.String()
}

// writeBlock writes exactly h lines of s, each cut to w cells.
func writeBlock(b *strings.Builder, s string, w, h int) {
	n := 0
	for line := range strings.SplitSeq(s, "\n") {
		if n == h {
			break
		}
		b.WriteString(common.Truncate(line, w))
		b.WriteByte('\n')
		n++
	}
	for ; n < h; n++ {
		b.WriteByte('\n')
	}
}
