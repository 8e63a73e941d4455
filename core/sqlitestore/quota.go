package sqlitestore

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/core"
)

var _ core.QuotaCounter = (*Store)(nil)

// TakeQuota implements core.QuotaCounter: one upsert that counts only
// below max, so the write lock decides between concurrent takes.
func (s *Store) TakeQuota(ctx context.Context, key string, window time.Time, max int64, prune time.Time) (taken bool, err error) {
	if err := s.usable(); err != nil {
		return false, err
	}
	at, _ := unixNano(window)
	res, err := s.w.ExecContext(ctx, `INSERT INTO quota_counts (key, start, count) VALUES (?, ?, 1)
		ON CONFLICT (key, start) DO UPDATE SET count = count + 1 WHERE count < ?`, key, at, max)
	if err != nil {
		return false, s.wrap("count quota", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, s.wrap("count quota", err)
	}
	if n == 1 && s.quotaTakes.Add(1)%core.PruneEvery == 0 {
		before, _ := unixNano(prune)
		if _, err := s.w.ExecContext(ctx, "DELETE FROM quota_counts WHERE start < ?", before); err != nil {
			return true, s.wrap("prune quota counts", err)
		}
	}
	return n == 1, nil
}
