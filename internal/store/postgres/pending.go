package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/toolgate/toolgate/core"
)

var _ core.SharedApprovals = (*Store)(nil)

// keepSettled is how long a settled confirmation (or one left waiting past
// its deadline by a replica that died) is kept, so that a late second
// decision is told who settled it.
const keepSettled = time.Hour

// pendingQueries are the shared confirmations' statements.
type pendingQueries struct {
	add, decide, lookup, open, prune string
}

func newPendingQueries(ident string) pendingQueries {
	q := func(s string) string { return strings.ReplaceAll(s, "{s}", ident) }
	return pendingQueries{
		add: q(`INSERT INTO {s}.pending_confirmations (id, info, created, deadline) VALUES ($1, $2, $3, $4)`),
		// The WHERE decision IS NULL is the rule: of two replicas deciding
		// at once, the second UPDATE finds the row settled and changes
		// nothing. $6: an operator deciding after the deadline settles it
		// as timed out.
		decide: q(`UPDATE {s}.pending_confirmations SET
				decision   = CASE WHEN $6 AND deadline <= $5 THEN 'timed-out' ELSE $2 END,
				decided_by = CASE WHEN $6 AND deadline <= $5 THEN '' ELSE $3 END,
				reason     = CASE WHEN $6 AND deadline <= $5 THEN '' ELSE $4 END,
				decided_at = CASE WHEN $6 AND deadline <= $5 THEN deadline ELSE $5 END,
				info = NULL
			WHERE id = $1 AND decision IS NULL
			RETURNING decision, decided_by, reason, decided_at`),
		lookup: q(`SELECT info, decision, decided_by, reason, decided_at FROM {s}.pending_confirmations WHERE id = $1`),
		open: q(`SELECT info FROM {s}.pending_confirmations
			WHERE decision IS NULL AND deadline > $1 ORDER BY created, id COLLATE "C"`),
		prune: q(`DELETE FROM {s}.pending_confirmations WHERE decided_at < $1 OR (decision IS NULL AND deadline < $1)`),
	}
}

// AddPending implements core.SharedApprovals.
func (s *Store) AddPending(ctx context.Context, p core.PendingConfirmation) error {
	if p.ID == "" {
		return errors.New("add pending confirmation: empty id")
	}
	if err := s.usable(); err != nil {
		return err
	}
	info, err := json.Marshal(p)
	if err != nil {
		return err
	}
	created, _ := unixNano(p.Created)
	deadline, _ := unixNano(p.Deadline)
	err = s.do(ctx, "add pending confirmation", func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, s.pq.add, p.ID, string(info), created, deadline)
		return err
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		// Also the answer to a retried insert whose first attempt landed:
		// the caller refuses a second wait on one token either way.
		return fmt.Errorf("confirmation %q: %w", p.ID, core.ErrPendingExists)
	}
	if err == nil && s.adds.Add(1)%core.PruneEvery == 0 {
		// A failed pruning loses nothing: the next one takes the rows.
		_ = s.do(ctx, "prune pending confirmations", func(ctx context.Context) error {
			before, _ := unixNano(s.now().Add(-keepSettled))
			_, err := s.pool.Exec(ctx, s.pq.prune, before)
			return err
		})
	}
	return err
}

// DecidePending implements core.SharedApprovals. A decision retried after
// a lost connection whose first attempt had landed reads as settled before,
// with this call's own decision: what stands is right either way.
func (s *Store) DecidePending(ctx context.Context, id string, d core.PendingDecision, now time.Time, expire bool) (core.PendingDecision, error) {
	if err := s.usable(); err != nil {
		return core.PendingDecision{}, err
	}
	at, _ := unixNano(now)
	var out core.PendingDecision
	err := s.do(ctx, "decide pending confirmation", func(ctx context.Context) error {
		var decision string
		var decidedAt int64
		err := s.pool.QueryRow(ctx, s.pq.decide, id, string(d.Decision), d.By, d.Reason, at, expire).Scan(&decision, &out.By, &out.Reason, &decidedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			out = core.PendingDecision{}
			return nil
		}
		if err != nil {
			return err
		}
		out.Decision, out.At, out.Won = core.Decision(decision), time.Unix(0, decidedAt).UTC(), true
		return nil
	})
	if err != nil {
		return core.PendingDecision{}, err
	}
	if out.Won {
		return out, nil
	}
	// Settled before, or no such row: the row says which.
	rec, err := s.LookupPending(ctx, id)
	if err != nil {
		return core.PendingDecision{}, err
	}
	return rec.Decision, nil
}

// LookupPending implements core.SharedApprovals.
func (s *Store) LookupPending(ctx context.Context, id string) (core.PendingRecord, error) {
	if err := s.usable(); err != nil {
		return core.PendingRecord{}, err
	}
	var rec core.PendingRecord
	err := s.do(ctx, "look up pending confirmation", func(ctx context.Context) error {
		rec = core.PendingRecord{}
		var (
			info, decision *string
			decidedAt      *int64
			by, reason     string
		)
		err := s.pool.QueryRow(ctx, s.pq.lookup, id).Scan(&info, &decision, &by, &reason, &decidedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if decision != nil {
			rec.Decision = core.PendingDecision{Decision: core.Decision(*decision), By: by, Reason: reason}
			if decidedAt != nil {
				rec.Decision.At = time.Unix(0, *decidedAt).UTC()
			}
			return nil
		}
		if info != nil {
			var p core.PendingConfirmation
			if err := json.Unmarshal([]byte(*info), &p); err != nil {
				return &corrupt{fmt.Sprintf("pending confirmation %q: %v", id, err)}
			}
			rec.Pending = &p
		}
		return nil
	})
	return rec, s.corruptErr(err)
}

// OpenPending implements core.SharedApprovals. A row left waiting by a
// replica that died stops being listed at its deadline.
func (s *Store) OpenPending(ctx context.Context, now time.Time) ([]core.PendingConfirmation, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	at, _ := unixNano(now)
	var out []core.PendingConfirmation
	err := s.do(ctx, "list pending confirmations", func(ctx context.Context) error {
		out = []core.PendingConfirmation{}
		rows, err := s.pool.Query(ctx, s.pq.open, at)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var info string
			if err := rows.Scan(&info); err != nil {
				return err
			}
			var p core.PendingConfirmation
			if err := json.Unmarshal([]byte(info), &p); err != nil {
				return &corrupt{fmt.Sprintf("pending confirmation: %v", err)}
			}
			out = append(out, p)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.corruptErr(err)
	}
	return out, nil
}

func (s *Store) corruptErr(err error) error {
	var c *corrupt
	if errors.As(err, &c) {
		return fmt.Errorf("%w: %s: %s", core.ErrStoreCorrupt, s.d.label, c.msg)
	}
	return err
}
