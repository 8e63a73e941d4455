package confirm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/coretest"
)

var notesTool = core.Tool{Name: "notes_create", Source: "notes"}

// The built-in texts, as clients read them before they became
// configurable: a gate given no messages answers exactly these.
//
// Covers CF-7.
func TestDefaultMessages(t *testing.T) {
	g, err := NewGate(GateOptions{Secret: testSecret, Ledger: &mapLedger{}})
	coretest.Must(t, err)
	exp := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct{ name, got, want string }{
		{"preview", g.PreviewText("notes_create", "notes", exp),
			`Preview only: nothing has run. To run notes_create on upstream notes, call it again with the same arguments, "confirm": true and this confirmToken before 2027-01-02T03:04:05Z.`},
		{"preview native", g.PreviewText("tidy", "", exp),
			`Preview only: nothing has run. To run tidy on this gateway, call it again with the same arguments, "confirm": true and this confirmToken before 2027-01-02T03:04:05Z.`},
		{"used", g.refusalText(notesTool, exp, ErrConfirmUsed), "Not run: this confirmation was already used; preview again to get a new one"},
		{"expired", g.refusalText(notesTool, exp, ErrConfirmExpired), "Not run: the confirmation expired; preview again to get a new one"},
		{"invalid", g.refusalText(notesTool, exp, ErrConfirmArgs), "Not run: the confirmation was refused: arguments differ from the previewed ones"},
		{"invalid without a tool", g.RefusalText(ErrConfirmForged), "Not run: the confirmation was refused: confirm token is not valid"},
		{"rejected", g.refusalText(notesTool, exp, &RejectedError{By: "carol", Reason: "wrong note"}),
			"Not run: the operator rejected this call: rejected by carol: wrong note"},
		{"rejected without a reason", g.refusalText(notesTool, exp, &RejectedError{By: "carol"}),
			"Not run: the operator rejected this call: rejected by carol"},
		{"timed out", g.refusalText(notesTool, exp, ErrApprovalTimeout), "Not run: no operator approved this call in time; preview again to ask again"},
		{"shutting down", g.refusalText(notesTool, exp, ErrShuttingDown),
			"Not run: the gateway is shutting down, so no operator will approve this call; preview again once it is back"},
		{"waiting", g.WaitingText(notesTool), "waiting for an operator to approve"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, tt.got, tt.want)
		}
	}
}

