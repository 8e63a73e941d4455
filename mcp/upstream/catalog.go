package upstream

import (
	"context"
	"encoding/json"
	"fmt"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
)

var _ core.CatalogUpstream = (*base)(nil)

// Resources and prompts are passed on as the server sent them (IM-34): list
// entries are kept raw, and read/get results are returned untouched.

func (b *base) ListResources(ctx context.Context) ([]json.RawMessage, error) {
	return b.listRaw(ctx, "resources/list", "resources")
}

func (b *base) ListResourceTemplates(ctx context.Context) ([]json.RawMessage, error) {
	return b.listRaw(ctx, "resources/templates/list", "resourceTemplates")
}

func (b *base) ListPrompts(ctx context.Context) ([]json.RawMessage, error) {
	return b.listRaw(ctx, "prompts/list", "prompts")
}

func (b *base) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	return b.requestRaw(ctx, "resources/read", map[string]string{"uri": uri})
}

func (b *base) GetPrompt(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	params := struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
	}{name, args}
	return b.requestRaw(ctx, "prompts/get", params)
}

func (b *base) requestRaw(ctx context.Context, method string, params any) (json.RawMessage, error) {
	s, err := b.current()
	if err != nil {
		return nil, err
	}
	raw, err := s.request(ctx, method, params)
	if err != nil {
		return nil, b.scrub(fmt.Errorf("%s: %w", method, err))
	}
	return raw, nil
}

// listRaw follows nextCursor through every page of a list method and
// returns the entries under key, each as sent.
func (b *base) listRaw(ctx context.Context, method, key string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	seen := map[string]bool{}
	cursor := ""
	for page := 0; page < maxListPages; page++ {
		var params any
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		raw, err := b.requestRaw(ctx, method, params)
		if err != nil {
			return nil, err
		}
		var body map[string]json.RawMessage
		if err := json.Unmarshal(raw, &body); err != nil {
			return nil, fmt.Errorf("%s: invalid result: %w", method, err)
		}
		var items []json.RawMessage
		if len(body[key]) > 0 {
			if err := json.Unmarshal(body[key], &items); err != nil {
				return nil, fmt.Errorf("%s: invalid %s: %w", method, key, err)
			}
		}
		out = append(out, items...)
		var next string
		_ = json.Unmarshal(body["nextCursor"], &next)
		if next == "" {
			return out, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("%s: cursor %q repeated", method, next)
		}
		seen[next] = true
		cursor = next
	}
	return nil, fmt.Errorf("%s: more than %d pages", method, maxListPages)
}

var _ core.CatalogRouter = (*base)(nil)

func (b *base) SubscribeResource(ctx context.Context, uri string) error {
	if s, err := b.current(); err == nil && s.modern != nil {
		return b.followResources(ctx, s, uri, true)
	}
	_, err := b.requestRaw(ctx, string(mcpgo.MethodResourcesSubscribe), map[string]string{"uri": uri})
	return err
}

func (b *base) UnsubscribeResource(ctx context.Context, uri string) error {
	if s, err := b.current(); err == nil && s.modern != nil {
		return b.followResources(ctx, s, uri, false)
	}
	_, err := b.requestRaw(ctx, string(mcpgo.MethodResourcesUnsubscribe), map[string]string{"uri": uri})
	return err
}

func (b *base) Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	return b.requestRaw(ctx, string(mcpgo.MethodCompletionComplete), params)
}
