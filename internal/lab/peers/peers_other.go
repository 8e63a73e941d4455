//go:build !unix

package peers

import (
	"os"
	"os/exec"
)

// lockFile does not lock where flock is missing: concurrent first installs
// may then collide, and a rerun finds node_modules in place.
func lockFile(string) (func(), error) { return func() {}, nil }

func setGroup(*exec.Cmd) {}

func killGroup(pgid int, reaped bool) {
	if reaped {
		return
	}
	if p, err := os.FindProcess(pgid); err == nil {
		_ = p.Kill()
	}
}
