package upstreams

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/coretest"
)

// bulkSpecs is n fake upstreams of m tools each, all sharing one schema as
// the bench's bulk upstreams do.
func bulkSpecs(n, m int) []UpstreamSpec {
	specs := make([]UpstreamSpec, n)
	for i := range specs {
		tools := make([]core.RemoteTool, m)
		for j := range tools {
			tools[j] = coretest.FakeTool(fmt.Sprintf("tool_%04d", j), "Bulk tool.",
				`{"type":"object","properties":{"id":{"type":"string","pattern":"^[a-z0-9-]{1,40}$"}}}`)
		}
		name := fmt.Sprintf("bulk%02d", i)
		specs[i] = UpstreamSpec{Name: name, Prefix: name, Transport: "fake", Upstream: coretest.NewFakeUpstream(name, tools...)}
	}
	return specs
}

// BenchmarkImporterStart imports 20 upstreams × 100 tools into an empty
// registry with a subscriber draining the events: the gateway's share of
// start-up, without the network.
func BenchmarkImporterStart(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		reg := core.NewRegistry(nil)
		_, sub := reg.Bus().Subscribe(4096)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range sub.C() {
			}
		}()
		im := NewImporter(reg, bulkSpecs(20, 100), nil)
		b.StartTimer()
		if err := im.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = im.Close()
		reg.Bus().Close()
		<-done
		b.StartTimer()
	}
}
