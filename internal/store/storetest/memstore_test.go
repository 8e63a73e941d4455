package storetest_test

import (
	"testing"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/internal/store/memory"
	"github.com/toolgate/toolgate/internal/store/storetest"
)

// OP-5: the in-memory store keeps the same contract as the persistent ones.
func TestMemStoreConformance(t *testing.T) {
	storetest.StoreConformance(t, func(t *testing.T) core.Store { return memory.NewMemStore() })
}
