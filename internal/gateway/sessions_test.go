package gateway_test

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/store/postgres"
)

// elsewhereWith waits on sub for the other replicas' sessions to satisfy
// match, and returns them.
func elsewhereWith(t *testing.T, ctx context.Context, sub *core.BusSubscription, what string, match func([]core.Session) bool) []core.Session {
	t.Helper()
	var got []core.Session
	within(t, ctx, what, func(ctx context.Context) {
		waitBusEvent(t, ctx, sub, what, func(d core.EventData) bool {
			e, ok := d.(core.SessionsElsewhere)
			if ok && match(e.Sessions) {
				got = e.Sessions
				return true
			}
			return false
		})
	})
	return got
}

// busUntil waits, event by event on sub, until cond holds.
func busUntil(t *testing.T, ctx context.Context, sub *core.BusSubscription, what string, cond func() bool) {
	t.Helper()
	within(t, ctx, what, func(ctx context.Context) {
		for !cond() {
			waitBusEvent(t, ctx, sub, what, func(core.EventData) bool { return true })
		}
	})
}

// listed reports whether g's snapshot lists a session with that id (or
// key, for another replica's).
func listed(g *gateway.Gateway, id string) bool {
	return slices.ContainsFunc(g.Registry().Bus().Snapshot().Sessions, func(s core.Session) bool { return s.ID == id })
}

func listsKey(key, replica string) func([]core.Session) bool {
	return func(list []core.Session) bool {
		return slices.ContainsFunc(list, func(s core.Session) bool { return s.ID == key && s.Replica == replica && s.Elsewhere })
	}
}

