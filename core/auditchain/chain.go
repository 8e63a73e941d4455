// Package auditchain makes the audit log tamper-evident (OP-10): every record
// a store handle commits is chained by hash to the one it committed before,
// and the handle signs checkpoints of its chain's head with a key the
// gateways sharing a store share. Verify walks the chains and finds the first
// record edited, deleted, inserted or reordered, and a tail cut off behind the
// last signed checkpoint.
//
// Each store handle (each gateway process, each replica) is one writer with
// a chain of its own, named by a random id made when the handle opens: a
// restart starts a new chain whose first record links to nothing. A chain
// whose first record is gone starts at a sequence number above 1, so Verify
// tells a new chain from a deleted head. The hash is not keyed: whoever can
// write the store could recompute a chain after editing it, which the signed
// checkpoints catch up to the last one.
package auditchain

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/toolgate/toolgate/core"
)

// Link is a record's place in its writer's chain.
type Link struct {
	Chain string `json:"chain"`
	Seq   int64  `json:"chainSeq"`
	// Hash is hex SHA-256 of the canonical JSON of the record with its chain,
	// sequence number and the previous record's hash (Hash).
	Hash string `json:"hash"`
}

// Entry is one stored record as the chain sees it. An unchained record (one
// written before the store had chains) has an empty Link.
type Entry struct {
	// Row is the record's append position in the store (its seq column):
	// the order Verify reads records in.
	Row    int64
	Record core.AuditRecord
	Link
}

// Checkpoint is a writer's signed statement that its chain held Seq records
// ending in Hash at Time (OP-10): a chain found shorter was cut.
type Checkpoint struct {
	Chain  string    `json:"chain"`
	Seq    int64     `json:"seq"`
	Hash   string    `json:"hash"`
	Time   time.Time `json:"time"`
	Writer string    `json:"writer"` // host:pid, for people reading a report
	MAC    string    `json:"-"`      // hex HMAC-SHA256 of the rest under the key
}

// hashPrefix starts every hashed record: the chain, sequence number and
// previous hash follow, NUL-separated (none holds a NUL), then the record.
const hashPrefix = "toolgate audit chain v1\x00"

// Normalize puts r in the form the stores keep and return: its time in UTC
// at nanosecond precision, without a monotonic reading. Records are hashed
// and exported in this form.
func Normalize(r *core.AuditRecord) {
	r.Time = time.Unix(0, r.Time.UnixNano()).UTC()
}

// Hash is the chain hash of r at seq in chain after prev ("" for the first
// record): hex SHA-256 over the chain, seq and prev and the canonical JSON of
// the whole record (appendRecord), so a field added to core.AuditRecord is
// covered (a test fails until appendRecord writes it). r is hashed as
// given: Normalize it first.
func Hash(chain string, seq int64, prev string, r core.AuditRecord) (string, error) {
	h, _, err := hashWith(nil, chain, seq, prev, &r)
	return h, err
}

// hashWith is Hash building its input in buf, returned for reuse. r is a
// pointer: a record passed by value was copied to the heap for every hash,
// since the encoder's fallback hands it to encoding/json.
func hashWith(buf []byte, chain string, seq int64, prev string, r *core.AuditRecord) (string, []byte, error) {
	buf = append(buf[:0], hashPrefix...)
	buf = append(append(buf, chain...), 0)
	buf = append(strconv.AppendInt(buf, seq, 10), 0)
	buf = append(append(buf, prev...), 0)
	buf, err := appendRecord(buf, r)
	if err != nil {
		return "", buf, fmt.Errorf("audit chain: %w", err)
	}
	sum := sha256.Sum256(buf)
	var hx [2 * sha256.Size]byte
	hex.Encode(hx[:], sum[:])
	return string(hx[:]), buf, nil
}

// keyLabel is the HKDF info the checkpoint key is derived under from the
// confirm secret, so the key is never the secret itself.
const keyLabel = "toolgate audit checkpoint key v1"

// MinKeyLength is the shortest audit.checkpointKey accepted.
const MinKeyLength = 32

