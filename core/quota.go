package core

import (
	"context"
	"time"
)

// QuotaCounter is a store that counts calls in fixed windows (PO-3). Every
// gateway sharing the store shares the counts, so a quota holds across
// replicas. Safe for concurrent use.
type QuotaCounter interface {
	// TakeQuota counts one call against key in the window that starts at
	// window, unless max calls are counted there already: taken says
	// which. Of concurrent takes of the last unit, exactly one gets it.
	// Windows that ended before prune may be forgotten.
	TakeQuota(ctx context.Context, key string, window time.Time, max int64, prune time.Time) (taken bool, err error)
}
