// Package chaintest is the tamper suite every chained store is tested
// against (OP-10): records edited, deleted, inserted, swapped, a tail cut,
// a chain rewritten, a checkpoint forged; two writers; records from before
// the chains.
package chaintest

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/auditchain"
)

// Store is a store under test.
type Store interface {
	core.Store
	auditchain.Store
}

// Harness makes stores for the suite.
type Harness struct {
	// New makes an empty store and returns opener, which opens a handle on
	// it (closed when the test ends), and exec, which runs SQL on it
	// directly, as somebody with write access to the store would: table
	// names unqualified, parameters $1, $2… in order of appearance.
	New func(t *testing.T) (open func() Store, exec func(query string, args ...any))
}

// Key is the checkpoint key the suite signs with.
var Key = []byte("0123456789abcdef0123456789abcdef")

// Record is the i-th record of a test, every field set.
func Record(i int) core.AuditRecord {
	return core.AuditRecord{
		Time: time.Date(2026, 1, 2, 3, 4, 5, i, time.UTC), Endpoint: "/mcp", ActorID: "alice", Tenant: "acme",
		Session: "s1", Tool: fmt.Sprintf("tool_%d", i), Source: "up", RemoteName: "remote", ArgsHash: "hmac:ab",
		Outcome: "ok", Latency: time.Duration(i) * time.Millisecond, ConfirmTokenID: "tok", CallID: fmt.Sprint("call-", i), Rule: "big-refunds", Connection: "conn_1",
		Via: "call_tool", Findings: `[{"type":"pii","detector":"email","path":"/to","action":"flag","in":"arguments"}]`,
	}
}

// write appends n records through a new handle with the key and closes it
// (which signs the head); it returns the handle's chain.
func write(t *testing.T, open func() Store, from, n int) string {
	t.Helper()
	return writeWith(t, open, from, n, Key)
}

// writeWith is write signing with key (nil: no checkpoints).
func writeWith(t *testing.T, open func() Store, from, n int, key []byte) string {
	t.Helper()
	st := open()
	st.AuditChain().SetKey(key)
	ctx := context.Background()
	for i := range n {
		if err := put(ctx, st, Record(from+i), i); err != nil {
			t.Fatal(err)
		}
	}
	id := st.AuditChain().ID()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return id
}

// put queues even records and appends odd ones: both paths are chained.
func put(ctx context.Context, st Store, r core.AuditRecord, i int) error {
	if i%2 == 0 {
		return st.(core.AuditQueuer).QueueAudit(ctx, r)
	}
	return st.AppendAudit(ctx, r)
}

