package inspect

import (
	"encoding/json"
	"testing"
)

// resultPolicy is the results policy of an inspecting gateway with every
// detector on, as the peers bench's inspect profile configures it, and
// the gateway's default size bound.
func resultPolicy(tb testing.TB) *Policy {
	return &Policy{
		Inspector: mustNew(tb, nil),
		Results:   [4]Action{ActionRedact, ActionRedact, ActionFlag, ActionFlag},
		MaxBytes:  1 << 20,
	}
}

// toolResult is a CallToolResult carrying s as its one text block.
func toolResult(tb testing.TB, s string) []byte {
	raw, err := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": s}}})
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// benchCheck measures what inspecting one result adds to a call: the
// whole of Policy.Check, decoding the result included (IN-1, goal for
// 2 KB: 30 µs).
func benchCheck(b *testing.B, s string) {
	p := resultPolicy(b)
	raw := toolResult(b, s)
	if _, err := p.Check(Results, raw); err != nil { // rules are built on first use
		b.Fatal(err)
	}
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	loopCPU(b, func() { _, _ = p.Check(Results, raw) })
}

// BenchmarkInspect2KBBenign: a 2 KB result with nothing to flag but an
// e-mail address, every detector on.
func BenchmarkInspect2KBBenign(b *testing.B) { benchCheck(b, benchText(2048)) }

// BenchmarkInspect2KBHostile: a 2 KB result with orders to the model.
func BenchmarkInspect2KBHostile(b *testing.B) { benchCheck(b, hostileText(2048)) }

// BenchmarkInspect1MB: a result of a megabyte, just under the gateway's
// default inspect.maxBytes.
func BenchmarkInspect1MB(b *testing.B) { benchCheck(b, benchText(1_000_000)) }

// BenchmarkInspect1MBHostile: the same with orders mixed in.
func BenchmarkInspect1MBHostile(b *testing.B) { benchCheck(b, hostileText(1_000_000)) }

// BenchmarkInspectSentence: a result of one short sentence, what the
// peers bench's echo returns.
func BenchmarkInspectSentence(b *testing.B) {
	benchCheck(b, "Echo: the deployment finished and three services restarted.")
}

// BenchmarkInspectEchoCall is what the peers bench's inspecting gateway
// adds to one call of the echo: its arguments under arguments: {secrets,
// pii} and its one-sentence result under every results detector.
func BenchmarkInspectEchoCall(b *testing.B) {
	p := resultPolicy(b)
	p.Arguments = [4]Action{ActionBlock, ActionFlag, ActionOff, ActionOff}
	args := []byte(`{"message":"toolgate bench: the quick brown fox jumps over the lazy dog"}`)
	res := toolResult(b, "toolgate bench: the quick brown fox jumps over the lazy dog")
	if _, err := p.Check(Results, res); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	loopCPU(b, func() {
		_, _ = p.Check(Arguments, args)
		_, _ = p.Check(Results, res)
	})
}
