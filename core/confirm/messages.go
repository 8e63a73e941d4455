package confirm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/core"
)

// ConfirmMessages are the texts a client sees (CF-7). Empty fields keep
// the defaults. The fields MessageKeys names may use the placeholders
// MessagePlaceholders lists for them; the others are shown as written.
// No placeholder carries an argument value or the token.
type ConfirmMessages struct {
	Preview string
	// Invalid: a token that is forged, of another tool, actor or tenant, of
	// other arguments, of an older format, or missing (CF-4). {reason}
	// says which; a text without it gets ": " and the reason appended, so
	// the refusals stay distinct.
	Invalid string
	Used    string
	// Rejected: an operator rejected the call (CF-5). A text without
	// {reason} gets the reason appended after ": " (and, without
	// {operator} either, "rejected by" the operator before it).
	Rejected string
	Expired  string
	// TimedOut: no operator decided within approvalWait.
	TimedOut string
	// Waiting is the message of the progress notifications a confirming
	// call sends while it waits for an operator (CF-5).
	Waiting string
	// StoreLost: the store was deleted or replaced while serving; no
	// action call runs until the gateway restarts (CF-3).
	StoreLost string
	// OtherStore: the token was issued against another store (CF-3).
	OtherStore string
	// StoreDown: the store could not be reached to record the confirmation
	// (core.ErrStoreUnavailable); nothing ran.
	StoreDown string
	// Unrecorded: the call's audit intent could not be written (CF-3).
	Unrecorded string
	// ShuttingDown: the gateway shut down while the call waited for an
	// operator (SV-9).
	ShuttingDown string
}

// The placeholders a message may use (CF-7).
const (
	// PlaceholderTool is the tool's name as the client calls it.
	PlaceholderTool = "tool"
	// PlaceholderUpstream is the upstream the tool is imported from, or
	// "this gateway" for a native tool.
	PlaceholderUpstream = "upstream"
	// PlaceholderExpires is when the token expires (expired), RFC 3339 UTC.
	PlaceholderExpires = "expires"
	// PlaceholderMinutes is the token lifetime (gateway.confirm.ttl) in
	// minutes.
	PlaceholderMinutes = "minutes"
	// PlaceholderReason is why: the refusal (invalid) or the operator's
	// reason, possibly empty (rejected).
	PlaceholderReason = "reason"
	// PlaceholderOperator is who rejected the call.
	PlaceholderOperator = "operator"
)

// nativeUpstream is what {upstream} reads for a native tool.
const nativeUpstream = "this gateway"

// configurable lists the messages an operator writes, by the name the
// configuration gives them, and the placeholders each can fill.
var configurable = []struct {
	key   string
	field func(*ConfirmMessages) *string
	vars  []string
}{
	{"preview", func(m *ConfirmMessages) *string { return &m.Preview },
		[]string{PlaceholderTool, PlaceholderUpstream, PlaceholderExpires, PlaceholderMinutes}},
	{"invalid", func(m *ConfirmMessages) *string { return &m.Invalid },
		[]string{PlaceholderTool, PlaceholderUpstream, PlaceholderReason}},
	{"used", func(m *ConfirmMessages) *string { return &m.Used },
		[]string{PlaceholderTool, PlaceholderUpstream}},
	{"expired", func(m *ConfirmMessages) *string { return &m.Expired },
		[]string{PlaceholderTool, PlaceholderUpstream, PlaceholderExpires, PlaceholderMinutes}},
	{"rejected", func(m *ConfirmMessages) *string { return &m.Rejected },
		[]string{PlaceholderTool, PlaceholderUpstream, PlaceholderOperator, PlaceholderReason}},
	{"timedOut", func(m *ConfirmMessages) *string { return &m.TimedOut },
		[]string{PlaceholderTool, PlaceholderUpstream}},
	{"waiting", func(m *ConfirmMessages) *string { return &m.Waiting },
		[]string{PlaceholderTool, PlaceholderUpstream}},
	{"shuttingDown", func(m *ConfirmMessages) *string { return &m.ShuttingDown },
		[]string{PlaceholderTool, PlaceholderUpstream}},
}

var allPlaceholders = []string{PlaceholderTool, PlaceholderUpstream, PlaceholderExpires, PlaceholderMinutes, PlaceholderReason, PlaceholderOperator}

// MessageKeys are the names of the messages an operator can write
// (gateway.confirm.messages), in the order of the configuration.
func MessageKeys() []string {
	out := make([]string, len(configurable))
	for i, c := range configurable {
		out[i] = c.key
	}
	return out
}

// MessagePlaceholders are the placeholders the message key names can use;
// nil for an unknown key.
func MessagePlaceholders(key string) []string {
	for _, c := range configurable {
		if c.key == key {
			return append([]string(nil), c.vars...)
		}
	}
	return nil
}

