package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/core"
)

// OpenExisting opens the store spec names only if its schema was made
// already, and migrates nothing: the one-shot commands (check, tools) read
// the review decisions the replicas recorded without changing the database
// (OP-3, RV-3). nil, nil when the schema holds no toolgate store; a schema
// a newer toolgate wrote fails with core.ErrStoreTooNew.
func OpenExisting(ctx context.Context, spec string) (*Store, error) {
	return open(ctx, spec, true)
}

// existingSchema reports whether the schema holds a store this toolgate
// can read.
func (s *Store) existingSchema(ctx context.Context) (bool, error) {
	ident := pgx.Identifier{s.d.schema}.Sanitize()
	var versioned bool
	err := s.do(ctx, "look up the schema", func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, ident+".schema_version").Scan(&versioned)
	})
	if err != nil || !versioned {
		return false, err
	}
	var version int
	err = s.do(ctx, "read the schema version", func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, "SELECT version FROM "+ident+".schema_version WHERE one = 1").Scan(&version)
	})
	switch {
	case err != nil:
		return false, err
	case version > len(migrations):
		return false, fmt.Errorf("%w: %s has schema version %d, this toolgate knows versions up to %d; upgrade toolgate or use another schema",
			core.ErrStoreTooNew, s.d.label, version, len(migrations))
	}
	return true, nil
}
