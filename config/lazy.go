package config

import (
	"regexp"
	"sync"
)

// lazyRegexp compiles expr on its first use rather than in the package's
// initialiser: every toolgate process links config, and one that loads no
// configuration (version, a stdio upstream's child) need not pay for its
// expressions at start (QB-5).
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
