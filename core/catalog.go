package core

import (
	"context"
	"encoding/json"
	"errors"
)

// CatalogUpstream is implemented by upstreams that can pass on resources
// and prompts (IM-34). Entries are kept raw so every field the server sent
// reaches the client.
type CatalogUpstream interface {
	ListResources(ctx context.Context) ([]json.RawMessage, error)
	ListResourceTemplates(ctx context.Context) ([]json.RawMessage, error)
	// ReadResource returns the raw resources/read result.
	ReadResource(ctx context.Context, uri string) (json.RawMessage, error)
	ListPrompts(ctx context.Context) ([]json.RawMessage, error)
	// GetPrompt returns the raw prompts/get result.
	GetPrompt(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
}

// CatalogRouter is implemented by upstreams that also take resource
// subscriptions and completion requests (IM-34); each is sent to the
// upstream that owns the resource or prompt.
type CatalogRouter interface {
	SubscribeResource(ctx context.Context, uri string) error
	UnsubscribeResource(ctx context.Context, uri string) error
	// Complete sends completion/complete with params as given and returns
	// the raw result.
	Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
}

// ErrNotOffered: the owning upstream cannot take this kind of request.
var ErrNotOffered = errors.New("not offered by the upstream")

// ErrUnknownResource: no upstream listed the URI or a template matching it.
var ErrUnknownResource = errors.New("unknown resource")

// ErrUnknownPrompt: no upstream offers a prompt of that name.
var ErrUnknownPrompt = errors.New("unknown prompt")

// CatalogResource is one resource (or resource template) as served, routed
// to the upstream that listed it. URIs are served unchanged.
type CatalogResource struct {
	URI    string          `json:"uri"` // the URI, or the URI template
	Source string          `json:"source"`
	Raw    json.RawMessage `json:"raw"`
}

// CatalogPrompt is one prompt as served: prefixed like a tool (IM-34).
type CatalogPrompt struct {
	Name       string          `json:"name"`
	Source     string          `json:"source"`
	RemoteName string          `json:"remoteName"`
	Raw        json.RawMessage `json:"raw"` // the upstream's entry with "name" replaced
}

// Catalog is everything resource- and prompt-shaped the gateway serves.
type Catalog struct {
	Resources  []CatalogResource
	Templates  []CatalogResource
	Prompts    []CatalogPrompt
	Collisions []CatalogCollision
}

// CatalogCollision: a resource URI, template or prompt name claimed by two
// upstreams; the first in configuration order keeps it.
type CatalogCollision struct {
	What    string `json:"what"` // resource, template, prompt
	Key     string `json:"key"`
	Kept    string `json:"kept"`
	Refused string `json:"refused"`
}
