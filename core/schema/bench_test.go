package schema

import (
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/core/schema/schematest"
)

func BenchmarkSchemaValidate(b *testing.B) {
	s, err := CompileSchema(json.RawMessage(schematest.BenchSchema))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("valid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Validate(schematest.BenchArgs); err != nil {
				b.Fatal(err)
			}
		}
	})
	bad := json.RawMessage(`{"query":"","repo":"No Such Repo","limit":1000,"extra":1}`)
	b.Run("invalid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if s.Validate(bad) == nil {
				b.Fatal("accepted")
			}
		}
	})
}

func BenchmarkCompileSchema(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CompileSchema(json.RawMessage(schematest.BenchSchema)); err != nil {
			b.Fatal(err)
		}
	}
}
