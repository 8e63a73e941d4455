// Package earlygc holds the garbage collector off while the binary's heavy
// package initialisers run, and keeps the first collection after them for
// when the heap has grown past them (QB-5).
//
// The initialisers allocate about 6 MB, nearly all of it kept (the
// phone-number metadata, the JSON Schema meta-schemas, protobuf
// descriptors, the CEL environment …). The runtime's first goal is 4 MB
// (at GOGC=100): a collection in their midst cost a few milliseconds of
// every start and freed well under a megabyte, and one as soon as they
// were done, at the start of main, did the same to every command, serve's
// start-up among them.
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
	"runtime"
	"sync"
	_ "unsafe" // for go:linkname

	_ "github.com/toolgate/toolgate/cmd/toolgate/internal/earlysupervise"
)

// setGCPercent is runtime/debug.SetGCPercent without the int conversion:
// the runtime defines it for runtime/debug (runtime/mgcpacer.go).
//
//go:linkname setGCPercent runtime/debug.setGCPercent
func setGCPercent(int32) int32

// firstFactor widens the runtime's first goal on Resume: until the first
// collection the setting is this many times GOGC's, so the first goal is
// 16 MB at GOGC=100 instead of 4 MB, past what the initialisers and a
// gateway's start with a small configuration allocate. The collection at
// 16 MB gives the setting back, so a larger start is collected as usual
// from there on and the heap never runs further ahead than this once.
// widest caps the widened setting: a GOGC whose own first goal is 16 MB
// or more is left as it is.
const (
	firstFactor = 4
	widest      = 400
)

// widened is the setting until the first collection for GOGC's p: p
// itself when it is off (negative), 0 or already that wide.
func widened(p int32) int32 {
	if p <= 0 || p >= widest {
		return p
	}
	return min(p*firstFactor, widest)
}

// std is the process's gate; its initialiser turned the collector off.
var std = newGate(setGCPercent)

func init() { std.percent = std.set(-1) }

// Resume turns the collector back on, the first goal widened (see
// firstFactor); the first collection gives the collector the setting it
// had before this package's initialiser (GOGC's, or 100), and Settled is
// closed then. Only the first call does anything, and the first
// collection does not undo a setting made after Resume.
func Resume() { std.resume() }

// Settled is closed once the collector has the setting it had before the
// initialisers (after the first collection that followed Resume).
func Settled() <-chan struct{} { return std.settled }

// gate is Resume's state, with the function that changes the setting (a
// test's own records instead).
type gate struct {
	set     func(int32) int32
	percent int32 // the setting before it was turned off: GOGC's
	resumed sync.Once
	settled chan struct{}
}

func newGate(set func(int32) int32) *gate {
	return &gate{set: set, settled: make(chan struct{})}
}

// sentinel is what the first collection finds unreachable; it holds a
// pointer so that it is never one of the runtime's combined tiny
// allocations, whose cleanups may never run.
type sentinel struct{ _ *byte }

func (g *gate) resume() {
	g.resumed.Do(func() {
		wide := widened(g.percent)
		if wide == g.percent {
			g.set(g.percent)
			close(g.settled)
			return
		}
		g.set(wide)
		// The cleanup of an object nothing refers to runs once a
		// collection has found it unreachable: after the first one.
		runtime.AddCleanup(new(sentinel), g.settle, wide)
	})
}

func (g *gate) settle(wide int32) {
	if prev := g.set(g.percent); prev != wide {
		g.set(prev) // set by someone else since resume: theirs stays
	}
	close(g.settled)
}
