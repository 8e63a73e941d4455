package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/discovery"
)

// Discovery turns an endpoint's tool search on (DS-1): tools/list shows
// search_tools and call_tool, plus AlwaysList, instead of every tool.
type Discovery struct {
	// AlwaysList names tools listed beside the meta-tools, for callers
	// that may call them.
	AlwaysList []string
}

// discoverer is an endpoint's search index and what it answers with. One
// index serves every actor: a search filters it by what the caller may
// call directly (listable) as it ranks (DS-2), so nothing is kept per
// actor. The index is rebuilt at the first search after the served tools
// changed, so a burst of changes (an import, a refresh) costs one build.
type discoverer struct {
	always []string // sorted
	// gen counts the changes of the served tools; an index built at an
	// older one is stale.
	gen atomic.Uint64
	cur atomic.Pointer[builtIndex]
	// mu serializes builds: concurrent searches of a stale index wait for
	// one build instead of each making its own.
	mu sync.Mutex
}

// builtIndex is the index of the served tools at gen, with each tool as
// search_tools answers it.
type builtIndex struct {
	gen     uint64
	index   *discovery.Index
	results map[string][]byte
}

func newDiscoverer(d *Discovery) *discoverer {
	if d == nil {
		return nil
	}
	x := &discoverer{always: slices.Clone(d.AlwaysList)}
	slices.Sort(x.always)
	x.always = slices.Compact(x.always)
	x.gen.Store(1)
	return x
}

// changed marks the index stale: the served tools changed (DS-3).
func (x *discoverer) changed() { x.gen.Add(1) }

