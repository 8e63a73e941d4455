package core

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/toolgate/toolgate/core/schema"
)

// SV-4, SV-5, CF-2, OP-6: a call is parsed once. Resolve looks
// the tool up once under the actor's gates; the canonical arguments are
// computed once (the same bytes for the gate's token and the audit's hash);
// validation runs once, however many steps ask.
func TestToolCallComputedOnce(t *testing.T) {
	reg := NewRegistry(nil)
	must(t, reg.Register(Tool{Name: "t", Kind: KindRead, Description: "d", Handler: echoHandler(nil),
		InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)}))
	ctx := context.Background()
	c, err := reg.Resolve(ctx, Actor{ID: "a"}, nil, "t", json.RawMessage(`{"q":"x","b":[1,2]}`))
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := c.Canonical()
	if string(first) != `{"b":[1,2],"q":"x"}` || &first[0] != &again[0] {
		t.Errorf("canonical %s computed twice (%p, %p)", first, &first[0], &again[0])
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// Were validation run again it would see these bytes and refuse them.
	c.Args = json.RawMessage(`{}`)
	if err := c.Validate(); err != nil {
		t.Errorf("validation ran a second time: %v", err)
	}

	bad, err := reg.Resolve(ctx, Actor{ID: "a"}, nil, "t", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var ve *schema.ValidationError
	if _, err := reg.Run(ctx, Actor{ID: "a"}, bad); !errors.As(err, &ve) {
		t.Errorf("Run of an invalid call: %v, want a validation error", err)
	}
	if _, err := reg.Resolve(ctx, Actor{ID: "a"}, []string{"other_*"}, "t", nil); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("off the allow-list: %v, want ErrUnknownTool", err)
	}
}