// CF-7: every configurable message renders the placeholders it offers,
// through the gate's own calls; values are not read as placeholders again,
// and no argument value reaches a message.
func TestConfiguredMessages(t *testing.T) {
	f := newGateFixture(t)
	g, err := NewGate(GateOptions{Secret: testSecret, Ledger: &mapLedger{used: map[string]bool{}}, Now: func() time.Time { return f.clock },
		TTL: 90 * time.Second,
		Messages: ConfirmMessages{
			Preview:      "Nichts lief. {tool} auf {upstream}: bestätigen vor {expires} ({minutes} Min.)",
			Invalid:      "Abgelehnt ({reason}) für {tool} auf {upstream}",
			Used:         "{tool} auf {upstream}: schon benutzt",
			Expired:      "{tool}: abgelaufen um {expires}, {minutes} Min. gültig",
			Rejected:     "{operator} lehnte {tool} auf {upstream} ab: {reason}",
			TimedOut:     "{tool} auf {upstream}: niemand entschied",
			Waiting:      "{tool} auf {upstream} wartet",
			ShuttingDown: "{tool} auf {upstream}: der Gateway hält an",
		}})
	coretest.Must(t, err)
	f.gate = g
	ctx := context.Background()
	const secretArg = "ARGVALUE-7f3c"
	args := `{"title":"` + secretArg + `","n":42}`
	exp := f.clock.Add(90 * time.Second).Truncate(time.Second).UTC().Format(time.RFC3339)

	p := f.preview(t, alice, args)
	texts := map[string]string{"preview": p.Preview}
	if want := "Nichts lief. notes_create auf notes: bestätigen vor " + exp + " (1.5 Min.)"; p.Preview != want {
		t.Errorf("preview:\n got %q\nwant %q", p.Preview, want)
	}
	refusal := func(name, args, token string) string {
		t.Helper()
		_, err := f.gate.Invoke(ctx, f.reg, alice, "notes_create", confirmArgs(args, token))
		var re *RefusedError
		if !errors.As(err, &re) {
			t.Fatalf("%s: %v, want a refusal", name, err)
		}
		texts[name] = re.Text
		return re.Text
	}
	if got, want := refusal("invalid", `{"title":"other","n":42}`, p.ConfirmToken),
		"Abgelehnt (arguments differ from the previewed ones) für notes_create auf notes"; got != want {
		t.Errorf("invalid:\n got %q\nwant %q", got, want)
	}
	if _, err := f.gate.Invoke(ctx, f.reg, alice, "notes_create", confirmArgs(args, p.ConfirmToken)); err != nil || f.runs.Load() != 1 {
		t.Fatalf("confirm: %v runs=%d", err, f.runs.Load())
	}
	if got, want := refusal("used", args, p.ConfirmToken), "notes_create auf notes: schon benutzt"; got != want {
		t.Errorf("used:\n got %q\nwant %q", got, want)
	}
	p2 := f.preview(t, alice, args)
	f.clock = f.clock.Add(2 * time.Minute)
	if got, want := refusal("expired", args, p2.ConfirmToken), "notes_create: abgelaufen um "+p2.ExpiresAt.Format(time.RFC3339)+", 1.5 Min. gültig"; got != want {
		t.Errorf("expired:\n got %q\nwant %q", got, want)
	}

	// The operator's reason is shown as written, even where it looks like
	// a placeholder.
	direct := []struct {
		name string
		err  error
		want string
	}{
		{"rejected", &RejectedError{By: "carol", Reason: "not on {tool} today"}, "carol lehnte notes_create auf notes ab: not on {tool} today"},
		{"timedOut", ErrApprovalTimeout, "notes_create auf notes: niemand entschied"},
		{"shuttingDown", ErrShuttingDown, "notes_create auf notes: der Gateway hält an"},
	}
	for _, d := range direct {
		texts[d.name] = f.gate.refusalText(notesTool, time.Time{}, d.err)
		if texts[d.name] != d.want {
			t.Errorf("%s:\n got %q\nwant %q", d.name, texts[d.name], d.want)
		}
	}
	texts["waiting"] = f.gate.WaitingText(notesTool)
	if want := "notes_create auf notes wartet"; texts["waiting"] != want {
		t.Errorf("waiting: got %q, want %q", texts["waiting"], want)
	}
	if w := f.gate.WaitingText(core.Tool{Name: "tidy"}); w != "tidy auf this gateway wartet" {
		t.Errorf("waiting, native tool: %q", w)
	}
	for name, text := range texts {
		if strings.Contains(text, secretArg) || strings.Contains(text, "42") || strings.Contains(text, p.ConfirmToken) {
			t.Errorf("%s carries an argument value or the token: %q", name, text)
		}
	}
	if len(texts) != len(MessageKeys()) {
		t.Errorf("rendered %d of the %d messages", len(texts), len(MessageKeys()))
	}
}

// CF-4, CF-5: a refusal text without {reason} still says why, so the
// refusals stay distinct; with {operator} alone the reason follows it.
func TestReasonAppendedWhenNotPlaced(t *testing.T) {
	g, err := NewGate(GateOptions{Secret: testSecret, Ledger: &mapLedger{}, Messages: ConfirmMessages{
		Invalid: "Abgelehnt", Rejected: "Abgelehnt von {operator}",
	}})
	coretest.Must(t, err)
	for _, tt := range []struct {
		err  error
		want string
	}{
		{ErrConfirmActor, "Abgelehnt: confirm token was issued to another actor"},
		{ErrConfirmForged, "Abgelehnt: confirm token is not valid"},
		{&RejectedError{By: "carol", Reason: "nein"}, "Abgelehnt von carol: nein"},
		{&RejectedError{By: "carol"}, "Abgelehnt von carol"},
	} {
		if got := g.refusalText(notesTool, time.Time{}, tt.err); got != tt.want {
			t.Errorf("%v: got %q, want %q", tt.err, got, tt.want)
		}
	}
	g2, err := NewGate(GateOptions{Secret: testSecret, Ledger: &mapLedger{}, Messages: ConfirmMessages{Rejected: "Nein."}})
	coretest.Must(t, err)
	if got, want := g2.refusalText(notesTool, time.Time{}, &RejectedError{By: "carol", Reason: "später"}), "Nein.: rejected by carol: später"; got != want {
		t.Errorf("rejected without placeholders: got %q, want %q", got, want)
	}
}

