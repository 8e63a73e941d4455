package memstore

import (
	"testing"

	"github.com/toolgate/toolgate/core/storetest"
)

// Covers PO-3.
func TestQuotaConformance(t *testing.T) {
	m := NewMemStore()
	storetest.QuotaConformance(t, m, m)
}
