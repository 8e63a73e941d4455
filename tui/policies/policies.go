// Package policies is the Policies pane (PO-4, CO-8): the policy rules of
// every endpoint and the limits, each with the calls it decided in the last
// hour and when it last did, and a dry run that says which rule decides a
// call of a tool with given arguments by an actor, and whether the tool is
// listed to it, without making the call.
//
// Nothing here is pushed by events: the rules and their hits are read when
// the pane is shown and on r, in commands like every console call.
package policies

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/tui/common"
	"github.com/toolgate/toolgate/tui/keys"
	"github.com/toolgate/toolgate/tui/table"
)

// Results of the pane's calls.
type (
	reportResult struct{ Report core.PolicyReport }
	trialResult  struct{ Trial core.PolicyTrial }
)

// The form's fields, in order.
const (
	fieldActor = iota
	fieldTool
	fieldArgs
	fieldEndpoint
	fieldVia
	fieldSession
	numFields
)

var fieldLabels = [numFields]string{"actor", "tool", "args", "endpoint", "via", "session"}

// viaCallTool is the one meta-tool a call can be tried through (DS-2).
const viaCallTool = "call_tool"

// Model is the pane.
type Model struct {
	c      *common.Common
	table  *table.Model
	report core.PolicyReport
	loaded bool
	// waitReport and waitTrial are the ids of the calls whose answers are
	// awaited; answers to others are stale.
	waitReport, waitTrial uint64
	nextID                uint64

	// usage shows the quotas' use instead of the rules.
	usage bool

	// The dry run's form: open while trying.
	trying bool
	inputs [numFields]textinput.Model
	focus  int
	tools  []string // the registry's tools, for NextTool and PrevTool
	// trial is the last answer, trialErr why there is none.
	trial    *core.PolicyTrial
	trialErr string
	running  bool

	width, height int
}

// New returns the pane.
func New(c *common.Common) *Model {
	m := &Model{c: c, table: table.New(c.Theme, c.Keys.List, []table.Column{
		{Title: "ENDPOINT", Width: 8},
		{Title: "ID", Width: 12, Flex: true},
		{Title: "EFFECT", Width: 7},
		{Title: "WHEN", Width: 16, Flex: true},
		{Title: "HITS/1H", Width: 7},
		{Title: "LAST", Width: 8},
	}, "Loading the policy rules…")}
	placeholders := [numFields]string{"an actor id, e.g. alice", "a tool name (ctrl+n/ctrl+p: the gateway's tools)",
		`the arguments as a JSON object, e.g. {"query":"x"}`, "an endpoint path (empty: the first)",
		"empty: a direct call; call_tool: through the endpoint's tool search",
		"the session's labels, e.g. untrusted,private (empty: a fresh session)"}
	for i := range m.inputs {
		in := textinput.New()
		in.Prompt = ""
		in.Placeholder = placeholders[i]
		in.CharLimit = 4096
		m.inputs[i] = in
	}
	return m
}

func (m *Model) Init() tea.Cmd { return nil }
func (m *Model) Title() string { return "Policies" }
func (m *Model) Count() int    { return len(m.report.Rules) }

// Counted is false until the rules are read: the tab shows no count.
func (m *Model) Counted() bool { return m.loaded }

func (m *Model) Capturing() bool { return m.trying || m.table.Filtering() }

// Trying reports whether the dry run's form is open.
func (m *Model) Trying() bool { return m.trying }

func (m *Model) SetSize(w, h int) {
	m.width, m.height = w, h
	m.table.SetSize(w, h)
	for i := range m.inputs {
		m.inputs[i].Width = max(w-12, 10)
	}
}

// SetTools gives the names of the registry's tools, for the tool field.
func (m *Model) SetTools(tools []core.ToolInfo) {
	m.tools = m.tools[:0]
	for _, t := range tools {
		m.tools = append(m.tools, t.Name)
	}
	slices.Sort(m.tools)
}

// Load reads the rules and their hits again.
func (m *Model) Load() tea.Cmd {
	m.nextID++
	m.waitReport = m.nextID
	ctx, con := m.c.Ctx, m.c.Console
	return common.Call(common.PanePolicies, m.nextID, "reading the policy rules", func() (any, error) {
		rep, err := con.Policies(ctx)
		return reportResult{Report: rep}, err
	})
}

