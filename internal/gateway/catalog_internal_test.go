package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/coretest"
	"github.com/toolgate/toolgate/core/review"
	"github.com/toolgate/toolgate/core/upstreams"
	"github.com/toolgate/toolgate/internal/store/memory"
)

// RV-3 at the catalog's every door: a rejected template withholds the URIs
// it matches, a rejected prompt its get and completion, while approved and
// new ones (under pin) pass and the importer still answers for the rest.
func TestReviewedCatalogGatesRV3(t *testing.T) {
	ctx := context.Background()
	reg := core.NewRegistry(nil)
	up := coretest.NewFakeUpstream("up")
	raws := func(s ...string) []json.RawMessage {
		out := make([]json.RawMessage, len(s))
		for i, x := range s {
			out[i] = json.RawMessage(x)
		}
		return out
	}
	up.SetCatalog(raws(`{"uri":"up://open","name":"open"}`),
		raws(`{"uriTemplate":"up://items/{id}","name":"item","description":"An item."}`),
		raws(`{"name":"brief","description":"Brief."}`, `{"name":"other","description":"Other."}`))
	im := upstreams.NewImporter(reg, []upstreams.UpstreamSpec{{Name: "up", Prefix: "up", Transport: "fake", Upstream: up}},
		&upstreams.ImporterOptions{Debounce: 20 * time.Millisecond})
	t.Cleanup(func() { _ = im.Close() })
	if err := im.Start(ctx); err != nil {
		t.Fatal(err)
	}
	rev, err := review.NewReviewer(ctx, core.ReviewPin, memory.NewMemStore(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cat := reviewedCatalog{im, rev}
	all := im.Catalog()
	if len(all.Templates) != 1 || len(all.Prompts) != 2 {
		t.Fatalf("catalog: %+v", all)
	}
	if err := rev.RejectEntry(ctx, review.ResourceEntry(all.Templates[0]), "op"); err != nil {
		t.Fatal(err)
	}
	if err := rev.RejectEntry(ctx, review.PromptEntry(all.Prompts[0]), "op"); err != nil {
		t.Fatal(err)
	}

	served := cat.Catalog()
	if len(served.Templates) != 0 || len(served.Resources) != 1 || len(served.Prompts) != 1 || served.Prompts[0].Name != "up_other" {
		t.Errorf("served catalog: %+v", served)
	}
	if _, err := cat.ReadResource(ctx, "up://items/7"); !errors.Is(err, core.ErrUnknownResource) {
		t.Errorf("read through the rejected template: %v", err)
	}
	if err := cat.SubscribeResource(ctx, "up://items/7"); !errors.Is(err, core.ErrUnknownResource) {
		t.Errorf("subscribe through the rejected template: %v", err)
	}
	if _, err := cat.ReadResource(ctx, "up://open"); err != nil {
		t.Errorf("read of a new resource under pin: %v", err)
	}
	if _, err := cat.ReadResource(ctx, "up://nowhere"); !errors.Is(err, core.ErrUnknownResource) {
		t.Errorf("read of an unlisted URI: %v", err)
	}
	if _, err := cat.GetPrompt(ctx, "up_brief", nil); !errors.Is(err, core.ErrUnknownPrompt) {
		t.Errorf("get of the rejected prompt: %v", err)
	}
	if _, err := cat.GetPrompt(ctx, "up_other", nil); err != nil {
		t.Errorf("get of a new prompt under pin: %v", err)
	}
	if _, err := cat.Complete(ctx, json.RawMessage(`{"ref":{"type":"ref/prompt","name":"up_brief"},"argument":{"name":"a","value":"x"}}`)); !errors.Is(err, core.ErrUnknownPrompt) {
		t.Errorf("completion of the rejected prompt: %v", err)
	}

	if err := rev.SetMode(core.ReviewOff); err != nil {
		t.Fatal(err)
	}
	if got := cat.Catalog(); len(got.Templates) != 1 || len(got.Prompts) != 2 {
		t.Errorf("off serves everything: %+v", got)
	}
}
