package memory

import (
	"testing"

	"github.com/toolgate/toolgate/internal/store/storetest"
)

// Covers PO-3.
func TestQuotaConformance(t *testing.T) {
	m := NewMemStore()
	storetest.QuotaConformance(t, m, m)
}
