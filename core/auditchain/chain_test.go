package auditchain

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

func rec(i int) core.AuditRecord {
	r := benchRecord()
	r.CallID = fmt.Sprint("call-", i)
	r.Time = r.Time.Add(time.Duration(i) * time.Second)
	return r
}

// chain links n records through a writer as a store would, and returns them
// as stored entries (rows 1…n) and the checkpoints written.
func chain(t *testing.T, n int) ([]Entry, []Checkpoint, *Writer) {
	t.Helper()
	w := NewWriter()
	w.SetKey(testKey)
	var es []Entry
	var cps []Checkpoint
	for i := range n {
		recs := []core.AuditRecord{rec(i)}
		links, cp, err := w.Link(recs)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, Entry{Row: int64(i + 1), Record: recs[0], Link: links[0]})
		if cp != nil {
			cps = append(cps, *cp)
		}
		w.Committed(recs, cp)
	}
	if cp := w.Final(); cp != nil {
		cps = append(cps, *cp)
		w.CheckpointWritten(cp)
	}
	return es, cps, w
}

func verifyOne(t *testing.T, es []Entry, cps []Checkpoint) Report {
	t.Helper()
	rep, err := Verify(es, cps, testKey)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func wantFinding(t *testing.T, rep Report, kind string, seq int64) {
	t.Helper()
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != kind || rep.Findings[0].Seq != seq {
		t.Fatalf("findings %+v; want one %s at seq %d", rep.Findings, kind, seq)
	}
}

// OP-10: the walk's verdicts on an in-memory chain.
func TestVerifyFindsEachAlteration(t *testing.T) {
	es, cps, _ := chain(t, 8)
	if rep := verifyOne(t, es, cps); !rep.Intact() || rep.Chains[0].Signed != 8 || rep.Chains[0].Records != 8 {
		t.Fatalf("clean chain: %+v", rep)
	}
	edit := func(f func([]Entry) []Entry) []Entry { return f(append([]Entry(nil), es...)) }

	wantFinding(t, verifyOne(t, edit(func(e []Entry) []Entry { e[2].Record.ActorID = "mallory"; return e }), cps), Edited, 3)
	wantFinding(t, verifyOne(t, edit(func(e []Entry) []Entry { e[7].Record.Outcome = "error"; return e }), cps), Edited, 8)
	wantFinding(t, verifyOne(t, edit(func(e []Entry) []Entry { e[7].Hash = e[6].Hash; return e }), cps), Edited, 8)
	wantFinding(t, verifyOne(t, edit(func(e []Entry) []Entry { return append(e[:4], e[5:]...) }), cps), Deleted, 5)
	wantFinding(t, verifyOne(t, edit(func(e []Entry) []Entry { return e[1:] }), cps), Deleted, 1)
	wantFinding(t, verifyOne(t, edit(func(e []Entry) []Entry { e[3], e[4] = e[4], e[3]; return e }), cps), Reordered, 4)
	wantFinding(t, verifyOne(t, edit(func(e []Entry) []Entry {
		dup := e[5]
		dup.Record.Outcome = "error"
		return append(e, dup)
	}), cps), Inserted, 6)
	wantFinding(t, verifyOne(t, edit(func(e []Entry) []Entry { return e[:6] }), cps), Truncated, 7)
	forged := append([]Checkpoint(nil), cps...)
	forged[len(forged)-1].Seq = 6
	wantFinding(t, verifyOne(t, es[:6], forged), Forged, 6)

	// Without the key, a cut tail is not seen, and the report says so.
	rep, err := Verify(es[:6], cps, nil)
	if err != nil || !rep.Intact() || rep.CheckpointsChecked {
		t.Fatalf("without a key: %+v %v", rep, err)
	}
}

// OP-10: the hash covers every field of the record and the link.
func TestHashCoversRecordAndLink(t *testing.T) {
	r := rec(1)
	base, err := Hash("c", 1, "p", r)
	if err != nil {
		t.Fatal(err)
	}
	other := r
	other.Latency++
	for name, h := range map[string]func() (string, error){
		"chain":   func() (string, error) { return Hash("d", 1, "p", r) },
		"seq":     func() (string, error) { return Hash("c", 2, "p", r) },
		"prev":    func() (string, error) { return Hash("c", 1, "q", r) },
		"latency": func() (string, error) { return Hash("c", 1, "p", other) },
	} {
		if got, err := h(); err != nil || got == base {
			t.Errorf("changing the %s keeps the hash (%v)", name, err)
		}
	}
}

// OP-10: a batch whose write failed ends the chain; the next starts anew at
// seq 1, and both verify.
func TestFailedBatchStartsNewChain(t *testing.T) {
	w := NewWriter()
	w.SetKey(testKey)
	first := w.ID()
	recs := []core.AuditRecord{rec(1)}
	if _, _, err := w.Link(recs); err != nil {
		t.Fatal(err)
	}
	w.Failed()
	links, _, err := w.Link(recs)
	if err != nil {
		t.Fatal(err)
	}
	if w.ID() == first || links[0].Seq != 1 || links[0].Chain != w.ID() {
		t.Fatalf("after a failure: chain %s (was %s), seq %d; want a new chain at seq 1", w.ID(), first, links[0].Seq)
	}
}

// The derived key is stable, not the secret, and differs per secret.
//
// Covers OP-10.
func TestDeriveKey(t *testing.T) {
	a, b := DeriveKey([]byte("secret-one-0123456789abcdef012345")), DeriveKey([]byte("secret-two-0123456789abcdef012345"))
	if len(a) != 32 || bytes.Equal(a, b) || !bytes.Equal(a, DeriveKey([]byte("secret-one-0123456789abcdef012345"))) ||
		bytes.Contains(a, []byte("secret-one")) {
		t.Fatalf("DeriveKey: %x %x", a, b)
	}
	c := Checkpoint{Chain: "c", Seq: 3, Hash: "h", Time: time.Unix(5, 0), Writer: "w"}
	c.Sign(a)
	if !c.Valid(a) || c.Valid(b) {
		t.Fatal("a checkpoint verifies only under its key")
	}
}

// audit.export: lines in order, and after Reopen in a new file at the path.
//
// Covers OP-10.
func TestExporterReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "audit.jsonl")
	e, err := OpenExporter(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	es, _, _ := chain(t, 3)
	write := func(i int) { e.Write([]core.AuditRecord{es[i].Record}, []Link{es[i].Link}) }
	write(0)
	write(1)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := e.Reopen(); err != nil {
		t.Fatal(err)
	}
	write(2)
	if err := errors.Join(e.Err(), e.Close()); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path + ".1")
	cur, _ := os.ReadFile(path)
	if strings.Count(string(old), "\n") != 2 || strings.Count(string(cur), "\n") != 1 ||
		!strings.Contains(string(cur), `"chainSeq":3`) || !strings.Contains(string(old), `"hash":"`+es[1].Hash+`"`) {
		t.Fatalf("before the rotation:\n%s\nafter:\n%s", old, cur)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("export file mode %v, %v; want 0600", fi.Mode(), err)
	}
	var out bytes.Buffer
	so, err := OpenExporter("-", &out)
	if err != nil {
		t.Fatal(err)
	}
	so.Write([]core.AuditRecord{es[0].Record}, []Link{es[0].Link})
	if err := so.Reopen(); err != nil || so.Close() != nil || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("stdout export: %q %v", out.String(), err)
	}
}

