package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/toolgate/toolgate/core"
)

var _ core.FlowLabels = (*Store)(nil)

// addFlowSQL is one upsert, so the write lock orders concurrent adds from
// several processes on the file and the union loses none: ?1 key, ?2 the
// labels as a JSON array, ?3 now, ?4 until.
const addFlowSQL = `INSERT INTO flow_labels (key, labels, until) VALUES (?1, ?2, ?4)
	ON CONFLICT (key) DO UPDATE SET
		labels = CASE WHEN flow_labels.until < ?3 THEN excluded.labels ELSE
			(SELECT json_group_array(value) FROM (
				SELECT value FROM json_each(flow_labels.labels)
				UNION SELECT value FROM json_each(excluded.labels)))
		END,
		until = CASE WHEN flow_labels.until < ?3 THEN excluded.until ELSE MAX(flow_labels.until, excluded.until) END`

// AddFlowLabels implements core.FlowLabels.
func (s *Store) AddFlowLabels(ctx context.Context, key string, labels []string, now, until time.Time) error {
	if err := s.usable(); err != nil {
		return err
	}
	if labels == nil {
		labels = []string{}
	}
	raw, err := json.Marshal(labels)
	if err != nil {
		return err
	}
	at, _ := unixNano(now)
	to, _ := unixNano(until)
	if _, err := s.w.ExecContext(ctx, addFlowSQL, key, string(raw), at, to); err != nil {
		return s.wrap("record flow labels", err)
	}
	if s.flowAdds.Add(1)%core.PruneEvery == 0 {
		if _, err := s.w.ExecContext(ctx, "DELETE FROM flow_labels WHERE until < ?", at); err != nil {
			return s.wrap("prune flow labels", err)
		}
	}
	return nil
}

// FlowLabels implements core.FlowLabels.
func (s *Store) FlowLabels(ctx context.Context, key string, now time.Time) ([]string, time.Time, error) {
	if err := s.usable(); err != nil {
		return nil, time.Time{}, err
	}
	at, _ := unixNano(now)
	var raw string
	var until int64
	err := s.r.QueryRowContext(ctx, "SELECT labels, until FROM flow_labels WHERE key = ? AND until >= ?", key, at).Scan(&raw, &until)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, time.Time{}, nil
	case err != nil:
		return nil, time.Time{}, s.wrap("read flow labels", err)
	}
	var labels []string
	if err := json.Unmarshal([]byte(raw), &labels); err != nil {
		return nil, time.Time{}, s.wrap("read flow labels", err)
	}
	slices.Sort(labels)
	return slices.Compact(labels), time.Unix(0, until), nil
}
