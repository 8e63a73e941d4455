// Package signals catches the signals an operator, a supervisor or a
// terminal sends the process — SIGHUP, SIGINT, SIGTERM — from its first
// moments (OP-12).
//
// Go's default for all three is to end the process at once. A gateway that
// is still connecting its upstreams when logrotate's postrotate or
// `systemctl reload` sends SIGHUP would die mid-start. So the signals are
// caught in this package's init, which imports nothing but the standard
// library and so runs among the first of the binary's package
// initialisers, long before the heavy ones and main.
//
// What a signal means is decided later, by the command that runs:
//
//   - SIGINT and SIGTERM end the context Start returns (a clean stop);
//   - SIGHUP goes to the hangup handler the command sets with OnHangup: a
//     reload for `serve` once it is ready, a clean stop for the console
//     (its terminal went away). A SIGHUP caught before any handler is set
//     is remembered — however many arrive, once — and handed to the
//     handler when it is set.
package signals

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// caught is buffered so that signals arriving before Start drains it are
// kept; signal.Notify drops what does not fit, and one of each kind is all
// that matters.
var caught = make(chan os.Signal, 8)

func init() {
	signal.Notify(caught, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM)
}

// Router hands caught signals to what the running command made of them.
// Its methods are safe for concurrent use.
type Router struct {
	stop context.CancelFunc

	mu         sync.Mutex
	onHangup   func()
	hangupOwed bool // a SIGHUP arrived while no handler was set
}

// Start begins delivering the process's signals: ctx's child ends on the
// first SIGINT or SIGTERM (later ones change nothing: the stop is under
// way), SIGHUPs go to the hangup handler. release ends the delivery; the
// signals stay caught for the life of the process, so one that arrives
// while it exits cannot change its exit status. Call release once.
func Start(ctx context.Context) (stopCtx context.Context, r *Router, release func()) {
	stopCtx, cancel := context.WithCancel(ctx)
	r = &Router{stop: cancel}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case s := <-caught:
				r.deliver(s)
			case <-quit:
				return
			}
		}
	}()
	return stopCtx, r, func() {
		close(quit)
		<-done
		cancel()
	}
}

func (r *Router) deliver(s os.Signal) {
	if s != syscall.SIGHUP {
		r.stop()
		return
	}
	r.mu.Lock()
	h := r.onHangup
	if h == nil {
		r.hangupOwed = true
	}
	r.mu.Unlock()
	if h != nil {
		h()
	}
}

// OnHangup sets what a SIGHUP does from now on (nil: remember it until a
// handler is set). A SIGHUP that arrived while no handler was set is
// handed to h once, before OnHangup returns. A nil Router does nothing,
// so commands run without process signals (tests calling run) need no
// special case.
func (r *Router) OnHangup(h func()) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.onHangup = h
	owed := r.hangupOwed && h != nil
	if owed {
		r.hangupOwed = false
	}
	r.mu.Unlock()
	if owed {
		h()
	}
}

// Stop is the stop a SIGINT or SIGTERM makes, for a command that ends for
// another reason the process treats alike (the console's hangup). A nil
// Router does nothing.
func (r *Router) Stop() {
	if r != nil {
		r.stop()
	}
}
