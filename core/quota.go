package core

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
)

// QuotaCounter is a store that counts calls in fixed windows (PO-3). Every
// gateway sharing the store shares the counts, so a quota holds across
// replicas. Safe for concurrent use.
type QuotaCounter interface {
	// TakeQuota counts one call against key (UTF-8 text without NUL,
	// which PostgreSQL's text refuses) in the window that starts at
	// window, unless max calls are counted there already: taken says
	// which. Of concurrent takes of the last unit, exactly one gets it.
	// Windows that ended before prune may be forgotten.
	TakeQuota(ctx context.Context, key string, window time.Time, max int64, prune time.Time) (taken bool, err error)
	// QuotaUsage lists the counts of the keys that start with prefix in
	// the window that starts at window, highest first (ties by key), at
	// most n of them: what the console shows of a quota (PO-4). It reads
	// only that window's keys under prefix, an index range in the SQL
	// stores.
	QuotaUsage(ctx context.Context, prefix string, window time.Time, n int) ([]QuotaCount, error)
	// GiveBackQuota uncounts one call taken against key in the window
	// that starts at window, for a call refused after it was counted
	// (PO-3); a count already at zero, or a window forgotten, stays so.
	GiveBackQuota(ctx context.Context, key string, window time.Time) error
	// LeaseQuota counts up to n calls at once against key in the window
	// that starts at window, never past max: granted is how many (n, or
	// what was left, or 0 when the quota is spent). A replica runs the
	// calls of a lease without asking the store again (PO-3). Of
	// concurrent leases, the units granted add up to at most max.
	LeaseQuota(ctx context.Context, key string, window time.Time, n, max int64, prune time.Time) (granted int64, err error)
	// ReturnQuota uncounts n calls leased and not run (a replica that
	// stops); the count never goes below zero, and a window forgotten
	// stays so.
	ReturnQuota(ctx context.Context, key string, window time.Time, n int64) error
}

// QuotaCount is one key's count in one window.
type QuotaCount struct {
	Key   string
	Count int64
}

// SortQuotaCounts orders counts as QuotaUsage answers them: highest
// first, ties by key.
func SortQuotaCounts(counts []QuotaCount) {
	slices.SortFunc(counts, func(a, b QuotaCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
}

// PrefixRange is the range of keys that start with prefix, for a store
// that reads it from an index: lo <= key < hi, compared bytewise; bounded
// is false when there is no upper bound (prefix has no ASCII byte below
// 0x7f, or is empty). hi cuts prefix after its last such byte, raised by
// one, so it stays valid UTF-8.
func PrefixRange(prefix string) (lo, hi string, bounded bool) {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] < 0x7f {
			return prefix, prefix[:i] + string(rune(prefix[i]+1)), true
		}
	}
	return prefix, "", false
}
