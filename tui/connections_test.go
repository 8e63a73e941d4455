package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/toolgate/toolgate/core"
)

func (f *fakeConsole) Connections(context.Context) ([]core.Connection, error) {
	f.record("connections")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.connsErr != nil {
		return nil, f.connsErr
	}
	// As the gateway does: the sealed tokens never cross the console.
	out := slices.Clone(f.conns)
	for i := range out {
		out[i].Sealed, out[i].KeyID = nil, ""
	}
	return out, nil
}

// RevokeConnection forgets the connection and publishes the change, as the
// gateway does.
func (f *fakeConsole) RevokeConnection(_ context.Context, id, by string) (core.Connection, error) {
	f.record("revoke " + id + " by " + by)
	f.mu.Lock()
	i := slices.IndexFunc(f.conns, func(c core.Connection) bool { return c.ID == id })
	if i < 0 {
		f.mu.Unlock()
		return core.Connection{}, fmt.Errorf("%q: %w", id, core.ErrNoConnection)
	}
	c := f.conns[i]
	f.conns = slices.Delete(f.conns, i, i+1)
	f.mu.Unlock()
	c.Sealed, c.KeyID = nil, ""
	f.bus.Publish(core.ConnectionChanged{Connection: c, Change: "revoked"})
	return c, nil
}

// secretText is in every fake connection's sealed tokens and key id: no
// frame may show it.
const secretText = "SECRET-TOKEN"

// withConnections gives the fake gateway two oauth upstreams: crm, each
// actor's own account, with alice's working connection and bob's broken
// one; docs, one shared account.
func withConnections(f *fakeConsole) {
	f.info.OAuth = map[string]string{"crm": "perActor", "docs": "shared"}
	f.snap.Upstreams = append(f.snap.Upstreams,
		core.UpstreamStatus{Name: "crm", Transport: "http", State: core.StateConnected, Tools: 3, Latency: 40 * time.Millisecond, Server: core.ServerInfo{Version: "2.0", Protocol: "2025-06-18"}},
		core.UpstreamStatus{Name: "docs", Transport: "http", State: core.StateConnected, Tools: 2, Latency: 25 * time.Millisecond, Server: core.ServerInfo{Version: "1.3", Protocol: "2025-06-18"}})
	sealed := []byte(secretText + "-refresh-and-access")
	f.conns = []core.Connection{
		{ID: "conn_a1", Upstream: "crm", ActorID: "alice", Scopes: []string{"crm.read", "crm.write"}, Expiry: t0.Add(42 * time.Minute),
			CreatedAt: t0.Add(-3 * time.Hour), LastUsed: t0.Add(-5 * time.Minute), Sealed: sealed, KeyID: secretText + "-key"},
		{ID: "conn_b2", Upstream: "crm", ActorID: "bob", Scopes: []string{"crm.read"}, Expiry: t0.Add(-10 * time.Minute),
			Broken: "the authorization server refused the refresh token (invalid_grant)", CreatedAt: t0.Add(-26 * time.Hour), Sealed: sealed, KeyID: secretText + "-key"},
		{ID: "conn_s3", Upstream: "docs", ActorID: core.SharedActor, Scopes: []string{"docs.read"}, Expiry: t0.Add(5 * time.Hour),
			CreatedAt: t0.Add(-48 * time.Hour), LastUsed: t0.Add(-30 * time.Second), Sealed: sealed, KeyID: secretText + "-key"},
	}
}

// readyOAuth is ready() with the connections read, as the subscription's
// command would.
func readyOAuth(t *testing.T, f *fakeConsole, w, h int) *Model {
	t.Helper()
	m := ready(t, f, w, h)
	drive(t, m, m.upstreams.LoadConnections())
	return m
}

func noSecret(t *testing.T, what, view string) {
	t.Helper()
	if strings.Contains(view, "SECRET") || strings.Contains(view, "refresh-and-access") {
		t.Errorf("%s shows a token:\n%s", what, view)
	}
}

