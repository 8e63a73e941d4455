// Package common is what the root model and its panes share: the context
// they run in, the messages they exchange and small formatting helpers.
package common

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/tui/keys"
	"github.com/toolgate/toolgate/tui/theme"
)

// Pane indexes, in tab order.
const (
	PaneUpstreams = iota
	PaneTools
	PaneCollisions
	PaneSessions
	PaneApprovals
	PaneActivity
	PanePolicies
	NumPanes
)

// Common is fixed for the console's life and shared read-only by every pane.
type Common struct {
	// Ctx ends when the console quits; console calls run under it.
	Ctx     context.Context
	Console core.Console
	Theme   *theme.Theme
	Keys    *keys.KeyMap
	// Operator is recorded as who approved or rejected.
	Operator string
	Now      func() time.Time
}

// Pane is one tab of the console. Panes are pointers: Update changes the
// pane in place and returns it.
type Pane interface {
	Init() tea.Cmd
	Update(tea.Msg) (tea.Model, tea.Cmd)
	View() string
	// SetSize gives the pane its body area.
	SetSize(width, height int)
	// ShortHelp is the key bar; FullHelp is every binding the pane acts
	// on in its current state, grouped, for the full help. Both leave out
	// (disable) what does not apply now.
	ShortHelp() []key.Binding
	FullHelp() [][]key.Binding
	Title() string
	// Count is the number shown in the tab title.
	Count() int
	// Capturing is true while the pane reads text (a filter): keys that
	// are global elsewhere (q, 1–7, ?) are typed into it instead.
	Capturing() bool
}

// FlashMsg shows a transient status line that clears itself.
type FlashMsg struct {
	Text string
	Err  bool
}

// Flash returns a command showing text in the status line.
func Flash(text string, isErr bool) tea.Cmd {
	return func() tea.Msg { return FlashMsg{Text: text, Err: isErr} }
}

// AskMsg asks the operator to confirm a destructive action. The dialog names
// the target; focus starts on Cancel; Then runs only on confirm.
type AskMsg struct {
	Title, Prompt, Confirm string
	Then                   tea.Cmd
}

// Ask returns a command that opens the confirm dialog.
func Ask(title, prompt, confirm string, then tea.Cmd) tea.Cmd {
	return func() tea.Msg { return AskMsg{Title: title, Prompt: prompt, Confirm: confirm, Then: then} }
}

// StartMsg says a console call started; the root shows a spinner with Label
// until the matching ResultMsg arrives.
type StartMsg struct{ Label string }

// ResultMsg is the answer to a console call made by Pane with request ID.
// The pane drops results whose ID is not the one it waits for (stale).
type ResultMsg struct {
	Pane  int
	ID    uint64
	Label string
	Value any
	Err   error
}

// Call runs fn in a command and delivers its result to pane, tagged with id.
// fn must capture copies, never pointers into model state.
func Call(pane int, id uint64, label string, fn func() (any, error)) tea.Cmd {
	return tea.Sequence(
		func() tea.Msg { return StartMsg{Label: label} },
		func() tea.Msg {
			v, err := fn()
			return ResultMsg{Pane: pane, ID: id, Label: label, Value: v, Err: err}
		},
	)
}

// Hint spells the enabled bindings as "key desc · key desc", for a view's
// own line of hints; like the key bar, it leaves disabled ones out.
func Hint(bs ...key.Binding) string {
	parts := make([]string, 0, len(bs))
	for _, b := range bs {
		if b.Enabled() {
			parts = append(parts, b.Help().Key+" "+b.Help().Desc)
		}
	}
	return strings.Join(parts, " · ")
}

// Truncate cuts s (which may hold ANSI styles) to width cells with an
// ellipsis.
func Truncate(s string, width int) string {
	if width <= 0 {
		return ""
	}
	return ansi.Truncate(s, width, "…")
}

// Pad truncates or pads s to exactly width cells.
func Pad(s string, width int) string {
	s = Truncate(s, width)
	if w := ansi.StringWidth(s); w < width {
		s += strings.Repeat(" ", width-w)
	}
	return s
}

// OneLine folds line breaks and tabs so text fits a table cell.
func OneLine(s string) string {
	if !strings.ContainsAny(s, "\n\r\t") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// Duration formats a latency for a table: 850µs, 12ms, 1.2s.
func Duration(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		return d.Round(time.Second).String()
	}
}

// Ago formats how long ago t was, relative to now.
func Ago(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		d = 0
		fallthrough
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	default:
		return t.Format("2006-01-02")
	}
}

// Countdown formats the time left until deadline as m:ss.
func Countdown(now, deadline time.Time) string {
	left := deadline.Sub(now)
	if left <= 0 {
		return "0:00"
	}
	s := int(left.Round(time.Second).Seconds())
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// Source spells a tool's source: the upstream, or native.
func Source(source string) string {
	if source == "" {
		return core.NativeSource
	}
	return source
}
