package upstreams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/toolgate/toolgate/core"
)

// catalogListing is one upstream's answer; failed keeps the previous one
// (an upstream that could not answer prunes nothing, as for tools).
type catalogListing struct {
	resources, templates []core.CatalogResource
	prompts              []core.CatalogPrompt
	failed               bool
}

// isMethodNotFound: the server does not offer that list at all.
func isMethodNotFound(err error) bool {
	var rpc *core.RPCError
	return errors.As(err, &rpc) && rpc.Code == -32601
}

func stringField(raw json.RawMessage, key string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	var s string
	_ = json.Unmarshal(m[key], &s)
	return s
}

// withField returns raw with one string field replaced, other fields kept
// as sent.
func withField(raw json.RawMessage, key, value string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	v, _ := json.Marshal(value)
	m[key] = v
	return json.Marshal(m)
}

// firstClaims keeps the first claimant of each key and records the rest as
// collisions.
type firstClaims[T any] struct {
	what   string
	owners map[string]string // key → source
}

var templateVar = regexp.MustCompile(`\{[^{}]*\}`)

// TemplateMatches is RFC 6570 matching as far as routing needs it: a
// {var} matches one path segment, {+var}, {#var} and {/var*}-style
// expressions match anything.
func TemplateMatches(tpl, uri string) bool {
	var b strings.Builder
	b.WriteString("^")
	last := 0
	for _, loc := range templateVar.FindAllStringIndex(tpl, -1) {
		b.WriteString(regexp.QuoteMeta(tpl[last:loc[0]]))
		expr := tpl[loc[0]+1 : loc[1]-1]
		if expr != "" && strings.ContainsAny(expr[:1], "+#/?&.;") || strings.HasSuffix(expr, "*") {
			b.WriteString(".*")
		} else {
			b.WriteString("[^/?#]*")
		}
		last = loc[1]
	}
	b.WriteString(regexp.QuoteMeta(tpl[last:]))
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	return err == nil && re.MatchString(uri)
}

func (im *Importer) listCatalog(ctx context.Context, u *upstream) *catalogListing {
	cu, ok := u.spec.Upstream.(core.CatalogUpstream)
	if !ok {
		return nil
	}
	l := &catalogListing{}
	var problems []string
	fetch := func(what string, list func(context.Context) ([]json.RawMessage, error)) []json.RawMessage {
		var items []json.RawMessage
		err := im.do(ctx, u, core.KindRead, func(ctx context.Context) (err error) {
			items, err = list(ctx)
			return err
		})
		if err != nil && !isMethodNotFound(err) {
			problems = append(problems, what+": "+err.Error())
		}
		return items
	}
	for _, raw := range fetch("resources/list", cu.ListResources) {
		if uri := stringField(raw, "uri"); uri != "" {
			l.resources = append(l.resources, core.CatalogResource{URI: uri, Source: u.spec.Name, Raw: raw})
		}
	}
	for _, raw := range fetch("resources/templates/list", cu.ListResourceTemplates) {
		if tpl := stringField(raw, "uriTemplate"); tpl != "" {
			l.templates = append(l.templates, core.CatalogResource{URI: tpl, Source: u.spec.Name, Raw: raw})
		}
	}
	for _, raw := range fetch("prompts/list", cu.ListPrompts) {
		remote := stringField(raw, "name")
		if remote == "" {
			continue
		}
		name := core.ToolName(u.spec.Prefix, remote)
		renamed, err := withField(raw, "name", name)
		if err != nil {
			continue
		}
		l.prompts = append(l.prompts, core.CatalogPrompt{Name: name, Source: u.spec.Name, RemoteName: remote, Raw: renamed})
	}
	if len(problems) > 0 {
		l.failed = true
		im.bus.Publish(core.Warning{Source: u.spec.Name, Message: "listing resources and prompts: " + strings.Join(problems, "; ")})
	}
	return l
}

// applyCatalog stores u's listing and warns about the collisions it is
// refused in (first claimant wins, IM-34).
func (im *Importer) applyCatalog(u *upstream, l *catalogListing) {
	if l != nil && l.failed {
		return
	}
	im.mu.Lock()
	if l == nil {
		u.catalog = catalogListing{}
	} else {
		u.catalog = *l
	}
	im.mu.Unlock()
	for _, c := range im.Catalog().Collisions {
		if c.Refused == u.spec.Name {
			im.bus.Publish(core.Warning{Source: u.spec.Name, Message: fmt.Sprintf("%s %q is served by %s; %s's was refused", c.What, c.Key, c.Kept, c.Refused)})
		}
	}
}

// Catalog aggregates every upstream's resources, templates and prompts in
// configuration order; the first claimant of a URI or name keeps it.
func (im *Importer) Catalog() core.Catalog {
	im.mu.Lock()
	defer im.mu.Unlock()
	var c core.Catalog
	resources := firstClaims[core.CatalogResource]{what: "resource", owners: map[string]string{}}
	templates := firstClaims[core.CatalogResource]{what: "template", owners: map[string]string{}}
	prompts := firstClaims[core.CatalogPrompt]{what: "prompt", owners: map[string]string{}}
	for _, u := range im.ups {
		for _, r := range u.catalog.resources {
			c.Resources = resources.add(&c, r, r.URI, r.Source, c.Resources)
		}
		for _, t := range u.catalog.templates {
			c.Templates = templates.add(&c, t, t.URI, t.Source, c.Templates)
		}
		for _, p := range u.catalog.prompts {
			c.Prompts = prompts.add(&c, p, p.Name, p.Source, c.Prompts)
		}
	}
	return c
}

