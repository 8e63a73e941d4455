package gateway

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/review"
	"github.com/toolgate/toolgate/core/upstreams"
)

// reviewedCatalog is the importer's catalog as the endpoints serve it:
// prompts, resources and templates that review withholds (RV-3) are not
// listed, and reading, getting, subscribing to or completing one answers as
// for an unknown one — the gate tools have (SV-4, SV-5).
type reviewedCatalog struct {
	im  *upstreams.Importer
	rev *review.Reviewer
}

func (c reviewedCatalog) Catalog() core.Catalog {
	all := c.im.Catalog()
	out := core.Catalog{Collisions: all.Collisions}
	for _, p := range all.Prompts {
		if c.rev.AllowsEntry(review.PromptEntry(p)) {
			out.Prompts = append(out.Prompts, p)
		}
	}
	for _, r := range all.Resources {
		if c.rev.AllowsEntry(review.ResourceEntry(r)) {
			out.Resources = append(out.Resources, r)
		}
	}
	for _, t := range all.Templates {
		if c.rev.AllowsEntry(review.ResourceEntry(t)) {
			out.Templates = append(out.Templates, t)
		}
	}
	return out
}

// resourceAllowed decides uri by the entry the importer routes it by: the
// resource listing it, or else the first template matching it.
func (c reviewedCatalog) resourceAllowed(uri string) error {
	all := c.im.Catalog()
	for _, r := range all.Resources {
		if r.URI == uri {
			return c.allowed(review.ResourceEntry(r), core.ErrUnknownResource, uri)
		}
	}
	for _, t := range all.Templates {
		if t.URI == uri || upstreams.TemplateMatches(t.URI, uri) {
			return c.allowed(review.ResourceEntry(t), core.ErrUnknownResource, uri)
		}
	}
	return nil // the importer answers for what it does not know
}

func (c reviewedCatalog) promptAllowed(name string) error {
	for _, p := range c.im.Catalog().Prompts {
		if p.Name == name {
			return c.allowed(review.PromptEntry(p), core.ErrUnknownPrompt, name)
		}
	}
	return nil
}

func (c reviewedCatalog) allowed(e review.Entry, unknown error, key string) error {
	if c.rev.AllowsEntry(e) {
		return nil
	}
	return fmt.Errorf("%w: %q", unknown, key)
}

func (c reviewedCatalog) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	if err := c.resourceAllowed(uri); err != nil {
		return nil, err
	}
	return c.im.ReadResource(ctx, uri)
}

func (c reviewedCatalog) GetPrompt(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	if err := c.promptAllowed(name); err != nil {
		return nil, err
	}
	return c.im.GetPrompt(ctx, name, args)
}

func (c reviewedCatalog) SubscribeResource(ctx context.Context, uri string) error {
	if err := c.resourceAllowed(uri); err != nil {
		return err
	}
	return c.im.SubscribeResource(ctx, uri)
}

func (c reviewedCatalog) UnsubscribeResource(ctx context.Context, uri string) error {
	// Letting go is always allowed: the subscription may predate a
	// rejection.
	return c.im.UnsubscribeResource(ctx, uri)
}

func (c reviewedCatalog) Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	var body struct {
		Ref struct {
			Type string `json:"type"`
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
	}
	if json.Unmarshal(params, &body) == nil {
		var err error
		switch body.Ref.Type {
		case "ref/prompt":
			err = c.promptAllowed(body.Ref.Name)
		case "ref/resource":
			err = c.resourceAllowed(body.Ref.URI)
		}
		if err != nil {
			return nil, err
		}
	}
	return c.im.Complete(ctx, params)
}

var _ core.CatalogRouter = reviewedCatalog{}

// reviewEntries is every prompt and resource the importer lists with its
// review: the console's and `review list`'s rows.
func reviewEntries(rev *review.Reviewer, im *upstreams.Importer, tools []core.ToolInfo) []core.ReviewEntry {
	entries := review.EntriesOf(im.Catalog())
	out := make([]core.ReviewEntry, 0, len(entries))
	for _, e := range entries {
		flags := review.EntryFlags(e.Source, e.Raw, tools)
		if flags == nil {
			flags = []core.Flag{}
		}
		out = append(out, core.ReviewEntry{
			Kind: e.Kind, Ref: e.Ref(), Source: e.Source, Name: e.Name, RemoteName: e.Key,
			Description: e.Description(), State: rev.EntryState(e), Served: rev.AllowsEntry(e), Flags: flags, Raw: e.Raw,
		})
	}
	return out
}
