package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/toolgate/toolgate/core"
)

var _ core.SharedSessions = (*Store)(nil)

// keepDeadReplicas is how long a replica that stopped beating keeps its
// rows (unlisted) before another's sync prunes them.
const keepDeadReplicas = time.Hour

// sessionQueries are the shared session listing's statements.
type sessionQueries struct {
	beat, clear, insert, prune, drop, list string
}

func newSessionQueries(ident string) sessionQueries {
	q := func(s string) string { return strings.ReplaceAll(s, "{s}", ident) }
	return sessionQueries{
		beat: q(`INSERT INTO {s}.replicas (replica, beat) VALUES ($1, $2)
			ON CONFLICT (replica) DO UPDATE SET beat = excluded.beat`),
		clear: q(`DELETE FROM {s}.sessions WHERE replica = $1`),
		insert: q(`INSERT INTO {s}.sessions (replica, key, endpoint, actor_id, tenant, client_name, client_version,
				protocol, started, last_activity, calls)
			SELECT $1, k, e, a, t, cn, cv, p, st, la, c FROM unnest(
				$2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
				$9::bigint[], $10::bigint[], $11::bigint[]) AS u(k, e, a, t, cn, cv, p, st, la, c)
			ON CONFLICT (replica, key) DO NOTHING`),
		prune: q(`DELETE FROM {s}.replicas WHERE beat < $1`),
		drop:  q(`DELETE FROM {s}.replicas WHERE replica = $1`),
		list: q(`SELECT s.replica, s.key, s.endpoint, s.actor_id, s.tenant, s.client_name, s.client_version,
				s.protocol, s.started, s.last_activity, s.calls
			FROM {s}.sessions s JOIN {s}.replicas r ON r.replica = s.replica
			WHERE r.beat >= $1
			ORDER BY s.replica COLLATE "C", s.started, s.key COLLATE "C"`),
	}
}

// SyncSessions implements core.SharedSessions, in one transaction: the
// replica's rows are replaced whole, so a sync also repairs whatever a
// failed one left. Retried whole after a lost connection.
func (s *Store) SyncSessions(ctx context.Context, replica string, now time.Time, list []core.Session) error {
	if err := s.usable(); err != nil {
		return err
	}
	n := len(list)
	keys, eps, actors, tenants := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	names, versions, protocols := make([]string, n), make([]string, n), make([]string, n)
	started, active, calls := make([]int64, n), make([]int64, n), make([]int64, n)
	for i, x := range list {
		keys[i], eps[i], actors[i], tenants[i] = x.ID, x.Endpoint, x.Actor.ID, x.Actor.Tenant
		names[i], versions[i], protocols[i] = x.ClientName, x.ClientVersion, x.Protocol
		started[i], _ = unixNano(x.Started)
		active[i], _ = unixNano(x.LastActivity)
		calls[i] = int64(x.Calls)
	}
	at, _ := unixNano(now)
	before, _ := unixNano(now.Add(-keepDeadReplicas))
	return s.do(ctx, "record sessions", func(ctx context.Context) error {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		if _, err := tx.Exec(ctx, s.sq.beat, replica, at); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.sq.clear, replica); err != nil {
			return err
		}
		if n > 0 {
			if _, err := tx.Exec(ctx, s.sq.insert, replica, keys, eps, actors, tenants, names, versions, protocols, started, active, calls); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, s.sq.prune, before); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
}

// DropReplica implements core.SharedSessions.
func (s *Store) DropReplica(ctx context.Context, replica string) error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.do(ctx, "forget replica", func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, s.sq.drop, replica)
		return err
	})
}

// ListSessions implements core.SharedSessions.
func (s *Store) ListSessions(ctx context.Context, since time.Time) ([]core.Session, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	at, _ := unixNano(since)
	var out []core.Session
	err := s.do(ctx, "list sessions", func(ctx context.Context) error {
		out = []core.Session{}
		rows, err := s.pool.Query(ctx, s.sq.list, at)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var x core.Session
			var started, active, calls int64
			if err := rows.Scan(&x.Replica, &x.ID, &x.Endpoint, &x.Actor.ID, &x.Actor.Tenant, &x.ClientName, &x.ClientVersion,
				&x.Protocol, &started, &active, &calls); err != nil {
				return err
			}
			x.Started, x.LastActivity, x.Calls = time.Unix(0, started).UTC(), time.Unix(0, active).UTC(), int(calls)
			out = append(out, x)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
