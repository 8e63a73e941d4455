package auditchain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/auditqueue"
)

// MaxUnsigned bounds how far a writer with the key lets its chain's head
// run past its last checkpoint (OP-10): fewer than CheckpointEvery records
// committed unsigned, then one batch (at most auditqueue.Max records) whose
// checkpoint may not be stored yet. A keyed chain whose head lies further
// past its last valid checkpoint has lost checkpoints.
const MaxUnsigned = CheckpointEvery + auditqueue.Max

// CheckCall finds the audit records of the call with callID in st and
// checks each one (OP-10): its hash recomputed from its content and its
// predecessor's hash, and its chain from it on, record by record, up to
// the first checkpoint at or past it, which must verify under key and
// whose signed hash the chain must reach. With no checkpoint there (or no
// key) the chain is walked on towards its head, at most MaxUnsigned
// records: with a key a chain running further unsigned lost checkpoints;
// without one, AuditCheck.CheckedTo says how far the links were checked.
// It reads those records and checkpoints through the store's indexes, never
// the whole log: at most MaxUnsigned+1 records after each record found, one
// before it, and the checkpoints of the last MaxUnsigned records of its
// chain; for a record without a chain, the records stored before it down
// to the nearest chained one (all of them, for a record from before the
// chains). Records are in append order; none found is an empty slice.
func CheckCall(ctx context.Context, st Store, callID string, key []byte) ([]core.AuditCheck, error) {
	es, err := st.CallEntries(ctx, callID)
	if err != nil {
		return nil, err
	}
	out := make([]core.AuditCheck, 0, len(es))
	for i := range es {
		e := &es[i]
		c := core.AuditCheck{Record: e.Record, Chain: e.Chain, Seq: e.Seq, Hash: e.Hash, KeyKnown: key != nil}
		if err := checkEntry(ctx, st, e, key, &c); err != nil {
			return nil, err
		}
		c.Verified = c.Problem == ""
		out = append(out, c)
	}
	return out, nil
}

// errStop ends a scan that has read what it needs.
var errStop = errors.New("stop")

// noCheckpoint is the problem of a record with a key and no valid
// checkpoint where its writer would have signed one.
func noCheckpoint(what string) string {
	return fmt.Sprintf("no checkpoint within %d records %s: checkpoints were deleted, or its chain was written without a key", MaxUnsigned, what)
}

