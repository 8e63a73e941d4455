package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
)

// Catalog is what an endpoint needs to pass upstreams' resources and
// prompts on (IM-34); *core.Importer implements it.
type Catalog interface {
	Catalog() core.Catalog
	ReadResource(ctx context.Context, uri string) (json.RawMessage, error)
	GetPrompt(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
}

// syncCatalog makes the served resources, templates and prompts equal to
// the aggregated catalog. Reads and gets are routed to the owning upstream
// at call time, so a refresh never leaves a stale handler behind.
func (e *Endpoint) syncCatalog() {
	if e.opts.Catalog == nil {
		return
	}
	c := e.opts.Catalog.Catalog()
	var resources []server.ServerResource
	for _, r := range c.Resources {
		var res mcpgo.Resource
		if json.Unmarshal(r.Raw, &res) != nil {
			continue
		}
		resources = append(resources, server.ServerResource{Resource: res, Handler: e.readResource})
	}
	var templates []server.ServerResourceTemplate
	for _, t := range c.Templates {
		var tpl mcpgo.ResourceTemplate
		if json.Unmarshal(t.Raw, &tpl) != nil || tpl.URITemplate == nil {
			continue
		}
		templates = append(templates, server.ServerResourceTemplate{Template: tpl, Handler: e.readResource})
	}
	var prompts []server.ServerPrompt
	for _, p := range c.Prompts {
		var pr mcpgo.Prompt
		if json.Unmarshal(p.Raw, &pr) != nil {
			continue
		}
		prompts = append(prompts, server.ServerPrompt{Prompt: pr, Handler: e.getPrompt})
	}
	e.mcp.SetResources(resources...)
	e.mcp.SetResourceTemplates(templates...)
	e.mcp.SetPrompts(prompts...)
}

func (e *Endpoint) readResource(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
	raw, err := e.opts.Catalog.ReadResource(ctx, req.Params.URI)
	if err != nil {
		return nil, err
	}
	var body struct {
		Contents []map[string]any `json:"contents"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, fmt.Errorf("resources/read %s: invalid result: %w", req.Params.URI, err)
	}
	out := make([]mcpgo.ResourceContents, 0, len(body.Contents))
	for _, c := range body.Contents {
		rc, err := mcpgo.ParseResourceContents(c)
		if err != nil {
			return nil, fmt.Errorf("resources/read %s: %w", req.Params.URI, err)
		}
		out = append(out, rc)
	}
	return out, nil
}

func (e *Endpoint) getPrompt(ctx context.Context, req mcpgo.GetPromptRequest) (*mcpgo.GetPromptResult, error) {
	var args json.RawMessage
	if len(req.Params.Arguments) > 0 {
		args, _ = json.Marshal(req.Params.Arguments)
	}
	raw, err := e.opts.Catalog.GetPrompt(ctx, req.Params.Name, args)
	if err != nil {
		return nil, err
	}
	return mcpgo.ParseGetPromptResult(&raw)
}
