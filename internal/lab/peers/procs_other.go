//go:build !linux

package peers

// ProcsIn is not implemented without /proc; ok is false.
func ProcsIn(string) (pids []int, ok bool) { return nil, false }
