package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/core"
)

var _ core.FlowLabels = (*Store)(nil)

// flowQueries are the flow labels' statements. add is one upsert, so the
// row lock orders concurrent adds from several replicas and the union
// loses none: $1 key, $2 labels, $3 now, $4 until.
func flowQueries(schema string) (add, read, prune string) {
	t := pgx.Identifier{schema}.Sanitize() + ".flow_labels"
	return `INSERT INTO ` + t + ` AS f (key, labels, until) VALUES ($1, $2::text[], $4)
		ON CONFLICT (key) DO UPDATE SET
			labels = CASE WHEN f.until < $3 THEN excluded.labels
				ELSE ARRAY(SELECT DISTINCT x FROM unnest(f.labels || excluded.labels) AS u(x)) END,
			until = CASE WHEN f.until < $3 THEN excluded.until ELSE GREATEST(f.until, excluded.until) END`,
		`SELECT labels, until FROM ` + t + ` WHERE key = $1 AND until >= $2`,
		`DELETE FROM ` + t + ` WHERE until < $1`
}

// AddFlowLabels implements core.FlowLabels. Retried after a lost
// connection: adding the same labels twice is adding them once.
func (s *Store) AddFlowLabels(ctx context.Context, key string, labels []string, now, until time.Time) error {
	if err := s.usable(); err != nil {
		return err
	}
	if labels == nil {
		labels = []string{} // NULL would fail the column's NOT NULL
	}
	add, _, prune := flowQueries(s.d.schema)
	at, _ := unixNano(now)
	to, _ := unixNano(until)
	if err := s.do(ctx, "record flow labels", func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, add, key, labels, at, to)
		return err
	}); err != nil {
		return err
	}
	if s.flowAdds.Add(1)%core.PruneEvery == 0 {
		return s.do(ctx, "prune flow labels", func(ctx context.Context) error {
			_, err := s.pool.Exec(ctx, prune, at)
			return err
		})
	}
	return nil
}

// FlowLabels implements core.FlowLabels.
func (s *Store) FlowLabels(ctx context.Context, key string, now time.Time) ([]string, time.Time, error) {
	if err := s.usable(); err != nil {
		return nil, time.Time{}, err
	}
	_, read, _ := flowQueries(s.d.schema)
	at, _ := unixNano(now)
	var labels []string
	var until int64
	found := false
	err := s.do(ctx, "read flow labels", func(ctx context.Context) error {
		err := s.pool.QueryRow(ctx, read, key, at).Scan(&labels, &until)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil || !found {
		return nil, time.Time{}, err
	}
	slices.Sort(labels)
	return slices.Compact(labels), time.Unix(0, until), nil
}
