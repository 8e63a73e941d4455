package gateway

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/knadh/koanf/providers/file"

	"github.com/toolgate/toolgate/config"
)

// DefaultReloadDebounce is how long a changed config file must stay quiet
// before it is reloaded: an editor's save is several writes.
const DefaultReloadDebounce = 300 * time.Millisecond

// rewatchDelay is how long to wait before watching the file again after
// the watch broke (the file was deleted, then written anew); it doubles up
// to maxRewatchDelay while watching keeps failing.
const (
	rewatchDelay    = 2 * time.Second
	maxRewatchDelay = time.Minute
)

// ReloadSource is where reloads read the config from (OP-8).
type ReloadSource struct {
	// Path is the config file, watched while gateway.watchConfig is on.
	Path string
	// Load reads Path into a loaded, defaulted and valid config; its
	// errors name the key path (config.Load's).
	Load func() (*config.Config, error)
	// Debounce is DefaultReloadDebounce when zero.
	Debounce time.Duration

	// watch and apply are replaced by tests: watch calls changed for each
	// change of path (with an error when watching broke) until stop.
	watch func(path string, changed func(error)) (stop func(), err error)
	apply func(context.Context, *config.Config) (*ReloadReport, error)
}

// reloads is the reload loop's state; started by StartReloads, stopped by
// Close.
type reloads struct {
	closed bool // guarded by Gateway.reloadMu: no Reload after Close

	mu      sync.Mutex
	started bool
	stopped bool          // stopReloads ran: nothing starts any more
	reasons []string      // pending requests' reasons, coalesced
	kick    chan struct{} // buffered 1
	stop    chan struct{}
	done    chan struct{}
}

// StartReloads runs the reload loop until Close: RequestReload (SIGHUP)
// reloads from src at once, and while gateway.watchConfig is on a change
// of src.Path reloads once the file has been quiet for the debounce.
// Requests made while a reload runs are coalesced into one more reload.
// Errors are logged at ERROR and leave the running config in force.
func (g *Gateway) StartReloads(src ReloadSource) error {
	if src.Load == nil {
		return errors.New("reload: no loader")
	}
	if src.Debounce <= 0 {
		src.Debounce = DefaultReloadDebounce
	}
	if src.watch == nil {
		src.watch = watchFile
	}
	if abs, err := filepath.Abs(src.Path); err == nil {
		// fsnotify watches the file's directory, which a bare file name
		// does not name.
		src.Path = abs
	}
	if src.apply == nil {
		src.apply = g.Reload
	}
	r := &g.reloads
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return errors.New("reload: already started")
	}
	if r.stopped {
		return errors.New("reload: the gateway is closing")
	}
	r.started = true
	r.kick, r.stop, r.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	// The loop is handed its channels now: stopReloads may close stop
	// before the loop first runs.
	go g.reloadLoop(src, r.kick, r.stop, r.done)
	return nil
}

// RequestReload asks the reload loop for a reload; it never blocks. A
// request while one is pending joins it.
func (g *Gateway) RequestReload(reason string) {
	r := &g.reloads
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started {
		return
	}
	r.reasons = append(r.reasons, reason)
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// stopReloads ends the loop and its watcher, waiting for a reload under
// way (its upstream work ends with the loop's context), and refuses
// reloads from then on.
func (g *Gateway) stopReloads() {
	r := &g.reloads
	r.mu.Lock()
	started, done := r.started, r.done
	r.stopped = true
	if started && r.stop != nil {
		close(r.stop)
		r.stop = nil
	}
	r.mu.Unlock()
	if started {
		<-done
	}
	g.reloadMu.Lock()
	r.closed = true
	g.reloadMu.Unlock()
}

func (g *Gateway) reloadLoop(src ReloadSource, kick, stop <-chan struct{}, done chan<- struct{}) {
	r := &g.reloads
	defer close(done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel() // ends a reload under way
		case <-ctx.Done():
		}
	}()

	changed := make(chan struct{}, 1)
	broke := make(chan error, 1)
	var unwatch func()
	retry := rewatchDelay // the next wait before watching again
	failing := false      // the last attempt to watch failed, and was logged
	debounce := time.NewTimer(0)
	<-debounce.C
	rewatch := time.NewTimer(0)
	<-rewatch.C
	defer debounce.Stop()
	defer rewatch.Stop()
	watching := func(on bool) {
		switch {
		case on && unwatch == nil:
			stopWatch, err := src.watch(src.Path, func(err error) {
				if err != nil {
					select {
					case broke <- err:
					default:
					}
					return
				}
				select {
				case changed <- struct{}{}:
				default:
				}
			})
			if err != nil {
				if !failing {
					g.log.Warn("config file not watched, trying again in the background; SIGHUP still reloads", "config", src.Path, "err", err)
				}
				failing = true
				rewatch.Reset(retry)
				retry = min(2*retry, maxRewatchDelay)
				return
			}
			unwatch, failing, retry = stopWatch, false, rewatchDelay
			g.log.Info("watching the config file for changes", "config", src.Path)
		case !on && unwatch != nil:
			unwatch()
			unwatch = nil
			debounce.Stop()
			g.log.Info("no longer watching the config file", "config", src.Path)
		case !on:
			rewatch.Stop()
			failing, retry = false, rewatchDelay
		}
	}
	defer func() {
		if unwatch != nil {
			unwatch()
		}
	}()
	watching(g.Config().Gateway.WatchConfig)

	reload := func(reason string) {
		g.reloadFrom(ctx, src, reason)
		watching(g.Config().Gateway.WatchConfig)
	}
	for {
		select {
		case <-stop:
			return
		case <-kick:
			r.mu.Lock()
			reason, pending := strings.Join(r.reasons, ", "), len(r.reasons) > 0
			r.reasons = nil
			r.mu.Unlock()
			if !pending {
				// A request made between this loop taking the last kick
				// and taking the reasons joined that reload; its own kick
				// is left over and has nothing to do.
				continue
			}
			debounce.Stop() // this reload reads the file as it is now
			reload(reason)
		case <-changed:
			debounce.Reset(src.Debounce)
		case <-debounce.C:
			reload("config file changed")
		case err := <-broke:
			g.log.Warn("config file watch stopped; watching again shortly, SIGHUP still reloads", "config", src.Path, "err", err)
			if unwatch != nil {
				unwatch()
				unwatch = nil
			}
			rewatch.Reset(retry)
		case <-rewatch.C:
			watching(g.Config().Gateway.WatchConfig)
		}
	}
}

// reloadFrom loads src and applies it; a config that does not load or
// apply is refused, logged at ERROR with its key paths, and the running
// config stays.
func (g *Gateway) reloadFrom(ctx context.Context, src ReloadSource, reason string) {
	g.log.Info("config reload", "reason", reason, "config", src.Path)
	cfg, err := src.Load()
	if err == nil {
		_, err = src.apply(ctx, cfg)
	}
	if err != nil {
		g.log.Error("config reload refused; the running config stays in force", "reason", reason, "config", src.Path, "err", err.Error())
	}
}

// watchFile is koanf's file watcher (fsnotify on the file's directory, so
// rename-saves are seen), each watch on a provider of its own.
func watchFile(path string, changed func(error)) (func(), error) {
	f := file.Provider(path)
	if err := f.Watch(func(_ any, err error) { changed(err) }); err != nil {
		return nil, err
	}
	return func() { _ = f.Unwatch() }, nil
}
