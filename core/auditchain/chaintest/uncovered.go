package chaintest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/auditchain"
)

// rewrite edits seq from (outcome "error") of chain id and recomputes the
// chain's hashes from it up to seq to, as somebody with write access to the
// store (and not the key) would; it returns the new hash at to.
func rewrite(t *testing.T, open func() Store, exec func(string, ...any), id string, from, to int64) string {
	t.Helper()
	es := entries(t, open, id)
	prev := ""
	if from > 1 {
		prev = es[from-1].Hash
	}
	for seq := from; seq <= to; seq++ {
		e := es[seq]
		if seq == from {
			e.Record.Outcome = "error"
		}
		h, err := auditchain.Hash(id, seq, prev, e.Record)
		if err != nil {
			t.Fatal(err)
		}
		e.Hash, prev = h, h
		setRow(exec, e.Row, e)
	}
	return prev
}

// insertLinked appends r to the store by hand in chain at seq, with the hash
// a made-up record there would have after prev.
func insertLinked(t *testing.T, exec func(string, ...any), r core.AuditRecord, chain string, seq int64, prev string) {
	t.Helper()
	h, err := auditchain.Hash(chain, seq, prev, r)
	if err != nil {
		t.Fatal(err)
	}
	exec(`INSERT INTO audit (time, endpoint, actor_id, tenant, session, tool, source, remote_name, args_hash, outcome,
		latency, confirm_token_id, call_id, rule, connection, via, findings, chain_id, chain_seq, chain_hash)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`,
		r.Time.UnixNano(), r.Endpoint, r.ActorID, r.Tenant, r.Session, r.Tool, r.Source, r.RemoteName, r.ArgsHash,
		r.Outcome, int64(r.Latency), r.ConfirmTokenID, r.CallID, r.Rule, r.Connection, r.Via, r.Findings, chain, seq, h)
}

