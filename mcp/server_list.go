package mcp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"sync"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// listedTools is every served tool as tools/list shows it, kept as JSON
// from the moment the tool is added: a listing filters and joins bytes
// instead of marshalling every tool for every request (mcp-go's way, which
// made a 2,000-tool listing cost 45–95 ms). The bytes carry the upstream's
// annotations as it wrote them; mcp-go's typed annotations would drop keys
// it has no field for.
type listedTools struct {
	mu     sync.RWMutex
	byName map[string][]byte
	order  []string // sorted names; nil when it must be rebuilt
}

func (l *listedTools) set(name string, raw []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byName == nil {
		l.byName = map[string][]byte{}
	}
	if _, ok := l.byName[name]; !ok {
		l.order = nil
	}
	l.byName[name] = raw
}

func (l *listedTools) remove(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.byName[name]; ok {
		delete(l.byName, name)
		l.order = nil
	}
}

func (l *listedTools) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byName, l.order = map[string][]byte{}, nil
}

// each calls f for every tool in name order, as mcp-go lists them.
func (l *listedTools) each(f func(name string, raw []byte)) {
	l.mu.RLock()
	order := l.order
	l.mu.RUnlock()
	if order == nil {
		l.mu.Lock()
		if l.order == nil {
			l.order = make([]string, 0, len(l.byName))
			for n := range l.byName {
				l.order = append(l.order, n)
			}
			slices.Sort(l.order)
		}
		order = l.order
		l.mu.Unlock()
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, n := range order {
		if raw, ok := l.byName[n]; ok {
			f(n, raw)
		}
	}
}

// listingJSON is one tool's tools/list entry, with the members mcp-go
// writes, in the order it writes them.
func listingJSON(tool mcpgo.Tool, annotations json.RawMessage) ([]byte, error) {
	if len(annotations) == 0 {
		annotations = json.RawMessage(`{}`)
	}
	entry := struct {
		Meta         *mcpgo.Meta     `json:"_meta,omitempty"`
		Annotations  json.RawMessage `json:"annotations"`
		Description  string          `json:"description,omitempty"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		Name         string          `json:"name"`
		OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	}{tool.Meta, annotations, tool.Description, tool.RawInputSchema, tool.Name, tool.RawOutputSchema}
	return json.Marshal(entry)
}

// serveList answers a tools/list without a cursor on a live initialized
// session from the kept JSON, filtered for the actor exactly as mcp-go's
// listing is (filterTools). Anything else is left to mcp-go.
func (e *Endpoint) serveList(w *callStream, r *http.Request, body []byte, session string) bool {
	req, ok := e.ownRequest(r, body, session, mcpgo.MethodToolsList)
	if !ok {
		return false
	}
	var params struct {
		Cursor *string `json:"cursor"`
	}
	if json.Unmarshal(req.params, &params) != nil || params.Cursor != nil {
		return false
	}
	actor := req.actor
	var buf bytes.Buffer
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(req.rawID)
	buf.WriteString(`,"result":{"tools":[`)
	first := true
	e.listed.each(func(name string, raw []byte) {
		if e.opts.Registry.Allowed(r.Context(), actor, e.opts.Tools, name) != nil {
			return
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		buf.Write(raw)
	})
	buf.WriteString("]}}\n")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
	return true
}
