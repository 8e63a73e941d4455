package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolgate/toolgate/core"
)

var _ core.ConnectionStore = (*Store)(nil)

const connColumns = `id, upstream, actor_id, scopes, expiry, broken, created_at, last_used, sealed, key_id, version`

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

type scanner interface{ Scan(dest ...any) error }

func scanConn(r scanner) (core.Connection, error) {
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
// and the new one change in one transaction.
func (s *Store) PutConnection(ctx context.Context, c core.Connection) (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	if err := s.live(); err != nil {
		return "", err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return "", s.wrap("put connection", err)
	}
	defer func() { _ = tx.Rollback() }()
	var replaced string
	err = tx.QueryRowContext(ctx, `DELETE FROM upstream_connections WHERE upstream = ? AND actor_id = ? RETURNING id`, c.Upstream, c.ActorID).Scan(&replaced)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", s.wrap("put connection", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO upstream_connections (`+connColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
		c.ID, c.Upstream, c.ActorID, strings.Join(c.Scopes, " "), nanos(c.Expiry), c.Broken, nanos(c.CreatedAt), nanos(c.LastUsed), c.Sealed, c.KeyID)
	if err != nil {
		return "", s.wrap("put connection", err)
	}
	if err := tx.Commit(); err != nil {
		return "", s.wrap("put connection", err)
	}
	return replaced, nil
}

// UpdateConnection implements core.ConnectionStore.
func (s *Store) UpdateConnection(ctx context.Context, c core.Connection, version int64) (bool, error) {
	if err := c.Validate(); err != nil {
		return false, err
	}
	if err := s.live(); err != nil {
		return false, err
	}
	res, err := s.w.ExecContext(ctx, `UPDATE upstream_connections SET scopes = ?, expiry = ?, broken = ?, last_used = ?, sealed = ?, key_id = ?, version = version + 1
		WHERE id = ? AND version = ?`,
		strings.Join(c.Scopes, " "), nanos(c.Expiry), c.Broken, nanos(c.LastUsed), c.Sealed, c.KeyID, c.ID, version)
	if err != nil {
		return false, s.wrap("update connection", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, s.wrap("update connection", err)
	}
	return n == 1, nil
}

// ConnectionFor implements core.ConnectionStore.
func (s *Store) ConnectionFor(ctx context.Context, upstream, actor string) (core.Connection, error) {
	if err := s.live(); err != nil {
		return core.Connection{}, err
	}
	c, err := scanConn(s.r.QueryRowContext(ctx, `SELECT `+connColumns+` FROM upstream_connections WHERE upstream = ? AND actor_id = ?`, upstream, actor))
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("%s for %s: %w", upstream, core.ActorLabel(actor), core.ErrNoConnection)
	}
	if err != nil {
		return c, s.wrap("read connection", err)
	}
	return c, nil
}

// ConnectionByID implements core.ConnectionStore.
func (s *Store) ConnectionByID(ctx context.Context, id string) (core.Connection, error) {
	if err := s.live(); err != nil {
		return core.Connection{}, err
	}
	c, err := scanConn(s.r.QueryRowContext(ctx, `SELECT `+connColumns+` FROM upstream_connections WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("%q: %w", id, core.ErrNoConnection)
	}
	if err != nil {
		return c, s.wrap("read connection", err)
	}
	return c, nil
}

// Connections implements core.ConnectionStore.
func (s *Store) Connections(ctx context.Context) ([]core.Connection, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+connColumns+` FROM upstream_connections ORDER BY upstream, actor_id`)
	if err != nil {
		return nil, s.wrap("read connections", err)
	}
	defer rows.Close()
	var out []core.Connection
	for rows.Next() {
		c, err := scanConn(rows)
		if err != nil {
			return nil, s.wrap("read connections", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("read connections", err)
	}
	return out, nil
}

// DeleteConnection implements core.ConnectionStore.
func (s *Store) DeleteConnection(ctx context.Context, id string) (bool, error) {
	if err := s.live(); err != nil {
		return false, err
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM upstream_connections WHERE id = ?`, id)
	if err != nil {
		return false, s.wrap("delete connection", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, s.wrap("delete connection", err)
	}
	return n == 1, nil
}

// TouchConnection implements core.ConnectionStore.
func (s *Store) TouchConnection(ctx context.Context, id string, at time.Time) error {
	if err := s.live(); err != nil {
		return err
	}
	if _, err := s.w.ExecContext(ctx, `UPDATE upstream_connections SET last_used = ? WHERE id = ?`, nanos(at), id); err != nil {
		return s.wrap("touch connection", err)
	}
	return nil
}

// TokenSpent reports whether UseToken recorded tokenID, without recording
// it: a connect link is checked when its page is shown and spent only when
// the person continues (UI-2).
func (s *Store) TokenSpent(ctx context.Context, tokenID string) (bool, error) {
	if err := s.live(); err != nil {
		return false, err
	}
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM spent_tokens WHERE id = ?`, tokenID).Scan(&n); err != nil {
		return false, s.wrap("check token", err)
	}
	return n > 0, nil
}
