package upstreams

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/coretest"
)

// IM-12, IM-13: two tools of one upstream whose names reshape to the same
// served name are not lost silently: the first listed keeps the name, the
// second is refused as a collision naming both remote names.
func TestIM13ReshapedNamesCollideWithinOneUpstream(t *testing.T) {
	up := coretest.NewFakeUpstream("up",
		coretest.FakeTool("a.b", "first a.b", ""), coretest.FakeTool("a_b", "second a_b", ""),
		coretest.FakeTool("x y", "first x y", ""), coretest.FakeTool("x/y", "second x/y", ""),
		coretest.FakeTool("日本語", "first 日本語", ""), coretest.FakeTool("...", "second ...", ""),
	)
	reg := core.NewRegistry(nil)
	im := newImporter(t, reg, spec("up", up))
	if err := im.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"up_a_b": "a.b", "up_x_y": "x y", "up____": "日本語"} {
		got, ok := reg.Get(name)
		if !ok || got.RemoteName != want {
			t.Errorf("%s is held by %q (registered %v), want the first listed, %q", name, got.RemoteName, ok, want)
		}
	}
	want := []core.Collision{
		{Name: "up_a_b", Kept: core.Claimant{Source: "up", RemoteName: "a.b"}, Refused: core.Claimant{Source: "up", RemoteName: "a_b"}},
		{Name: "up_x_y", Kept: core.Claimant{Source: "up", RemoteName: "x y"}, Refused: core.Claimant{Source: "up", RemoteName: "x/y"}},
		{Name: "up____", Kept: core.Claimant{Source: "up", RemoteName: "日本語"}, Refused: core.Claimant{Source: "up", RemoteName: "..."}},
	}
	if diff := cmp.Diff(want, reg.Collisions()); diff != "" {
		t.Errorf("collisions (-want +got):\n%s", diff)
	}
	if snap := reg.Bus().Snapshot(); len(snap.Collisions) != len(want) {
		t.Errorf("the snapshot the console reads has %d collisions, want %d", len(snap.Collisions), len(want))
	}

	// A refresh that keeps both keeps the same verdict, recorded once.
	if _, err := im.Refresh(context.Background(), "up"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, reg.Collisions()); diff != "" {
		t.Errorf("after a refresh (-want +got):\n%s", diff)
	}

	// The upstream renames a.b to a_b (the same served name): the new
	// remote name takes the name over; nothing is left colliding.
	up.SetTools(coretest.FakeTool("a_b", "renamed", ""))
	if _, err := im.Refresh(context.Background(), "up"); err != nil {
		t.Fatal(err)
	}
	if got, ok := reg.Get("up_a_b"); !ok || got.RemoteName != "a_b" || got.Description != "renamed" {
		t.Errorf("after the rename up_a_b is %+v (registered %v), want remote a_b", got.Info(), ok)
	}
	if c := reg.Collisions(); len(c) != 0 {
		t.Errorf("collisions left after the rename: %+v", c)
	}
}

// IM-36, IM-18: a root schema that says nothing of its type is imported
// (and served as an object schema); one of another type describes a tool no
// MCP client can call and is dropped with that reason.
func TestIM36RootSchemaTypes(t *testing.T) {
	up := coretest.NewFakeUpstream("up",
		coretest.FakeTool("empty", "e", `{}`),
		coretest.FakeTool("props", "p", `{"properties":{"q":{"type":"string"}}}`),
		coretest.FakeTool("object", "o", `{"type":"object"}`),
		coretest.FakeTool("string", "s", `{"type":"string"}`),
		coretest.FakeTool("nullable", "n", `{"type":["object","null"]}`),
		coretest.FakeTool("never", "f", `false`),
	)
	reg := core.NewRegistry(nil)
	im := newImporter(t, reg, spec("up", up))
	if err := im.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"up_empty", "up_props", "up_object"} {
		if _, ok := reg.Get(name); !ok {
			t.Errorf("%s was not imported", name)
		}
	}
	dropped := map[string]string{}
	for _, d := range im.Drops() {
		dropped[d.RemoteName] = d.Reason
	}
	for _, name := range []string{"string", "nullable", "never"} {
		if !strings.Contains(dropped[name], "not an object schema") {
			t.Errorf("%s: dropped as %q, want the root type named", name, dropped[name])
		}
	}
}
