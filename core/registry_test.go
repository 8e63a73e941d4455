package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate/core/schema"
)

// IM-13: the first claimant keeps a name; a second is refused with a
// collision naming both; the live handler is never replaced.
func TestRegisterFirstClaimantWins(t *testing.T) {
	r := NewRegistry(nil)
	var nativeCalls, importedCalls atomic.Int64
	native := nativeTool("search")
	native.Handler = echoHandler(&nativeCalls)
	if err := r.Register(native); err != nil {
		t.Fatal(err)
	}
	imported := Tool{Name: "search", Source: "web", RemoteName: "search", Kind: KindRead, Handler: echoHandler(&importedCalls)}
	err := r.Register(imported)
	var ce *CollisionError
	if !errors.As(err, &ce) || !errors.Is(err, ErrNameTaken) {
		t.Fatalf("second claimant: got %v, want *CollisionError wrapping ErrNameTaken", err)
	}
	want := Collision{Name: "search", Kept: Claimant{Source: "native"}, Refused: Claimant{Source: "web", RemoteName: "search"}}
	if diff := cmp.Diff(want, ce.Collision); diff != "" {
		t.Fatalf("collision (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Collision{want}, r.Collisions()); diff != "" {
		t.Fatalf("recorded collisions (-want +got):\n%s", diff)
	}
	if _, err := r.Invoke(context.Background(), Actor{ID: "a"}, "search", nil); err != nil {
		t.Fatal(err)
	}
	if nativeCalls.Load() != 1 || importedCalls.Load() != 0 {
		t.Fatalf("handler replaced: native=%d imported=%d", nativeCalls.Load(), importedCalls.Load())
	}
	// A repeated refusal is not recorded twice.
	_ = r.Register(imported)
	if n := len(r.Collisions()); n != 1 {
		t.Fatalf("collisions recorded %d times", n)
	}
	// The message names both parties.
	if got := err.Error(); got != `tool name "search" is held by native; web/search was refused` {
		t.Fatalf("message: %s", got)
	}
}

// IM-13 between upstreams: two remote names that reshape to the same name.
func TestRegisterCollisionBetweenUpstreams(t *testing.T) {
	r := NewRegistry(nil)
	a := importedTool("gh", "a.b")
	b := importedTool("gh", "a/b")
	b.Source = "gh2" // a different upstream whose prefix is also gh
	if err := r.Register(a); err != nil {
		t.Fatal(err)
	}
	err := r.Register(b)
	var ce *CollisionError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v", err)
	}
	if ce.Collision.Kept != (Claimant{"gh", "a.b"}) || ce.Collision.Refused != (Claimant{"gh2", "a/b"}) {
		t.Fatalf("collision %+v", ce.Collision)
	}
}

// IM-21: re-registering by the same source updates without colliding; only
// the owner may unregister; native tools can't be removed by an upstream.
func TestRegisterOwnership(t *testing.T) {
	r := NewRegistry(nil)
	must(t, r.Register(nativeTool("help")))
	tool := importedTool("notes", "list")
	must(t, r.Register(tool))

	tool.Description = "changed"
	if err := r.Register(tool); err != nil {
		t.Fatalf("same source re-register: %v", err)
	}
	if got, _ := r.Get(tool.Name); got.Description != "changed" {
		t.Fatalf("definition not replaced: %q", got.Description)
	}
	if len(r.Collisions()) != 0 {
		t.Fatalf("self-collision recorded: %v", r.Collisions())
	}

	if err := r.Unregister("notes", "help"); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("upstream removing native tool: %v", err)
	}
	if err := r.Unregister("other", tool.Name); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("other upstream removing: %v", err)
	}
	if err := r.Unregister("notes", "nope"); !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("unknown: %v", err)
	}
	must(t, r.Unregister("notes", tool.Name))
	if _, err := r.Invoke(context.Background(), Actor{ID: "a"}, tool.Name, nil); !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("call after unregister: %v", err)
	}
	// A freed name is claimable by someone else.
	other := tool
	other.Source = "notes2"
	must(t, r.Register(other))
	if got := r.Names("notes2"); len(got) != 1 || got[0] != tool.Name {
		t.Fatalf("Names(notes2) = %v", got)
	}
	if got := r.Names(""); len(got) != 1 || got[0] != "help" {
		t.Fatalf("Names(native) = %v", got)
	}
}