// OP-10: a keyed chain whose head runs more than MaxUnsigned records past
// its last valid checkpoint lost checkpoints; a tail within that (a writer
// still running) is no finding, nor is a chain without any checkpoint
// (written without a key: Signed 0).
func TestVerifyNoticesDeletedCheckpoints(t *testing.T) {
	es, cps, _ := chain(t, MaxUnsigned+300)
	head := int64(len(es))
	var early, recent []Checkpoint
	for _, c := range cps {
		if c.Seq <= CheckpointEvery {
			early = append(early, c)
		}
		if c.Seq < head { // the final checkpoint not written yet
			recent = append(recent, c)
		}
	}
	if len(early) == 0 || len(recent) == len(cps) {
		t.Fatalf("checkpoints at %v; want one by seq %d and one at the head", cps, CheckpointEvery)
	}
	signed := early[len(early)-1].Seq
	rep := verifyOne(t, es, early)
	wantFinding(t, rep, Deleted, signed+1)
	if d := rep.Findings[0].Detail; !strings.Contains(d, fmt.Sprintf("runs to seq %d, %d records past its last valid checkpoint (seq %d)", head, head-signed, signed)) {
		t.Errorf("detail %q", d)
	}
	if rep := verifyOne(t, es, recent); !rep.Intact() || rep.Chains[0].Signed == 0 {
		t.Errorf("a running writer's unsigned tail: %+v; want intact", rep.Findings)
	}
	if rep := verifyOne(t, es, nil); !rep.Intact() || rep.Chains[0].Signed != 0 {
		t.Errorf("a chain without checkpoints: %+v; want intact, signed nowhere", rep.Findings)
	}
}