func (m *Model) setReport(rep core.PolicyReport) {
	m.report, m.loaded = rep, true
	m.table.SetEmpty("No policy rules or limits are configured: every call is allowed.")
	now := m.c.Now()
	rows := make([]table.Row, len(rep.Rules))
	th := m.c.Theme
	for i, r := range rep.Rules {
		endpoint := r.Endpoint
		if endpoint == "" {
			endpoint = "all"
		}
		effect := table.Cell{Text: r.Effect}
		switch r.Effect {
		case "deny":
			effect.Style = &th.Err
		case "approve":
			effect.Style = &th.Warn
		}
		last := "—"
		if !r.LastHit.IsZero() {
			last = common.Ago(now, r.LastHit)
		}
		rows[i] = table.Row{Key: endpoint + "\x00" + r.ID, Cells: []table.Cell{
			{Text: endpoint},
			{Text: r.ID},
			effect,
			{Text: orDash(common.OneLine(r.When))},
			{Text: fmt.Sprint(r.Hits)},
			{Text: last},
		}}
	}
	m.table.SetRows(rows)
}

// Tick refreshes relative times.
func (m *Model) Tick() {
	if m.loaded {
		m.setReport(m.report)
	}
}

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case common.ResultMsg:
		return m, m.result(msg)
	case tea.KeyMsg:
		if m.trying {
			return m, m.formKey(msg)
		}
		if m.table.Filtering() {
			break
		}
		k := m.keys()
		switch {
		case key.Matches(msg, k.Reload):
			return m, m.Load()
		case key.Matches(msg, k.Try):
			m.usage = false
			return m, m.open()
		case key.Matches(msg, k.Usage):
			m.usage = !m.usage
			return m, nil
		case m.usage && key.Matches(msg, k.Back):
			m.usage = false
			return m, nil
		}
		if m.usage {
			return m, nil
		}
	}
	if m.trying {
		var cmd tea.Cmd
		m.inputs[m.focus], cmd = m.inputs[m.focus].Update(msg)
		return m, cmd
	}
	cmd, _ := m.table.Update(msg)
	return m, cmd
}

func (m *Model) result(msg common.ResultMsg) tea.Cmd {
	switch v := msg.Value.(type) {
	case reportResult:
		if msg.ID != m.waitReport {
			return nil
		}
		if msg.Err != nil {
			if !m.loaded {
				m.table.SetEmpty("Cannot read the policy rules: " + common.OneLine(msg.Err.Error()) + " (r tries again)")
			}
			return common.Flash(fmt.Sprintf("%s: %v", msg.Label, msg.Err), true)
		}
		m.setReport(v.Report)
	case trialResult:
		if msg.ID != m.waitTrial {
			return nil
		}
		m.running = false
		if msg.Err != nil {
			m.trial, m.trialErr = nil, common.OneLine(msg.Err.Error())
			return nil
		}
		t := v.Trial
		m.trial, m.trialErr = &t, ""
	}
	return nil
}

// open shows the form, the actor and tool kept from the last dry run.
func (m *Model) open() tea.Cmd {
	m.trying = true
	m.focus = fieldActor
	return m.focusField(fieldActor)
}

func (m *Model) focusField(i int) tea.Cmd {
	m.inputs[m.focus].Blur()
	m.focus = (i + numFields) % numFields
	return m.inputs[m.focus].Focus()
}

func (m *Model) formKey(msg tea.KeyMsg) tea.Cmd {
	k := m.keys()
	switch {
	case key.Matches(msg, k.Back):
		m.inputs[m.focus].Blur()
		m.trying = false
		return nil
	case key.Matches(msg, k.NextField):
		return m.focusField(m.focus + 1)
	case key.Matches(msg, k.PrevField):
		return m.focusField(m.focus - 1)
	case key.Matches(msg, k.NextTool):
		m.cycleTool(1)
		return nil
	case key.Matches(msg, k.PrevTool):
		m.cycleTool(-1)
		return nil
	case key.Matches(msg, k.Run):
		return m.try()
	}
	var cmd tea.Cmd
	m.inputs[m.focus], cmd = m.inputs[m.focus].Update(msg)
	return cmd
}

// cycleTool fills the tool field with the next (or previous) tool of the
// registry after the one typed.
func (m *Model) cycleTool(step int) {
	if len(m.tools) == 0 {
		return
	}
	cur := strings.TrimSpace(m.inputs[fieldTool].Value())
	i, found := slices.BinarySearch(m.tools, cur)
	switch {
	case !found && step > 0:
		// i is the next one already.
	case !found:
		i--
	default:
		i += step
	}
	i = (i%len(m.tools) + len(m.tools)) % len(m.tools)
	m.inputs[fieldTool].SetValue(m.tools[i])
	m.inputs[fieldTool].CursorEnd()
	m.inputs[m.focus].Blur()
	m.focus = fieldTool
	m.inputs[fieldTool].Focus()
}

