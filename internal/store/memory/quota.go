package memory

import (
	"context"
	"strings"
	"time"

	"github.com/toolgate/toolgate/core"
)

var _ core.QuotaCounter = (*MemStore)(nil)

type quotaKey struct {
	key    string
	window int64
}

// TakeQuota implements core.QuotaCounter.
func (m *MemStore) TakeQuota(ctx context.Context, key string, window time.Time, max int64, prune time.Time) (bool, error) {
	if err := m.lock(); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	if m.quotas == nil {
		m.quotas = map[quotaKey]int64{}
	}
	k := quotaKey{key, window.UnixNano()}
	if m.quotas[k] >= max {
		return false, nil
	}
	if _, ok := m.quotas[k]; !ok {
		for old := range m.quotas {
			if old.window < prune.UnixNano() {
				delete(m.quotas, old)
			}
		}
	}
	m.quotas[k]++
	return true, nil
}

// LeaseQuota implements core.QuotaCounter.
func (m *MemStore) LeaseQuota(ctx context.Context, key string, window time.Time, n, max int64, prune time.Time) (int64, error) {
	if err := m.lock(); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	if m.quotas == nil {
		m.quotas = map[quotaKey]int64{}
	}
	k := quotaKey{key, window.UnixNano()}
	c, ok := m.quotas[k]
	if n <= 0 || c >= max {
		return 0, nil
	}
	if !ok {
		for old := range m.quotas {
			if old.window < prune.UnixNano() {
				delete(m.quotas, old)
			}
		}
	}
	granted := min(n, max-c)
	m.quotas[k] = c + granted
	return granted, nil
}

// ReturnQuota implements core.QuotaCounter.
func (m *MemStore) ReturnQuota(ctx context.Context, key string, window time.Time, n int64) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if k := (quotaKey{key, window.UnixNano()}); m.quotas[k] > 0 && n > 0 {
		m.quotas[k] = max(0, m.quotas[k]-n)
	}
	return nil
}

// QuotaUsage implements core.QuotaCounter.
func (m *MemStore) QuotaUsage(ctx context.Context, prefix string, window time.Time, n int) ([]core.QuotaCount, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []core.QuotaCount
	w := window.UnixNano()
	for k, c := range m.quotas {
		if k.window == w && strings.HasPrefix(k.key, prefix) {
			out = append(out, core.QuotaCount{Key: k.key, Count: c})
		}
	}
	core.SortQuotaCounts(out)
	if len(out) > n {
		out = out[:max(n, 0)]
	}
	return out, nil
}

// GiveBackQuota implements core.QuotaCounter.
func (m *MemStore) GiveBackQuota(ctx context.Context, key string, window time.Time) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if k := (quotaKey{key, window.UnixNano()}); m.quotas[k] > 0 {
		m.quotas[k]--
	}
	return nil
}
