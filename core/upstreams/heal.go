package upstreams

import (
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/toolgate/toolgate/core"
)

// Defaults of the background health check and reconnect (IM-37).
const (
	DefaultHealthInterval    = 30 * time.Second
	DefaultHealthTimeout     = 5 * time.Second
	DefaultReconnectDelay    = time.Second
	DefaultReconnectMaxDelay = 30 * time.Second
)

// healthMisses failed pings in a row mark a connected upstream failed: one
// lost ping is a blip, not an outage.
const healthMisses = 2

// HealthCheck is the periodic MCP ping of a connected upstream (IM-37).
// The zero value checks with the defaults.
type HealthCheck struct {
	Disabled bool
	// Interval between pings (default 30 s).
	Interval time.Duration
	// Timeout of one ping (default 5 s, at most the spec's Timeout).
	Timeout time.Duration
}

func (h HealthCheck) withDefaults(opTimeout time.Duration) HealthCheck {
	if h.Interval <= 0 {
		h.Interval = DefaultHealthInterval
	}
	if h.Timeout <= 0 {
		h.Timeout = min(DefaultHealthTimeout, opTimeout)
	}
	return h
}

// Reconnect is the background retry of a failed or lost upstream (IM-37):
// the wait doubles from InitialDelay up to MaxDelay, with jitter. The zero value
// retries with the defaults.
type Reconnect struct {
	Disabled bool
	// InitialDelay before the first retry (default 1 s).
	InitialDelay time.Duration
	// MaxDelay caps the wait between retries (default 30 s).
	MaxDelay time.Duration
}

func (r Reconnect) withDefaults() Reconnect {
	if r.InitialDelay <= 0 {
		r.InitialDelay = DefaultReconnectDelay
	}
	if r.MaxDelay <= 0 {
		r.MaxDelay = DefaultReconnectMaxDelay
	}
	r.MaxDelay = max(r.MaxDelay, r.InitialDelay)
	return r
}

// wait is how long to wait before retry n (0 is the first): InitialDelay·2ⁿ
// capped at MaxDelay, less a random part of up to half, so upstreams that
// failed together do not all come knocking at once. It is never more than
// the capped value: that is the bound an operator can count on.
func (r Reconnect) wait(n int) time.Duration {
	d := r.InitialDelay
	for i := 0; i < n && d < r.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, r.MaxDelay)
	return d - mrand.N(d/2+1)
}

// poke wakes u's supervise loop, if it is not already due to wake.
func (u *upstream) poke() {
	select {
	case u.kick <- struct{}{}:
	default:
	}
}

func drain(c chan struct{}) {
	select {
	case <-c:
	default:
	}
}

// startLoops starts one supervise loop per upstream, once, unless the
// importer is closed or runs nothing in the background.
func (im *Importer) startLoops() {
	im.mu.Lock()
	defer im.mu.Unlock()
	if !im.background || im.looping || im.life.Err() != nil {
		return
	}
	im.looping = true
	for _, u := range im.ups {
		im.startLoop(u)
	}
}

// startLoop starts u's supervise loop, if it has one. im.mu must be held.
func (im *Importer) startLoop(u *upstream) {
	if u.spec.Health.Disabled && u.spec.Reconnect.Disabled || u.done != nil {
		return
	}
	u.done = make(chan struct{})
	im.loops.Add(1)
	go im.supervise(u)
}

// supervise keeps u imported until Close (IM-37). While u is stale (failed,
// or never imported) it is listed again after Reconnect's backoff, and a
// listing that answers is applied like a refresh. While u is current it is
// pinged every Health.Interval; a failed ping is checked again after
// Reconnect.InitialDelay, and a second failure in a row marks u failed, which
// makes it stale. Every wait is a timer, so nothing loops hot.
func (im *Importer) supervise(u *upstream) {
	defer im.loops.Done()
	defer close(u.done)
	h, rc := u.spec.Health, u.spec.Reconnect
	retries, misses := 0, 0
	for {
		retrying := im.needsImport(u)
		var wait time.Duration // 0: no timer, wait for u to change
		switch {
		case retrying && !rc.Disabled:
			wait = rc.wait(retries)
			at := time.Now().Add(wait)
			im.setStatus(u, func(s *core.UpstreamStatus) { s.NextAttempt = at })
		case !retrying && !h.Disabled:
			wait = h.Interval
			if misses > 0 {
				wait = min(rc.InitialDelay, h.Interval)
			}
		}
		act, alive := im.await(u, wait, retrying)
		switch {
		case !alive:
			return
		case !act: // someone else's refresh, ping or failure changed u
			retries, misses = 0, 0
			continue
		case retrying:
			if err := im.reimport(u); err != nil {
				retries++
			} else {
				retries = 0
			}
		default:
			if _, err := im.ping(u.life, u, h.Timeout, false); err == nil {
				misses = 0
			} else if misses++; misses >= healthMisses && u.life.Err() == nil {
				misses = 0
				im.failed(u, fmt.Errorf("health check: %w", err))
			}
		}
		drain(u.kick) // our own state changes are not news
	}
}

// needsImport reports whether u's tools must be listed again.
func (im *Importer) needsImport(u *upstream) bool {
	im.mu.Lock()
	defer im.mu.Unlock()
	return u.stale
}

// await waits wait (forever when 0) and reports act. It returns early with
// act false when u's need for an import stopped being retrying, and with
// alive false when the importer closes.
func (im *Importer) await(u *upstream, wait time.Duration, retrying bool) (act, alive bool) {
	var fire <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		fire = t.C
	}
	for {
		select {
		case <-u.life.Done():
			return false, false
		case <-fire:
			return true, true
		case <-u.kick:
			if im.needsImport(u) != retrying {
				return false, true
			}
		}
	}
}

// reimport lists u once and applies the listing like a refresh, in turn
// with every other refresh. A refresh that applied a listing of u while
// this one was being made wins: its listing is as fresh.
func (im *Importer) reimport(u *upstream) error {
	im.mu.Lock()
	seen := u.applied
	im.mu.Unlock()
	l := im.listWith(u.life, u, 1)
	if l.err != nil {
		return l.err
	}
	im.refreshMu.Lock()
	defer im.refreshMu.Unlock()
	im.mu.Lock()
	moved := u.applied != seen
	im.mu.Unlock()
	// A reload that removed or replaced u meanwhile: the listing is of a
	// connection that is going.
	if !moved && u.life.Err() == nil {
		im.apply(u, l)
	}
	return nil
}
