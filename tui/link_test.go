package tui

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/toolgate/toolgate/core"
)

const attachURL = "http://127.0.0.1:7332"

// attachedModel is a console attached to a gateway in another process, as
// `console --attach` runs it: the fake stands for the remote console.
func attachedModel(t *testing.T, f *fakeConsole, w, h int) *Model {
	t.Helper()
	m := New(Options{Console: f, Operator: "alice", Now: func() time.Time { return t0 }, Attached: attachURL})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	snap, sub, _ := f.Subscribe(context.Background())
	t.Cleanup(sub.Close)
	m.Update(subscribedMsg{info: f.info, snap: snap, sub: sub})
	return m
}

// lostMsg is what a remote subscription delivers when the link breaks.
func lostMsg(err string, retryIn time.Duration) eventMsg {
	return eventMsg(core.Event{Time: t0, Data: core.ConnectionLost{Error: err, Retry: t0.Add(retryIn)}})
}

// type remoteDown stands for the remote subscription's DisconnectedError.
type remoteDown struct{ l core.ConnectionLost }

func (e remoteDown) Error() string                       { return "connection to the gateway lost: " + e.l.Error }
func (e remoteDown) ConnectionLost() core.ConnectionLost { return e.l }

// resyncSub answers Resync with a fixed snapshot or error.
type resyncSub struct {
	core.Subscription
	snap core.Snapshot
	err  error
}

func (s resyncSub) Resync(context.Context) (core.Snapshot, error) { return s.snap, s.err }

// CO-9: the header names the gateway the console is attached to and the
// operator the key names.
func TestAttachedHeader(t *testing.T) {
	m := attachedModel(t, newFake(), 100, 30)
	v := m.View()
	if !strings.Contains(lines(v)[0], "⇄ "+attachURL+" as alice") {
		t.Fatalf("the header does not say where the console is attached:\n%s", v)
	}
	checkSize(t, v, 100, 30)
	if n := newModel(newFake()); strings.Contains(n.View(), "⇄") {
		t.Fatal("an in-process console claims to be attached")
	}
}

// CO-9: A lost link shows at once: a banner with the error and the countdown to
// the next attempt, on every pane and at 80×24; actions fail with a clear
// message and are not sent.
func TestLostLinkBannerAndRefusedActions(t *testing.T) {
	f := newFake()
	m := attachedModel(t, f, 100, 30)
	_, cmd := m.Update(lostMsg("read tcp 127.0.0.1:7332: connection reset by peer", 3*time.Second))
	if cmd == nil {
		t.Fatal("no command after ConnectionLost: the console stopped reading events")
	}
	// At 100 columns the error is cut, never the countdown.
	const banner = "⚠ connection to the gateway lost: read tcp 127.0.0.1:7332: connection reset by …; reconnecting in 3s"
	for _, pane := range []string{"1", "2", "3", "4", "5", "6"} {
		press(t, m, pane)
		if v := m.View(); !strings.Contains(v, banner) {
			t.Fatalf("pane %s: no banner:\n%s", pane, v)
		}
	}
	if m.Lost() == nil {
		t.Fatal("Lost() is nil while the banner shows")
	}
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	v := m.View()
	checkSize(t, v, 80, 24)
	if !strings.Contains(v, "connection to the gateway lost") {
		t.Fatalf("80×24: the banner is gone:\n%s", v)
	}
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})

	// The activity feed records the loss, once however many attempts
	// fail; the banner shows the latest.
	m.Update(lostMsg("dial tcp 127.0.0.1:7332: connect: connection refused", 3*time.Second))
	press(t, m, "6")
	if !strings.Contains(m.View(), "gateway link") || m.Activity().Count() != 1 {
		t.Fatalf("the loss is not in the activity feed once (%d entries):\n%s", m.Activity().Count(), m.View())
	}
	if !strings.Contains(m.View(), "lost: dial tcp 127.0.0.1:7332: connect: connection …; reconnecting in 3s") ||
		!strings.Contains(m.View(), "the view below is the last state seen, not live") {
		t.Fatalf("the banner does not show the latest attempt:\n%s", m.View())
	}

	// Actions: refused with a flash that says why; nothing reaches the
	// gateway.
	press(t, m, "5", "a")
	if !strings.Contains(m.Flash(), "not connected to the gateway") || !strings.Contains(m.Flash(), "nothing was done") {
		t.Fatalf("approve while down: flash %q", m.Flash())
	}
	press(t, m, "1", "r")
	if !strings.Contains(m.Flash(), "not connected to the gateway") {
		t.Fatalf("refresh while down: flash %q", m.Flash())
	}
	press(t, m, "4", "x")
	if m.Dialog() != nil {
		press(t, m, "right", "enter")
	}
	if !strings.Contains(m.Flash(), "not connected to the gateway") {
		t.Fatalf("end session while down: flash %q", m.Flash())
	}
	for _, c := range f.Calls() {
		if !strings.HasPrefix(c, "flags ") {
			t.Errorf("%q reached the gateway while the link was down", c)
		}
	}

	// The countdown runs down with the clock, then says it is trying.
	m.c.Now = func() time.Time { return t0.Add(5 * time.Second) }
	if v := m.View(); !strings.Contains(v, "connection refus…; reconnecting…") {
		t.Fatalf("after the retry time:\n%s", v)
	}
}

