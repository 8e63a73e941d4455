package postgres

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/toolgate/toolgate/internal/pgtest"
)

// TestMain stops the shared PostgreSQL cluster after the tests and fails
// the run if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.Main(m)) }