// index is the index of the served tools as they are now, built if the
// one kept is stale.
func (x *discoverer) index(e *Endpoint) *builtIndex {
	if b := x.cur.Load(); b != nil && b.gen == x.gen.Load() {
		return b
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	gen := x.gen.Load()
	if b := x.cur.Load(); b != nil && b.gen == gen {
		return b
	}
	b := &builtIndex{gen: gen, results: map[string][]byte{}}
	var docs []discovery.Doc
	e.listed.each(func(name string, raw []byte) {
		t, ok := e.opts.Registry.Get(name)
		if !ok {
			return
		}
		res, err := searchEntry(raw)
		if err != nil {
			return
		}
		b.results[name] = res
		docs = append(docs, discovery.DocOf(core.ToolInfo{Name: t.Name, Title: t.Title, Description: t.Description,
			Source: t.Source, RemoteName: t.RemoteName, InputSchema: t.InputSchema}))
	})
	b.index = discovery.Build(docs)
	x.cur.Store(b)
	return b
}

// searchEntry is a tool as search_tools answers it: its listing's name,
// title, description, inputSchema (with the confirm gate's fields for an
// action) and annotations.
func searchEntry(listing []byte) ([]byte, error) {
	var t struct {
		Name        string          `json:"name"`
		Title       string          `json:"title,omitempty"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Annotations json.RawMessage `json:"annotations,omitempty"`
	}
	if err := json.Unmarshal(listing, &t); err != nil {
		return nil, err
	}
	return json.Marshal(t)
}

// eachListed calls f, in name order, with every tool tools/list shows the
// caller: without discovery the served tools listable accepts; with it
// the two meta-tools and the alwaysList tools listable accepts (DS-1).
func (e *Endpoint) eachListed(listable func(string) bool, f func(name string, raw []byte)) {
	if e.disco == nil {
		e.listed.each(func(name string, raw []byte) {
			if listable(name) {
				f(name, raw)
			}
		})
		return
	}
	type entry struct {
		name string
		raw  []byte
	}
	shown := []entry{{discovery.CallToolName, discovery.CallToolJSON}, {discovery.SearchToolName, discovery.SearchToolJSON}}
	for _, n := range e.disco.always {
		if raw, ok := e.listed.get(n); ok && listable(n) {
			shown = append(shown, entry{n, raw})
		}
	}
	slices.SortFunc(shown, func(a, b entry) int { return cmpString(a.name, b.name) })
	for _, s := range shown {
		f(s.name, s.raw)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// get is one tool's listing.
func (l *listedTools) get(name string) ([]byte, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	raw, ok := l.byName[name]
	return raw, ok
}

// discoveryCall is the hook of a tools/call on an endpoint with discovery
// (DS-1, DS-2). search_tools is answered here (done). call_tool is
// unwrapped: the inner name and arguments go on through the one pipeline
// a direct call takes, with via set for the audit, unless the caller may
// not call the inner tool directly, which is answered exactly as an
// unknown tool (done). Any other name is left as it came.
func (e *Endpoint) discoveryCall(ctx context.Context, cs *callStream, tr *inbound, r *Rules, name string, args json.RawMessage) (inner string, innerArgs json.RawMessage, via string, done bool) {
	if e.disco == nil {
		return name, args, "", false
	}
	switch name {
	case discovery.SearchToolName:
		e.serveSearch(ctx, cs, tr, r, args)
		return "", nil, "", true
	case discovery.CallToolName:
	default:
		return name, args, "", false
	}
	inner, innerArgs, err := readCallTool(args)
	if err != nil {
		e.writeToolResult(cs, tr, toolErrorJSON(name, err))
		return "", nil, "", true
	}
	// The listing's test, the policy's "hidden whatever the arguments"
	// included: what search never shows, call_tool never reaches.
	if _, served := e.listed.get(inner); !served || !e.listable(ctx, r, tr.actor, tr.session)(inner) {
		status := http.StatusOK
		if tr.modern != nil {
			status = http.StatusBadRequest
		}
		writeJSON(cs, status, unknownToolAnswer(tr.rawID, inner))
		return "", nil, "", true
	}
	return inner, innerArgs, discovery.CallToolName, false
}

// readCallTool reads call_tool's arguments: a name and an arguments
// object. The confirm gate's fields belong inside arguments, where the
// inner tool's preview asks for them; outside they are refused, not
// ignored, so a confirmation never silently runs nothing.
func readCallTool(args json.RawMessage) (string, json.RawMessage, error) {
	var m map[string]json.RawMessage
	if t := bytes.TrimSpace(args); len(t) > 0 && string(t) != "null" {
		if err := json.Unmarshal(t, &m); err != nil {
			return "", nil, fmt.Errorf("invalid arguments: call_tool takes an object with name and arguments")
		}
	}
	var name string
	if raw, ok := m["name"]; !ok || json.Unmarshal(raw, &name) != nil || name == "" {
		return "", nil, fmt.Errorf("invalid arguments: call_tool needs name, the tool's exact name as search_tools returned it")
	}
	inner := m["arguments"]
	if t := bytes.TrimSpace(inner); len(t) > 0 && string(t) != "null" && t[0] != '{' {
		return "", nil, fmt.Errorf("invalid arguments: call_tool's arguments must be an object")
	}
	for k := range m {
		switch k {
		case "name", "arguments":
		case "confirm", "confirmToken":
			return "", nil, fmt.Errorf("invalid arguments: put %q inside arguments, beside the tool's own arguments", k)
		default:
			return "", nil, fmt.Errorf("invalid arguments: call_tool takes only name and arguments, not %q", k)
		}
	}
	return name, inner, nil
}

// serveSearch answers search_tools (DS-1): the best matches among the
// tools the caller may call directly (DS-2), as structuredContent and as
// the same JSON in a text block.
func (e *Endpoint) serveSearch(ctx context.Context, cs *callStream, tr *inbound, r *Rules, args json.RawMessage) {
	query, limit, err := readSearch(args)
	if err != nil {
		e.writeToolResult(cs, tr, toolErrorJSON(discovery.SearchToolName, err))
		return
	}
	// Read your writes (SV-1, DS-3): a tool registered or refreshed before
	// this request is in the index it searches.
	e.applied.wait(ctx, e.opts.Registry.Bus().Seq())
	b := e.disco.index(e)
	listable := e.listable(ctx, r, tr.actor, tr.session)
	hits := b.index.Search(query, limit, func(name string) bool {
		_, ok := b.results[name]
		return ok && listable(name)
	})
	var list bytes.Buffer
	list.WriteString(`{"tools":[`)
	for i, h := range hits {
		if i > 0 {
			list.WriteByte(',')
		}
		list.Write(b.results[h.Name])
	}
	list.WriteString(`]}`)
	text, _ := json.Marshal(list.String())
	var res bytes.Buffer
	res.WriteString(`{"content":[{"type":"text","text":`)
	res.Write(text)
	res.WriteString(`}],"structuredContent":`)
	res.Write(list.Bytes())
	res.WriteString(`}`)
	e.writeToolResult(cs, tr, res.Bytes())
}

// readSearch reads search_tools' arguments: a query, and a limit from 1
// to discovery.MaxLimit (default discovery.DefaultLimit).
func readSearch(args json.RawMessage) (string, int, error) {
	var m map[string]json.RawMessage
	if t := bytes.TrimSpace(args); len(t) > 0 && string(t) != "null" {
		if err := json.Unmarshal(t, &m); err != nil {
			return "", 0, fmt.Errorf("invalid arguments: search_tools takes an object with query and limit")
		}
	}
	var query string
	if raw, ok := m["query"]; !ok || json.Unmarshal(raw, &query) != nil || len(bytes.TrimSpace([]byte(query))) == 0 {
		return "", 0, fmt.Errorf("invalid arguments: search_tools needs query, what you want to do in plain words")
	}
	limit := discovery.DefaultLimit
	if raw, ok := m["limit"]; ok && string(bytes.TrimSpace(raw)) != "null" {
		var f float64
		if json.Unmarshal(raw, &f) != nil || f != float64(int(f)) || f < 1 || f > discovery.MaxLimit {
			return "", 0, fmt.Errorf("invalid arguments: limit must be a whole number from 1 to %d", discovery.MaxLimit)
		}
		limit = int(f)
	}
	for k := range m {
		if k != "query" && k != "limit" {
			return "", 0, fmt.Errorf("invalid arguments: search_tools takes only query and limit, not %q", k)
		}
	}
	return query, limit, nil
}

// toolErrorJSON is an isError result a model can read (SV-6).
func toolErrorJSON(name string, err error) json.RawMessage {
	raw, _ := json.Marshal(toolError(name, err))
	return raw
}

// writeToolResult answers a tools/call with result, as the request's era
// requires.
func (e *Endpoint) writeToolResult(cs *callStream, tr *inbound, result json.RawMessage) {
	if tr.modern != nil {
		result = e.decorateModern(result)
	}
	writeResult(cs, tr.rawID, result)
}