// try checks what can be checked here and asks the gateway which rule
// decides: nothing is called.
func (m *Model) try() tea.Cmd {
	actor := strings.TrimSpace(m.inputs[fieldActor].Value())
	tool := strings.TrimSpace(m.inputs[fieldTool].Value())
	args := strings.TrimSpace(m.inputs[fieldArgs].Value())
	m.trial = nil
	switch {
	case actor == "":
		m.trialErr = "type the actor id to try as"
		return m.focusField(fieldActor)
	case tool == "":
		m.trialErr = "type a tool name, or pick one with ctrl+n"
		return m.focusField(fieldTool)
	}
	if args == "" {
		args = "{}"
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &obj); err != nil || obj == nil {
		m.trialErr = "the arguments are not a JSON object"
		if err != nil {
			m.trialErr += ": " + err.Error()
		}
		return m.focusField(fieldArgs)
	}
	via := strings.TrimSpace(m.inputs[fieldVia].Value())
	if via != "" && via != viaCallTool {
		m.trialErr = "via is empty (a direct call) or " + viaCallTool
		return m.focusField(fieldVia)
	}
	q := core.PolicyQuestion{Endpoint: strings.TrimSpace(m.inputs[fieldEndpoint].Value()), Actor: actor, Tool: tool, Args: json.RawMessage(args), Via: via}
	for _, l := range strings.Split(m.inputs[fieldSession].Value(), ",") {
		if l = strings.TrimSpace(l); l != "" {
			q.SessionLabels = append(q.SessionLabels, l) // IN-3
		}
	}
	m.trialErr, m.running = "", true
	m.nextID++
	m.waitTrial = m.nextID
	ctx, con := m.c.Ctx, m.c.Console
	return common.Call(common.PanePolicies, m.nextID, "trying the policy", func() (any, error) {
		t, err := con.TryPolicy(ctx, q)
		return trialResult{Trial: t}, err
	})
}

// keys is the pane's bindings now: the form's while it is open, the
// list's otherwise.
func (m *Model) keys() keys.PolicyKeys {
	k := m.c.Keys.Policies
	if m.trying {
		keys.Disable(&k.Reload, &k.Try, &k.Usage)
		if len(m.tools) == 0 {
			keys.Disable(&k.NextTool, &k.PrevTool)
		}
		return k
	}
	keys.Disable(&k.NextField, &k.PrevField, &k.NextTool, &k.PrevTool, &k.Run)
	if !m.usage {
		keys.Disable(&k.Back)
	}
	if m.table.Filtering() {
		keys.Disable(&k.Reload, &k.Try, &k.Usage)
	}
	return k
}

func (m *Model) ShortHelp() []key.Binding {
	k := m.keys()
	if m.trying {
		return []key.Binding{k.Run, k.NextField, k.NextTool, k.Back}
	}
	if m.usage {
		return []key.Binding{k.Usage, k.Reload, k.Back}
	}
	return append([]key.Binding{k.Try, k.Usage, k.Reload}, m.table.ShortHelp()...)
}

func (m *Model) FullHelp() [][]key.Binding {
	k := m.keys()
	if m.trying {
		return [][]key.Binding{{k.Run, k.NextField, k.PrevField, k.NextTool, k.PrevTool, k.Back}}
	}
	if m.usage {
		return [][]key.Binding{{k.Usage, k.Reload, k.Back}}
	}
	return [][]key.Binding{{k.Try, k.Usage, k.Reload}, m.table.Bindings()}
}

// Usage reports whether the quotas' use is shown.
func (m *Model) Usage() bool { return m.usage }

func (m *Model) View() string {
	if m.usage && !m.trying {
		return m.usageView()
	}
	if !m.trying {
		return m.table.View()
	}
	th := m.c.Theme
	var b strings.Builder
	b.WriteString(th.Section.Render("Dry run") + th.Muted.Render(" — which rule decides a call; nothing is called") + "\n\n")
	for i, in := range m.inputs {
		mark := "  "
		if i == m.focus {
			mark = "▸ "
		}
		fmt.Fprintf(&b, "%s%s %s\n", mark, th.Label.Render(fmt.Sprintf("%-8s", fieldLabels[i])), in.View())
	}
	b.WriteByte('\n')
	switch {
	case m.running:
		b.WriteString(th.Muted.Render("asking the gateway…"))
	case m.trialErr != "":
		b.WriteString(th.Err.Render("✗ " + m.trialErr))
	case m.trial != nil:
		b.WriteString(m.trialView(*m.trial))
	default:
		b.WriteString(th.Muted.Render("enter: try · the actor's roles and tenant are those the config gives its id"))
	}
	return b.String()
}

