package auditchain

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/core"
)

// CheckCall finds the audit records of the call with callID in st and
// checks each one (OP-10): its hash recomputed from its content and its
// predecessor's hash, and its chain from it on, record by record, up to
// the first valid checkpoint at or past it, whose signed hash the chain
// must reach; with no checkpoint there yet (or no key) up to its
// successor. It reads those records and checkpoints through the store's
// indexes, never the whole log: at most the records between two
// checkpoints (CheckpointEvery) per record found. Records are in append
// order; none found is an empty slice.
func CheckCall(ctx context.Context, st Store, callID string, key []byte) ([]core.AuditCheck, error) {
	es, err := st.CallEntries(ctx, callID)
	if err != nil {
		return nil, err
	}
	out := make([]core.AuditCheck, 0, len(es))
	for i := range es {
		e := &es[i]
		c := core.AuditCheck{Record: e.Record, Chain: e.Chain, Seq: e.Seq, Hash: e.Hash, KeyKnown: key != nil}
		if c.Problem, c.SignedTo, err = checkEntry(ctx, st, e, key); err != nil {
			return nil, err
		}
		c.Verified = c.Problem == ""
		out = append(out, c)
	}
	return out, nil
}

// errStop ends a scan that has read what it needs.
var errStop = errors.New("stop")

// checkEntry is what breaks e's place in its chain ("" when nothing) and
// the seq of the checkpoint it was verified into (0: none).
func checkEntry(ctx context.Context, st Store, e *Entry, key []byte) (problem string, signedTo int64, err error) {
	if e.Chain == "" {
		return "written before the audit had chains: it cannot be verified", 0, nil
	}
	prevHash := ""
	if e.Seq > 1 {
		prev, err := st.ChainEntryBefore(ctx, e.Chain, e.Row)
		if err != nil {
			return "", 0, err
		}
		if prev == nil || prev.Seq != e.Seq-1 {
			return fmt.Sprintf("the record before it in its chain (seq %d) is missing or out of order", e.Seq-1), 0, nil
		}
		prevHash = prev.Hash
	}
	if h, err := Hash(e.Chain, e.Seq, prevHash, e.Record); err != nil || h != e.Hash {
		return "it does not match its hash: its content was changed, or it was inserted", 0, nil
	}
	// The checkpoint covering it: the first at or past it that verifies
	// (a forged one is passed over).
	var cover *Checkpoint
	if key != nil {
		err := st.ScanChainCheckpoints(ctx, e.Chain, e.Seq, func(cp Checkpoint) error {
			if cp.Valid(key) {
				cover = &cp
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return "", 0, err
		}
	}
	if cover != nil && cover.Seq == e.Seq {
		if cover.Hash != e.Hash {
			return fmt.Sprintf("its writer signed another hash for seq %d: the record was rewritten", e.Seq), 0, nil
		}
		return "", cover.Seq, nil
	}
	// Its successors, each linking to the one before, up to the
	// checkpoint (or just the first without one).
	last := *e
	err = st.ScanChainAfter(ctx, e.Chain, e.Row, func(next Entry) error {
		if next.Seq != last.Seq+1 {
			if last.Seq == e.Seq {
				problem = fmt.Sprintf("the record after it in its chain has seq %d, not %d: records were removed or reordered", next.Seq, e.Seq+1)
			} else {
				problem = fmt.Sprintf("a later record of its chain has seq %d, not %d: records were removed or reordered", next.Seq, last.Seq+1)
			}
			return errStop
		}
		if h, err := Hash(next.Chain, next.Seq, last.Hash, next.Record); err != nil || h != next.Hash {
			if last.Seq == e.Seq {
				problem = "the record after it in its chain does not link to it"
			} else {
				problem = fmt.Sprintf("a later record of its chain (seq %d) does not link to the one before it", next.Seq)
			}
			return errStop
		}
		last = next
		if cover == nil || next.Seq == cover.Seq {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return "", 0, err
	}
	switch {
	case problem != "" || cover == nil:
		return problem, 0, nil
	case last.Seq < cover.Seq:
		return fmt.Sprintf("its chain ends at seq %d but its writer signed seq %d: the records after seq %d were deleted", last.Seq, cover.Seq, last.Seq), 0, nil
	case last.Hash != cover.Hash:
		return fmt.Sprintf("its chain up to seq %d differs from what its writer signed: records were rewritten", cover.Seq), 0, nil
	}
	return "", cover.Seq, nil
}
