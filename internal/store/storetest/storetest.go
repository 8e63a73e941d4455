// Package storetest checks a core.Store implementation against the
// contract every store keeps (OP-5, OP-6, CF-3, CF-4, RV-4).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/core"
)

// StoreConformance checks the behaviour every core.Store must have, so the
// in-memory store and each persistent one are held to one contract (OP-5).
// open returns a fresh, empty store; the suite closes it.
func StoreConformance(t *testing.T, open func(t *testing.T) core.Store) {
	fresh := func(t *testing.T) core.Store {
		t.Helper()
		s := open(t)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	t.Run("RV-1_RV-4/ApprovalsPutReplaceListDelete", func(t *testing.T) { suiteApprovals(t, fresh(t)) })
	t.Run("RV-1/ApprovalInvalidRefused", func(t *testing.T) { suiteApprovalInvalid(t, fresh(t)) })
	t.Run("CF-4/UseTokenSingleUse", func(t *testing.T) { suiteTokenSingleUse(t, fresh(t)) })
	t.Run("CF-4/UseTokenRace50Goroutines", func(t *testing.T) { suiteTokenRace(t, fresh(t)) })
	t.Run("CF-4/UseTokenPrunesOnlyExpired", func(t *testing.T) { suiteTokenPrune(t, fresh(t)) })
	t.Run("CF-3/StoreIDStableAndDistinct", func(t *testing.T) { suiteStoreID(t, fresh(t), fresh(t)) })
	t.Run("OP-6/AuditRoundTrip", func(t *testing.T) { suiteAuditRoundTrip(t, fresh(t)) })
	t.Run("OP-6/AuditOrderSinceLimit", func(t *testing.T) { suiteAuditQuery(t, fresh(t)) })
	t.Run("OP-6/AuditConcurrentAppend", func(t *testing.T) { suiteAuditConcurrent(t, fresh(t)) })
	t.Run("AuditByCall", func(t *testing.T) { suiteAuditByCall(t, fresh(t)) })
	t.Run("CF-3/ConfirmSecretChecked", func(t *testing.T) {
		sc, ok := fresh(t).(core.SecretChecker)
		if !ok {
			t.Skip("the store is no core.SecretChecker")
		}
		suiteSecret(t, sc)
	})
	t.Run("IN-3/FlowLabels", func(t *testing.T) {
		fl, ok := fresh(t).(core.FlowLabels)
		if !ok {
			t.Skip("the store is no core.FlowLabels")
		}
		FlowLabelsConformance(t, fl, fl)
	})
	t.Run("OP-5/UseAfterClose", func(t *testing.T) { suiteClosed(t, open(t)) })
}

// SharedConformance checks what a store shared by several handles keeps
// across them: two gateway processes on one file, replicas on one database
// (OP-5). open returns two handles on one new, empty store; the suite
// closes them.
func SharedConformance(t *testing.T, open func(t *testing.T) (core.Store, core.Store)) {
	fresh := func(t *testing.T) (core.Store, core.Store) {
		t.Helper()
		a, b := open(t)
		t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
		return a, b
	}
	t.Run("CF-4/UseTokenRaceAcrossHandles", func(t *testing.T) {
		a, b := fresh(t)
		for round := range 5 {
			id := fmt.Sprintf("shared-%d", round)
			if wins := RaceUseToken(t, id, 50, a, b); wins != 1 {
				t.Fatalf("round %d: %d of 50 concurrent uses of one token over two handles were first uses, want exactly 1", round, wins)
			}
		}
		// Spent through one handle is spent through the other.
		if first, err := a.UseToken(context.Background(), "one-then-other", time.Now().Add(time.Minute)); err != nil || !first {
			t.Fatalf("first use = %v, %v", first, err)
		}
		if first, err := b.UseToken(context.Background(), "one-then-other", time.Now().Add(time.Minute)); err != nil || first {
			t.Errorf("the other handle's use of a spent id = %v, %v; want false: a token could run once per replica", first, err)
		}
	})
	t.Run("CF-3/StoreIDSameForEveryHandle", func(t *testing.T) {
		a, b := fresh(t)
		ia, erra := a.StoreID(context.Background())
		ib, errb := b.StoreID(context.Background())
		if erra != nil || errb != nil || ia == "" || ia != ib {
			t.Errorf("StoreID of two handles = %q, %v and %q, %v; want one identity: a token would be refused by the other replica", ia, erra, ib, errb)
		}
	})
	t.Run("RV-4/ApprovalSeenByOtherHandle", func(t *testing.T) {
		a, b := fresh(t)
		ap := core.Approval{Source: "s", RemoteName: "r", Fingerprint: "f", Decision: core.DecisionApproved, By: "alice", At: time.Now()}
		if err := a.PutApproval(context.Background(), ap); err != nil {
			t.Fatal(err)
		}
		wantApprovals(t, b, ap)
		if err := b.DeleteApproval(context.Background(), "s", "r"); err != nil {
			t.Fatal(err)
		}
		wantApprovals(t, a)
	})
	t.Run("OP-6/AuditSeenByOtherHandle", func(t *testing.T) {
		a, b := fresh(t)
		r := FullAuditRecord(time.Now(), "appended")
		if err := a.AppendAudit(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		wantAudit(t, b, core.AuditQuery{}, r) // AppendAudit returned: committed
	})
	t.Run("PO-3/QuotaAcrossHandles", func(t *testing.T) {
		a, b := fresh(t)
		qa, okA := a.(core.QuotaCounter)
		qb, okB := b.(core.QuotaCounter)
		if !okA || !okB {
			t.Skip("the store is no core.QuotaCounter")
		}
		QuotaConformance(t, qa, qb)
	})
	t.Run("IN-3/FlowLabelsAcrossHandles", func(t *testing.T) {
		a, b := fresh(t)
		fa, okA := a.(core.FlowLabels)
		fb, okB := b.(core.FlowLabels)
		if !okA || !okB {
			t.Skip("the store is no core.FlowLabels")
		}
		FlowLabelsConformance(t, fa, fb)
	})
	t.Run("CO-5/SessionsListedAcrossHandles", func(t *testing.T) {
		a, b := fresh(t)
		sa, ok := a.(core.SharedSessions)
		if !ok {
			t.Skip("the store is no core.SharedSessions")
		}
		suiteSharedSessions(t, sa, b.(core.SharedSessions))
	})
	t.Run("CF-3/ConfirmSecretAcrossHandles", func(t *testing.T) {
		a, b := fresh(t)
		sa, ok := a.(core.SecretChecker)
		if !ok {
			t.Skip("the store is no core.SecretChecker")
		}
		sb := b.(core.SecretChecker)
		ctx := context.Background()
		if err := sa.CheckConfirmSecret(ctx, "v1:first"); err != nil {
			t.Fatalf("first verifier: %v", err)
		}
		if err := sb.CheckConfirmSecret(ctx, "v1:first"); err != nil {
			t.Errorf("the same verifier through the other handle: %v", err)
		}
		if err := sb.CheckConfirmSecret(ctx, "v1:other"); !errors.Is(err, core.ErrConfirmSecretMismatch) {
			t.Errorf("another verifier through the other handle = %v, want core.ErrConfirmSecretMismatch", err)
		}
	})
}

// suiteSharedSessions: each handle's sessions are listed through the
// other, a sync replaces its replica's rows whole, and a replica that
// stopped syncing (or was dropped) is not listed.
func suiteSharedSessions(t *testing.T, a, b core.SharedSessions) {
	ctx := context.Background()
	now := time.Now().Truncate(time.Microsecond).UTC()
	sess := func(replica, key string, age time.Duration) core.Session {
		return core.Session{ID: core.SessionKey(key), Endpoint: "/mcp", Actor: core.Actor{ID: "alice", Tenant: "t1"},
			ClientName: "client", ClientVersion: "1.0", Protocol: "2025-06-18", Started: now.Add(-age),
			LastActivity: now.Add(-age / 2), Calls: 3, Replica: replica}
	}
	s1, s2, s3 := sess("r1", "one", 2*time.Minute), sess("r1", "two", time.Minute), sess("r2", "three", time.Minute)
	if err := a.SyncSessions(ctx, "r1", now, []core.Session{s2, s1}); err != nil {
		t.Fatal(err)
	}
	if err := b.SyncSessions(ctx, "r2", now, []core.Session{s3}); err != nil {
		t.Fatal(err)
	}
	want := func(since time.Time, want ...core.Session) {
		t.Helper()
		got, err := b.ListSessions(ctx, since)
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = []core.Session{}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ListSessions (-want +got):\n%s", diff)
		}
	}
	want(now.Add(-time.Second), s1, s2, s3)
	if err := a.SyncSessions(ctx, "r1", now, []core.Session{s2}); err != nil {
		t.Fatal(err)
	}
	want(now.Add(-time.Second), s2, s3)
	// r2 last beat a minute ago: gone for a listing that wants beats
	// from the last 30 s, its rows kept.
	if err := b.SyncSessions(ctx, "r2", now.Add(-time.Minute), []core.Session{s3}); err != nil {
		t.Fatal(err)
	}
	want(now.Add(-30*time.Second), s2)
	want(now.Add(-2*time.Minute), s2, s3)
	if err := b.DropReplica(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	want(now.Add(-2*time.Minute), s3)
}

// suiteSecret: the first verifier is recorded, the same one passes again,
// another is refused and does not replace it.
func suiteSecret(t *testing.T, s core.SecretChecker) {
	ctx := context.Background()
	for i, v := range []string{"v1:aaaa", "v1:aaaa"} {
		if err := s.CheckConfirmSecret(ctx, v); err != nil {
			t.Fatalf("check #%d with the first verifier: %v", i+1, err)
		}
	}
	for i := range 2 {
		if err := s.CheckConfirmSecret(ctx, "v1:bbbb"); !errors.Is(err, core.ErrConfirmSecretMismatch) {
			t.Fatalf("check #%d with another verifier = %v, want core.ErrConfirmSecretMismatch", i+1, err)
		}
	}
	if err := s.CheckConfirmSecret(ctx, "v1:aaaa"); err != nil {
		t.Errorf("the first verifier after another was refused: %v (a refused one must not replace it)", err)
	}
}

func suiteApprovals(t *testing.T, s core.Store) {
	ctx := context.Background()
	at := time.Date(2026, 3, 4, 5, 6, 7, 891011121, time.UTC)
	mk := func(src, name, fp string, d core.ReviewDecision) core.Approval {
		return core.Approval{Source: src, RemoteName: name, Fingerprint: fp, Decision: d, By: "alice", At: at}
	}
	got, err := s.Approvals(ctx)
	if err != nil || len(got) != 0 {
		t.Fatalf("empty store: Approvals = %v, %v; want none", got, err)
	}
	for _, a := range []core.Approval{
		mk("b", "x", "fp-bx", core.DecisionApproved),
		mk("a", "z", "fp-az", core.DecisionRejected),
		mk("a", "y", "fp-ay", core.DecisionApproved),
	} {
		if err := s.PutApproval(ctx, a); err != nil {
			t.Fatalf("PutApproval(%+v): %v", a, err)
		}
	}
	wantApprovals(t, s, mk("a", "y", "fp-ay", core.DecisionApproved), mk("a", "z", "fp-az", core.DecisionRejected), mk("b", "x", "fp-bx", core.DecisionApproved))

	// A new decision for the same tool replaces the old one (RV-1: the
	// fingerprint changed and an operator looked again).
	re := core.Approval{Source: "a", RemoteName: "y", Fingerprint: "fp-ay-2", Decision: core.DecisionRejected, By: "bob", At: at.Add(time.Hour)}
	if err := s.PutApproval(ctx, re); err != nil {
		t.Fatal(err)
	}
	wantApprovals(t, s, re, mk("a", "z", "fp-az", core.DecisionRejected), mk("b", "x", "fp-bx", core.DecisionApproved))

	if err := s.DeleteApproval(ctx, "a", "z"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteApproval(ctx, "nope", "z"); err != nil {
		t.Errorf("deleting a missing approval: %v, want nil", err)
	}
	wantApprovals(t, s, re, mk("b", "x", "fp-bx", core.DecisionApproved))
}

func wantApprovals(t *testing.T, s core.Store, want ...core.Approval) {
	t.Helper()
	got, err := s.Approvals(context.Background())
	if err != nil {
		t.Fatalf("Approvals: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("Approvals = %+v\nwant %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.At.Equal(w.At) {
			t.Errorf("Approvals[%d].At = %v, want %v", i, g.At, w.At)
		}
		g.At, w.At = time.Time{}, time.Time{}
		if g != w {
			t.Errorf("Approvals[%d] = %+v, want %+v", i, g, w)
		}
	}
}

func suiteApprovalInvalid(t *testing.T, s core.Store) {
	ctx := context.Background()
	ok := core.Approval{Source: "s", RemoteName: "r", Fingerprint: "f", Decision: core.DecisionApproved}
	for name, mutate := range map[string]func(*core.Approval){
		"no source":      func(a *core.Approval) { a.Source = "" },
		"no remoteName":  func(a *core.Approval) { a.RemoteName = "" },
		"no fingerprint": func(a *core.Approval) { a.Fingerprint = "" },
		"bad decision":   func(a *core.Approval) { a.Decision = "maybe" },
	} {
		a := ok
		mutate(&a)
		if err := s.PutApproval(ctx, a); err == nil {
			t.Errorf("%s: PutApproval(%+v) = nil, want an error", name, a)
		}
	}
	wantApprovals(t, s)
}

func suiteTokenSingleUse(t *testing.T, s core.Store) {
	ctx := context.Background()
	exp := time.Now().Add(15 * time.Minute)
	for i, want := range []bool{true, false, false} {
		got, err := s.UseToken(ctx, "tok-1", exp)
		if err != nil || got != want {
			t.Fatalf("use #%d of tok-1 = %v, %v; want %v", i+1, got, err, want)
		}
	}
	if got, err := s.UseToken(ctx, "tok-2", exp); err != nil || !got {
		t.Fatalf("first use of another id = %v, %v; want true", got, err)
	}
	if _, err := s.UseToken(ctx, "", exp); err == nil {
		t.Error("UseToken with an empty id: want an error")
	}
}

// RaceUseToken has n goroutines spend id at once, spread over stores, and
// returns how many were told theirs was the first use.
func RaceUseToken(t *testing.T, id string, n int, stores ...core.Store) int {
	t.Helper()
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		wins  atomic.Int32
		errs  = make(chan error, n)
	)
	exp := time.Now().Add(15 * time.Minute)
	for i := range n {
		wg.Add(1)
		go func(s core.Store) {
			defer wg.Done()
			<-start
			first, err := s.UseToken(context.Background(), id, exp)
			if err != nil {
				errs <- err
				return
			}
			if first {
				wins.Add(1)
			}
		}(stores[i%len(stores)])
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("UseToken(%q): %v", id, err)
	}
	return int(wins.Load())
}

func suiteTokenRace(t *testing.T, s core.Store) {
	for round := range 5 {
		id := fmt.Sprintf("raced-%d", round)
		if wins := RaceUseToken(t, id, 50, s); wins != 1 {
			t.Fatalf("round %d: %d of 50 concurrent uses of one token were first uses, want exactly 1", round, wins)
		}
	}
}

func suiteTokenPrune(t *testing.T, s core.Store) {
	ctx := context.Background()
	now := time.Now()
	use := func(id string, exp time.Time) bool {
		t.Helper()
		first, err := s.UseToken(ctx, id, exp)
		if err != nil {
			t.Fatalf("UseToken(%q): %v", id, err)
		}
		return first
	}
	use("long-expired", now.Add(-core.SpentTokenGrace-time.Hour))
	use("just-expired", now.Add(-time.Second)) // within the grace: a skewed replica may still accept it
	use("live", now.Add(time.Hour))
	use("no-expiry", time.Time{})
	// Enough first uses that a pruning must have happened since.
	for i := range core.PruneEvery + 1 {
		use(fmt.Sprintf("filler-%d", i), now.Add(time.Hour))
	}
	if use("live", now.Add(time.Hour)) {
		t.Error("an unexpired spent id was forgotten: a confirm token could run twice")
	}
	if use("just-expired", now.Add(-time.Second)) {
		t.Error("an id expired less than core.SpentTokenGrace ago was forgotten")
	}
	if use("no-expiry", time.Time{}) {
		t.Error("an id without expiry was forgotten")
	}
	if !use("long-expired", now.Add(-core.SpentTokenGrace-time.Hour)) {
		t.Errorf("an id expired long ago was still kept after %d further first uses: the ledger is never pruned", core.PruneEvery+1)
	}
}

// suiteStoreID: a store names itself the same way every time it is asked,
// and no other store by that name (CF-3: tokens are bound to it).
func suiteStoreID(t *testing.T, s, other core.Store) {
	ctx := context.Background()
	id, err := s.StoreID(ctx)
	if err != nil || id == "" {
		t.Fatalf("StoreID = %q, %v; want an identity", id, err)
	}
	if _, err := s.UseToken(ctx, "tok", time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if again, err := s.StoreID(ctx); err != nil || again != id {
		t.Errorf("StoreID again = %q, %v; want %q", again, err, id)
	}
	if o, err := other.StoreID(ctx); err != nil || o == id {
		t.Errorf("another store's StoreID = %q, %v; want an identity other than %q", o, err, id)
	}
}

// FullAuditRecord returns a record with every field set, for round trips.
func FullAuditRecord(at time.Time, callID string) core.AuditRecord {
	return core.AuditRecord{
		Time:           at,
		Endpoint:       "/mcp",
		ActorID:        "alice",
		Tenant:         "acme",
		Session:        "sess-1",
		Tool:           "github_create_issue",
		Source:         "github",
		RemoteName:     "create_issue",
		ArgsHash:       "sha256:5f2b",
		Outcome:        "ok",
		Latency:        1234567 * time.Nanosecond,
		ConfirmTokenID: "tok-9",
		CallID:         callID,
		Rule:           "big-refunds",
		Connection:     "conn_0123",
		Via:            "call_tool",
		Findings:       `[{"type":"secrets","detector":"github-token","path":"/content/0/text","action":"redact","in":"result"}]`,
	}
}

func sameRecord(got, want core.AuditRecord) bool {
	if !got.Time.Equal(want.Time) {
		return false
	}
	got.Time, want.Time = time.Time{}, time.Time{}
	return got == want
}

func wantAudit(t *testing.T, s core.Store, q core.AuditQuery, want ...core.AuditRecord) {
	t.Helper()
	got, err := s.Audit(context.Background(), q)
	if err != nil {
		t.Fatalf("Audit(%+v): %v", q, err)
	}
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = sameRecord(got[i], want[i])
	}
	if !ok {
		ids := func(rs []core.AuditRecord) []string {
			var out []string
			for _, r := range rs {
				out = append(out, r.CallID+"@"+r.Time.UTC().Format(time.RFC3339Nano))
			}
			return out
		}
		t.Errorf("Audit(%+v) = %v\nwant %v", q, ids(got), ids(want))
	}
}

func suiteAuditRoundTrip(t *testing.T, s core.Store) {
	ctx := context.Background()
	at := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.FixedZone("x", 3600)) // before any "now"
	r := FullAuditRecord(at, "call-1")
	if err := s.AppendAudit(ctx, r); err != nil {
		t.Fatal(err)
	}
	wantAudit(t, s, core.AuditQuery{}, r)

	// A zero time means now.
	before := time.Now()
	if err := s.AppendAudit(ctx, core.AuditRecord{Tool: "t", Outcome: "ok", CallID: "call-2"}); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	got, err := s.Audit(ctx, core.AuditQuery{Since: before})
	if err != nil || len(got) != 1 {
		t.Fatalf("Audit(since the zero-time append) = %v, %v; want one record", got, err)
	}
	if got[0].Time.Before(before) || got[0].Time.After(after) {
		t.Errorf("zero Time stored as %v, want between %v and %v", got[0].Time, before, after)
	}
}

func suiteAuditQuery(t *testing.T, s core.Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := func(sec int, id string) core.AuditRecord {
		return FullAuditRecord(t0.Add(time.Duration(sec)*time.Second), id)
	}
	// Appended out of time order, as concurrent calls finish.
	for _, r := range []core.AuditRecord{rec(3, "c"), rec(1, "a"), rec(2, "b1"), rec(5, "e"), rec(2, "b2")} {
		if err := s.AppendAudit(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	a, b1, b2, c, e := rec(1, "a"), rec(2, "b1"), rec(2, "b2"), rec(3, "c"), rec(5, "e")
	wantAudit(t, s, core.AuditQuery{}, a, b1, b2, c, e)
	wantAudit(t, s, core.AuditQuery{Since: t0.Add(2 * time.Second)}, b1, b2, c, e)
	wantAudit(t, s, core.AuditQuery{Since: t0.Add(2*time.Second + 1)}, c, e)
	wantAudit(t, s, core.AuditQuery{Limit: 2}, a, b1)
	wantAudit(t, s, core.AuditQuery{Since: t0.Add(2 * time.Second), Limit: 3}, b1, b2, c)
	wantAudit(t, s, core.AuditQuery{Limit: 100}, a, b1, b2, c, e)
	wantAudit(t, s, core.AuditQuery{Since: t0.Add(time.Minute)})
}

// suiteAuditByCall: a query by call id (OP-6) keeps that call's records
// only, every one of them (an action's intent and its outcome), in time
// order, and still honours Since and Limit; a call with no record has
// none, and an id that is only a prefix of one matches nothing.
func suiteAuditByCall(t *testing.T, s core.Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := func(sec int, id, outcome string) core.AuditRecord {
		r := FullAuditRecord(t0.Add(time.Duration(sec)*time.Second), id)
		r.Outcome = outcome
		return r
	}
	intent, done := rec(1, "call-7", core.AuditIntent), rec(4, "call-7", "ok")
	for _, r := range []core.AuditRecord{rec(2, "call-70", "ok"), done, rec(3, "call-8", "ok"), intent, rec(5, "call-", "ok")} {
		if err := s.AppendAudit(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	wantAudit(t, s, core.AuditQuery{CallID: "call-7"}, intent, done)
	wantAudit(t, s, core.AuditQuery{CallID: "call-7", Since: t0.Add(2 * time.Second)}, done)
	wantAudit(t, s, core.AuditQuery{CallID: "call-7", Limit: 1}, intent)
	wantAudit(t, s, core.AuditQuery{CallID: "call-9"})
	wantAudit(t, s, core.AuditQuery{CallID: "call"})
}

func suiteAuditConcurrent(t *testing.T, s core.Store) {
	const writers, each = 8, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := s.AppendAudit(context.Background(), FullAuditRecord(time.Now(), fmt.Sprintf("w%d-%d", w, i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got, err := s.Audit(context.Background(), core.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != writers*each {
		t.Fatalf("%d records after %d concurrent appends", len(got), writers*each)
	}
	seen := map[string]bool{}
	for i, r := range got {
		if seen[r.CallID] {
			t.Errorf("record %s twice", r.CallID)
		}
		seen[r.CallID] = true
		if i > 0 && r.Time.Before(got[i-1].Time) {
			t.Errorf("record %d (%v) is older than record %d (%v): not oldest first", i, r.Time, i-1, got[i-1].Time)
		}
	}
}

func suiteClosed(t *testing.T, s core.Store) {
	ctx := context.Background()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
	checks := map[string]error{}
	checks["PutApproval"] = s.PutApproval(ctx, core.Approval{Source: "s", RemoteName: "r", Fingerprint: "f", Decision: core.DecisionApproved})
	_, checks["Approvals"] = s.Approvals(ctx)
	checks["DeleteApproval"] = s.DeleteApproval(ctx, "s", "r")
	_, checks["UseToken"] = s.UseToken(ctx, "t", time.Now().Add(time.Minute))
	_, checks["StoreID"] = s.StoreID(ctx)
	checks["AppendAudit"] = s.AppendAudit(ctx, core.AuditRecord{Tool: "t"})
	_, checks["Audit"] = s.Audit(ctx, core.AuditQuery{})
	for name, err := range checks {
		if !errors.Is(err, core.ErrStoreClosed) {
			t.Errorf("%s after Close = %v, want core.ErrStoreClosed", name, err)
		}
	}
}
