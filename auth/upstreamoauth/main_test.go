package upstreamoauth_test

import (
	"fmt"
	"net/http"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/toolgate/toolgate/internal/pgtest"
)

// TestMain fails the run if any goroutine outlives the package's tests,
// once the idle keep-alive connections of the default transport (the JWKS
// fetcher of the test upstream uses it) are closed.
func TestMain(m *testing.M) {
	// pgtest.Main stops the shared PostgreSQL cluster after the tests.
	code := pgtest.Main(m).Run()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func init() {
	// The tests' plain requests go through http.DefaultClient; its idle
	// keep-alive connections are not leaks of the code under test.
	http.DefaultClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}
