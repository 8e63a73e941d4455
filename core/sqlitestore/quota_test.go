package sqlitestore

import (
	"testing"

	"github.com/toolgate/toolgate/core/storetest"
)

// PO-3, OP-5: three gateways' limits on three handles of one file lease a
// quota without running past it.
func TestReplicasLeaseQuota(t *testing.T) {
	path := tempPath(t)
	storetest.QuotaLeaseReplicas(t, mustOpen(t, path), mustOpen(t, path), mustOpen(t, path))
}
