package peers

import (
	"os"
	"path/filepath"
	"strconv"
)

// ProcsIn returns the pids of the live processes whose working directory is
// dir. Giving each spawned server a directory of its own makes this the set
// of that server's processes, grandchildren included, whatever else runs.
func ProcsIn(dir string) (pids []int, ok bool) {
	want, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// A zombie has no cwd link; it is gone for this purpose.
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == want {
			pids = append(pids, pid)
		}
	}
	return pids, true
}
