package serve

import (
	"slices"
	"sync"
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

// replace makes the listing exactly byName, in one step.
func (l *listedTools) replace(byName map[string][]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byName, l.order = byName, nil
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
