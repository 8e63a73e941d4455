package auditchain

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Kinds of Finding.
const (
	Edited    = "edited"    // a record's content no longer matches its hash
	Deleted   = "deleted"   // records missing from the middle or the head of a chain
	Inserted  = "inserted"  // a record that its chain never held
	Reordered = "reordered" // records of a chain out of their order
	Truncated = "truncated" // the chain ends before its last signed checkpoint
	Forged    = "forged"    // a checkpoint whose signature does not verify
)

// Finding is the first alteration found in one chain.
type Finding struct {
	Kind  string `json:"kind"`
	Chain string `json:"chain"`
	// Seq is the chain sequence number the alteration is at; Row the
	// store's append position of the record found there (0: none).
	Seq    int64  `json:"seq"`
	Row    int64  `json:"row,omitempty"`
	Detail string `json:"detail"`
}

func (f Finding) String() string {
	return fmt.Sprintf("chain %s: %s at seq %d: %s", f.Chain, f.Kind, f.Seq, f.Detail)
}

// ChainReport is one chain's state.
type ChainReport struct {
	Chain   string    `json:"chain"`
	Writer  string    `json:"writer,omitempty"` // from its checkpoints
	Records int       `json:"records"`
	First   time.Time `json:"first,omitzero"`
	Last    time.Time `json:"last,omitzero"`
	Head    int64     `json:"head"`   // the highest sequence number found
	Signed  int64     `json:"signed"` // the last valid checkpoint's, 0: none
	Finding *Finding  `json:"finding,omitempty"`
}

// Report is what Verify found.
type Report struct {
	Chains []ChainReport `json:"chains"`
	// Unchained counts the records written before the store had chains
	// (by an older toolgate): they cannot be verified, and are not
	// counted as altered.
	Unchained int `json:"unchained"`
	// Findings are the chains' findings, and unchained records found after
	// chaining began.
	Findings []Finding `json:"findings"`
	// CheckpointsChecked is false when Verify had no key: a cut tail then
	// goes unnoticed.
	CheckpointsChecked bool `json:"checkpointsChecked"`
}

// Intact reports whether nothing was found altered.
func (r Report) Intact() bool { return len(r.Findings) == 0 }

// Verify walks entries, every audit record of a store in append order, and
// checkpoints, every checkpoint stored, and reports the first alteration in
// each chain (OP-10). With a nil key checkpoints are not checked.
func Verify(entries []Entry, checkpoints []Checkpoint, key []byte) (Report, error) {
	rep := Report{Chains: []ChainReport{}, Findings: []Finding{}, CheckpointsChecked: key != nil}
	byChain := map[string][]Entry{}
	var order []string
	chained := false
	for _, e := range entries {
		if e.Chain == "" {
			if !chained {
				rep.Unchained++
				continue
			}
			rep.Findings = append(rep.Findings, Finding{Kind: Inserted, Row: e.Row,
				Detail: fmt.Sprintf("record at row %d (%s, %s) has no chain but was stored after chaining began (inserted, or written by a toolgate without chains)",
					e.Row, e.Record.Time.Format(time.RFC3339Nano), e.Record.Tool)})
			continue
		}
		chained = true
		if _, ok := byChain[e.Chain]; !ok {
			order = append(order, e.Chain)
		}
		byChain[e.Chain] = append(byChain[e.Chain], e)
	}
	cps := map[string][]Checkpoint{}
	for _, c := range checkpoints {
		if _, ok := byChain[c.Chain]; !ok {
			if _, seen := cps[c.Chain]; !seen {
				order = append(order, c.Chain) // a chain whose records are all gone
			}
		}
		cps[c.Chain] = append(cps[c.Chain], c)
	}
	for _, id := range order {
		cr, err := verifyChain(id, byChain[id], cps[id], key)
		if err != nil {
			return Report{}, err
		}
		if cr.Finding != nil {
			rep.Findings = append(rep.Findings, *cr.Finding)
		}
		rep.Chains = append(rep.Chains, cr)
	}
	return rep, nil
}