func (f firstClaims[T]) add(c *core.Catalog, item T, key, source string, kept []T) []T {
	if owner, taken := f.owners[key]; taken {
		c.Collisions = append(c.Collisions, core.CatalogCollision{What: f.what, Key: key, Kept: owner, Refused: source})
		return kept
	}
	f.owners[key] = source
	return append(kept, item)
}

// ReadResource routes resources/read to the upstream that listed the URI,
// or else to the first whose template matches it.
func (im *Importer) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	u, err := im.resourceOwner(im.Catalog(), uri)
	if err != nil {
		return nil, err
	}
	cu := u.spec.Upstream.(core.CatalogUpstream)
	var out json.RawMessage
	err = im.do(ctx, u, core.KindRead, func(ctx context.Context) (err error) {
		out, err = cu.ReadResource(ctx, uri)
		return err
	})
	return out, err
}

// SubscribeResource asks the upstream that owns uri for its updates.
func (im *Importer) SubscribeResource(ctx context.Context, uri string) error {
	return im.routeResource(ctx, uri, func(ctx context.Context, r core.CatalogRouter) error {
		return r.SubscribeResource(ctx, uri)
	})
}

// UnsubscribeResource ends what SubscribeResource started.
func (im *Importer) UnsubscribeResource(ctx context.Context, uri string) error {
	return im.routeResource(ctx, uri, func(ctx context.Context, r core.CatalogRouter) error {
		return r.UnsubscribeResource(ctx, uri)
	})
}

func (im *Importer) routeResource(ctx context.Context, uri string, f func(context.Context, core.CatalogRouter) error) error {
	u, err := im.resourceOwner(im.Catalog(), uri)
	if err != nil {
		return err
	}
	r, ok := u.spec.Upstream.(core.CatalogRouter)
	if !ok {
		return fmt.Errorf("%w: %s", core.ErrNotOffered, u.spec.Name)
	}
	return im.do(ctx, u, core.KindRead, func(ctx context.Context) error { return f(ctx, r) })
}

// Complete routes completion/complete by its ref: a prompt by served name
// (renamed to the upstream's own), a resource by URI or URI template.
func (im *Importer) Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	var body map[string]json.RawMessage
	if err := json.Unmarshal(params, &body); err != nil {
		return nil, fmt.Errorf("completion/complete: invalid params: %w", err)
	}
	var ref struct {
		Type string `json:"type"`
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	if err := json.Unmarshal(body["ref"], &ref); err != nil {
		return nil, fmt.Errorf("completion/complete: invalid ref: %w", err)
	}
	var u *upstream
	c := im.Catalog()
	switch ref.Type {
	case "ref/prompt":
		for _, p := range c.Prompts {
			if p.Name == ref.Name {
				u = im.lookup(p.Source)
				renamed, err := withField(body["ref"], "name", p.RemoteName)
				if err != nil {
					return nil, err
				}
				body["ref"] = renamed
				break
			}
		}
		if u == nil {
			return nil, fmt.Errorf("%w: %q", core.ErrUnknownPrompt, ref.Name)
		}
	case "ref/resource":
		var err error
		if u, err = im.templateOwner(c, ref.URI); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("completion/complete: unknown ref type %q", ref.Type)
	}
	r, ok := u.spec.Upstream.(core.CatalogRouter)
	if !ok {
		return nil, fmt.Errorf("%w: %s", core.ErrNotOffered, u.spec.Name)
	}
	forward, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	var out json.RawMessage
	err = im.do(ctx, u, core.KindRead, func(ctx context.Context) (err error) {
		out, err = r.Complete(ctx, forward)
		return err
	})
	return out, err
}

// templateOwner finds the upstream of a resource template by its template
// text, or of a resource whose URI it is.
func (im *Importer) templateOwner(c core.Catalog, uri string) (*upstream, error) {
	for _, t := range c.Templates {
		if t.URI == uri {
			return im.found(t.Source, uri)
		}
	}
	return im.resourceOwner(c, uri)
}

// resourceOwner is the upstream that listed uri, or else the first whose
// template matches it.
func (im *Importer) resourceOwner(c core.Catalog, uri string) (*upstream, error) {
	source := ""
	for _, r := range c.Resources {
		if r.URI == uri {
			source = r.Source
			break
		}
	}
	if source == "" {
		for _, t := range c.Templates {
			if TemplateMatches(t.URI, uri) {
				source = t.Source
				break
			}
		}
	}
	if source == "" {
		return nil, fmt.Errorf("%w: %q", core.ErrUnknownResource, uri)
	}
	return im.found(source, uri)
}

// GetPrompt routes prompts/get by served name to its upstream's remote name.
func (im *Importer) GetPrompt(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	for _, p := range im.Catalog().Prompts {
		if p.Name != name {
			continue
		}
		u := im.lookup(p.Source)
		if u == nil {
			break // removed by a reload since the catalog was read
		}
		cu := u.spec.Upstream.(core.CatalogUpstream)
		var out json.RawMessage
		err := im.do(ctx, u, core.KindRead, func(ctx context.Context) (err error) {
			out, err = cu.GetPrompt(ctx, p.RemoteName, args)
			return err
		})
		return out, err
	}
	return nil, fmt.Errorf("%w: %q", core.ErrUnknownPrompt, name)
}

// found is the upstream source names for uri, or the unknown-resource
// error when a reload removed it since the catalog was read.
func (im *Importer) found(source, uri string) (*upstream, error) {
	if u := im.lookup(source); u != nil {
		return u, nil
	}
	return nil, fmt.Errorf("%w: %q", core.ErrUnknownResource, uri)
}
