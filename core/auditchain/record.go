package auditchain

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/core"
)

// CheckCall finds the audit records of the call with callID in st and
// checks each one's links (OP-10): its hash recomputed from its content
// and its predecessor's hash, its successor's link to it, and the valid
// checkpoints covering it. One pass over the log without hashing it; three
// records are hashed per record found. Records are in append order; none
// found is an empty slice.
func CheckCall(ctx context.Context, st Store, callID string, key []byte) ([]core.AuditCheck, error) {
	cps, err := st.AuditCheckpoints(ctx)
	if err != nil {
		return nil, err
	}
	type found struct {
		e, prev, next *Entry
	}
	var hits []*found
	last := map[string]*Entry{}    // each chain's latest entry
	waiting := map[string]*found{} // a hit in the chain waiting for its successor
	err = st.ScanAuditEntries(ctx, func(e Entry) error {
		if e.Chain != "" {
			if w := waiting[e.Chain]; w != nil {
				w.next = &e
				delete(waiting, e.Chain)
			}
		}
		if e.Record.CallID == callID {
			f := &found{e: &e, prev: last[e.Chain]}
			hits = append(hits, f)
			if e.Chain != "" {
				waiting[e.Chain] = f
			}
		}
		if e.Chain != "" {
			last[e.Chain] = &e
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]core.AuditCheck, 0, len(hits))
	for _, f := range hits {
		c := core.AuditCheck{Record: f.e.Record, Chain: f.e.Chain, Seq: f.e.Seq, Hash: f.e.Hash, KeyKnown: key != nil}
		c.Problem = linkProblem(f.e, f.prev, f.next)
		if c.Problem == "" && f.e.Chain != "" && key != nil {
			for _, cp := range cps {
				if cp.Chain != f.e.Chain || cp.Seq < f.e.Seq || !cp.Valid(key) {
					continue
				}
				if cp.Seq == f.e.Seq && cp.Hash != f.e.Hash {
					c.Problem = fmt.Sprintf("its writer signed another hash for seq %d: the record was rewritten", f.e.Seq)
					break
				}
				c.SignedTo = max(c.SignedTo, cp.Seq)
			}
		}
		c.Verified = c.Problem == ""
		out = append(out, c)
	}
	return out, nil
}

// linkProblem is what breaks e's links to prev and next, the entries of
// its chain stored just before and after it (nil: none); "" when nothing.
func linkProblem(e, prev, next *Entry) string {
	if e.Chain == "" {
		return "written before the audit had chains: it cannot be verified"
	}
	prevHash := ""
	if e.Seq > 1 {
		if prev == nil || prev.Seq != e.Seq-1 {
			return fmt.Sprintf("the record before it in its chain (seq %d) is missing or out of order", e.Seq-1)
		}
		prevHash = prev.Hash
	}
	if h, err := Hash(e.Chain, e.Seq, prevHash, e.Record); err != nil || h != e.Hash {
		return "it does not match its hash: its content was changed, or it was inserted"
	}
	if next != nil {
		if next.Seq != e.Seq+1 {
			return fmt.Sprintf("the record after it in its chain has seq %d, not %d: records were removed or reordered", next.Seq, e.Seq+1)
		}
		if h, err := Hash(next.Chain, next.Seq, e.Hash, next.Record); err != nil || h != next.Hash {
			return "the record after it in its chain does not link to it"
		}
	}
	return ""
}
