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

// BenchmarkSchemaValidateBacktracker validates against patterns only
// regexp2 runs (a lookahead, a lookbehind, a backreference), beside a
// pattern of the same shape on RE2.
func BenchmarkSchemaValidateBacktracker(b *testing.B) {
	for _, bc := range []struct{ name, pattern, value string }{
		{"re2", `^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*$`, "api.example.com"},
		{"lookahead", `^(?=.{1,253}\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\.?$`, "api.example.com"},
		{"lookbehind", `^[a-z]+(?<!_tmp)$`, "tablename"},
		{"backreference", `^(['"])[^'"]*\1$`, `'quoted value'`},
	} {
		raw, err := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"v": map[string]any{"type": "string", "pattern": bc.pattern}}})
		if err != nil {
			b.Fatal(err)
		}
		s, err := CompileSchema(raw)
		if err != nil {
			b.Fatal(err)
		}
		args, _ := json.Marshal(map[string]string{"v": bc.value})
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Validate(args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
