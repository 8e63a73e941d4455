package memory

import (
	"context"
	"slices"
	"time"

	"github.com/toolgate/toolgate/core"
)

var _ core.FlowLabels = (*MemStore)(nil)

type memFlow struct {
	labels []string
	until  time.Time
}

// AddFlowLabels implements core.FlowLabels.
func (m *MemStore) AddFlowLabels(ctx context.Context, key string, labels []string, now, until time.Time) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if m.flows == nil {
		m.flows = map[string]memFlow{}
	}
	if m.flowAdds++; m.flowAdds%core.PruneEvery == 0 {
		for k, f := range m.flows {
			if f.until.Before(now) {
				delete(m.flows, k)
			}
		}
	}
	f, ok := m.flows[key]
	if !ok || f.until.Before(now) {
		f = memFlow{until: until}
	}
	f.labels = append(slices.Clone(f.labels), labels...)
	slices.Sort(f.labels)
	f.labels = slices.Compact(f.labels)
	if until.After(f.until) {
		f.until = until
	}
	m.flows[key] = f
	return nil
}

// FlowLabels implements core.FlowLabels.
func (m *MemStore) FlowLabels(ctx context.Context, key string, now time.Time) ([]string, time.Time, error) {
	if err := m.lock(); err != nil {
		return nil, time.Time{}, err
	}
	defer m.mu.Unlock()
	f, ok := m.flows[key]
	if !ok || f.until.Before(now) {
		return nil, time.Time{}, nil
	}
	return slices.Clone(f.labels), f.until, nil
}
