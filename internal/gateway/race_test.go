//go:build race

package gateway_test

// raceEnabled: the tests run under the race detector, which makes each
// request many times slower.
const raceEnabled = true