// checkEntry sets c's Problem ("" when nothing breaks e's place in its
// chain), SignedTo, CheckedTo and Unchained.
func checkEntry(ctx context.Context, st Store, e *Entry, key []byte, c *core.AuditCheck) error {
	if e.Chain == "" {
		// Verify's rule: a record without a chain is old only if no
		// chained record was stored before it.
		after, err := st.ChainedBefore(ctx, e.Row)
		if err != nil {
			return err
		}
		if after {
			c.Problem = "it has no chain but was stored after chaining began: it was inserted, or written by a toolgate without chains"
			return nil
		}
		c.Unchained = true
		c.Problem = "written before the audit had chains: it cannot be verified"
		return nil
	}
	if e.Seq < 1 {
		c.Problem = fmt.Sprintf("its seq %d is no place in a chain (the first record has seq 1): it was inserted", e.Seq)
		return nil
	}
	prev, err := st.ChainEntryBefore(ctx, e.Chain, e.Row)
	if err != nil {
		return err
	}
	prevHash := ""
	switch {
	case e.Seq == 1 && prev != nil:
		c.Problem = fmt.Sprintf("it has seq 1 but a record of its chain (seq %d) was stored before it: records were inserted or reordered", prev.Seq)
		return nil
	case e.Seq > 1 && (prev == nil || prev.Seq != e.Seq-1):
		c.Problem = fmt.Sprintf("the record before it in its chain (seq %d) is missing or out of order", e.Seq-1)
		return nil
	case e.Seq > 1:
		prevHash = prev.Hash
	}
	if h, err := Hash(e.Chain, e.Seq, prevHash, e.Record); err != nil || h != e.Hash {
		c.Problem = "it does not match its hash: its content was changed, or it was inserted"
		return nil
	}
	// The checkpoint covering it: the first at or past it, which must
	// verify (a forged one is not passed over for a later one).
	var cover *Checkpoint
	if key != nil {
		err := st.ScanChainCheckpoints(ctx, e.Chain, e.Seq, 1, func(cp Checkpoint) error {
			cover = &cp
			return errStop
		})
		if err != nil && !errors.Is(err, errStop) {
			return err
		}
		switch {
		case cover != nil && !cover.Valid(key):
			c.Problem = fmt.Sprintf("the checkpoint of seq %d (%s) covering it does not verify under the key: it was altered or made up, or signed under another key",
				cover.Seq, cover.Time.Format(time.RFC3339))
			return nil
		case cover != nil && cover.Seq-e.Seq > MaxUnsigned:
			c.Problem = noCheckpoint("after it")
			return nil
		case cover != nil && cover.Seq == e.Seq:
			if cover.Hash != e.Hash {
				c.Problem = fmt.Sprintf("its writer signed another hash for seq %d: the record was rewritten", e.Seq)
				return nil
			}
			c.SignedTo, c.CheckedTo = cover.Seq, cover.Seq
			return nil
		}
	}
	// Its successors, each linking to the one before, up to the
	// checkpoint, or without one towards the head: one past MaxUnsigned
	// tells a chain that runs on from one that ends there.
	limit := MaxUnsigned + 1
	if cover != nil {
		limit = int(cover.Seq - e.Seq)
	}
	last, read := *e, 0
	err = st.ScanChainAfter(ctx, e.Chain, e.Row, limit, func(next Entry) error {
		if next.Seq != last.Seq+1 {
			if last.Seq == e.Seq {
				c.Problem = fmt.Sprintf("the record after it in its chain has seq %d, not %d: records were removed or reordered", next.Seq, e.Seq+1)
			} else {
				c.Problem = fmt.Sprintf("a later record of its chain has seq %d, not %d: records were removed or reordered", next.Seq, last.Seq+1)
			}
			return errStop
		}
		if h, err := Hash(next.Chain, next.Seq, last.Hash, next.Record); err != nil || h != next.Hash {
			if last.Seq == e.Seq {
				c.Problem = "the record after it in its chain does not link to it"
			} else {
				c.Problem = fmt.Sprintf("a later record of its chain (seq %d) does not link to the one before it", next.Seq)
			}
			return errStop
		}
		last, read = next, read+1
		if read == limit {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	switch {
	case c.Problem != "":
		return nil
	case cover != nil && last.Seq < cover.Seq:
		c.Problem = fmt.Sprintf("its chain ends at seq %d but its writer signed seq %d: the records after seq %d were deleted", last.Seq, cover.Seq, last.Seq)
		return nil
	case cover != nil && last.Hash != cover.Hash:
		c.Problem = fmt.Sprintf("its chain up to seq %d differs from what its writer signed: records were rewritten", cover.Seq)
		return nil
	case cover != nil:
		c.SignedTo, c.CheckedTo = cover.Seq, cover.Seq
		return nil
	case read > MaxUnsigned:
		// The chain runs on past what was read.
		if key != nil {
			c.Problem = noCheckpoint("after it")
			return nil
		}
		c.CheckedTo = last.Seq
		return nil
	}
	// Its chain's head, reached: with a key, a head further than
	// MaxUnsigned from the last valid checkpoint lost checkpoints; a
	// writer still running is within it.
	c.CheckedTo = last.Seq
	if key == nil || last.Seq <= MaxUnsigned {
		return nil
	}
	from := last.Seq - MaxUnsigned
	signed := false
	if from >= e.Seq { // none at or past it: none in between either
		c.Problem = noCheckpoint(fmt.Sprintf("before its chain's head (seq %d)", last.Seq))
		return nil
	}
	err = st.ScanChainCheckpoints(ctx, e.Chain, from, int(e.Seq-from), func(cp Checkpoint) error {
		if cp.Valid(key) {
			signed = true
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	if !signed {
		c.Problem = noCheckpoint(fmt.Sprintf("before its chain's head (seq %d)", last.Seq))
	}
	return nil
}
