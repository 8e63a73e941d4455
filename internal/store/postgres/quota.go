package postgres

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/core"
)

var _ core.QuotaCounter = (*Store)(nil)

func quotaUsageQuery(schema string, bounded bool) string {
	q := `SELECT key, count FROM ` + pgx.Identifier{schema}.Sanitize() + `.quota_counts WHERE start = $1 AND key COLLATE "C" >= $2`
	if bounded {
		return q + ` AND key COLLATE "C" < $3 ORDER BY count DESC, key COLLATE "C" LIMIT $4`
	}
	return q + ` ORDER BY count DESC, key COLLATE "C" LIMIT $3`
}

func quotaQueries(schema string) (take, prune string) {
	ident := pgx.Identifier{schema}.Sanitize()
	q := func(s string) string { return strings.ReplaceAll(s, "{s}", ident) }
	return q(`INSERT INTO {s}.quota_counts AS q (key, start, count) VALUES ($1, $2, 1)
			ON CONFLICT (key, start) DO UPDATE SET count = q.count + 1 WHERE q.count < $3`),
		q(`DELETE FROM {s}.quota_counts WHERE start < $1`)
}

// TakeQuota implements core.QuotaCounter: one upsert that counts only
// below max, so the row lock decides between replicas taking the last
// unit. Not retried: the statement may have committed before its answer
// was lost, and a count taken twice only refuses a call early.
func (s *Store) TakeQuota(ctx context.Context, key string, window time.Time, max int64, prune time.Time) (bool, error) {
	if err := s.usable(); err != nil {
		return false, err
	}
	take, pruneSQL := quotaQueries(s.d.schema)
	at, _ := unixNano(window)
	tag, err := s.pool.Exec(ctx, take, key, at, max)
	if err != nil {
		return false, s.wrap(ctx, "count quota", err)
	}
	taken := tag.RowsAffected() == 1
	if taken && s.quotaTakes.Add(1)%core.PruneEvery == 0 {
		before, _ := unixNano(prune)
		if _, err := s.pool.Exec(ctx, pruneSQL, before); err != nil {
			return true, s.wrap(ctx, "prune quota counts", err)
		}
	}
	return taken, nil
}

// LeaseQuota implements core.QuotaCounter: one upsert that adds up to n
// below max, the row lock deciding between replicas; the update's SET
// reads the row before it, so granted says what this lease added. Not
// retried, as TakeQuota.
func (s *Store) LeaseQuota(ctx context.Context, key string, window time.Time, n, max int64, prune time.Time) (int64, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	if n <= 0 || max <= 0 {
		return 0, nil
	}
	ident := pgx.Identifier{s.d.schema}.Sanitize()
	at, _ := unixNano(window)
	var granted int64
	err := s.pool.QueryRow(ctx, `INSERT INTO `+ident+`.quota_counts AS q (key, start, count, granted) VALUES ($1, $2, LEAST($3::bigint, $4::bigint), LEAST($3::bigint, $4::bigint))
		ON CONFLICT (key, start) DO UPDATE SET count = LEAST(q.count + $3::bigint, $4::bigint), granted = LEAST(q.count + $3::bigint, $4::bigint) - q.count
		WHERE q.count < $4::bigint RETURNING granted`, key, at, n, max).Scan(&granted)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, s.wrap(ctx, "lease quota", err)
	}
	if s.quotaTakes.Add(1)%core.PruneEvery == 0 {
		before, _ := unixNano(prune)
		if _, err := s.pool.Exec(ctx, `DELETE FROM `+ident+`.quota_counts WHERE start < $1`, before); err != nil {
			return granted, s.wrap(ctx, "prune quota counts", err)
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
	q := `UPDATE ` + pgx.Identifier{s.d.schema}.Sanitize() + `.quota_counts SET count = GREATEST(count - $3::bigint, 0) WHERE key = $1 AND start = $2`
	if _, err := s.pool.Exec(ctx, q, key, at, n); err != nil {
		return s.wrap(ctx, "return quota", err)
	}
	return nil
}

// QuotaUsage implements core.QuotaCounter: the window's rows (by the
// index on start), keys compared bytewise (COLLATE "C") as the range is
// computed, whatever the database's collation.
func (s *Store) QuotaUsage(ctx context.Context, prefix string, window time.Time, n int) ([]core.QuotaCount, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	at, _ := unixNano(window)
	lo, hi, bounded := core.PrefixRange(prefix)
	args := []any{at, lo}
	if bounded {
		args = append(args, hi)
	}
	rows, err := s.pool.Query(ctx, quotaUsageQuery(s.d.schema, bounded), append(args, n)...)
	if err != nil {
		return nil, s.wrap(ctx, "read quota counts", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (core.QuotaCount, error) {
		var c core.QuotaCount
		err := r.Scan(&c.Key, &c.Count)
		return c, err
	})
	if err != nil {
		return nil, s.wrap(ctx, "read quota counts", err)
	}
	return out, nil
}

// GiveBackQuota implements core.QuotaCounter. Not retried, as TakeQuota:
// a give-back lost counts a call that did not run, never the reverse.
func (s *Store) GiveBackQuota(ctx context.Context, key string, window time.Time) error {
	if err := s.usable(); err != nil {
		return err
	}
	at, _ := unixNano(window)
	q := `UPDATE ` + pgx.Identifier{s.d.schema}.Sanitize() + `.quota_counts SET count = count - 1 WHERE key = $1 AND start = $2 AND count > 0`
	if _, err := s.pool.Exec(ctx, q, key, at); err != nil {
		return s.wrap(ctx, "give back quota", err)
	}
	return nil
}
