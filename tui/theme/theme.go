// Package theme is the console's palette and styles, built once at start-up
// and shared read-only by every pane. Colours are lipgloss.AdaptiveColor, so
// they suit light and dark terminals; with NO_COLOR (or any terminal without
// colour) lipgloss renders plain text, and Marks switches on the textual
// markers that stand in for colour where colour carries meaning.
package theme

import (
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/toolgate/toolgate/core"
)

// Palette colours.
var (
	accent  = lipgloss.AdaptiveColor{Light: "#5A3FC0", Dark: "#A48BFF"}
	subtle  = lipgloss.AdaptiveColor{Light: "#8A8A8A", Dark: "#6C6C6C"}
	text    = lipgloss.AdaptiveColor{Light: "#1A1A1A", Dark: "#E4E4E4"}
	good    = lipgloss.AdaptiveColor{Light: "#1E7B34", Dark: "#5FD787"}
	warn    = lipgloss.AdaptiveColor{Light: "#9A6700", Dark: "#FFD75F"}
	bad     = lipgloss.AdaptiveColor{Light: "#B3261E", Dark: "#FF5F5F"}
	info    = lipgloss.AdaptiveColor{Light: "#0B5CAD", Dark: "#5FAFFF"}
	selBg   = lipgloss.AdaptiveColor{Light: "#E4DDFB", Dark: "#3A2F66"}
	badgeBg = lipgloss.AdaptiveColor{Light: "#B3261E", Dark: "#D7005F"}
	badgeFg = lipgloss.AdaptiveColor{Light: "#FFFFFF", Dark: "#FFFFFF"}
)

// Theme holds every style the console renders with.
type Theme struct {
	// Marks is true when the terminal shows no colour: flagged spans and
	// other colour-only cues get textual markers instead.
	Marks bool

	App, Title, Muted, Text, Bold     lipgloss.Style
	OK, Warn, Err, Info               lipgloss.Style
	Badge, Notice, OpenWarn           lipgloss.Style
	Tab, TabActive, TabSep            lipgloss.Style
	Header, Selected, Cell            lipgloss.Style
	Status, StatusErr, Spinner        lipgloss.Style
	KeyBar                            lipgloss.Style
	Dialog, Button, ButtonFocused     lipgloss.Style
	Added, Removed, Changed           lipgloss.Style
	FlagInfo, FlagWarn, FlagDanger    lipgloss.Style
	Section, Label, Hidden, FilterBar lipgloss.Style
}

// New builds the theme for the current colour profile.
func New() *Theme {
	t := &Theme{Marks: lipgloss.ColorProfile() == termenv.Ascii}
	base := lipgloss.NewStyle()
	t.App = base
	t.Title = base.Bold(true).Foreground(accent)
	t.Muted = base.Foreground(subtle)
	t.Text = base.Foreground(text)
	t.Bold = base.Bold(true)
	t.OK = base.Foreground(good)
	t.Warn = base.Foreground(warn)
	t.Err = base.Foreground(bad)
	t.Info = base.Foreground(info)
	t.Badge = base.Bold(true).Foreground(badgeFg).Background(badgeBg)
	t.Notice = base.Foreground(info)
	t.OpenWarn = base.Bold(true).Foreground(warn)
	t.Tab = base.Foreground(subtle)
	t.TabActive = base.Bold(true).Foreground(accent).Underline(true)
	t.TabSep = base.Foreground(subtle)
	t.Header = base.Bold(true).Foreground(subtle)
	t.Selected = base.Background(selBg).Bold(true)
	t.Cell = base
	t.Status = base.Foreground(good)
	t.StatusErr = base.Foreground(bad).Bold(true)
	t.Spinner = base.Foreground(accent)
	t.KeyBar = base.Foreground(subtle)
	t.Dialog = base.Border(lipgloss.RoundedBorder()).BorderForeground(bad).Padding(1, 2)
	t.Button = base.Foreground(subtle).Padding(0, 2)
	t.ButtonFocused = base.Bold(true).Reverse(true).Padding(0, 2)
	t.Added = base.Foreground(good)
	t.Removed = base.Bold(true).Foreground(bad)
	t.Changed = base.Bold(true).Foreground(warn)
	t.FlagInfo = base.Foreground(info).Underline(true)
	t.FlagWarn = base.Foreground(warn).Underline(true)
	t.FlagDanger = base.Bold(true).Foreground(bad).Underline(true)
	t.Section = base.Bold(true).Foreground(accent)
	t.Label = base.Foreground(subtle)
	t.Hidden = base.Bold(true).Foreground(bad)
	t.FilterBar = base.Foreground(accent)
	return t
}

// State returns the glyph and style of an upstream state (CO-1).
func (t *Theme) State(s core.ConnState) (string, lipgloss.Style) {
	switch s {
	case core.StateConnected:
		return "●", t.OK
	case core.StateConnecting:
		return "◌", t.Warn
	case core.StateFailed:
		return "✖", t.Err
	default:
		return "○", t.Muted
	}
}

// Severity returns the style of a scanner flag of that severity.
func (t *Theme) Severity(sev string) lipgloss.Style {
	switch sev {
	case core.SeverityInfo:
		return t.FlagInfo
	case core.SeverityWarn:
		return t.FlagWarn
	default:
		return t.FlagDanger
	}
}

// Review returns the style of a review state.
func (t *Theme) Review(s core.ReviewState) lipgloss.Style {
	switch s {
	case core.ReviewApproved:
		return t.OK
	case core.ReviewChanged:
		return t.Changed
	case core.ReviewRejected:
		return t.Err
	case core.ReviewNew:
		return t.Warn
	default:
		return t.Muted
	}
}
