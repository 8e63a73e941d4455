package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/toolgate/toolgate/core"
)

var _ core.ConnectionStore = (*MemStore)(nil)

// PutConnection implements core.ConnectionStore.
func (m *MemStore) PutConnection(ctx context.Context, c core.Connection) (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	if err := m.lock(); err != nil {
		return "", err
	}
	defer m.mu.Unlock()
	if m.conns == nil {
		m.conns = map[string]core.Connection{}
	}
	replaced := ""
	for id, old := range m.conns {
		if old.Upstream == c.Upstream && old.ActorID == c.ActorID {
			replaced = id
			delete(m.conns, id)
		}
	}
	c.Version = 1
	m.conns[c.ID] = clone(c)
	return replaced, nil
}

func clone(c core.Connection) core.Connection {
	c.Scopes = slices.Clone(c.Scopes)
	c.Sealed = slices.Clone(c.Sealed)
	return c
}

// UpdateConnection implements core.ConnectionStore.
func (m *MemStore) UpdateConnection(ctx context.Context, c core.Connection, version int64) (bool, error) {
	if err := c.Validate(); err != nil {
		return false, err
	}
	if err := m.lock(); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	old, ok := m.conns[c.ID]
	if !ok || old.Version != version {
		return false, nil
	}
	c.Upstream, c.ActorID, c.CreatedAt = old.Upstream, old.ActorID, old.CreatedAt
	c.Version = version + 1
	m.conns[c.ID] = clone(c)
	return true, nil
}

// ConnectionFor implements core.ConnectionStore.
func (m *MemStore) ConnectionFor(ctx context.Context, upstream, actor string) (core.Connection, error) {
	if err := m.lock(); err != nil {
		return core.Connection{}, err
	}
	defer m.mu.Unlock()
	for _, c := range m.conns {
		if c.Upstream == upstream && c.ActorID == actor {
			return clone(c), nil
		}
	}
	return core.Connection{}, fmt.Errorf("%s for %s: %w", upstream, core.ActorLabel(actor), core.ErrNoConnection)
}

// ConnectionByID implements core.ConnectionStore.
func (m *MemStore) ConnectionByID(ctx context.Context, id string) (core.Connection, error) {
	if err := m.lock(); err != nil {
		return core.Connection{}, err
	}
	defer m.mu.Unlock()
	c, ok := m.conns[id]
	if !ok {
		return core.Connection{}, fmt.Errorf("%q: %w", id, core.ErrNoConnection)
	}
	return clone(c), nil
}

// Connections implements core.ConnectionStore.
func (m *MemStore) Connections(ctx context.Context) ([]core.Connection, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := make([]core.Connection, 0, len(m.conns))
	for _, c := range m.conns {
		out = append(out, clone(c))
	}
	slices.SortFunc(out, func(a, b core.Connection) int {
		return cmp.Or(cmp.Compare(a.Upstream, b.Upstream), cmp.Compare(a.ActorID, b.ActorID))
	})
	return out, nil
}

// DeleteConnection implements core.ConnectionStore.
func (m *MemStore) DeleteConnection(ctx context.Context, id string) (bool, error) {
	if err := m.lock(); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	_, ok := m.conns[id]
	delete(m.conns, id)
	return ok, nil
}

// TouchConnection implements core.ConnectionStore.
func (m *MemStore) TouchConnection(ctx context.Context, id string, at time.Time) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if c, ok := m.conns[id]; ok {
		c.LastUsed = at
		m.conns[id] = c
	}
	return nil
}

// TokenSpent reports whether UseToken recorded tokenID, without recording
// it (UI-2).
func (m *MemStore) TokenSpent(ctx context.Context, tokenID string) (bool, error) {
	if err := m.lock(); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	_, spent := m.tokens[tokenID]
	return spent, nil
}
