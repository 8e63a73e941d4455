package serve

import (
	"os"
	"testing"

	"github.com/toolgate/toolgate/internal/upstreamtest"
)

// TestMain lets the test binary be the upstream a test starts as a child
// process (upstreamtest.Serve): the tests of an endpoint in front of a real
// stdio upstream run it.
func TestMain(m *testing.M) {
	if upstreamtest.Serve() {
		return
	}
	os.Exit(m.Run())
}
