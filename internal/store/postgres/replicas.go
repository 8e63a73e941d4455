package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/core"
)

var _ core.ReplicaDirectory = (*Store)(nil)

func (s *Store) replicaQuery(sql string) string {
	return strings.ReplaceAll(sql, "{s}", pgx.Identifier{s.d.schema}.Sanitize())
}

// AdvertiseReplica implements core.ReplicaDirectory. The row is the one
// SyncSessions beats: the address lives and is pruned with the replica.
func (s *Store) AdvertiseReplica(ctx context.Context, replica, addr string, now time.Time) error {
	if err := s.usable(); err != nil {
		return err
	}
	at, _ := unixNano(now)
	q := s.replicaQuery(`INSERT INTO {s}.replicas (replica, beat, addr) VALUES ($1, $2, $3)
		ON CONFLICT (replica) DO UPDATE SET addr = excluded.addr`)
	return s.do(ctx, "advertise replica", func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, q, replica, at, addr)
		return err
	})
}

// ReplicaAddrs implements core.ReplicaDirectory.
func (s *Store) ReplicaAddrs(ctx context.Context, since time.Time) (map[string]string, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	at, _ := unixNano(since)
	q := s.replicaQuery(`SELECT replica, addr FROM {s}.replicas WHERE beat >= $1 AND addr <> ''`)
	var out map[string]string
	err := s.do(ctx, "list replicas", func(ctx context.Context) error {
		out = map[string]string{}
		rows, err := s.pool.Query(ctx, q, at)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r, a string
			if err := rows.Scan(&r, &a); err != nil {
				return err
			}
			out[r] = a
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