// DeriveKey is the checkpoint key derived from gateway.confirm.secret, which
// every gateway sharing a store already shares (CF-3): HKDF-SHA256 with a
// fixed label. Use it when audit.checkpointKey is not set.
func DeriveKey(confirmSecret []byte) []byte {
	key, err := hkdf.Key(sha256.New, confirmSecret, nil, keyLabel, 32)
	if err != nil { // only for lengths HKDF cannot make; 32 is not one
		panic(err)
	}
	return key
}

// Sign sets c.MAC under key.
func (c *Checkpoint) Sign(key []byte) { c.MAC = hex.EncodeToString(c.mac(key)) }

// Valid reports whether c.MAC is c's under key.
func (c Checkpoint) Valid(key []byte) bool {
	got, err := hex.DecodeString(c.MAC)
	return err == nil && hmac.Equal(got, c.mac(key))
}

func (c Checkpoint) mac(key []byte) []byte {
	m := hmac.New(sha256.New, key)
	// Fields NUL-separated: none of them holds a NUL (ids and hashes are
	// hex, the writer a host name and pid).
	fmt.Fprintf(m, "toolgate audit checkpoint\x00%s\x00%d\x00%s\x00%d\x00%s", c.Chain, c.Seq, c.Hash, c.Time.UnixNano(), c.Writer)
	return m.Sum(nil)
}

const (
	// CheckpointEvery is how many records a writer commits at most between
	// two checkpoints.
	CheckpointEvery = 256
	// CheckpointInterval is how long a writer waits at most to sign a
	// committed record, when records keep coming; a writer also signs
	// its head when it closes.
	CheckpointInterval = 5 * time.Second
)

// Writer is one store handle's chain. Link, Committed, Failed and Close are
// called by the store's audit flusher only, one batch at a time, in commit
// order; SetKey and SetSink from anywhere.
type Writer struct {
	mu   sync.Mutex
	key  []byte
	sink func([]core.AuditRecord, []Link)

	id      string
	name    string
	seq     int64  // committed head
	head    string // its hash
	signed  int64  // seq of the last checkpoint written
	lastCP  time.Time
	now     func() time.Time
	links   []Link // the batch being written, reused
	buf     []byte // hash input, reused
	pending bool   // Link ran and neither Committed nor Failed yet
}

// NewWriter returns a writer with a new chain.
func NewWriter() *Writer {
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	w := &Writer{name: host + ":" + strconv.Itoa(os.Getpid()), now: time.Now}
	w.newChain()
	return w
}

func (w *Writer) newChain() {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail
	w.id, w.seq, w.head, w.signed = hex.EncodeToString(b[:]), 0, "", 0
	w.lastCP = w.now()
}

// ID is the writer's current chain. It is the flusher's: read it while no
// batch is being written (after AppendAudit returns, or Close).
func (w *Writer) ID() string { return w.id }

// SetKey sets the checkpoint key; nil (the default) writes no checkpoints.
func (w *Writer) SetKey(key []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.key = key
}

// SetSink makes every committed batch go to fn, in commit order, from the
// flusher (audit.export). fn must not keep the slices. nil: none.
func (w *Writer) SetSink(fn func([]core.AuditRecord, []Link)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sink = fn
}

// Link normalizes recs in place and returns their links after the committed
// head, and the checkpoint to write with them if one is due (nil if not).
// The slice is reused by the next batch.
func (w *Writer) Link(recs []core.AuditRecord) ([]Link, *Checkpoint, error) {
	w.links = w.links[:0]
	prev, seq := w.head, w.seq
	for i := range recs {
		Normalize(&recs[i])
		seq++
		var h string
		var err error
		h, w.buf, err = hashWith(w.buf, w.id, seq, prev, &recs[i])
		if err != nil {
			return nil, nil, err
		}
		w.links = append(w.links, Link{Chain: w.id, Seq: seq, Hash: h})
		prev = h
	}
	w.pending = true
	if len(recs) == 0 {
		return w.links, nil, nil
	}
	now := w.now()
	if seq-w.signed < CheckpointEvery && now.Sub(w.lastCP) < CheckpointInterval {
		return w.links, nil, nil
	}
	return w.links, w.checkpoint(seq, prev, now), nil
}

