package core

import (
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
		"ArgsHash", "Outcome", "Latency", "ConfirmTokenID", "CallID",
		// A rule's id from the config, never the rule's inputs (PO-4).
		"Rule",
		// An upstream connection's id, never its token (UI-3).
		"Connection",
		// The meta-tool a call came through, "call_tool" or none (DS-2).
		"Via",
		// Inspection's kinds, detectors, places and actions, never values (IN-2).
		"Findings"}
	if !slices.Equal(got, want) {
		t.Errorf("AuditRecord fields = %v\nwant %v", got, want)
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
