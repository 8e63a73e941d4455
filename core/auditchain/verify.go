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
	Deleted   = "deleted"   // records missing from the middle or the head of a chain, or checkpoints past MaxUnsigned
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
	v := NewVerifier(checkpoints, key)
	for _, e := range entries {
		if err := v.Add(e); err != nil {
			return Report{}, err
		}
	}
	return v.Report()
}

// Verifier is Verify one record at a time, so a store's whole log need not
// be in memory: it keeps a few values per chain.
type Verifier struct {
	key     []byte
	cps     map[string][]Checkpoint
	chains  map[string]*chainState
	order   []string
	rep     Report
	chained bool   // a chained record was seen
	buf     []byte // hash input, reused
}

// chainState is one chain's walk so far.
type chainState struct {
	cr   ChainReport
	want int64  // the next sequence number
	prev string // its predecessor's hash
	done bool   // the walk found its finding
	// gap: a record with a sequence number past want was met (at gapRow,
	// with gapSeq); want coming later means reordered, never deleted.
	gap            bool
	gapRow, gapSeq int64
	// mismatch: the record at want does not match its hash; the next
	// record tells an edit from a made-up record.
	mismatch *Entry
	signedAt map[int64]bool   // the seqs its checkpoints name
	hashAt   map[int64]string // the verified hashes at those seqs
}

// NewVerifier starts a walk over a store's checkpoints.
func NewVerifier(checkpoints []Checkpoint, key []byte) *Verifier {
	v := &Verifier{key: key, cps: map[string][]Checkpoint{}, chains: map[string]*chainState{},
		rep: Report{Chains: []ChainReport{}, Findings: []Finding{}, CheckpointsChecked: key != nil}}
	for _, c := range checkpoints {
		v.cps[c.Chain] = append(v.cps[c.Chain], c)
	}
	return v
}

func (v *Verifier) state(chain string) *chainState {
	cs, ok := v.chains[chain]
	if !ok {
		cs = &chainState{cr: ChainReport{Chain: chain}, want: 1, signedAt: map[int64]bool{}, hashAt: map[int64]string{}}
		for _, c := range v.cps[chain] {
			cs.signedAt[c.Seq] = true
		}
		v.chains[chain] = cs
		v.order = append(v.order, chain)
	}
	return cs
}

func (cs *chainState) find(kind string, seq, row int64, format string, args ...any) {
	if cs.cr.Finding == nil || seq < cs.cr.Finding.Seq {
		cs.cr.Finding = &Finding{Kind: kind, Chain: cs.cr.Chain, Seq: seq, Row: row, Detail: fmt.Sprintf(format, args...)}
	}
}

// Add takes the next record in append order.
func (v *Verifier) Add(e Entry) error {
	if e.Chain == "" {
		if !v.chained {
			v.rep.Unchained++
			return nil
		}
		v.rep.Findings = append(v.rep.Findings, Finding{Kind: Inserted, Row: e.Row,
			Detail: fmt.Sprintf("record at row %d (%s, %s) has no chain but was stored after chaining began (inserted, or written by a toolgate without chains)",
				e.Row, e.Record.Time.Format(time.RFC3339Nano), e.Record.Tool)})
		return nil
	}
	v.chained = true
	cs := v.state(e.Chain)
	cs.cr.Records++
	cs.cr.Head = max(cs.cr.Head, e.Seq)
	if cs.cr.First.IsZero() || e.Record.Time.Before(cs.cr.First) {
		cs.cr.First = e.Record.Time
	}
	if e.Record.Time.After(cs.cr.Last) {
		cs.cr.Last = e.Record.Time
	}
	switch {
	case cs.mismatch != nil:
		// The next record links from the stored hash only if that hash is
		// the one the writer computed: then the content changed.
		m := cs.mismatch
		cs.mismatch = nil
		if e.Seq == m.Seq+1 {
			if h, err := Hash(e.Chain, e.Seq, m.Hash, e.Record); err == nil && h == e.Hash {
				cs.find(Edited, m.Seq, m.Row, "record at row %d does not match its hash: its content was changed", m.Row)
				return nil
			}
		}
		cs.findMadeUp(*m)
		return nil
	case cs.gap:
		if e.Seq == cs.want {
			cs.find(Reordered, cs.want, cs.gapRow, "record at row %d has seq %d and stands before seq %d", cs.gapRow, cs.gapSeq, cs.want)
			cs.gap, cs.done = false, true
		}
		return nil
	case cs.done:
		return nil
	case e.Seq == cs.want:
		var h string
		var err error
		h, v.buf, err = hashWith(v.buf, e.Chain, e.Seq, cs.prev, &e.Record)
		if err != nil {
			return err
		}
		if h != e.Hash {
			cs.mismatch, cs.done = &e, true
			return nil
		}
		if cs.signedAt[e.Seq] {
			cs.hashAt[e.Seq] = h
		}
		cs.prev, cs.want = h, cs.want+1
	case e.Seq < cs.want:
		cs.find(Inserted, e.Seq, e.Row, "record at row %d repeats seq %d, which the chain holds already", e.Row, e.Seq)
		cs.done = true
	default:
		cs.gap, cs.gapRow, cs.gapSeq, cs.done = true, e.Row, e.Seq, true
	}
	return nil
}

