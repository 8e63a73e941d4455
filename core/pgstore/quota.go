package pgstore

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/core"
)

var _ core.QuotaCounter = (*Store)(nil)

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
