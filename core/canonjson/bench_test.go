package canonjson

import (
	"testing"

	"github.com/toolgate/toolgate/core/schema/schematest"
)

func BenchmarkCanonicalJSON(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CanonicalJSON(schematest.BenchArgs); err != nil {
			b.Fatal(err)
		}
	}
}