// CheckMessage reports a problem with text as the message key names: a
// {name} it cannot fill. Text outside braces, and braces around anything
// but a name, are taken as written.
func CheckMessage(key, text string) error {
	vars := MessagePlaceholders(key)
	if vars == nil {
		return fmt.Errorf("unknown message %q", key)
	}
	var err error
	eachPlaceholder(text, func(name string) bool {
		switch {
		case contains(vars, name):
			return true
		case contains(allPlaceholders, name):
			err = fmt.Errorf("placeholder {%s} has no value in this message; it can use %s", name, braced(vars))
		default:
			err = fmt.Errorf("unknown placeholder {%s}; this message can use %s", name, braced(vars))
		}
		return false
	})
	return err
}

// check reports the first problem with the configurable messages m sets.
func (m ConfirmMessages) check() error {
	var errs []error
	for _, c := range configurable {
		if text := *c.field(&m); text != "" {
			if err := CheckMessage(c.key, text); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", c.key, err))
			}
		}
	}
	return errors.Join(errs...)
}

// withDefaults fills the fields m leaves empty with the built-in texts.
// The preview's {source} ("upstream NAME" or "this gateway") is the
// built-in text's own: its words are English, so operators get the bare
// {upstream} to phrase in their language.
func (m ConfirmMessages) withDefaults() ConfirmMessages {
	setDefault(&m.Preview, "Preview only: nothing has run. To run {tool} on {source}, call it again with the same arguments, \"confirm\": true and this confirmToken before {expires}.")
	setDefault(&m.Invalid, "Not run: the confirmation was refused")
	setDefault(&m.Used, "Not run: this confirmation was already used; preview again to get a new one")
	setDefault(&m.Rejected, "Not run: the operator rejected this call")
	setDefault(&m.Expired, "Not run: the confirmation expired; preview again to get a new one")
	setDefault(&m.TimedOut, "Not run: no operator approved this call in time; preview again to ask again")
	setDefault(&m.Waiting, "waiting for an operator to approve")
	setDefault(&m.StoreLost, "Not run: the gateway's store was deleted or replaced while in use, and with it the record of used confirmations; action calls are refused until the gateway is restarted")
	setDefault(&m.Unrecorded, "Not run: the gateway could not record this call in its audit log before running it; preview again to get a new confirmation")
	setDefault(&m.ShuttingDown, "Not run: the gateway is shutting down, so no operator will approve this call; preview again once it is back")
	setDefault(&m.StoreDown, "Not run: the gateway could not reach its store to record this confirmation, so nothing ran; try again shortly (if the confirmation is then reported as used, preview again)")
	setDefault(&m.OtherStore, "Not run: this confirmation was issued against another store (the gateway's store was lost or replaced since); preview again to get a new one")
	return m
}

func setDefault(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

// SetMessages replaces the texts in use, for the calls that answer from
// now on (a reload, OP-8); empty fields take the defaults. A message with
// a placeholder it cannot fill is refused, and the texts in use stay.
func (g *Gate) SetMessages(m ConfirmMessages) error {
	if err := m.check(); err != nil {
		return fmt.Errorf("confirm messages: %w", err)
	}
	m = m.withDefaults()
	g.msgs.Store(&m)
	return nil
}

// Messages returns the texts in use.
func (g *Gate) Messages() ConfirmMessages { return *g.msgs.Load() }

// RejectedError is an operator's rejection of a waiting call (CF-5).
type RejectedError struct {
	By     string
	Reason string
}

func (e *RejectedError) Error() string {
	if e.Reason != "" {
		return "rejected by " + e.By + ": " + e.Reason
	}
	return "rejected by " + e.By
}

func (e *RejectedError) Is(target error) bool { return target == ErrConfirmRejected }

// callVars are the values of a message's placeholders for one call.
type callVars struct {
	tool, upstream, expires, minutes, reason, operator string
	// source is the built-in preview's own placeholder (withDefaults).
	source string
}

func (g *Gate) varsFor(tool, source string, expires time.Time) callVars {
	v := callVars{tool: tool, upstream: source, source: "upstream " + source,
		minutes: strconv.FormatFloat(g.ttl.Minutes(), 'f', -1, 64)}
	if source == "" {
		v.upstream, v.source = nativeUpstream, nativeUpstream
	}
	if !expires.IsZero() {
		v.expires = expires.UTC().Format(time.RFC3339)
	}
	return v
}

func (v *callVars) lookup(name string) (string, bool) {
	switch name {
	case PlaceholderTool:
		return v.tool, true
	case PlaceholderUpstream:
		return v.upstream, true
	case PlaceholderExpires:
		return v.expires, true
	case PlaceholderMinutes:
		return v.minutes, true
	case PlaceholderReason:
		return v.reason, true
	case PlaceholderOperator:
		return v.operator, true
	case "source":
		return v.source, true
	}
	return "", false
}

// render fills text's placeholders from v; a name v does not know stays as
// written.
func render(text string, v *callVars) string {
	if strings.IndexByte(text, '{') < 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text) + 32)
	for {
		i, j, name := nextPlaceholder(text)
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		b.WriteString(text[:i])
		if val, ok := v.lookup(name); ok {
			b.WriteString(val)
		} else {
			b.WriteString(text[i:j])
		}
		text = text[j:]
	}
}

