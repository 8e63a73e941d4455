//go:build race

package scan

// raceBuild: the race detector slows the regexp engine several-fold and
// finds nothing in the gate's comparisons, which share no memory between
// goroutines; they read a sample of the texts under it (gateStride).
const raceBuild = true