func verifyWith(t *testing.T, open func() Store, key []byte) auditchain.Report {
	t.Helper()
	st := open()
	defer st.Close()
	rep, err := auditchain.VerifyStore(context.Background(), st, key)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// uncoveredSuite checks a call's record where no valid checkpoint vouches
// for it (OP-10): a forged or foreign checkpoint over it is a problem, not
// passed over; without one its chain is walked on to its head within
// auditchain.MaxUnsigned; a keyed chain running further than that unsigned
// lost checkpoints, which Verify reports too; a record's seq and an
// unchained record's place are checked; a writer still running is not
// reported.
func uncoveredSuite(t *testing.T, h Harness) {
	const forgedWording = "does not verify under the key: it was altered or made up, or signed under another key"
	t.Run("call under a forged checkpoint", func(t *testing.T) {
		// Edited, its chain recomputed to the head, and the checkpoint's
		// hash set to the new head: only the signature tells.
		open, exec := h.New(t)
		id := write(t, open, 0, 10)
		head := rewrite(t, open, exec, id, 4, 10)
		exec(`UPDATE audit_checkpoints SET hash = $1 WHERE chain_id = $2`, head, id)
		one(t, verify(t, open), auditchain.Forged, id, 10)
		problem(t, checkCall(t, open, "call-3", Key), "the checkpoint of seq 10")
		problem(t, checkCall(t, open, "call-3", Key), forgedWording)
		problem(t, checkCall(t, open, "call-9", Key), forgedWording)
	})
	t.Run("call checked under another key", func(t *testing.T) {
		// A rotated key: the records are untouched, but nothing signed
		// under the key vouches for them.
		open, _ := h.New(t)
		id := write(t, open, 0, 10)
		other := []byte("ffffffffffffffffffffffffffffffff")
		one(t, verifyWith(t, open, other), auditchain.Forged, id, 10)
		problem(t, checkCall(t, open, "call-3", other), forgedWording)
		if c := checkCall(t, open, "call-3", Key); !c.Verified || c.SignedTo != 10 {
			t.Errorf("under its own key: %+v; want verified, signed at 10", c)
		}
	})
	t.Run("call with seq 0", func(t *testing.T) {
		open, exec := h.New(t)
		id := writeWith(t, open, 0, 3, nil)
		r := Record(99)
		insertLinked(t, exec, r, id, 0, "")
		if rep := verifyWith(t, open, nil); rep.Intact() {
			t.Fatalf("a record at seq 0 of a chain: report %+v; want a finding", rep)
		}
		problem(t, checkCall(t, open, r.CallID, nil), "its seq 0 is no place in a chain")
		problem(t, checkCall(t, open, r.CallID, Key), "its seq 0 is no place in a chain")
	})
	t.Run("call with seq 1 after its chain's records", func(t *testing.T) {
		open, exec := h.New(t)
		id := writeWith(t, open, 0, 3, nil)
		r := Record(99)
		insertLinked(t, exec, r, id, 1, "")
		one(t, verifyWith(t, open, nil), auditchain.Inserted, id, 1)
		problem(t, checkCall(t, open, r.CallID, nil), "it has seq 1 but a record of its chain (seq 3) was stored before it")
		// Its chain, walked on from the real first record, meets it too.
		problem(t, checkCall(t, open, "call-0", nil), "a later record of its chain has seq 1, not 4")
	})
	t.Run("unchained call after the chains", func(t *testing.T) {
		open, exec := h.New(t)
		write(t, open, 0, 3)
		exec(`INSERT INTO audit (time, endpoint, actor_id, tenant, session, tool, source, remote_name, args_hash, outcome,
			latency, confirm_token_id, call_id) VALUES (1, '/mcp', 'mallory', '', '', 't', '', '', '', 'ok', 0, '', 'call-new')`)
		rep := verify(t, open)
		if len(rep.Findings) != 1 || rep.Findings[0].Kind != auditchain.Inserted {
			t.Fatalf("report = %+v; want the unchained record found as inserted", rep)
		}
		c := checkCall(t, open, "call-new", Key)
		problem(t, c, "it has no chain but was stored after chaining began")
		if c.Unchained {
			t.Errorf("%+v: an unchained record after the chains is marked as from before them", c)
		}
	})
	t.Run("call rewritten with its successor without a key", func(t *testing.T) {
		// No checkpoint: the chain is walked on to its head, so seq 6,
		// which no longer links, is found.
		open, exec := h.New(t)
		id := writeWith(t, open, 0, 10, nil)
		rewrite(t, open, exec, id, 4, 5)
		one(t, verifyWith(t, open, nil), auditchain.Edited, id, 6)
		problem(t, checkCall(t, open, "call-3", nil), "a later record of its chain (seq 6) does not link to the one before it")
		problem(t, checkCall(t, open, "call-3", Key), "a later record of its chain (seq 6) does not link to the one before it")
	})
	t.Run("call in the unsigned tail", func(t *testing.T) {
		// 300 records signed at 256 and not yet at 300, as a writer still
		// running (or one that crashed) leaves them: verified up to the
		// head and not reported; rewritten with its successor, found.
		open, exec := h.New(t)
		id := write(t, open, 0, 300)
		exec(`DELETE FROM audit_checkpoints WHERE chain_id = $1 AND seq = 300`, id)
		rep := verify(t, open)
		if !rep.Intact() || len(rep.Chains) != 1 || rep.Chains[0].Signed == 0 || rep.Chains[0].Signed >= 280 {
			t.Fatalf("report = %+v; want one intact chain signed before seq 280", rep)
		}
		if c := checkCall(t, open, "call-279", Key); !c.Verified || c.SignedTo != 0 || c.CheckedTo != 300 {
			t.Errorf("a record in a running writer's tail: %+v; want verified up to the head (300), no checkpoint", c)
		}
		rewrite(t, open, exec, id, 280, 281)
		problem(t, checkCall(t, open, "call-279", Key), "a later record of its chain (seq 282) does not link to the one before it")
		if rep := verify(t, open); rep.Intact() {
			t.Errorf("report = %+v; want the rewrite found", rep)
		}
	})
	t.Run("unsigned chain", func(t *testing.T) {
		// Written without a key: not a finding, but nothing vouches for
		// it (Signed 0, shown as unsigned).
		open, _ := h.New(t)
		writeWith(t, open, 0, 10, nil)
		rep := verify(t, open)
		if !rep.Intact() || len(rep.Chains) != 1 || rep.Chains[0].Signed != 0 || rep.Chains[0].Head != 10 {
			t.Fatalf("report = %+v; want one intact chain of 10, signed nowhere", rep)
		}
		if c := checkCall(t, open, "call-3", Key); !c.Verified || c.SignedTo != 0 || c.CheckedTo != 10 {
			t.Errorf("%+v; want verified by its links to the head (10), no checkpoint", c)
		}
	})
	t.Run("checkpoints deleted", func(t *testing.T) {
		// A chain running more than MaxUnsigned records past its last
		// valid checkpoint: a writer with the key never leaves it so.
		open, exec := h.New(t)
		st := open()
		st.AuditChain().SetKey(Key)
		ctx := context.Background()
		const signedPart, n = 300, 300 + auditchain.MaxUnsigned + 100
		for i := range n {
			var err error
			if i < signedPart {
				err = st.AppendAudit(ctx, Record(i))
			} else {
				err = st.(core.AuditQueuer).QueueAudit(ctx, Record(i))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		id := st.AuditChain().ID()
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		exec(`DELETE FROM audit_checkpoints WHERE chain_id = $1 AND seq > 256`, id)
		st = open()
		cps, err := st.AuditCheckpoints(ctx)
		_ = st.Close()
		if err != nil || len(cps) == 0 {
			t.Fatalf("checkpoints %+v, %v; want some at or before 256", cps, err)
		}
		signed := cps[len(cps)-1].Seq
		rep := verify(t, open)
		one(t, rep, auditchain.Deleted, id, signed+1)
		if d := rep.Findings[0].Detail; !strings.Contains(d, "checkpoints were deleted") || !strings.Contains(d, fmt.Sprintf("last valid checkpoint (seq %d)", signed)) {
			t.Errorf("detail %q; want it to name the last checkpoint and the deletion", d)
		}
		if c := checkCall(t, open, "call-3", Key); !c.Verified || c.SignedTo != signed {
			t.Errorf("a record before the last checkpoint: %+v; want verified, signed at %d", c, signed)
		}
		problem(t, checkCall(t, open, "call-299", Key), fmt.Sprintf("no checkpoint within %d records after it: checkpoints were deleted, or its chain was written without a key", auditchain.MaxUnsigned))
		problem(t, checkCall(t, open, fmt.Sprint("call-", n-50), Key), fmt.Sprintf("no checkpoint within %d records before its chain's head (seq %d)", auditchain.MaxUnsigned, n))
		// Without the key only its links are checked, and only as far as
		// it says.
		c := checkCall(t, open, "call-299", nil)
		if want := int64(300 + auditchain.MaxUnsigned + 1); !c.Verified || c.SignedTo != 0 || c.CheckedTo != want || c.KeyKnown {
			t.Errorf("without a key: %+v; want verified by its links up to seq %d only", c, want)
		}
		if rep := verifyWith(t, open, nil); !rep.Intact() {
			t.Errorf("without a key: %+v; want no finding (checkpoints not checked)", rep)
		}
	})
	t.Run("bounded reads", func(t *testing.T) {
		// What CheckCall reads stops at the limit it asks for.
		open, exec := h.New(t)
		id := write(t, open, 0, 20)
		exec(`INSERT INTO audit_checkpoints (chain_id, seq, hash, time, writer, mac) VALUES ($1, 3, 'x', 0, 'w', 'm'), ($1, 4, 'y', 0, 'w', 'm')`, id)
		st := open()
		defer st.Close()
		ctx := context.Background()
		var seqs []int64
		if err := st.ScanChainAfter(ctx, id, 0, 5, func(e auditchain.Entry) error { seqs = append(seqs, e.Seq); return nil }); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(seqs) != "[1 2 3 4 5]" {
			t.Errorf("ScanChainAfter limit 5: seqs %v", seqs)
		}
		seqs = nil
		if err := st.ScanChainCheckpoints(ctx, id, 1, 2, func(c auditchain.Checkpoint) error { seqs = append(seqs, c.Seq); return nil }); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(seqs) != "[3 4]" {
			t.Errorf("ScanChainCheckpoints from 1 limit 2: seqs %v", seqs)
		}
		es := entries(t, open, id)
		for _, c := range []struct {
			row  int64
			want bool
		}{{es[1].Row, false}, {es[2].Row, true}, {es[20].Row + 1, true}} {
			if got, err := st.ChainedBefore(ctx, c.row); err != nil || got != c.want {
				t.Errorf("ChainedBefore(%d) = %v, %v; want %v", c.row, got, err, c.want)
			}
		}
	})
}
