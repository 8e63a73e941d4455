// Package earlygc holds the garbage collector off while the binary's heavy
// package initialisers run, until package main's initialiser calls Resume
// (QB-5).
//
// The initialisers allocate about 6 MB, nearly all of it kept (the JSON
// Schema meta-schemas, protobuf descriptors, the CEL environment …); a
// collection in their midst, at the runtime's first 4 MB goal, cost a few
// milliseconds of every start and freed well under a megabyte.
//
// Go initialises a package once everything it imports is; among ready
// packages it takes them in import-path order, so this one, importing
// runtime/debug, comes after the third-party packages that were ready
// before it (the phone-number metadata among them) and before the rest.
// It imports earlysupervise so that it always comes after it: a stdio
// upstream's supervisor runs from that initialiser and never returns, and
// must run with its collector on.
package earlygc

import (
	"runtime/debug"
	"sync"

	_ "github.com/toolgate/toolgate/cmd/toolgate/internal/earlysupervise"
)

var (
	percent int // the setting before init turned the collector off: GOGC's
	resumed sync.Once
)

func init() { percent = debug.SetGCPercent(-1) }

// Resume gives the collector back the setting it had before this package's
// initialiser (GOGC's, or 100). Only the first call does anything, so a
// later debug.SetGCPercent is never undone.
func Resume() {
	resumed.Do(func() { debug.SetGCPercent(percent) })
}
