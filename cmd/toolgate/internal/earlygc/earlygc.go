// Package earlygc holds the garbage collector off while the binary's heavy
// package initialisers run, until package main's initialiser calls Resume
// (QB-5).
//
// The initialisers allocate about 6 MB, nearly all of it kept (the
// phone-number metadata, the JSON Schema meta-schemas, protobuf
// descriptors, the CEL environment …); a collection in their midst, at
// the runtime's first 4 MB goal, cost a few milliseconds of every start
// and freed well under a megabyte.
//
// Go initialises a package once everything it imports is; among ready
// packages it takes them in import-path order. So this package imports
// nothing that is initialised late: runtime/debug sorts after regexp, and
// once regexp is initialised the phone-number library is ready and, being
// github.com/n…, goes first, allocating 2.5 MB and starting a collection
// before a package waiting on runtime/debug could stop it. The setting is
// changed through the function runtime/debug.SetGCPercent wraps, which
// the runtime provides under that name, with no initialiser in between.
// It imports earlysupervise so that it always comes after it: a stdio
// upstream's supervisor runs from that initialiser and never returns, and
// must run with its collector on.
package earlygc

import (
	"sync"
	_ "unsafe" // for go:linkname

	_ "github.com/toolgate/toolgate/cmd/toolgate/internal/earlysupervise"
)

// setGCPercent is runtime/debug.SetGCPercent without the int conversion:
// the runtime defines it for runtime/debug (runtime/mgcpacer.go).
//
//go:linkname setGCPercent runtime/debug.setGCPercent
func setGCPercent(int32) int32

var (
	percent int32 // the setting before init turned the collector off: GOGC's
	resumed sync.Once
)

func init() { percent = setGCPercent(-1) }

// Resume gives the collector back the setting it had before this package's
// initialiser (GOGC's, or 100). Only the first call does anything, so a
// later debug.SetGCPercent is never undone.
func Resume() {
	resumed.Do(func() { setGCPercent(percent) })
}