func verify(t *testing.T, open func() Store) auditchain.Report {
	t.Helper()
	st := open()
	defer st.Close()
	rep, err := auditchain.VerifyStore(context.Background(), st, Key)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func entries(t *testing.T, open func() Store, chain string) map[int64]auditchain.Entry {
	t.Helper()
	st := open()
	defer st.Close()
	es, err := auditchain.Entries(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	m := map[int64]auditchain.Entry{}
	for _, e := range es {
		if e.Chain == chain {
			m[e.Seq] = e
		}
	}
	return m
}

// one is the only finding of rep, which must be of kind at seq in chain.
func one(t *testing.T, rep auditchain.Report, kind, chain string, seq int64) {
	t.Helper()
	if len(rep.Findings) != 1 {
		t.Fatalf("findings = %+v; want one %s at seq %d", rep.Findings, kind, seq)
	}
	f := rep.Findings[0]
	if f.Kind != kind || f.Chain != chain || f.Seq != seq {
		t.Fatalf("finding = %s; want %s in chain %s at seq %d", f, kind, chain, seq)
	}
}

// setRow overwrites the row at row with e's record and link.
func setRow(exec func(string, ...any), row int64, e auditchain.Entry) {
	r := e.Record
	exec(`UPDATE audit SET time = $1, endpoint = $2, actor_id = $3, tenant = $4, session = $5, tool = $6, source = $7,
		remote_name = $8, args_hash = $9, outcome = $10, latency = $11, confirm_token_id = $12, call_id = $13,
		chain_id = $14, chain_seq = $15, chain_hash = $16 WHERE seq = $17`,
		r.Time.UnixNano(), r.Endpoint, r.ActorID, r.Tenant, r.Session, r.Tool, r.Source, r.RemoteName, r.ArgsHash,
		r.Outcome, int64(r.Latency), r.ConfirmTokenID, r.CallID, e.Chain, e.Seq, e.Hash, row)
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	t.Run("clean", func(t *testing.T) {
		open, _ := h.New(t)
		id := write(t, open, 0, 300) // past auditchain.CheckpointEvery
		rep := verify(t, open)
		if !rep.Intact() || len(rep.Chains) != 1 || rep.Chains[0].Records != 300 || rep.Chains[0].Signed != 300 || rep.Chains[0].Chain != id || !rep.CheckpointsChecked {
			t.Fatalf("report = %+v; want one intact chain %s of 300 records signed at 300", rep, id)
		}
	})
	t.Run("edited", func(t *testing.T) {
		open, exec := h.New(t)
		id := write(t, open, 0, 10)
		exec(`UPDATE audit SET outcome = 'error' WHERE chain_id = $1 AND chain_seq = 4`, id)
		one(t, verify(t, open), auditchain.Edited, id, 4)
	})
	t.Run("deleted", func(t *testing.T) {
		open, exec := h.New(t)
		id := write(t, open, 0, 10)
		exec(`DELETE FROM audit WHERE chain_id = $1 AND chain_seq = 6`, id)
		one(t, verify(t, open), auditchain.Deleted, id, 6)
	})
	t.Run("head deleted", func(t *testing.T) {
		open, exec := h.New(t)
		id := write(t, open, 0, 10)
		exec(`DELETE FROM audit WHERE chain_id = $1 AND chain_seq <= 2`, id)
		one(t, verify(t, open), auditchain.Deleted, id, 1)
	})
	t.Run("inserted", func(t *testing.T) {
		open, exec := h.New(t)
		id := write(t, open, 0, 10)
		// A copy of seq 3 with another outcome, appended by hand.
		exec(`INSERT INTO audit (time, endpoint, actor_id, tenant, session, tool, source, remote_name, args_hash, outcome,
			latency, confirm_token_id, call_id, chain_id, chain_seq, chain_hash)
			SELECT time, endpoint, actor_id, tenant, session, tool, source, remote_name, args_hash, 'refused',
			latency, confirm_token_id, call_id, chain_id, chain_seq, chain_hash FROM audit WHERE chain_id = $1 AND chain_seq = 3`, id)
		one(t, verify(t, open), auditchain.Inserted, id, 3)
	})
	t.Run("inserted unchained", func(t *testing.T) {
		open, exec := h.New(t)
		write(t, open, 0, 3)
		exec(`INSERT INTO audit (time, endpoint, actor_id, tenant, session, tool, source, remote_name, args_hash, outcome,
			latency, confirm_token_id, call_id) VALUES (1, '/mcp', 'mallory', '', '', 't', '', '', '', 'ok', 0, '', '')`)
		rep := verify(t, open)
		if len(rep.Findings) != 1 || rep.Findings[0].Kind != auditchain.Inserted || rep.Findings[0].Chain != "" || rep.Unchained != 0 {
			t.Fatalf("report = %+v; want the unchained record after the chain found as inserted", rep)
		}
	})
	t.Run("swapped", func(t *testing.T) {
		open, exec := h.New(t)
		id := write(t, open, 0, 10)
		es := entries(t, open, id)
		setRow(exec, es[5].Row, es[7])
		setRow(exec, es[7].Row, es[5])
		one(t, verify(t, open), auditchain.Reordered, id, 5)
	})
	t.Run("tail truncated", func(t *testing.T) {
		open, exec := h.New(t)
		id := write(t, open, 0, 10)
		exec(`DELETE FROM audit WHERE chain_id = $1 AND chain_seq > 7`, id)
		rep := verify(t, open)
		one(t, rep, auditchain.Truncated, id, 8)
		if !strings.Contains(rep.Findings[0].Detail, "signed seq 10") {
			t.Errorf("detail %q does not name the signed head", rep.Findings[0].Detail)
		}
	})
	t.Run("chain deleted", func(t *testing.T) {
		open, exec := h.New(t)
		id := write(t, open, 0, 10)
		exec(`DELETE FROM audit WHERE chain_id = $1`, id)
		one(t, verify(t, open), auditchain.Truncated, id, 1)
	})
	t.Run("rewritten", func(t *testing.T) {
		// The hash is not keyed: an edit with the chain recomputed after
		// it passes the walk, and the signed checkpoint catches it.
		open, exec := h.New(t)
		id := write(t, open, 0, 10)
		es := entries(t, open, id)
		prev := ""
		for seq := int64(1); seq <= 10; seq++ {
			e := es[seq]
			if seq == 4 {
				e.Record.Outcome = "error"
			}
			h, err := auditchain.Hash(id, seq, prev, e.Record)
			if err != nil {
				t.Fatal(err)
			}
			e.Hash, prev = h, h
			setRow(exec, e.Row, e)
		}
		one(t, verify(t, open), auditchain.Edited, id, 10)
	})
	t.Run("checkpoint forged", func(t *testing.T) {
		open, exec := h.New(t)
		id := write(t, open, 0, 10)
		exec(`UPDATE audit_checkpoints SET seq = 5 WHERE chain_id = $1`, id)
		exec(`DELETE FROM audit WHERE chain_id = $1 AND chain_seq > 5`, id)
		one(t, verify(t, open), auditchain.Forged, id, 5)
	})
	t.Run("two writers", func(t *testing.T) {
		open, _ := h.New(t)
		a, b := open(), open()
		a.AuditChain().SetKey(Key)
		b.AuditChain().SetKey(Key)
		ctx := context.Background()
		for i := range 20 {
			st := a
			if i%3 == 0 {
				st = b
			}
			if err := put(ctx, st, Record(i), i); err != nil {
				t.Fatal(err)
			}
		}
		ids := []string{a.AuditChain().ID(), b.AuditChain().ID()}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		rep := verify(t, open)
		got := map[string]int{}
		for _, c := range rep.Chains {
			got[c.Chain] = c.Records
		}
		if !rep.Intact() || got[ids[0]] != 13 || got[ids[1]] != 7 || len(got) != 2 {
			t.Fatalf("report = %+v; want chains %s (13) and %s (7) intact", rep, ids[0], ids[1])
		}
	})
	t.Run("restart starts a chain", func(t *testing.T) {
		open, exec := h.New(t)
		first := write(t, open, 0, 5)
		second := write(t, open, 5, 5)
		if first == second {
			t.Fatal("a second handle continued the first's chain id")
		}
		if rep := verify(t, open); !rep.Intact() || len(rep.Chains) != 2 {
			t.Fatalf("report = %+v; want two intact chains", rep)
		}
		exec(`DELETE FROM audit WHERE chain_id = $1 AND chain_seq = 1`, second)
		one(t, verify(t, open), auditchain.Deleted, second, 1)
	})
	t.Run("every field covered", func(t *testing.T) {
		// A record with every field set verifies: a field added to
		// core.AuditRecord that the store does not keep and read back
		// would break its hash, and fails here (Record must set it).
		open, _ := h.New(t)
		st := open()
		st.AuditChain().SetKey(Key)
		full := Record(1)
		v := reflect.ValueOf(&full).Elem()
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Fatalf("Record leaves %s zero: set it", v.Type().Field(i).Name)
			}
		}
		if err := st.AppendAudit(context.Background(), full); err != nil {
			t.Fatal(err)
		}
		if rep := verify(t, open); !rep.Intact() {
			t.Fatalf("a record with every field set does not verify: %+v", rep.Findings)
		}
	})
	t.Run("odd text", func(t *testing.T) {
		// Text a store must adjust to keep (PostgreSQL takes no NUL and
		// no invalid UTF-8) is hashed as kept.
		open, _ := h.New(t)
		st := open()
		r := Record(1)
		r.Tool, r.ActorID, r.Session = "a\x00b", "bad\xffutf8", "\u00e9\U0001F600<&>"
		if err := st.AppendAudit(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if rep := verify(t, open); !rep.Intact() || len(rep.Chains) != 1 {
			t.Fatalf("report = %+v; want one intact chain", rep)
		}
	})
	checkCallSuite(t, h)
	uncoveredSuite(t, h)
	t.Run("no key", func(t *testing.T) {
		open, exec := h.New(t)
		id := write(t, open, 0, 5)
		exec(`DELETE FROM audit WHERE chain_id = $1 AND chain_seq = 5`, id)
		st := open()
		defer st.Close()
		rep, err := auditchain.VerifyStore(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Intact() || rep.CheckpointsChecked {
			t.Fatalf("report = %+v; without a key a cut tail cannot be seen, and the report must say it checked no checkpoints", rep)
		}
	})
}

// checkCall is CheckCall of callID on a new handle, which must find one
// record.
func checkCall(t *testing.T, open func() Store, callID string, key []byte) core.AuditCheck {
	t.Helper()
	st := open()
	defer st.Close()
	got, err := auditchain.CheckCall(context.Background(), st, callID, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Record.CallID != callID || got[0].Verified != (got[0].Problem == "") {
		t.Fatalf("CheckCall(%s) = %+v; want its one record", callID, got)
	}
	return got[0]
}

// problem asserts that c was found broken, for a reason containing want.
func problem(t *testing.T, c core.AuditCheck, want string) {
	t.Helper()
	if c.Verified || !strings.Contains(c.Problem, want) {
		t.Errorf("check of %s (seq %d) = verified %v, problem %q; want a problem saying %q", c.Record.CallID, c.Seq, c.Verified, c.Problem, want)
	}
}

// checkCallSuite checks one call's record the way the console does
// (OP-10): found by its call id, its links to its own writer's records on
// either side, and its chain up to the checkpoint covering it.
func checkCallSuite(t *testing.T, h Harness) {
	// Record(i) is call-i; write puts it at seq i+1 of its chain.
	t.Run("call of two writers", func(t *testing.T) {
		open, _ := h.New(t)
		a, b := open(), open()
		a.AuditChain().SetKey(Key)
		b.AuditChain().SetKey(Key)
		ctx := context.Background()
		for i := range 20 {
			st := a
			if i%3 == 0 {
				st = b
			}
			if err := put(ctx, st, Record(i), i); err != nil {
				t.Fatal(err)
			}
		}
		heads := map[string]int64{a.AuditChain().ID(): 13, b.AuditChain().ID(): 7}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		seqs := map[string]int64{}
		for i := range 20 {
			c := checkCall(t, open, fmt.Sprint("call-", i), Key)
			seqs[c.Chain]++
			if !c.Verified || c.Seq != seqs[c.Chain] || c.SignedTo < c.Seq || c.SignedTo > heads[c.Chain] || !c.KeyKnown {
				t.Errorf("call-%d: %+v; want verified at seq %d of its chain, signed within it", i, c, seqs[c.Chain])
			}
		}
		if len(seqs) != 2 || seqs[a.AuditChain().ID()] != 13 {
			t.Errorf("records per chain %v; want 13 and 7", seqs)
		}
		c := checkCall(t, open, "call-19", nil)
		if !c.Verified || c.SignedTo != 0 || c.KeyKnown {
			t.Errorf("without a key: %+v; want verified by its links, nothing said to be signed", c)
		}
		st := open()
		defer st.Close()
		if got, err := auditchain.CheckCall(ctx, st, "call-20", Key); err != nil || len(got) != 0 {
			t.Errorf("an unknown call: %+v, %v; want none", got, err)
		}
	})
	t.Run("call near an edit", func(t *testing.T) {
		open, exec := h.New(t)
		id := write(t, open, 0, 10)
		exec(`UPDATE audit SET outcome = 'error' WHERE chain_id = $1 AND chain_seq = 4`, id)
		problem(t, checkCall(t, open, "call-3", Key), "does not match its hash")
		problem(t, checkCall(t, open, "call-2", Key), "the record after it in its chain does not link to it")
		problem(t, checkCall(t, open, "call-1", Key), "a later record of its chain (seq 4) does not link")
		if c := checkCall(t, open, "call-4", Key); !c.Verified || c.SignedTo != 10 {
			t.Errorf("the record after the edited one: %+v; want verified up to the checkpoint at 10", c)
		}
	})
	t.Run("call near a deletion", func(t *testing.T) {
		open, exec := h.New(t)
		id := write(t, open, 0, 10)
		exec(`DELETE FROM audit WHERE chain_id = $1 AND chain_seq = 6`, id)
		problem(t, checkCall(t, open, "call-4", Key), "has seq 7, not 6")
		problem(t, checkCall(t, open, "call-6", Key), "(seq 6) is missing")
		problem(t, checkCall(t, open, "call-2", Key), "a later record of its chain has seq 7, not 6")
	})
	t.Run("call before a cut tail", func(t *testing.T) {
		open, exec := h.New(t)
		id := write(t, open, 0, 10)
		exec(`DELETE FROM audit WHERE chain_id = $1 AND chain_seq > 7`, id)
		problem(t, checkCall(t, open, "call-4", Key), "its chain ends at seq 7 but its writer signed seq 10")
		// Without the key the cut cannot be seen.
		if c := checkCall(t, open, "call-4", nil); !c.Verified {
			t.Errorf("without a key: %+v; want verified by its links", c)
		}
	})
	t.Run("call in a rewritten chain", func(t *testing.T) {
		// Its links hold, as the chain was recomputed from it on; the
		// checkpoint covering it says otherwise.
		open, exec := h.New(t)
		id := write(t, open, 0, 10)
		es := entries(t, open, id)
		prev := es[3].Hash
		for seq := int64(4); seq <= 10; seq++ {
			e := es[seq]
			if seq == 4 {
				e.Record.Outcome = "error"
			}
			h, err := auditchain.Hash(id, seq, prev, e.Record)
			if err != nil {
				t.Fatal(err)
			}
			e.Hash, prev = h, h
			setRow(exec, e.Row, e)
		}
		problem(t, checkCall(t, open, "call-3", Key), "its chain up to seq 10 differs from what its writer signed")
		problem(t, checkCall(t, open, "call-9", Key), "its writer signed another hash for seq 10")
	})
	t.Run("call before the chains", func(t *testing.T) {
		open, exec := h.New(t)
		if err := open().Close(); err != nil { // the store's tables
			t.Fatal(err)
		}
		exec(`INSERT INTO audit (time, endpoint, actor_id, tenant, session, tool, source, remote_name, args_hash, outcome,
			latency, confirm_token_id, call_id) VALUES (1, '/mcp', 'alice', '', '', 't', '', '', '', 'ok', 0, '', 'call-old')`)
		write(t, open, 0, 2)
		old := checkCall(t, open, "call-old", Key)
		problem(t, old, "written before the audit had chains")
		if !old.Unchained {
			t.Errorf("a record from before the chains: %+v; want it marked unchained", old)
		}
		if c := checkCall(t, open, "call-0", Key); !c.Verified || c.Seq != 1 || c.SignedTo != 2 {
			t.Errorf("the first chained record after an unchained one: %+v; want verified at seq 1, signed at 2", c)
		}
	})
}