func verifyChain(id string, es []Entry, cps []Checkpoint, key []byte) (ChainReport, error) {
	cr := ChainReport{Chain: id, Records: len(es)}
	for _, e := range es {
		cr.Head = max(cr.Head, e.Seq)
		if cr.First.IsZero() || e.Record.Time.Before(cr.First) {
			cr.First = e.Record.Time
		}
		if e.Record.Time.After(cr.Last) {
			cr.Last = e.Record.Time
		}
	}
	find := func(kind string, seq, row int64, format string, args ...any) {
		if cr.Finding == nil || seq < cr.Finding.Seq {
			cr.Finding = &Finding{Kind: kind, Chain: id, Seq: seq, Row: row, Detail: fmt.Sprintf(format, args...)}
		}
	}
	// Walk the records in append order: each must be the next of the chain
	// and match its hash.
	hashAt := map[int64]string{}
	later := map[int64]int{} // seq -> index of its last record
	for i, e := range es {
		later[e.Seq] = i
	}
	prev, want := "", int64(1)
	for i, e := range es {
		if e.Seq == want {
			h, err := Hash(id, e.Seq, prev, e.Record)
			if err != nil {
				return cr, err
			}
			if h != e.Hash {
				// The next record links from the stored hash only if that
				// hash is the one the writer computed: then the content
				// changed; otherwise the record is not the writer's.
				if i+1 < len(es) && es[i+1].Seq == e.Seq+1 {
					if nh, err := Hash(id, es[i+1].Seq, e.Hash, es[i+1].Record); err == nil && nh == es[i+1].Hash {
						find(Edited, e.Seq, e.Row, "record at row %d does not match its hash: its content was changed", e.Row)
						break
					}
				}
				find(Edited, e.Seq, e.Row, "record at row %d does not match its hash: its content was changed, or it was inserted with a made-up hash", e.Row)
				break
			}
			hashAt[e.Seq], prev, want = h, h, want+1
			continue
		}
		if e.Seq < want {
			find(Inserted, e.Seq, e.Row, "record at row %d repeats seq %d, which the chain holds already", e.Row, e.Seq)
			break
		}
		if j, ok := later[want]; ok && j > i {
			find(Reordered, want, e.Row, "record at row %d has seq %d and stands before seq %d", e.Row, e.Seq, want)
			break
		}
		if want == 1 {
			find(Deleted, want, e.Row, "the chain's first %d record(s) are missing: its first record (row %d) has seq %d", e.Seq-want, e.Row, e.Seq)
		} else {
			find(Deleted, want, e.Row, "%d record(s) missing before seq %d (row %d)", e.Seq-want, e.Seq, e.Row)
		}
		break
	}
	if key == nil {
		return cr, nil
	}
	slices.SortFunc(cps, func(a, b Checkpoint) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, c := range cps {
		if cr.Writer == "" {
			cr.Writer = c.Writer
		}
		if !c.Valid(key) {
			find(Forged, c.Seq, 0, "the checkpoint of seq %d (%s) does not verify under the key: it was altered or made up, or signed under another key",
				c.Seq, c.Time.Format(time.RFC3339))
			continue
		}
		if cr.Finding != nil && c.Seq >= cr.Finding.Seq {
			continue
		}
		cr.Signed = max(cr.Signed, c.Seq)
		switch h, ok := hashAt[c.Seq]; {
		case ok && h != c.Hash:
			find(Edited, c.Seq, 0, "the chain up to seq %d differs from what its writer signed at %s: records at or before it were rewritten",
				c.Seq, c.Time.Format(time.RFC3339))
		case !ok && c.Seq > cr.Head:
			find(Truncated, cr.Head+1, 0, "the chain ends at seq %d but its writer (%s) signed seq %d at %s: the records after seq %d were deleted",
				cr.Head, c.Writer, c.Seq, c.Time.Format(time.RFC3339), cr.Head)
		}
	}
	return cr, nil
}
