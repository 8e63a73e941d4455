package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/core"
)

var _ core.ConnectionStore = (*Store)(nil)

const connColumns = `id, upstream, actor_id, scopes, expiry, broken, created_at, last_used, sealed, key_id, version`

func (s *Store) connSQL(stmt string) string {
	return strings.ReplaceAll(stmt, "{s}", pgx.Identifier{s.d.schema}.Sanitize())
}

// nanos is t as stored: Unix nanoseconds, 0 for the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	n, _ := unixNano(t)
	return n
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func scanConn(r pgx.Row) (core.Connection, error) {
	var c core.Connection
	var scopes string
	var expiry, created, used int64
	if err := r.Scan(&c.ID, &c.Upstream, &c.ActorID, &scopes, &expiry, &c.Broken, &created, &used, &c.Sealed, &c.KeyID, &c.Version); err != nil {
		return c, err
	}
	c.Scopes = strings.Fields(scopes)
	c.Expiry, c.CreatedAt, c.LastUsed = fromNanos(expiry), fromNanos(created), fromNanos(used)
	return c, nil
}

// PutConnection implements core.ConnectionStore: the replaced connection
// and the new one change in one transaction. Not retried: a commit whose
// answer was lost would make the retry fail on the id it wrote.
func (s *Store) PutConnection(ctx context.Context, c core.Connection) (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	if err := s.usable(); err != nil {
		return "", err
	}
	var replaced string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, s.connSQL(`DELETE FROM {s}.upstream_connections WHERE upstream = $1 AND actor_id = $2 RETURNING id`), c.Upstream, c.ActorID).Scan(&replaced)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		_, err = tx.Exec(ctx, s.connSQL(`INSERT INTO {s}.upstream_connections (`+connColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 1)`),
			c.ID, c.Upstream, c.ActorID, strings.Join(c.Scopes, " "), nanos(c.Expiry), c.Broken, nanos(c.CreatedAt), nanos(c.LastUsed), c.Sealed, c.KeyID)
		return err
	})
	if err != nil {
		return "", s.wrap(ctx, "put connection", err)
	}
	return replaced, nil
}

// UpdateConnection implements core.ConnectionStore. Not retried: a write
// whose answer was lost reads as lost to another writer, which only makes
// the caller read the connection again.
func (s *Store) UpdateConnection(ctx context.Context, c core.Connection, version int64) (bool, error) {
	if err := c.Validate(); err != nil {
		return false, err
	}
	if err := s.usable(); err != nil {
		return false, err
	}
	tag, err := s.pool.Exec(ctx, s.connSQL(`UPDATE {s}.upstream_connections SET scopes = $1, expiry = $2, broken = $3, last_used = $4, sealed = $5, key_id = $6, version = version + 1
		WHERE id = $7 AND version = $8`),
		strings.Join(c.Scopes, " "), nanos(c.Expiry), c.Broken, nanos(c.LastUsed), c.Sealed, c.KeyID, c.ID, version)
	if err != nil {
		return false, s.wrap(ctx, "update connection", err)
	}
	return tag.RowsAffected() == 1, nil
}

func (s *Store) oneConn(ctx context.Context, op, stmt string, args ...any) (core.Connection, error) {
	if err := s.usable(); err != nil {
		return core.Connection{}, err
	}
	var c core.Connection
	var found bool
	err := s.do(ctx, op, func(ctx context.Context) error {
		var err error
		c, err = scanConn(s.pool.QueryRow(ctx, s.connSQL(stmt), args...))
		found = err == nil
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
		return c, err
	}
	if !found {
		return c, core.ErrNoConnection
	}
	return c, nil
}

// ConnectionFor implements core.ConnectionStore.
func (s *Store) ConnectionFor(ctx context.Context, upstream, actor string) (core.Connection, error) {
	c, err := s.oneConn(ctx, "read connection", `SELECT `+connColumns+` FROM {s}.upstream_connections WHERE upstream = $1 AND actor_id = $2`, upstream, actor)
	if errors.Is(err, core.ErrNoConnection) {
		return c, fmt.Errorf("%s for %s: %w", upstream, core.ActorLabel(actor), err)
	}
	return c, err
}

// ConnectionByID implements core.ConnectionStore.
func (s *Store) ConnectionByID(ctx context.Context, id string) (core.Connection, error) {
	c, err := s.oneConn(ctx, "read connection", `SELECT `+connColumns+` FROM {s}.upstream_connections WHERE id = $1`, id)
	if errors.Is(err, core.ErrNoConnection) {
		return c, fmt.Errorf("%q: %w", id, err)
	}
	return c, err
}

// Connections implements core.ConnectionStore, sorted bytewise as the
// other stores sort, whatever the database's collation.
func (s *Store) Connections(ctx context.Context) ([]core.Connection, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	var out []core.Connection
	err := s.do(ctx, "read connections", func(ctx context.Context) error {
		out = nil
		rows, err := s.pool.Query(ctx, s.connSQL(`SELECT `+connColumns+` FROM {s}.upstream_connections ORDER BY upstream COLLATE "C", actor_id COLLATE "C"`))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			c, err := scanConn(rows)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	return out, err
}

// DeleteConnection implements core.ConnectionStore.
func (s *Store) DeleteConnection(ctx context.Context, id string) (bool, error) {
	if err := s.usable(); err != nil {
		return false, err
	}
	tag, err := s.pool.Exec(ctx, s.connSQL(`DELETE FROM {s}.upstream_connections WHERE id = $1`), id)
	if err != nil {
		return false, s.wrap(ctx, "delete connection", err)
	}
	return tag.RowsAffected() == 1, nil
}

// TouchConnection implements core.ConnectionStore.
func (s *Store) TouchConnection(ctx context.Context, id string, at time.Time) error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.do(ctx, "touch connection", func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, s.connSQL(`UPDATE {s}.upstream_connections SET last_used = $1 WHERE id = $2`), nanos(at), id)
		return err
	})
}

// TokenSpent reports whether UseToken recorded tokenID, without recording
// it: a connect link is checked when its page is shown and spent only when
// the person continues (UI-2).
func (s *Store) TokenSpent(ctx context.Context, tokenID string) (bool, error) {
	if err := s.usable(); err != nil {
		return false, err
	}
	var spent bool
	err := s.do(ctx, "check token", func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, s.connSQL(`SELECT EXISTS (SELECT 1 FROM {s}.spent_tokens WHERE id = $1)`), tokenID).Scan(&spent)
	})
	return spent, err
}
