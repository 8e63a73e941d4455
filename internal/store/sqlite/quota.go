package sqlite

import (
	"context"
	"database/sql"
	"errors"
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

// LeaseQuota implements core.QuotaCounter: one upsert that adds up to n
// below max, the write lock deciding between concurrent leases; the
// update's SET reads the row before it, so granted says what this lease
// added.
func (s *Store) LeaseQuota(ctx context.Context, key string, window time.Time, n, max int64, prune time.Time) (int64, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	if n <= 0 || max <= 0 {
		return 0, nil
	}
	at, _ := unixNano(window)
	var granted int64
	err := s.w.QueryRowContext(ctx, `INSERT INTO quota_counts (key, start, count, granted) VALUES (?1, ?2, MIN(?3, ?4), MIN(?3, ?4))
		ON CONFLICT (key, start) DO UPDATE SET count = MIN(count + ?3, ?4), granted = MIN(count + ?3, ?4) - count
		WHERE count < ?4 RETURNING granted`, key, at, n, max).Scan(&granted)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, s.wrap("lease quota", err)
	}
	if s.quotaTakes.Add(1)%core.PruneEvery == 0 {
		before, _ := unixNano(prune)
		if _, err := s.w.ExecContext(ctx, "DELETE FROM quota_counts WHERE start < ?", before); err != nil {
			return granted, s.wrap("prune quota counts", err)
		}
	}
	return granted, nil
}

// ReturnQuota implements core.QuotaCounter.
func (s *Store) ReturnQuota(ctx context.Context, key string, window time.Time, n int64) error {
	if err := s.usable(); err != nil {
		return err
	}
	if n <= 0 {
		return nil
	}
	at, _ := unixNano(window)
	if _, err := s.w.ExecContext(ctx, `UPDATE quota_counts SET count = MAX(count - ?, 0) WHERE key = ? AND start = ?`, n, key, at); err != nil {
		return s.wrap("return quota", err)
	}
	return nil
}

// QuotaUsage implements core.QuotaCounter: a range of the primary key
// (key, start), keys from prefix up to the next prefix.
func (s *Store) QuotaUsage(ctx context.Context, prefix string, window time.Time, n int) ([]core.QuotaCount, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	at, _ := unixNano(window)
	lo, hi, bounded := core.PrefixRange(prefix)
	q := `SELECT key, count FROM quota_counts WHERE start = ? AND key >= ?`
	args := []any{at, lo}
	if bounded {
		q += ` AND key < ?`
		args = append(args, hi)
	}
	q += ` ORDER BY count DESC, key LIMIT ?`
	rows, err := s.r.QueryContext(ctx, q, append(args, n)...)
	if err != nil {
		return nil, s.wrap("read quota counts", err)
	}
	defer rows.Close()
	var out []core.QuotaCount
	for rows.Next() {
		var c core.QuotaCount
		if err := rows.Scan(&c.Key, &c.Count); err != nil {
			return nil, s.wrap("read quota counts", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("read quota counts", err)
	}
	return out, nil
}

// GiveBackQuota implements core.QuotaCounter.
func (s *Store) GiveBackQuota(ctx context.Context, key string, window time.Time) error {
	if err := s.usable(); err != nil {
		return err
	}
	at, _ := unixNano(window)
	if _, err := s.w.ExecContext(ctx, `UPDATE quota_counts SET count = count - 1 WHERE key = ? AND start = ? AND count > 0`, key, at); err != nil {
		return s.wrap("give back quota", err)
	}
	return nil
}
