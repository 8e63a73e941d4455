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

func (l *listedTools) get(name string) ([]byte, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	raw, ok := l.byName[name]
	return raw, ok
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
	listable := e.listable(r.Context(), req.actor, e.ids.session(session))
	var buf bytes.Buffer
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(req.rawID)
	buf.WriteString(`,"result":{"tools":[`)
	first := true
	e.listed.each(func(name string, raw []byte) {
		if !listable(name) {
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

// listingRewrite makes a tools/list answer mcp-go wrote (stateless
// endpoints, the sessionless revision, pages after the first) carry each
// tool as the kept JSON does, so every session mode lists the same bytes:
// mcp-go's types add an empty annotations object and drop members they
// have no field for (IM-17). mcp-go's filtering, paging and decoration of
// the result stand; an answer that is not a listing is left alone.
func (e *Endpoint) listingRewrite(_ http.Header, answer []byte) []byte {
	out, ok := rewriteMembers(answer, func(key string, val json.RawMessage) json.RawMessage {
		if key != "result" {
			return val
		}
		res, ok := rewriteMembers(val, func(key string, val json.RawMessage) json.RawMessage {
			if key != "tools" {
				return val
			}
			var tools []json.RawMessage
			if json.Unmarshal(val, &tools) != nil {
				return val
			}
			for i, t := range tools {
				var named struct {
					Name string `json:"name"`
				}
				if json.Unmarshal(t, &named) == nil {
					if raw, ok := e.listed.get(named.Name); ok {
						tools[i] = raw
					}
				}
			}
			joined := []byte{'['}
			for i, t := range tools {
				if i > 0 {
					joined = append(joined, ',')
				}
				joined = append(joined, t...)
			}
			return append(joined, ']')
		})
		if !ok {
			return val
		}
		return res
	})
	if !ok {
		return answer
	}
	return append(out, '\n')
}

// rewriteMembers rebuilds the JSON object raw with each member's value
// passed through f, members in their order and their bytes otherwise kept.
// ok is false when raw is not an object.
func rewriteMembers(raw []byte, f func(key string, val json.RawMessage) json.RawMessage) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return nil, false
		}
		var val json.RawMessage
		if dec.Decode(&val) != nil {
			return nil, false
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(f(key, val))
	}
	b.WriteByte('}')
	return b.Bytes(), true
}