func TestRegisterRefusesInvalidTools(t *testing.T) {
	r := NewRegistry(nil)
	cases := map[string]Tool{
		"bad name":       {Name: "a.b", Kind: KindRead, Handler: echoHandler(nil)},
		"empty name":     {Name: "", Kind: KindRead, Handler: echoHandler(nil)},
		"bad kind":       {Name: "x", Kind: "write", Handler: echoHandler(nil)},
		"no handler":     {Name: "x", Kind: KindRead},
		"schema invalid": {Name: "x", Kind: KindRead, Handler: echoHandler(nil), InputSchema: json.RawMessage(`{"type":"nope"}`)},
	}
	for name, tool := range cases {
		t.Run(name, func(t *testing.T) {
			err := r.Register(tool)
			if err == nil {
				t.Fatal("registered")
			}
			if name == "schema invalid" {
				if !errors.Is(err, schema.ErrSchemaInvalid) {
					t.Fatalf("got %v, want ErrSchemaInvalid", err)
				}
			} else if !errors.Is(err, ErrInvalidTool) {
				t.Fatalf("got %v, want ErrInvalidTool", err)
			}
		})
	}
	if _, ok := r.Get("x"); ok {
		t.Fatal("an invalid tool was stored")
	}
}

// SV-4 (without review state): allow-list, then enabled, then role policy,
// then the custom check, which can see the source (IM-16).
func TestList(t *testing.T) {
	r := NewRegistry(&RegistryOptions{
		CanUse: func(_ context.Context, a Actor, tool *Tool) bool {
			return !(a.Tenant == "blocked" && tool.Source == "github")
		},
	})
	admin := nativeTool("admin_reset")
	admin.Roles = []string{"ADMIN"}
	must(t, r.Register(admin))
	must(t, r.Register(nativeTool("help")))
	must(t, r.Register(importedTool("github", "create_issue")))
	must(t, r.Register(importedTool("github", "list_issues")))
	off := importedTool("notes", "read")
	off.Disabled = true
	must(t, r.Register(off))

	names := func(ts []Tool) []string {
		var out []string
		for _, tl := range ts {
			out = append(out, tl.Name)
		}
		return out
	}
	ctx := context.Background()
	cases := []struct {
		name  string
		actor Actor
		allow []string
		want  []string
	}{
		{"member sees open tools", Actor{ID: "m", Roles: []string{"MEMBER"}}, nil,
			[]string{"github_create_issue", "github_list_issues", "help"}},
		{"admin sees admin tool", Actor{ID: "a", Roles: []string{"ADMIN"}}, []string{"*"},
			[]string{"admin_reset", "github_create_issue", "github_list_issues", "help"}},
		{"allow-list globs", Actor{ID: "a", Roles: []string{"ADMIN"}}, []string{"github_list_*", "admin_*"},
			[]string{"admin_reset", "github_list_issues"}},
		{"custom check sees source", Actor{ID: "b", Tenant: "blocked"}, nil, []string{"help"}},
		{"allow nothing matching", Actor{ID: "m"}, []string{"zzz"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, names(r.List(ctx, tc.actor, tc.allow))); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Invoke re-checks everything List checked, then validates, then runs.
func TestInvokeGates(t *testing.T) {
	var calls atomic.Int64
	r := NewRegistry(nil)
	tool := Tool{
		Name: "create", Source: "notes", RemoteName: "create", Kind: KindAction, Roles: []string{"MEMBER"},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string","minLength":1}},"required":["title"]}`),
		Handler:     echoHandler(&calls),
	}
	must(t, r.Register(tool))
	ctx := context.Background()
	member := Actor{ID: "m", Roles: []string{"MEMBER"}}

	if _, err := r.Invoke(ctx, member, "nope", nil); !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := r.Invoke(ctx, Actor{ID: "guest"}, "create", json.RawMessage(`{"title":"x"}`)); !errors.Is(err, ErrNotPermitted) {
		t.Fatalf("policy: %v", err)
	}
	_, err := r.Invoke(ctx, member, "create", json.RawMessage(`{"title":""}`))
	var ve *schema.ValidationError
	if !errors.As(err, &ve) || len(ve.Errors) == 0 || ve.Errors[0].Pointer != "/title" {
		t.Fatalf("validation: %v", err)
	}
	if _, err := r.Invoke(ctx, member, "create", nil); !errors.As(err, &ve) {
		t.Fatalf("missing required with empty args: %v", err)
	}
	if calls.Load() != 0 {
		t.Fatalf("handler ran %d times before passing the gates", calls.Load())
	}
	res, err := r.Invoke(ctx, member, "create", json.RawMessage(`{"title":"x"}`))
	if err != nil || calls.Load() != 1 {
		t.Fatalf("valid call: %v (calls=%d)", err, calls.Load())
	}
	if res.IsError {
		t.Fatalf("unexpected isError: %s", res.JSON)
	}
	must(t, r.SetDisabled("create", true))
	if _, err := r.Invoke(ctx, member, "create", json.RawMessage(`{"title":"x"}`)); !errors.Is(err, ErrToolDisabled) {
		t.Fatalf("disabled: %v", err)
	}
	if err := r.Allowed(ctx, member, []string{"*"}, "create"); !errors.Is(err, ErrToolDisabled) {
		t.Fatalf("Allowed on disabled: %v", err)
	}
	if err := r.Allowed(ctx, member, []string{"other_*"}, "create"); !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("Allowed off the allow-list must look unknown: %v", err)
	}
}

// The handler's context carries the call: actor, tool, source and what the
// transport put there (SV-7).
func TestInvokeContext(t *testing.T) {
	r := NewRegistry(nil)
	var got Call
	tool := importedTool("gh", "x")
	tool.Handler = func(ctx context.Context, _ json.RawMessage) (Result, error) {
		got, _ = CallFromContext(ctx)
		return TextResult("ok"), nil
	}
	must(t, r.Register(tool))
	ctx := WithCall(context.Background(), Call{Endpoint: "/mcp", Session: "s1", Channel: "mcp", CallID: "c1"})
	actor := Actor{ID: "u", Roles: []string{"R"}, Tenant: "t"}
	if _, err := r.Invoke(ctx, actor, "gh_x", nil); err != nil {
		t.Fatal(err)
	}
	want := Call{Actor: actor, Tool: "gh_x", Source: "gh", Endpoint: "/mcp", Session: "s1", Channel: "mcp", CallID: "c1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// Concurrent register/unregister/invoke: run with -race.
func TestRegistryConcurrent(t *testing.T) {
	r := NewRegistry(nil)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := []string{"a", "b", "c", "d"}[i]
			for range 200 {
				tool := importedTool(src, "t")
				tool.Name = "shared"
				_ = r.Register(tool)
				_, _ = r.Invoke(context.Background(), Actor{ID: "x"}, "shared", nil)
				_ = r.Unregister(src, "shared")
				_ = r.List(context.Background(), Actor{ID: "x"}, nil)
			}
		}()
	}
	wg.Wait()
	if _, ok := r.Get("shared"); ok {
		t.Fatal("every owner unregistered; the name should be free")
	}
}

func TestResultShapes(t *testing.T) {
	var v struct {
		Content []struct{ Type, Text string }
		IsError bool
	}
	res := ErrorResult("boom")
	if err := json.Unmarshal(res.JSON, &v); err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !v.IsError || len(v.Content) != 1 || v.Content[0].Text != "boom" || v.Content[0].Type != "text" {
		t.Fatalf("ErrorResult = %s", res.JSON)
	}
}

// IM-19: through the registry, a refusal the schema cache already holds
// still keeps the tool out, every time.
func TestIM19RegistryRefusesCachedHostileSchema(t *testing.T) {
	reg := NewRegistry(nil)
	for i := range 2 {
		err := reg.Register(Tool{Name: fmt.Sprint("hostile", i), Kind: KindRead, Handler: echoHandler(nil),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"cache-test-2":{"type":"string","pattern":"(a|a)*"}}}`)})
		if !errors.Is(err, schema.ErrDangerousPattern) {
			t.Errorf("register %d: %v, want schema.ErrDangerousPattern", i, err)
		}
	}
}