// Covers CF-7.
func TestCheckMessage(t *testing.T) {
	tests := []struct {
		key, text string
		want      string // "" accepted
	}{
		{"preview", "{tool} on {upstream} before {expires} ({minutes} min)", ""},
		{"preview", "no placeholders at all", ""},
		{"preview", `JSON stays as written: {"confirm": true}, { tool }, {1}, {}, {`, ""},
		{"invalid", "{reason}", ""},
		{"rejected", "{operator}: {reason}", ""},
		{"used", "{tool} {foo}", "unknown placeholder {foo}; this message can use {tool}, {upstream}"},
		{"used", "{Tool}", "unknown placeholder {Tool}; this message can use {tool}, {upstream}"},
		{"preview", "{source}", "unknown placeholder {source}; this message can use {tool}, {upstream}, {expires}, {minutes}"},
		{"waiting", "{minutes}", "placeholder {minutes} has no value in this message; it can use {tool}, {upstream}"},
		{"expired", "{reason}", "placeholder {reason} has no value in this message; it can use {tool}, {upstream}, {expires}, {minutes}"},
		{"storeLost", "x", `unknown message "storeLost"`},
	}
	for _, tt := range tests {
		got := ""
		if err := CheckMessage(tt.key, tt.text); err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("CheckMessage(%s, %q) = %q, want %q", tt.key, tt.text, got, tt.want)
		}
	}
	if diff := cmp.Diff([]string{"preview", "invalid", "used", "expired", "rejected", "timedOut", "waiting", "shuttingDown"}, MessageKeys()); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
}

// CF-7, OP-8: SetMessages replaces the texts for the next answer; one it
// refuses leaves the texts in use as they were; NewGate refuses it too.
func TestSetMessages(t *testing.T) {
	g, err := NewGate(GateOptions{Secret: testSecret, Ledger: &mapLedger{}, Messages: ConfirmMessages{Used: "first"}})
	coretest.Must(t, err)
	coretest.Must(t, g.SetMessages(ConfirmMessages{Used: "second {tool}"}))
	if got := g.refusalText(notesTool, time.Time{}, ErrConfirmUsed); got != "second notes_create" {
		t.Fatalf("after SetMessages: %q", got)
	}
	if !strings.HasPrefix(g.Messages().Expired, "Not run: the confirmation expired") {
		t.Fatalf("an empty field did not take the default: %q", g.Messages().Expired)
	}
	err = g.SetMessages(ConfirmMessages{Used: "third", Waiting: "{oops}"})
	if err == nil || !strings.Contains(err.Error(), "waiting: unknown placeholder {oops}") {
		t.Fatalf("bad messages: %v", err)
	}
	if got := g.refusalText(notesTool, time.Time{}, ErrConfirmUsed); got != "second notes_create" {
		t.Fatalf("a refused SetMessages changed the texts: %q", got)
	}
	if _, err := NewGate(GateOptions{Secret: testSecret, Ledger: &mapLedger{}, Messages: ConfirmMessages{Preview: "{nope}"}}); err == nil {
		t.Fatal("NewGate accepted an unknown placeholder")
	}
}

// The preview a gate answers with after SetMessages is the new one: the
// texts are read per call, not fixed at construction.
//
// Covers CF-7.
func TestSetMessagesReachesTheNextPreview(t *testing.T) {
	f := newGateFixture(t)
	coretest.Must(t, f.gate.SetMessages(ConfirmMessages{Preview: "P {tool}"}))
	res, err := f.gate.Invoke(context.Background(), f.reg, alice, "notes_create", json.RawMessage(`{"title":"x"}`))
	coretest.Must(t, err)
	var body struct {
		StructuredContent Preview `json:"structuredContent"`
	}
	coretest.Must(t, json.Unmarshal(res.JSON, &body))
	if body.StructuredContent.Preview != "P notes_create" {
		t.Fatalf("preview: %q", body.StructuredContent.Preview)
	}
}
