package upstreams

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/coretest"
)

func raws(items ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(items))
	for i, s := range items {
		out[i] = json.RawMessage(s)
	}
	return out
}

// IM-34: prompts prefixed like tools, resource URIs kept and routed to the
// upstream that listed them, collisions first-claimant with a warning.
func TestCatalogAggregation(t *testing.T) {
	reg := core.NewRegistry(nil)
	a := coretest.NewFakeUpstream("a")
	a.SetCatalog(
		raws(`{"uri":"file:///shared.txt","name":"shared","mimeType":"text/plain","x-extra":1}`, `{"uri":"a://only","name":"only"}`),
		raws(`{"uriTemplate":"a://items/{id}","name":"item"}`),
		raws(`{"name":"summarize","description":"Sum it up","arguments":[{"name":"topic","required":true}]}`),
	)
	b := coretest.NewFakeUpstream("b")
	b.SetCatalog(
		raws(`{"uri":"file:///shared.txt","name":"b's copy"}`, `{"uri":"b://x","name":"x"}`),
		raws(`{"uriTemplate":"b://docs/{+path}","name":"doc"}`),
		raws(`{"name":"summarize","description":"b's"}`),
	)
	pa, pb := spec("a", a), spec("b", b)
	pb.Prefix = "a" // b's prompt reshapes to a's name: a prompt collision
	im := newImporter(t, reg, pa, pb)
	_, sub := reg.Bus().Subscribe(0)
	defer sub.Close()
	coretest.Must(t, im.Start(context.Background()))

	c := im.Catalog()
	var uris []string
	for _, r := range c.Resources {
		uris = append(uris, r.Source+" "+r.URI)
	}
	if diff := cmp.Diff([]string{"a file:///shared.txt", "a a://only", "b b://x"}, uris); diff != "" {
		t.Fatalf("resources (-want +got):\n%s", diff)
	}
	if string(c.Resources[0].Raw) != `{"uri":"file:///shared.txt","name":"shared","mimeType":"text/plain","x-extra":1}` {
		t.Fatalf("resource entry not passed through: %s", c.Resources[0].Raw)
	}
	if len(c.Prompts) != 1 || c.Prompts[0].Name != "a_summarize" || c.Prompts[0].RemoteName != "summarize" {
		t.Fatalf("prompts: %+v", c.Prompts)
	}
	var p map[string]any
	coretest.Must(t, json.Unmarshal(c.Prompts[0].Raw, &p))
	if p["name"] != "a_summarize" || p["description"] != "Sum it up" || p["arguments"] == nil {
		t.Fatalf("prompt entry: %s", c.Prompts[0].Raw)
	}
	want := []core.CatalogCollision{
		{What: "resource", Key: "file:///shared.txt", Kept: "a", Refused: "b"},
		{What: "prompt", Key: "a_summarize", Kept: "a", Refused: "b"},
	}
	if diff := cmp.Diff(want, c.Collisions); diff != "" {
		t.Fatalf("collisions (-want +got):\n%s", diff)
	}
	warned := 0
	for len(sub.C()) > 0 {
		if w, ok := (<-sub.C()).Data.(core.Warning); ok && w.Source == "b" && strings.Contains(w.Message, "refused") {
			warned++
		}
	}
	if warned != 2 {
		t.Fatalf("%d collision warnings, want 2", warned)
	}

	ctx := context.Background()
	for uri, from := range map[string]string{
		"file:///shared.txt": "a", "b://x": "b", "a://items/42": "a", "b://docs/deep/path.md": "b",
	} {
		out, err := im.ReadResource(ctx, uri)
		if err != nil || !strings.Contains(string(out), `"`+from+":"+uri+`"`) {
			t.Errorf("read %s: %v %s (want routed to %s)", uri, err, out, from)
		}
	}
	if _, err := im.ReadResource(ctx, "a://items/1/2"); !errors.Is(err, core.ErrUnknownResource) {
		t.Errorf("{id} must match one segment: %v", err)
	}
	out, err := im.GetPrompt(ctx, "a_summarize", nil)
	if err != nil || !strings.Contains(string(out), `a:summarize`) {
		t.Fatalf("prompt routed wrong: %v %s", err, out)
	}
	if _, err := im.GetPrompt(ctx, "summarize", nil); !errors.Is(err, core.ErrUnknownPrompt) {
		t.Fatalf("unprefixed prompt name: %v", err)
	}
}

// IM-23 for the catalog: a failed listing keeps what the upstream offered.
func TestCatalogFailedListingKeepsPrevious(t *testing.T) {
	reg := core.NewRegistry(nil)
	a := coretest.NewFakeUpstream("a")
	a.SetCatalog(raws(`{"uri":"a://1","name":"1"}`), nil, nil)
	im := newImporter(t, reg, spec("a", a))
	coretest.Must(t, im.Start(context.Background()))
	a.FailCatalog(io.ErrUnexpectedEOF)
	a.SetCatalog(nil, nil, nil)
	if _, err := im.Refresh(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if len(im.Catalog().Resources) != 1 {
		t.Fatal("a failed resources/list pruned the catalog")
	}
	a.FailCatalog(&core.RPCError{Code: -32601, Message: "Method not found"})
	if _, err := im.Refresh(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if n := len(im.Catalog().Resources); n != 0 {
		t.Fatalf("a server without resources still has %d", n)
	}
}

func TestTemplateMatches(t *testing.T) {
	cases := []struct {
		tpl, uri string
		want     bool
	}{
		{"a://items/{id}", "a://items/7", true},
		{"a://items/{id}", "a://items/7/8", false},
		{"a://{+path}", "a://x/y/z", true},
		{"a://items/{id}.json", "a://items/7.json", true},
		{"a://items/{id}.json", "a://itemsX7.json", false},
		{"weird://(.*)/{id}", "weird://(.*)/1", true},
		{"weird://(.*)/{id}", "weird://abc/1", false},
	}
	for _, tc := range cases {
		if got := TemplateMatches(tc.tpl, tc.uri); got != tc.want {
			t.Errorf("TemplateMatches(%q, %q) = %v", tc.tpl, tc.uri, got)
		}
	}
}
