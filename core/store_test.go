package core

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
)

// OP-6: argument values are never stored. The record type has no place for
// them; a new field must be added here on purpose, after asking whether it
// could carry argument values in clear.
func TestAuditRecordHasNoArgumentValuesOP6(t *testing.T) {
	var got []string
	rt := reflect.TypeFor[AuditRecord]()
	for i := range rt.NumField() {
		got = append(got, rt.Field(i).Name)
	}
	want := []string{"Time", "Endpoint", "ActorID", "Tenant", "Session", "Tool", "Source", "RemoteName",
		"ArgsHash", "Outcome", "Latency", "ConfirmTokenID", "CallID"}
	if !slices.Equal(got, want) {
		t.Errorf("AuditRecord fields = %v\nwant %v", got, want)
	}
}

// CF-4: the in-memory ledger prunes by the clock it is given, never an id
// whose expiry (plus grace) is still ahead.
func TestMemStorePruneUsesClockCF4(t *testing.T) {
	m := NewMemStore()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	m.now = func() time.Time { return now }
	ctx := context.Background()
	if first, _ := m.UseToken(ctx, "a", now.Add(time.Minute)); !first {
		t.Fatal("first use not first")
	}
	// Time passes beyond a's expiry and the grace; fillers trigger a prune.
	now = now.Add(time.Minute + SpentTokenGrace + time.Second)
	for i := range PruneEvery {
		_, _ = m.UseToken(ctx, fmt.Sprint("filler-", i), now.Add(time.Hour))
	}
	m.mu.Lock()
	_, kept := m.tokens["a"]
	n := len(m.tokens)
	m.mu.Unlock()
	if kept {
		t.Error("expired id still kept after a prune")
	}
	if n != PruneEvery {
		t.Errorf("%d ids kept, want the %d unexpired ones", n, PruneEvery)
	}
}

func TestApprovalValidate(t *testing.T) {
	ok := Approval{Source: "s", RemoteName: "r", Fingerprint: "f", Decision: DecisionRejected}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid approval: %v", err)
	}
	bad := ok
	bad.Decision = "Approved"
	if err := bad.Validate(); err == nil {
		t.Error("decision is case-sensitive; want an error for \"Approved\"")
	}
}

func TestTokenExpiryKey(t *testing.T) {
	now := time.Now()
	if TokenExpiryKey(time.Time{}) <= TokenExpiryKey(now.AddDate(200, 0, 0)) {
		t.Error("zero expiry must sort after every real one")
	}
	if TokenExpiryKey(now.AddDate(1000, 0, 0)) < TokenExpiryKey(now) {
		t.Error("a far-future expiry overflowed")
	}
	if TokenExpiryKey(now) >= TokenPruneBefore(now.Add(SpentTokenGrace+time.Nanosecond)) {
		t.Error("an id is prunable once its expiry is more than the grace ago")
	}
	if TokenExpiryKey(now) < TokenPruneBefore(now.Add(SpentTokenGrace)) {
		t.Error("an id is kept for the whole grace after expiry")
	}
}