// CO-5, OP-5, CO-9: each replica lists the others' sessions after its own,
// with their replica, named by their keys; an operator on A ends B's
// session, which B ends for good (every replica refuses it from then on);
// a replica that stopped beating is not listed; a client whose replica
// shut down continues elsewhere and is listed there. The sealed ids are
// in no table of the database and in no log line.
func TestSessionsListedAcrossReplicasCO5(t *testing.T) {
	ctx := testCtx(t)
	dsn := pgtest.Start(t, nil).NewDatabase(t)
	yaml := withAdmin(gatewayYAML(dsn, upstreamYAML("notes", serveDemo(t, "notes"), true)))
	logs := &transcript{}
	var gs []*gateway.Gateway
	for range 2 {
		g := newGateway(t, loadConfig(t, yaml), &gateway.Options{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		if err := g.Start(ctx); err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	a, b := gs[0], gs[1]
	c := rawClient{t, ctx}
	_, busA := a.Registry().Bus().Subscribe(0)
	defer busA.Close()

	onA, onB := c.initialize(a.Addr(), testKey), c.initialize(b.Addr(), testKey)
	replicaA, replicaB := mustSession(t, a, onA).Replica, mustSession(t, b, onB).Replica
	if replicaA == "" || replicaA == replicaB {
		t.Fatalf("replicas named %q and %q, want two names", replicaA, replicaB)
	}
	elsewhereWith(t, ctx, busA, "B's session listed on A", listsKey(core.SessionKey(onB), replicaB))

	env := &adminEnv{g: a, log: &transcript{}}
	var list []core.Session
	env.client(t, adminAliceKey).ok(ctx, "GET", "/v1/sessions", nil, http.StatusOK, &list)
	if len(list) != 2 || list[0].ID != onA || list[0].Elsewhere || list[0].Replica != replicaA ||
		list[1].ID != core.SessionKey(onB) || !list[1].Elsewhere || list[1].Replica != replicaB ||
		list[1].Actor.ID != "alice" || list[1].ClientName != "resume-test" || list[1].Endpoint != "/mcp" {
		t.Fatalf("A's /v1/sessions: %+v; want A's session, then B's by its key", list)
	}
	if snap := a.Registry().Bus().Snapshot(); len(snap.Sessions) != 2 || !snap.Sessions[1].Elsewhere {
		t.Errorf("A's snapshot sessions: %+v", snap.Sessions)
	}

	t.Run("ended from another replica", func(t *testing.T) {
		c := rawClient{t, ctx}
		alice := env.client(t, adminAliceKey)
		key := core.SessionKey(onB)
		alice.ok(ctx, "DELETE", "/v1/sessions/"+key, nil, http.StatusNoContent, nil)
		// The DELETE returned once B had ended it.
		if _, ok := b.Sessions().Get(onB); ok {
			t.Error("B still serves the session A's operator ended")
		}
		for _, base := range []string{b.Addr(), a.Addr()} {
			if st := c.status(base, testKey, onB); st != http.StatusNotFound {
				t.Errorf("the ended session on %s: HTTP %d, want 404", base, st)
			}
		}
		busUntil(t, ctx, busA, "A no longer listing it", func() bool { return !listed(a, key) })
		alice.fails(ctx, "DELETE", "/v1/sessions/"+key, nil, http.StatusNotFound, "unknown_session")

		// A session both serve (the client went to each) ends on both,
		// however it is named.
		both := c.initialize(b.Addr(), testKey)
		c.list(a.Addr(), testKey, both)
		alice.ok(ctx, "DELETE", "/v1/sessions/"+core.SessionKey(both), nil, http.StatusNoContent, nil)
		_, busB := b.Registry().Bus().Subscribe(0)
		defer busB.Close()
		busUntil(t, ctx, busB, "B's copy ending", func() bool { _, ok := b.Sessions().Get(both); return !ok })
		for _, base := range []string{b.Addr(), a.Addr()} {
			if st := c.status(base, testKey, both); st != http.StatusNotFound {
				t.Errorf("the ended session on %s: HTTP %d, want 404", base, st)
			}
		}
	})

	t.Run("a replica that stopped beating", func(t *testing.T) {
		h, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		now := time.Now()
		row := func(key string) []core.Session {
			return []core.Session{{ID: key, Endpoint: "/mcp", Actor: core.Actor{ID: "alice"}, Started: now.Add(-time.Hour), LastActivity: now.Add(-time.Hour)}}
		}
		if err := h.SyncSessions(ctx, "ghost:1", now.Add(-time.Minute), row("ghost-key")); err != nil {
			t.Fatal(err)
		}
		if err := h.SyncSessions(ctx, "alive:2", now, row("alive-key")); err != nil {
			t.Fatal(err)
		}
		if err := h.Broadcast(ctx, core.SharedEvent{Kind: core.SharedSessionsChanged}); err != nil {
			t.Fatal(err)
		}
		got := elsewhereWith(t, ctx, busA, "the live replica's row on A", listsKey("alive-key", "alive:2"))
		if slices.ContainsFunc(got, func(s core.Session) bool { return s.Replica == "ghost:1" }) {
			t.Errorf("A lists the sessions of a replica silent for a minute: %+v", got)
		}
		// Nothing serves alive:2's session: ending it fails, in bounded
		// time, naming the replica that did not end it.
		start := time.Now()
		e := env.client(t, adminAliceKey).fails(ctx, "DELETE", "/v1/sessions/alive-key", nil, http.StatusInternalServerError, "internal")
		if !strings.Contains(e.Message, "replica alive:2") || !strings.Contains(e.Message, "still lists it") {
			t.Errorf("ending a session its replica does not end: %q", e.Message)
		}
		if d := time.Since(start); d > 3*shareWait {
			t.Errorf("ending a session its replica does not end took %v", d)
		}
		if err := h.DropReplica(ctx, "alive:2"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("continued after its replica shut down", func(t *testing.T) {
		c := rawClient{t, ctx}
		moved := c.initialize(b.Addr(), testKey)
		elsewhereWith(t, ctx, busA, "B's new session on A", listsKey(core.SessionKey(moved), replicaB))
		closeGateway(t, b)
		elsewhereWith(t, ctx, busA, "B leaving the listing", func(list []core.Session) bool {
			return !slices.ContainsFunc(list, func(s core.Session) bool { return s.Replica == replicaB })
		})
		c.list(a.Addr(), testKey, moved)
		if s := mustSession(t, a, moved); s.Replica != replicaA || s.Elsewhere {
			t.Errorf("the continued session on A: %+v, want A's own", s)
		}
	})

	// No sealed id anywhere but in the clients' hands and the gateways'
	// memory.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var dump strings.Builder
	for _, table := range []string{"sessions", "replicas", "audit"} {
		rows, err := conn.Query(ctx, "SELECT t::text FROM toolgate."+table+" t")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			dump.WriteString(s + "\n")
		}
		rows.Close()
	}
	if !strings.Contains(dump.String(), core.SessionKey(onA)) {
		t.Fatalf("the dump does not hold A's session key; is it the right database?\n%s", dump.String())
	}
	for _, id := range []string{onA, onB} {
		if strings.Contains(dump.String(), id) {
			t.Errorf("a sealed session id is in the database:\n%s", dump.String())
		}
		if strings.Contains(logs.String(), id) {
			t.Errorf("a sealed session id is in the logs:\n%s", logs.String())
		}
	}
}

func mustSession(t *testing.T, g *gateway.Gateway, id string) core.Session {
	t.Helper()
	s, ok := g.Sessions().Get(id)
	if !ok {
		t.Fatalf("no session %.16s… on the gateway", id)
	}
	return s
}