// UI-3: the Upstreams list and detail show each oauth upstream's credential
// scope and its connections; c opens the view with actor, upstream,
// scopes, expiry, last use and state; no frame shows a token.
func TestConnectionsInUpstreamsPane(t *testing.T) {
	f := newFake()
	withConnections(f)
	m := readyOAuth(t, f, 100, 30)
	v := m.View()
	noSecret(t, "the list", v)
	for _, want := range []string{"OAUTH", "actor 2 ✖1", "shared 1"} {
		if !strings.Contains(v, want) {
			t.Errorf("the list lacks %q:\n%s", want, v)
		}
	}
	// The detail of crm: its scope, count, broken count, soonest expiry
	// of a working connection (alice's; bob's is broken).
	press(t, m, "G", "k", "enter")
	v = m.View()
	noSecret(t, "the detail", v)
	for _, want := range []string{"Upstream crm", "credentials  perActor · each actor connects their own account", "connections  2 · 1 broken · soonest expiry in 42m · c lists them"} {
		if !strings.Contains(v, want) {
			t.Errorf("the detail lacks %q:\n%s", want, v)
		}
	}
	press(t, m, "c")
	v = m.View()
	noSecret(t, "the connections view", v)
	for _, want := range []string{"Upstream connections  3", "alice", "crm.read crm.write", "in 42m", "5m ago", "ok",
		"bob", "expired", "never", "✖ broken: the authorization", "(shared)", "docs.read", "in 5h", "30s ago",
		"id conn_a1 · connected 3h ago"} {
		if !strings.Contains(v, want) {
			t.Errorf("the connections view lacks %q:\n%s", want, v)
		}
	}
	press(t, m, "?")
	noSecret(t, "the help", m.View())
	if v := m.View(); !strings.Contains(v, "x") || !strings.Contains(v, "revoke") || !strings.Contains(v, "esc") {
		t.Errorf("the help lacks the view's keys:\n%s", v)
	}
	press(t, m, "esc", "esc")
	if !strings.Contains(m.View(), "OAUTH") {
		t.Fatalf("esc did not go back to the list:\n%s", m.View())
	}
}

// UI-3: revoke asks first, naming whose connection to what; cancelled,
// nothing is sent; confirmed, the console revokes as its operator and the
// row goes.
func TestConnectionRevokeConfirms(t *testing.T) {
	f := newFake()
	withConnections(f)
	m := readyOAuth(t, f, 100, 30)
	press(t, m, "c", "j", "x")
	if m.Dialog() == nil {
		t.Fatal("x opened no dialog")
	}
	v := m.View()
	noSecret(t, "the dialog", v)
	if !strings.Contains(v, "Revoke bob's connection to crm (conn_b2)?") {
		t.Fatalf("the dialog:\n%s", v)
	}
	press(t, m, "enter") // focus starts on Cancel
	if slices.ContainsFunc(f.Calls(), func(c string) bool { return strings.HasPrefix(c, "revoke") }) {
		t.Fatalf("a cancelled revoke was sent: %v", f.Calls())
	}
	press(t, m, "x", "right", "enter")
	if !slices.Contains(f.Calls(), "revoke conn_b2 by tester") {
		t.Fatalf("calls: %v", f.Calls())
	}
	if !strings.Contains(m.Flash(), "revoked connection conn_b2 of bob on crm") {
		t.Fatalf("flash: %q", m.Flash())
	}
	if v := m.View(); strings.Contains(v, "expired") || !strings.Contains(v, "Upstream connections  2") {
		t.Fatalf("bob's connection is still listed:\n%s", v)
	}
	// A second revoke of a connection already gone (another console's)
	// fails with the gateway's reason.
	m.upstreams.Connections().Observe(core.Event{Data: core.ConnectionChanged{Connection: core.Connection{ID: "conn_gone", Upstream: "crm", ActorID: "carol"}, Change: "connected"}})
	press(t, m, "G", "k")
	if !strings.Contains(m.View(), "id conn_gone") {
		t.Fatalf("carol's connection not selected:\n%s", m.View())
	}
	press(t, m, "x", "right", "enter")
	if !strings.Contains(m.Flash(), "revoking connection conn_gone failed") || !strings.Contains(m.Flash(), "no such upstream connection") {
		t.Fatalf("flash: %q", m.Flash())
	}
}

// UI-3: connection.changed events keep the list, the view and the
// summaries current without a read: a connect adds (replacing the actor's
// older connection), a broken one shows why, a revoke removes.
func TestConnectionEventsUpdateLive(t *testing.T) {
	f := newFake()
	withConnections(f)
	m := readyOAuth(t, f, 100, 30)
	press(t, m, "c")
	reads := len(f.Calls())
	send := func(change string, c core.Connection) {
		m.Update(eventMsg(core.Event{Seq: 50, Time: t0, Data: core.ConnectionChanged{Connection: c, Change: change}}))
	}
	send("connected", core.Connection{ID: "conn_c4", Upstream: "crm", ActorID: "carol", Scopes: []string{"crm.read"}, CreatedAt: t0, Sealed: []byte(secretText)})
	// bob reconnects: his broken connection is replaced.
	send("connected", core.Connection{ID: "conn_b5", Upstream: "crm", ActorID: "bob", Scopes: []string{"crm.read"}, CreatedAt: t0})
	send("broken", core.Connection{ID: "conn_a1", Upstream: "crm", ActorID: "alice", Broken: "refresh refused", CreatedAt: t0})
	send("revoked", core.Connection{ID: "conn_s3", Upstream: "docs"})
	v := m.View()
	noSecret(t, "the view after events", v)
	if !strings.Contains(v, "carol") || strings.Contains(v, "(shared)") || strings.Contains(v, "invalid_grant") || !strings.Contains(v, "✖ broken: refresh refused") ||
		!strings.Contains(v, "Upstream connections  3") {
		t.Fatalf("after the events:\n%s", v)
	}
	if len(f.Calls()) != reads {
		t.Fatalf("events made reads: %v", f.Calls()[reads:])
	}
	press(t, m, "esc")
	if v := m.View(); !strings.Contains(v, "actor 3 ✖1") || !strings.Contains(v, "shared 0") {
		t.Fatalf("the list after the events:\n%s", v)
	}
}