func (m *Model) trialView(t core.PolicyTrial) string {
	th := m.c.Theme
	effect := t.Effect
	switch t.Effect {
	case "deny":
		effect = th.Err.Render(effect)
	case "approve":
		effect = th.Warn.Render(effect)
	default:
		effect = th.OK.Render(effect)
	}
	rule := t.Rule
	if rule == "default" {
		rule += th.Muted.Render(" (no rule matched)")
	}
	listed := "yes: tools/list shows it to " + t.Actor.ID
	if !t.Listed {
		listed = "no: tools/list hides it from " + t.Actor.ID
	}
	lines := []string{
		th.Label.Render("rule     ") + rule,
		th.Label.Render("effect   ") + effect,
		th.Label.Render("reason   ") + orDash(common.OneLine(t.Reason)),
		th.Label.Render("listed   ") + listed,
		th.Label.Render("endpoint ") + t.Endpoint + th.Muted.Render("  roles "+orDash(strings.Join(t.Actor.Roles, ","))),
	}
	if t.Via != "" {
		lines = append(lines, th.Label.Render("via      ")+t.Via+th.Muted.Render("  found only if listed"))
	}
	if len(t.ToolLabels)+len(t.SessionLabels) > 0 {
		lines = append(lines, th.Label.Render("labels   ")+"tool "+orDash(strings.Join(t.ToolLabels, ","))+
			th.Muted.Render("  session ")+orDash(strings.Join(t.SessionLabels, ",")))
	}
	if t.Error != "" {
		lines = append(lines, th.Err.Render("error    "+common.OneLine(t.Error)))
	}
	return strings.Join(lines, "\n")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// usageBar is the width of a usage bar.
const usageBar = 10

// usageView lists each quota's current window and its heaviest users,
// each as used/quota, a percentage and a bar, in as many lines as the
// pane has.
func (m *Model) usageView() string {
	th := m.c.Theme
	width := max(m.width, 40)
	lines := []string{th.Section.Render("Quota usage") + th.Muted.Render(" — calls counted in each quota's current window, heaviest first"), ""}
	switch {
	case !m.loaded:
		lines = append(lines, th.Muted.Render("Loading…"))
	case len(m.report.Quotas) == 0:
		lines = append(lines, th.Muted.Render("No quota is configured (limits with quota: N/UNIT); rates are per replica and not shown here."))
	}
	now := m.c.Now()
	for _, q := range m.report.Quotas {
		head := fmt.Sprintf("%s · per %s · %d/%s · resets in %s (%s UTC)", q.Limit, q.Per, q.Quota,
			windowText(q.End.Sub(q.Start)), leftText(q.End.Sub(now)), q.End.UTC().Format("Jan 2 15:04"))
		lines = append(lines, th.Label.Render(common.Truncate(head, width)))
		switch {
		case q.Err != "":
			lines = append(lines, "  "+th.Err.Render(common.Truncate("✗ cannot read the counts: "+common.OneLine(q.Err), width-2)))
		case len(q.Top) == 0:
			lines = append(lines, "  "+th.Muted.Render("no calls counted in this window"))
		}
		name := max(width-2-len(" 0000000/0000000 100% ")-usageBar, 12)
		for _, u := range q.Top {
			pct := 0
			if q.Quota > 0 {
				pct = int(min(100, u.Count*100/q.Quota))
			}
			filled := pct * usageBar / 100
			if u.Count > 0 && filled == 0 {
				filled = 1
			}
			bar := strings.Repeat("█", filled) + strings.Repeat("░", usageBar-filled)
			used := fmt.Sprintf("%d/%d", u.Count, q.Quota)
			style := th.OK
			switch {
			case pct >= 100:
				style = th.Err
			case pct >= 80:
				style = th.Warn
			}
			lines = append(lines, fmt.Sprintf("  %s %15s %3d%% %s", common.Pad(partsText(q.Per, u.Parts), name), used, pct, style.Render(bar)))
		}
		lines = append(lines, "")
	}
	if m.height > 0 && len(lines) > m.height {
		lines = append(lines[:m.height-1], th.Muted.Render(fmt.Sprintf("… %d more lines: a taller terminal shows them", len(lines)-m.height+1)))
	}
	return strings.Join(lines, "\n")
}

// partsText spells who a quota counted: tenant/actor (· tool), the
// upstream, or the endpoint.
func partsText(per string, parts []string) string {
	if (per == "actor" || per == "actor+tool") && len(parts) >= 2 {
		who := parts[1]
		if parts[0] != "" {
			who = parts[0] + "/" + who
		}
		if len(parts) == 3 {
			who += " · " + parts[2]
		}
		return who
	}
	return strings.Join(parts, " ")
}

// windowText names a quota's window as its config does.
func windowText(d time.Duration) string {
	switch d {
	case time.Second:
		return "s"
	case time.Minute:
		return "min"
	case time.Hour:
		return "h"
	case 24 * time.Hour:
		return "day"
	}
	return d.String()
}

// leftText is how long a window has left: 5h07m, 12m, under a minute.
func leftText(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "under a minute"
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