// nextPlaceholder finds the first {name} in s: its start, its end and the
// name; i is -1 when there is none. A name is a letter then letters, digits
// or underscores.
func nextPlaceholder(s string) (i, j int, name string) {
	off := 0
	for {
		k := strings.IndexByte(s[off:], '{')
		if k < 0 {
			return -1, -1, ""
		}
		start := off + k
		end := start + 1
		for end < len(s) && isNameByte(s[end], end == start+1) {
			end++
		}
		if end > start+1 && end < len(s) && s[end] == '}' {
			return start, end + 1, s[start+1 : end]
		}
		off = start + 1
	}
}

func isNameByte(c byte, first bool) bool {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
		return true
	}
	return !first && (c >= '0' && c <= '9' || c == '_')
}

// eachPlaceholder calls f with each placeholder name in s, in order, until
// f returns false.
func eachPlaceholder(s string, f func(name string) bool) {
	for {
		_, j, name := nextPlaceholder(s)
		if j < 0 || !f(name) {
			return
		}
		s = s[j:]
	}
}

func hasPlaceholder(s, name string) bool {
	found := false
	eachPlaceholder(s, func(n string) bool {
		found = n == name
		return !found
	})
	return found
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func braced(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "{" + n + "}"
	}
	return strings.Join(out, ", ")
}

// PreviewText renders the preview message for a tool of upstream source
// ("" for a native tool) whose token expires then.
func (g *Gate) PreviewText(tool, source string, expires time.Time) string {
	v := g.varsFor(tool, source, expires)
	return render(g.msgs.Load().Preview, &v)
}

// WaitingText is the progress message of a call to tool waiting for an
// operator (CF-5).
func (g *Gate) WaitingText(tool core.Tool) string {
	v := g.varsFor(tool.Name, tool.Source, time.Time{})
	return render(g.msgs.Load().Waiting, &v)
}

// RefusalText is the client-facing message for a refused confirmation;
// the placeholders that name the call read empty. Call answers with
// refusalText, which fills them.
func (g *Gate) RefusalText(err error) string {
	return g.refusalText(core.Tool{}, time.Time{}, err)
}

// refusalText is the client-facing message for a refused confirming call
// to tool, whose token expires then (zero if unknown).
func (g *Gate) refusalText(tool core.Tool, expires time.Time, err error) string {
	m := g.msgs.Load()
	v := g.varsFor(tool.Name, tool.Source, expires)
	if tool.Name == "" {
		v.upstream = ""
	}
	var rej *RejectedError
	switch {
	case errors.Is(err, ErrConfirmUsed):
		return render(m.Used, &v)
	case errors.Is(err, ErrConfirmExpired):
		return render(m.Expired, &v)
	case errors.As(err, &rej):
		v.operator, v.reason = rej.By, rej.Reason
		text := render(m.Rejected, &v)
		switch {
		case hasPlaceholder(m.Rejected, PlaceholderReason):
		case hasPlaceholder(m.Rejected, PlaceholderOperator):
			if rej.Reason != "" {
				text += ": " + rej.Reason
			}
		default:
			text += ": " + rej.Error()
		}
		return text
	case errors.Is(err, ErrConfirmRejected):
		return m.Rejected + ": " + err.Error()
	case errors.Is(err, ErrApprovalTimeout):
		return render(m.TimedOut, &v)
	case errors.Is(err, ErrShuttingDown):
		return render(m.ShuttingDown, &v)
	case errors.Is(err, core.ErrStoreLost):
		return m.StoreLost
	case errors.Is(err, core.ErrStoreUnavailable):
		return m.StoreDown
	case errors.Is(err, ErrConfirmStore):
		return m.OtherStore
	case errors.Is(err, ErrNotRecorded):
		return m.Unrecorded
	}
	v.reason = err.Error()
	text := render(m.Invalid, &v)
	if !hasPlaceholder(m.Invalid, PlaceholderReason) {
		text += ": " + v.reason
	}
	return text
}