// checkpoint is a signed checkpoint of seq and hash, nil without a key.
func (w *Writer) checkpoint(seq int64, hash string, now time.Time) *Checkpoint {
	w.mu.Lock()
	key := w.key
	w.mu.Unlock()
	if key == nil {
		return nil
	}
	c := &Checkpoint{Chain: w.id, Seq: seq, Hash: hash, Time: time.Unix(0, now.UnixNano()).UTC(), Writer: w.name}
	c.Sign(key)
	return c
}

// Committed advances the head past the batch Link linked, notes cp (the
// checkpoint written with it, or nil) and hands the batch to the sink.
func (w *Writer) Committed(recs []core.AuditRecord, cp *Checkpoint) {
	w.pending = false
	if n := len(w.links); n > 0 {
		w.seq, w.head = w.links[n-1].Seq, w.links[n-1].Hash
	}
	if cp != nil {
		w.signed, w.lastCP = cp.Seq, w.now()
	}
	w.mu.Lock()
	sink := w.sink
	w.mu.Unlock()
	if sink != nil {
		sink(recs, w.links)
	}
}

// CheckpointWritten notes cp, written apart from a batch.
func (w *Writer) CheckpointWritten(cp *Checkpoint) { w.signed, w.lastCP = cp.Seq, w.now() }

// Failed says the batch Link linked may or may not be stored (the write's
// outcome is unknown): the writer goes on in a new chain, so the old one ends
// where it ends either way and neither has a gap or a duplicate.
func (w *Writer) Failed() {
	w.pending = false
	w.newChain()
}

// Final is the checkpoint of the head the writer closes with: nil if the
// head is signed already, or there is no key.
func (w *Writer) Final() *Checkpoint {
	if w.seq == 0 || w.seq == w.signed {
		return nil
	}
	return w.checkpoint(w.seq, w.head, w.now())
}

// Store is a store whose audit records are chained: the persistent stores.
type Store interface {
	// AuditChain is the handle's writer, to set its key and sink on.
	AuditChain() *Writer
	// ScanAuditEntries calls fn with every audit record and its link, in
	// append order, after committing what the handle has queued; an error
	// from fn ends the scan with it.
	ScanAuditEntries(ctx context.Context, fn func(Entry) error) error
	// AuditCheckpoints returns every checkpoint stored.
	AuditCheckpoints(ctx context.Context) ([]Checkpoint, error)

	// What CheckCall reads, through indexes, rather than the whole log:

	// CallEntries returns the records of the call callID with their
	// links, in append order, after committing what the handle has
	// queued; none is an empty slice.
	CallEntries(ctx context.Context, callID string) ([]Entry, error)
	// ChainEntryBefore returns the record of chain stored last before row,
	// in append order; nil when there is none.
	ChainEntryBefore(ctx context.Context, chain string, row int64) (*Entry, error)
	// ChainedBefore reports whether a chained record was stored before
	// row, reading back from row to the nearest one.
	ChainedBefore(ctx context.Context, row int64) (bool, error)
	// ScanChainAfter calls fn with the first limit (> 0) records of chain
	// stored after row, in append order; an error from fn ends the scan
	// with it.
	ScanChainAfter(ctx context.Context, chain string, row int64, limit int, fn func(Entry) error) error
	// ScanChainCheckpoints calls fn with chain's first limit (> 0)
	// checkpoints from seq from on, lowest seq first; an error from fn
	// ends the scan with it.
	ScanChainCheckpoints(ctx context.Context, chain string, from int64, limit int, fn func(Checkpoint) error) error
}

// Entries is every audit record of st with its link, in append order.
func Entries(ctx context.Context, st Store) ([]Entry, error) {
	out := []Entry{}
	err := st.ScanAuditEntries(ctx, func(e Entry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// VerifyStore verifies every chain in st (OP-10), reading the log once,
// record by record.
func VerifyStore(ctx context.Context, st Store, key []byte) (Report, error) {
	cps, err := st.AuditCheckpoints(ctx)
	if err != nil {
		return Report{}, err
	}
	v := NewVerifier(cps, key)
	if err := st.ScanAuditEntries(ctx, v.Add); err != nil {
		return Report{}, err
	}
	return v.Report()
}
