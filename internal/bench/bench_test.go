package bench

import (
	"context"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/telemetry"
)

// Every order ranks each upstream once.
func TestBenchStartupRanks(t *testing.T) {
	for _, order := range []string{"ascending", "descending", "shuffled"} {
		r := startupRanks(20, order)
		seen := map[int]bool{}
		for _, v := range r {
			seen[v] = true
		}
		if len(seen) != 20 || slices.Min(r) != 0 || slices.Max(r) != 19 {
			t.Errorf("%s: %v is not a permutation of 0..19", order, r)
		}
		if order == "descending" && r[0] != 19 {
			t.Errorf("descending: the slowest is not configured first: %v", r)
		}
		if order == "shuffled" && !slices.Equal(r, startupRanks(20, order)) {
			t.Errorf("shuffled differs between calls")
		}
	}
}

// OP-9: the bench's collector counts every span the real OTLP/HTTP
// exporter sends it, across batches, from the wire format.
func TestCollectorCountsExportedSpans(t *testing.T) {
	col, err := StartCollector("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer col.Stop()
	ctx := context.Background()
	p, err := telemetry.New(ctx, telemetry.Settings{Endpoint: col.URL, SampleRatio: 1})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1300 // more than two batches
	for i := range n {
		_, span := p.Tracer().Start(ctx, "span", trace.WithAttributes(attribute.Int("i", i)))
		span.End()
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := col.Spans(); got != n {
		t.Errorf("the collector counted %d spans of %d", got, n)
	}
	if _, err := countSpans([]byte{0x0a, 0x05, 0x01}); err == nil {
		t.Error("a truncated export was counted")
	}
}