func (cs *chainState) findMadeUp(m Entry) {
	cs.find(Edited, m.Seq, m.Row, "record at row %d does not match its hash: its content was changed, or it was inserted with a made-up hash", m.Row)
}

// Report ends the walk: what is pending is decided, the checkpoints checked.
func (v *Verifier) Report() (Report, error) {
	for id := range v.cps {
		v.state(id) // a chain whose records are all gone
	}
	rep := v.rep
	for _, id := range v.order {
		cs := v.chains[id]
		switch {
		case cs.mismatch != nil:
			cs.findMadeUp(*cs.mismatch)
		case cs.gap && cs.want == 1:
			cs.find(Deleted, 1, cs.gapRow, "the chain's first %d record(s) are missing: its first record (row %d) has seq %d", cs.gapSeq-1, cs.gapRow, cs.gapSeq)
		case cs.gap:
			cs.find(Deleted, cs.want, cs.gapRow, "%d record(s) missing before seq %d (row %d)", cs.gapSeq-cs.want, cs.gapSeq, cs.gapRow)
		}
		if v.key != nil {
			v.checkpoints(cs)
		}
		if cs.cr.Finding != nil {
			rep.Findings = append(rep.Findings, *cs.cr.Finding)
		}
		rep.Chains = append(rep.Chains, cs.cr)
	}
	return rep, nil
}

// checkpoints checks a chain against its checkpoints: each must verify,
// match the chain's hash at its seq, and not lie past the chain's head;
// and a chain signed at all must not run more than MaxUnsigned records past
// its last valid checkpoint, which its writer would not leave unsigned. A
// chain with no checkpoint was written without a key (or lost them all):
// its report's Signed is 0, which `audit verify` shows as unsigned.
func (v *Verifier) checkpoints(cs *chainState) {
	cps := slices.SortedFunc(slices.Values(v.cps[cs.cr.Chain]), func(a, b Checkpoint) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, c := range cps {
		if cs.cr.Writer == "" {
			cs.cr.Writer = c.Writer
		}
		if !c.Valid(v.key) {
			cs.find(Forged, c.Seq, 0, "the checkpoint of seq %d (%s) does not verify under the key: it was altered or made up, or signed under another key",
				c.Seq, c.Time.Format(time.RFC3339))
			continue
		}
		if cs.cr.Finding != nil && c.Seq >= cs.cr.Finding.Seq {
			continue
		}
		cs.cr.Signed = max(cs.cr.Signed, c.Seq)
		switch h, ok := cs.hashAt[c.Seq]; {
		case ok && h != c.Hash:
			cs.find(Edited, c.Seq, 0, "the chain up to seq %d differs from what its writer signed at %s: records at or before it were rewritten",
				c.Seq, c.Time.Format(time.RFC3339))
		case !ok && c.Seq > cs.cr.Head:
			cs.find(Truncated, cs.cr.Head+1, 0, "the chain ends at seq %d but its writer (%s) signed seq %d at %s: the records after seq %d were deleted",
				cs.cr.Head, c.Writer, c.Seq, c.Time.Format(time.RFC3339), cs.cr.Head)
		}
	}
	if cs.cr.Finding == nil && cs.cr.Signed > 0 && cs.cr.Head-cs.cr.Signed > MaxUnsigned {
		cs.find(Deleted, cs.cr.Signed+1, 0, "the chain runs to seq %d, %d records past its last valid checkpoint (seq %d), more than its writer leaves unsigned (%d): checkpoints were deleted",
			cs.cr.Head, cs.cr.Head-cs.cr.Signed, cs.cr.Signed, MaxUnsigned)
	}
}
