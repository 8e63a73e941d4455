package flows

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/store/postgres"
	"github.com/toolgate/toolgate/internal/store/sqlite"
)

// BenchmarkFlowLabels is what keeping a call's flow labels costs it (IN-3):
// reading them before the policy decides, adding what the call gathered
// after. held is a session's call on the replica holding its flow, with
// nothing new gathered (the common case: no store I/O); first is a
// session's first call on a replica that does not hold it (adopted,
// woken after a restart): one read; grow is a call that adds a label: one
// write; sessionless is a 2026-07-28 client's call over a store replicas
// share (PostgreSQL): one read every call. Each over no store (memory), a
// SQLite file and PostgreSQL (pgtest's server on loopback).
func BenchmarkFlowLabels(b *testing.B) {
	ctx := context.Background()
	lite, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { lite.Close() })
	pg, err := postgres.Open(ctx, pgtest.Start(b, nil).NewDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pg.Close() })
	const w = time.Hour
	shared := func(string) {} // a shared store: sessionless flows are read every call
	for _, st := range []struct {
		name  string
		store core.FlowLabels
	}{{"memory", nil}, {"sqlite", lite}, {"postgres", pg}} {
		back := Backing{Store: st.store, Keep: 25 * time.Hour, Sessions: true}
		key, _ := Key("bench-session", core.Actor{ID: "dev"}, "bench")
		b.Run("held/"+st.name, func(b *testing.B) {
			var s Set
			if err := s.Add(ctx, back, key, true, w, time.Now(), []string{"private", "untrusted"}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				now := time.Now()
				if _, err := s.Labels(ctx, back, key, true, w, now); err != nil {
					b.Fatal(err)
				}
				if err := s.Add(ctx, back, key, true, w, now, []string{"untrusted"}); err != nil {
					b.Fatal(err)
				}
			}
		})
		if st.store == nil {
			continue
		}
		b.Run("first/"+st.name, func(b *testing.B) {
			for b.Loop() {
				var s Set
				if got, err := s.Labels(ctx, back, key, true, w, time.Now()); err != nil || len(got) != 2 {
					b.Fatal(got, err)
				}
			}
		})
		b.Run("grow/"+st.name, func(b *testing.B) {
			var s Set
			i := 0
			for b.Loop() {
				i++
				k, _ := Key(fmt.Sprint("grow-", st.name, i), core.Actor{ID: "dev"}, "bench")
				if err := s.Add(ctx, back, k, true, w, time.Now(), []string{"untrusted"}); err != nil {
					b.Fatal(err)
				}
			}
		})
		if st.name != "postgres" {
			continue // only replicas share a store, and they share PostgreSQL
		}
		b.Run("sessionless/"+st.name, func(b *testing.B) {
			sb := back
			sb.Grew = shared
			k, _ := Key("", core.Actor{ID: "dev"}, "bench-modern")
			var s Set
			if err := s.Add(ctx, sb, k, false, w, time.Now(), []string{"untrusted"}); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				now := time.Now()
				if _, err := s.Labels(ctx, sb, k, false, w, now); err != nil {
					b.Fatal(err)
				}
				if err := s.Add(ctx, sb, k, false, w, now, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