// UI-3: A read that started before an event may miss it: its answer is shown and
// read again.
func TestConnectionReadRacingAnEvent(t *testing.T) {
	f := newFake()
	withConnections(f)
	m := ready(t, f, 100, 30)
	load := m.upstreams.LoadConnections()
	m.Update(eventMsg(core.Event{Seq: 50, Time: t0, Data: core.ConnectionChanged{Connection: core.Connection{ID: "conn_c4", Upstream: "crm", ActorID: "carol"}, Change: "connected"}}))
	before := len(f.Calls())
	drive(t, m, load)
	var n int
	for _, c := range f.Calls()[before:] {
		if c == "connections" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("reads after the event: %v, want the stale one and another", f.Calls()[before:])
	}
}

// UI-3: A gateway without oauth upstreams: no OAUTH column, c says why it does
// nothing, and nothing is read.
func TestConnectionsWithoutOAuth(t *testing.T) {
	f := newFake()
	m := readyOAuth(t, f, 100, 30)
	press(t, m, "c")
	if strings.Contains(m.View(), "OAUTH") || !strings.Contains(m.Flash(), "no upstream has oauth") {
		t.Fatalf("view:\n%s\nflash %q", m.View(), m.Flash())
	}
	if slices.Contains(f.Calls(), "connections") {
		t.Fatalf("connections read without oauth: %v", f.Calls())
	}
}

// UI-3: A failed read says why in the view, and r reads again.
func TestConnectionsReadError(t *testing.T) {
	f := newFake()
	withConnections(f)
	f.connsErr = errors.New("admin API answered 500 Internal Server Error")
	m := readyOAuth(t, f, 100, 30)
	press(t, m, "c")
	if v := m.View(); !strings.Contains(v, "Cannot read the connections: admin API answered 500") {
		t.Fatalf("view:\n%s", v)
	}
	f.mu.Lock()
	f.connsErr = nil
	f.mu.Unlock()
	press(t, m, "r")
	if v := m.View(); !strings.Contains(v, "alice") || strings.Contains(v, "Cannot read") {
		t.Fatalf("after r:\n%s", v)
	}
}

// UI-3, CO-1: TestConnectionsGolden is TestGolden's check of the screens of a gateway
// with oauth upstreams, at 80×24 and 100×30, in plain text (as NO_COLOR).
func TestConnectionsGolden(t *testing.T) {
	cases := []struct {
		name  string
		w, h  int
		steps []step
	}{
		{"upstreams_oauth_80x24", 80, 24, nil},
		{"upstream_oauth_detail_80x24", 80, 24, []step{{keys: []string{"G", "k", "enter"}, want: "soonest expiry"}}},
		{"connections_80x24", 80, 24, []step{{keys: []string{"c"}, want: "Upstream connections"}}},
		{"connections_100x30", 100, 30, []step{{keys: []string{"c"}, want: "Upstream connections"}}},
		{"connection_revoke_dialog_80x24", 80, 24, []step{{keys: []string{"c", "x"}, want: "Revoke connection?"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			withConnections(f)
			tm := teatest.NewTestModel(t, newModel(f), teatest.WithInitialTermSize(tc.w, tc.h))
			waitOutput(t, tm, "actor 2") // subscribed, and the connections read
			for _, s := range tc.steps {
				for _, k := range s.keys {
					tm.Send(keyMsg(k))
				}
				waitOutput(t, tm, s.want)
			}
			if err := tm.Quit(); err != nil {
				t.Fatal(err)
			}
			m := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
			got := m.View()
			checkSize(t, got, tc.w, tc.h)
			noSecret(t, tc.name, got)
			golden.RequireEqual(t, []byte(got))
		})
	}
}
