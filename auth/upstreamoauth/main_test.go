package upstreamoauth_test

import (
	"net/http"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine outlives the package's tests,
// once the shared client's idle connections are closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func init() {
	// The tests' plain requests go through http.DefaultClient; its idle
	// keep-alive connections are not leaks of the code under test.
	http.DefaultClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}