// CO-9: the Resync after a loss replaces the whole view with the fresh snapshot,
// clears the banner, reads the gateway's details again, and actions work
// again.
func TestResyncAfterLossReplacesView(t *testing.T) {
	f := newFake()
	m := attachedModel(t, f, 100, 30)
	m.Update(lostMsg("EOF", time.Second))

	fresh := f.snap
	fresh.Seq = 3 // a restarted gateway counts from the start again
	fresh.Pending = nil
	fresh.Sessions = nil
	fresh.Upstreams = append([]core.UpstreamStatus{{Name: "aaa_new", Transport: "http", State: core.StateConnected}}, fresh.Upstreams...)
	m.sub = resyncSub{Subscription: m.sub, snap: fresh}
	f.info.Endpoints = []string{"http://127.0.0.1:9999/mcp"}

	_, cmd := m.Update(eventMsg(core.Event{Data: core.Resync{}}))
	var got *resyncedMsg
	for _, msg := range collect(cmd) {
		if r, ok := msg.(resyncedMsg); ok {
			got = &r
		}
	}
	if got == nil || got.info == nil {
		t.Fatalf("the Resync after a loss did not read the snapshot and the details: %+v", got)
	}
	m.Update(*got)
	v := m.View()
	if strings.Contains(v, "connection to the gateway lost") || m.Lost() != nil {
		t.Fatalf("the banner stayed after the resync:\n%s", v)
	}
	if strings.Contains(v, "pending approval") || !strings.Contains(v, "aaa_new") || !strings.Contains(v, "127.0.0.1:9999") {
		t.Fatalf("the view is not the fresh snapshot:\n%s", v)
	}
	if m.Snapshot().Seq != 3 {
		t.Fatalf("state Seq %d, want the new gateway's 3", m.Snapshot().Seq)
	}
	// Events of the restarted gateway apply although their Seq is lower
	// than the old one's.
	m.Update(eventMsg(core.Event{Seq: 4, Time: t0, Data: core.ConfirmationPending{Pending: core.PendingConfirmation{ID: "c-9", Tool: "create_note", Deadline: t0.Add(time.Minute)}}}))
	if !strings.Contains(m.View(), "⚑ 1 pending approval") {
		t.Fatalf("an event after the resync was not applied:\n%s", m.View())
	}
	press(t, m, "5", "a")
	if !slices.Contains(f.Calls(), "approve c-9 by alice") {
		t.Fatalf("approve after the resync did not reach the gateway: %q (flash %q)", f.Calls(), m.Flash())
	}
	press(t, m, "6")
	if !strings.Contains(m.View(), "the view is live again") {
		t.Fatalf("the reconnect is not in the activity feed:\n%s", m.View())
	}
}

