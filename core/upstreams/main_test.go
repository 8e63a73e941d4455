package upstreams

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine outlives the package's tests.
// regexp2's clock, which enforces pattern match timeouts (IM-17), stops by
// itself about a second after the last match.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/dlclark/regexp2.runClock"))
}
