package auditchain

import (
	"context"
	"strings"
	"testing"
)

// memStore is a Store over entries already linked, for the core logic.
type memStore struct {
	es  []Entry
	cps []Checkpoint
}

func (m *memStore) AuditChain() *Writer { return nil }
func (m *memStore) ScanAuditEntries(_ context.Context, fn func(Entry) error) error {
	for _, e := range m.es {
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}
func (m *memStore) AuditCheckpoints(context.Context) ([]Checkpoint, error) { return m.cps, nil }

func (m *memStore) CallEntries(_ context.Context, callID string) ([]Entry, error) {
	out := []Entry{}
	for _, e := range m.es {
		if e.Record.CallID == callID {
			out = append(out, e)
		}
	}
	return out, nil
}

func (m *memStore) ChainEntryBefore(_ context.Context, chain string, row int64) (*Entry, error) {
	var prev *Entry
	for i := range m.es {
		if e := &m.es[i]; e.Chain == chain && e.Row < row {
			prev = e
		}
	}
	return prev, nil
}

func (m *memStore) ChainedBefore(_ context.Context, row int64) (bool, error) {
	for _, e := range m.es {
		if e.Chain != "" && e.Row < row {
			return true, nil
		}
	}
	return false, nil
}

func (m *memStore) ScanChainAfter(_ context.Context, chain string, row int64, limit int, fn func(Entry) error) error {
	for _, e := range m.es {
		if e.Chain == chain && e.Row > row && limit > 0 {
			limit--
			if err := fn(e); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *memStore) ScanChainCheckpoints(_ context.Context, chain string, from int64, limit int, fn func(Checkpoint) error) error {
	for _, c := range m.cps {
		if c.Chain == chain && c.Seq >= from && limit > 0 {
			limit--
			if err := fn(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// OP-10: one call's record is checked by its links: a clean chain's record
// verifies and is covered by the final checkpoint; an edited record, an
// edited or removed successor, and a record without a chain are each named;
// without a key nothing is said to be signed; an unknown call has none.
func TestCheckCallChecksOneRecordsLinks(t *testing.T) {
	ctx := context.Background()
	es, cps, _ := chain(t, 5)
	check := func(es []Entry, callID string, key []byte) []string {
		t.Helper()
		got, err := CheckCall(ctx, &memStore{es: es, cps: cps}, callID, key)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range got {
			if c.Record.CallID != callID || c.Verified != (c.Problem == "") {
				t.Errorf("check %+v", c)
			}
			out = append(out, c.Problem)
		}
		return out
	}
	got, _ := CheckCall(ctx, &memStore{es: es, cps: cps}, "call-2", testKey)
	if len(got) != 1 || !got[0].Verified || got[0].Seq != 3 || got[0].SignedTo != 5 || !got[0].KeyKnown {
		t.Errorf("a clean record: %+v", got)
	}
	got, _ = CheckCall(ctx, &memStore{es: es, cps: cps}, "call-4", nil)
	if len(got) != 1 || !got[0].Verified || got[0].SignedTo != 0 || got[0].KeyKnown {
		t.Errorf("the newest record without a key: %+v", got)
	}
	if p := check(es, "call-9", testKey); len(p) != 0 {
		t.Errorf("an unknown call: %v", p)
	}

	edited := append([]Entry(nil), es...)
	edited[2].Record.Tool = "other"
	if p := check(edited, "call-2", testKey); len(p) != 1 || !strings.Contains(p[0], "does not match its hash") {
		t.Errorf("an edited record: %v", p)
	}
	if p := check(edited, "call-1", testKey); len(p) != 1 || !strings.Contains(p[0], "does not link to it") {
		t.Errorf("the record before an edited one: %v", p)
	}
	removed := append(append([]Entry(nil), es[:3]...), es[4:]...)
	if p := check(removed, "call-2", testKey); len(p) != 1 || !strings.Contains(p[0], "has seq 5, not 4") {
		t.Errorf("a record whose successor was deleted: %v", p)
	}
	if p := check(removed, "call-4", testKey); len(p) != 1 || !strings.Contains(p[0], "seq 4) is missing") {
		t.Errorf("a record whose predecessor was deleted: %v", p)
	}
	unchained := append([]Entry(nil), es...)
	unchained[0].Link = Link{}
	if p := check(unchained, "call-0", testKey); len(p) != 1 || !strings.Contains(p[0], "before the audit had chains") {
		t.Errorf("an unchained record: %v", p)
	}
}