// CO-9: A Resync that fails because the link went down again shows the banner
// and keeps reading events (the next Resync follows), instead of freezing
// the screen with "no longer updates".
func TestResyncFailsWhileDown(t *testing.T) {
	f := newFake()
	m := attachedModel(t, f, 100, 30)
	m.sub = resyncSub{Subscription: m.sub, err: remoteDown{core.ConnectionLost{Error: "connection refused", Retry: t0.Add(2 * time.Second)}}}
	_, cmd := m.Update(eventMsg(core.Event{Data: core.Resync{}}))
	msgs := collect(cmd)
	if len(msgs) != 1 {
		t.Fatalf("messages %#v", msgs)
	}
	_, next := m.Update(msgs[0])
	v := m.View()
	if !strings.Contains(v, "connection to the gateway lost: connection refused; reconnecting in 2s") || strings.Contains(v, "no longer updates") {
		t.Fatalf("after a failed resync:\n%s", v)
	}
	if next == nil {
		t.Fatal("the console stopped reading events after a failed resync")
	}
	if m.Activity().Count() != 1 {
		t.Fatalf("the loss is not in the activity feed: %d entries", m.Activity().Count())
	}
	// Any other Resync failure still ends the stream, as before.
	m.sub = resyncSub{Subscription: m.sub, err: errors.New("boom")}
	_, cmd = m.Update(eventMsg(core.Event{Data: core.Resync{}}))
	for _, msg := range collect(cmd) {
		m.Update(msg)
	}
	if !strings.Contains(m.View(), "no longer updates") {
		t.Fatalf("a broken subscription is not shown:\n%s", m.View())
	}
}

// CO-9: every operator's action shows in the Activity pane: time,
// operator, action, target, outcome.
func TestOperatorActionInActivity(t *testing.T) {
	m := attachedModel(t, newFake(), 140, 30)
	m.Update(eventMsg(core.Event{Seq: 1, Time: t0, Data: core.OperatorAction{Operator: "bob", Action: core.ActionApproveConfirmation, Target: "c-1"}}))
	m.Update(eventMsg(core.Event{Seq: 2, Time: t0.Add(time.Second), Data: core.OperatorAction{Operator: "alice", Action: core.ActionRejectConfirmation, Target: "c-1", Error: "already decided (approved) by bob"}}))
	press(t, m, "6")
	v := m.View()
	for _, want := range []string{"09:26:53 bob", "confirmation.approve c-1", "ok", "alice", "confirmation.reject c-1", "failed", "already decided (approved) by bob"} {
		if !strings.Contains(v, want) {
			t.Errorf("activity lacks %q:\n%s", want, v)
		}
	}
	if m.Activity().Count() != 2 {
		t.Errorf("%d entries", m.Activity().Count())
	}
}

// CO-9: quitting an attached console leaves the gateway running: it does not ask
// about pending approvals, which stay for the other operators.
func TestAttachedQuitDoesNotAsk(t *testing.T) {
	m := attachedModel(t, newFake(), 100, 30)
	_, cmd := m.Update(keyMsg("q"))
	if m.Dialog() != nil || cmd == nil {
		t.Fatalf("quit asked (dialog %v)", m.Dialog() != nil)
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("q did not quit")
	}
}

// CO-9: an attached console that cannot subscribe shows the failure as a lost
// link and tries again, instead of a screen that never updates; an
// in-process one reports the stream as closed, as before.
func TestAttachedSubscribeFailureRetries(t *testing.T) {
	m := New(Options{Console: newFake(), Operator: "alice", Now: func() time.Time { return t0 }, Attached: attachURL})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	_, cmd := m.Update(subClosedMsg{err: errors.New("cannot reach the admin API: connection refused")})
	if cmd == nil || m.Lost() == nil || strings.Contains(m.View(), "no longer updates") {
		t.Fatalf("after a failed subscribe:\n%s", m.View())
	}
	if v := m.View(); !strings.Contains(v, "connection refused; reconnecting in 2s") {
		t.Fatalf("no banner:\n%s", v)
	}
	f := newFake()
	snap, sub, _ := f.Subscribe(context.Background())
	t.Cleanup(sub.Close)
	m.Update(subscribedMsg{info: f.info, snap: snap, sub: sub})
	if m.Lost() != nil || strings.Contains(m.View(), "connection to the gateway lost") {
		t.Fatalf("the banner stayed after subscribing:\n%s", m.View())
	}

	local := newModel(newFake())
	local.Update(subClosedMsg{err: errors.New("boom")})
	if !strings.Contains(local.View(), "no longer updates") {
		t.Fatalf("in-process:\n%s", local.View())
	}
}
