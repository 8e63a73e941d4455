package auditchain

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/canonjson"
)

// generic is the chain's canonical record the long way: what appendRecord
// must equal byte for byte.
func generic(t *testing.T, r *core.AuditRecord) []byte {
	t.Helper()
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	canon, err := canonjson.CanonicalJSON(raw)
	if err != nil {
		t.Fatalf("CanonicalJSON: %v", err)
	}
	return canon
}

// hostile is the pieces generated strings are made of: quotes,
// backslashes, every control byte, HTML characters encoding/json escapes
// and canonjson does not, U+2028/2029, U+FFFD itself, multi-byte and
// four-byte characters, bytes that are not UTF-8 (a lone continuation, a
// truncated sequence, an encoded surrogate, an overlong form), and text
// that looks like JSON.
var hostile = func() []string {
	p := []string{`"`, `\`, `\"`, `\u0041`, "<", ">", "&", "<IMPORTANT>", "\u2028", "\u2029", "\uFFFD", "é", "日本",
		"😀", "\U0010FFFF", "\x80", "\xe2\x80", "\xed\xa0\x80", "\xc0\xaf", "\xff", "\x7f", `{"a":1}`, `,"tool":"x"`,
		"a", "Z", "0", " ", "/", "null", "-1e400", "12345678901234567890"}
	for c := range 0x20 {
		p = append(p, string(rune(c)))
	}
	return p
}()

func randomString(rng *rand.Rand) string {
	if rng.IntN(4) == 0 {
		return "" // omitempty fields left out, required ones written empty
	}
	var b strings.Builder
	for range rng.IntN(6) + 1 {
		b.WriteString(hostile[rng.IntN(len(hostile))])
	}
	return b.String()
}

// randomRecord fills every field of core.AuditRecord by its type, so a
// field added there is generated here without a change.
func randomRecord(rng *rand.Rand) core.AuditRecord {
	var r core.AuditRecord
	v := reflect.ValueOf(&r).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Interface().(type) {
		case string:
			f.SetString(randomString(rng))
		case time.Duration:
			f.SetInt([]int64{0, 1, -1, math.MaxInt64, math.MinInt64, rng.Int64(), -rng.Int64N(1e12)}[rng.IntN(7)])
		case time.Time:
			zones := []*time.Location{time.UTC, time.FixedZone("east", 5*3600+30*60), time.FixedZone("west", -8*3600), time.Local}
			ts := time.Unix(rng.Int64N(1<<36)-1<<35, rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))])
			if rng.IntN(8) == 0 {
				ts = ts.Round(time.Second) // no fraction at all
			}
			f.Set(reflect.ValueOf(ts))
		default:
			panic("randomRecord: no generator for field " + v.Type().Field(i).Name)
		}
	}
	return r
}

// OP-10: the chain's canonical record written field by field is the
// generic canonical encoding of json.Marshal's, byte for byte, for
// generated records with hostile strings, extreme latencies and times in
// several zones, outside the years JSON can write and with offsets of
// seconds included (which go the generic way).
func TestAppendRecordIsTheGenericCanonicalForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 3))
	for i := range 20000 {
		r := randomRecord(rng)
		want := generic(t, &r)
		got, err := appendRecord(nil, &r)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("record %d %#v:\n got %s (%v)\nwant %s", i, r, got, err, want)
		}
	}
	for _, ts := range []time.Time{
		{}, time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.FixedZone("lmt", 7*60+3)), // an offset of seconds
	} {
		r := core.AuditRecord{Time: ts, Tool: "t"}
		got, err := appendRecord(nil, &r)
		if want := generic(t, &r); err != nil || !bytes.Equal(got, want) {
			t.Errorf("time %v: got %s (%v), want %s", ts, got, err, want)
		}
	}
	// A year JSON cannot write fails as json.Marshal does, never hashes.
	r := core.AuditRecord{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := appendRecord(nil, &r); err == nil {
		t.Error("a record of the year 10000 was encoded")
	}
}

// OP-10: an audit.export line written field by field is json.Marshal's of
// the record and its link, byte for byte, for the same generated records.
func TestAppendExportLineIsJSONMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 6))
	for i := range 20000 {
		r := randomRecord(rng)
		l := Link{Chain: randomString(rng), Seq: rng.Int64() - rng.Int64(), Hash: randomString(rng)}
		want, err := json.Marshal(ExportLine{AuditRecord: r, Link: l})
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendExportLine(nil, &r, &l)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("record %d %#v:\n got %s (%v)\nwant %s", i, r, got, err, want)
		}
	}
	typ := reflect.TypeFor[ExportLine]()
	if n := reflect.TypeFor[core.AuditRecord]().NumField(); n != len(recordFields) || typ.NumField() != 2 {
		t.Errorf("ExportLine or core.AuditRecord has fields appendExportLine does not write")
	}
}

// OP-10: appendRecord writes exactly core.AuditRecord's JSON keys, in the
// order of their bytes, so a field added to the record is not left out of
// the hash.
func TestAppendRecordCoversEveryField(t *testing.T) {
	var keys []string
	typ := reflect.TypeFor[core.AuditRecord]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, recordFields) {
		t.Errorf("core.AuditRecord's keys %q, appendRecord's %q", keys, recordFields)
	}
	if !slices.IsSorted(recordFields) {
		t.Errorf("appendRecord's keys are out of order: %q", recordFields)
	}
}

// BenchmarkCanonicalRecord is the canonical record's cost per record in
// the flusher, written field by field against the generic way.
func BenchmarkCanonicalRecord(b *testing.B) {
	r := benchRecord()
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = appendRecord(buf[:0], &r)
		}
	})
	b.Run("generic", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = appendRecordGeneric(buf[:0], &r)
		}
	})
}
