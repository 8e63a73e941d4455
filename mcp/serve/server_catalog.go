package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp/session"
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
// at call time, so a refresh never leaves a stale handler behind. It runs
// under the session table's Tell, counting what it sets in c.
func (e *Endpoint) syncCatalog(c *session.Changes) {
	if e.opts.Catalog == nil {
		return
	}
	cat := e.opts.Catalog.Catalog()
	// The first sync sets everything: setting is also what declares the
	// capabilities.
	first := !e.shown.set
	e.shown.set = true
	// Only what changed is set again: each set notifies every session, and
	// a refresh that changed no resource or prompt is no news (IM-25).
	resourceRaw := func(r core.CatalogResource) json.RawMessage { return r.Raw }
	setChanged(first, cat.Resources, resourceRaw, &e.shown.resources, func(items []core.CatalogResource) {
		var resources []server.ServerResource
		for _, r := range items {
			var res mcpgo.Resource
			if json.Unmarshal(r.Raw, &res) == nil {
				resources = append(resources, server.ServerResource{Resource: res, Handler: e.readResource})
			}
		}
		c.Resources++
		e.mcp.SetResources(resources...)
	})
	setChanged(first, cat.Templates, resourceRaw, &e.shown.templates, func(items []core.CatalogResource) {
		var templates []server.ServerResourceTemplate
		for _, t := range items {
			var tpl mcpgo.ResourceTemplate
			if json.Unmarshal(t.Raw, &tpl) == nil && tpl.URITemplate != nil {
				templates = append(templates, server.ServerResourceTemplate{Template: tpl, Handler: e.readResource})
			}
		}
		c.Resources++
		e.mcp.SetResourceTemplates(templates...)
	})
	setChanged(first, cat.Prompts, func(p core.CatalogPrompt) json.RawMessage { return p.Raw }, &e.shown.prompts, func(items []core.CatalogPrompt) {
		var prompts []server.ServerPrompt
		for _, p := range items {
			var pr mcpgo.Prompt
			if json.Unmarshal(p.Raw, &pr) == nil {
				prompts = append(prompts, server.ServerPrompt{Prompt: pr, Handler: e.getPrompt})
			}
		}
		c.Prompts++
		e.mcp.SetPrompts(prompts...)
	})
}

// setChanged calls set with items when their raw JSON differs from what
// shown holds (or always, the first time), and records them as shown.
func setChanged[T any](first bool, items []T, raw func(T) json.RawMessage, shown *[]string, set func([]T)) {
	raws := make([]string, len(items))
	for i, it := range items {
		raws[i] = string(raw(it))
	}
	if !first && slices.Equal(raws, *shown) {
		return
	}
	*shown = raws
	set(items)
}

// shownCatalog is the catalog as the endpoint last set it, as raw JSON per
// item; only follow touches it.
type shownCatalog struct {
	resources, templates, prompts []string
	set                           bool
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

// CatalogRouter is what an endpoint needs to pass resource subscriptions and
// completion requests on; *core.Importer implements it.
type CatalogRouter interface {
	SubscribeResource(ctx context.Context, uri string) error
	UnsubscribeResource(ctx context.Context, uri string) error
	Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
}

// subscribe records a session's resources/subscribe and asks the owning
// upstream when it is the gateway's first subscriber to the URI. mcp-go
// acknowledges the request itself, so an upstream that refuses is logged
// and the subscription kept: updates will simply not come.
func (e *Endpoint) subscribe(ctx context.Context, _ any, req *mcpgo.SubscribeRequest) {
	s := server.ClientSessionFromContext(ctx)
	if s == nil || req.Params.URI == "" {
		return
	}
	// Updates are pushed to it at any time: it is never parked.
	e.ids.Pin(s.SessionID())
	var live func() bool
	if _, own := s.(*legacySession); own {
		// A request admitted before its session's end may be handled after
		// it: a session that ended is not subscribed (the table's lock
		// inside h.mu).
		live = func() bool { return e.ids.Lookup(s.SessionID()).Phase.Serves() }
	}
	if e.opts.Hub.subscribe(req.Params.URI, subscriber{e, s.SessionID()}, live) {
		if err := e.router.SubscribeResource(ctx, req.Params.URI); err != nil {
			e.opts.Logger.Warn("resources/subscribe not passed on", "uri", req.Params.URI, "err", err)
		}
	}
}

func (e *Endpoint) unsubscribe(ctx context.Context, _ any, req *mcpgo.UnsubscribeRequest) {
	s := server.ClientSessionFromContext(ctx)
	if s == nil || req.Params.URI == "" {
		return
	}
	if e.opts.Hub.unsubscribe(req.Params.URI, subscriber{e, s.SessionID()}) {
		e.upstreamUnsubscribe(ctx, req.Params.URI)
	}
}

// releaseSubscriptions lets go of an ended session's subscriptions.
func (e *Endpoint) releaseSubscriptions(session string) {
	if e.opts.Hub == nil {
		return
	}
	for _, uri := range e.opts.Hub.sessionEnded(e, session) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		e.upstreamUnsubscribe(ctx, uri)
		cancel()
	}
}

func (e *Endpoint) upstreamUnsubscribe(ctx context.Context, uri string) {
	if err := e.router.UnsubscribeResource(ctx, uri); err != nil {
		e.opts.Logger.Debug("resources/unsubscribe not passed on", "uri", uri, "err", err)
	}
}

// completer routes completion/complete to the upstream owning the prompt or
// resource template.
type completer struct{ e *Endpoint }

func (c completer) CompletePromptArgument(ctx context.Context, name string, arg mcpgo.CompleteArgument, cc mcpgo.CompleteContext) (*mcpgo.Completion, error) {
	return c.complete(ctx, map[string]string{"type": "ref/prompt", "name": name}, arg, cc)
}

func (c completer) CompleteResourceArgument(ctx context.Context, uri string, arg mcpgo.CompleteArgument, cc mcpgo.CompleteContext) (*mcpgo.Completion, error) {
	return c.complete(ctx, map[string]string{"type": "ref/resource", "uri": uri}, arg, cc)
}

func (c completer) complete(ctx context.Context, ref map[string]string, arg mcpgo.CompleteArgument, cc mcpgo.CompleteContext) (*mcpgo.Completion, error) {
	params, err := json.Marshal(map[string]any{"ref": ref, "argument": arg, "context": cc})
	if err != nil {
		return nil, err
	}
	raw, err := c.e.router.Complete(ctx, params)
	if err != nil {
		return nil, err
	}
	var res struct {
		Completion mcpgo.Completion `json:"completion"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("completion/complete: invalid result: %w", err)
	}
	return &res.Completion, nil
}

// logLevels is what each session asked for with logging/setLevel.
type logLevels struct {
	mu sync.Mutex
	m  map[string]mcpgo.LoggingLevel
}

func (l *logLevels) set(session string, level mcpgo.LoggingLevel) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]mcpgo.LoggingLevel{}
	}
	l.m[session] = level
}

func (l *logLevels) forget(session string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, session)
}

func (l *logLevels) getter(session string) func() (mcpgo.LoggingLevel, bool) {
	return func() (mcpgo.LoggingLevel, bool) {
		l.mu.Lock()
		defer l.mu.Unlock()
		level, ok := l.m[session]
		return level, ok
	}
}
