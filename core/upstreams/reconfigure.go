package upstreams

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/toolgate/toolgate/core"
)

// Reconfigured is what Reconfigure did, by upstream name.
type Reconfigured struct {
	Added, Removed, Replaced []string
	// Diffs are the applied changes to the registry, one per upstream that
	// was added, replaced or removed, in that order of the new config.
	Diffs []core.Diff
	// Pending are added or replaced upstreams that did not answer: their
	// tools are not served until the background retry imports them (IM-37).
	Pending map[string]error
}

// Reconfigure makes specs the importer's upstreams, in that order (OP-8):
// a reload of the config applied like a refresh. A spec whose Upstream is
// nil keeps the running upstream of its name as it is; any other spec
// replaces the upstream of its name, or adds one. Upstreams not named in
// specs are removed: their supervise loops stop, their connections close
// and every tool they registered is unregistered.
//
// Added and replaced upstreams are listed in parallel and applied in
// configuration order, after the removals, so names freed by one are
// claimable by the next (IM-22). A replaced upstream's old tools go with its
// old connection even when the new one does not answer: they would be
// called through the configuration the operator just changed. One that
// does not answer is retried in the background, like an upstream down at
// start-up (IM-37).
//
// It runs in turn with every refresh.
func (im *Importer) Reconfigure(ctx context.Context, specs []UpstreamSpec) (Reconfigured, error) {
	seen := make(map[string]bool, len(specs))
	for _, s := range specs {
		if seen[s.Name] {
			return Reconfigured{}, fmt.Errorf("reconfigure: upstream %q named twice", s.Name)
		}
		seen[s.Name] = true
		if s.Upstream == nil && im.lookup(s.Name) == nil {
			return Reconfigured{}, fmt.Errorf("reconfigure: %w: %q has no connection to keep", core.ErrUnknownUpstream, s.Name)
		}
	}
	im.refreshMu.Lock()
	defer im.refreshMu.Unlock()
	if im.life.Err() != nil {
		return Reconfigured{}, errors.New("reconfigure: the importer is closed")
	}

	var res Reconfigured
	var fresh []*upstream // added or replaced, in configuration order
	var gone []*upstream  // removed or replaced
	ups := make([]*upstream, 0, len(specs))
	byName := make(map[string]*upstream, len(specs))
	im.mu.Lock()
	for _, s := range specs {
		old := im.byName[s.Name]
		u := old
		switch {
		case s.Upstream == nil:
		case old != nil:
			u = im.newUpstream(s)
			res.Replaced = append(res.Replaced, s.Name)
			gone = append(gone, old)
			fresh = append(fresh, u)
		default:
			u = im.newUpstream(s)
			res.Added = append(res.Added, s.Name)
			fresh = append(fresh, u)
		}
		ups = append(ups, u)
		byName[s.Name] = u
	}
	for _, u := range im.ups {
		if !seen[u.spec.Name] {
			res.Removed = append(res.Removed, u.spec.Name)
			gone = append(gone, u)
		}
	}
	im.ups, im.byName = ups, byName
	for _, u := range gone {
		// A debounced refresh of a gone upstream would refresh its
		// successor; the reload imports that one anyway.
		if u.debounce != nil && u.debounce.Stop() {
			im.timers.Done()
		}
		u.stop()
	}
	im.mu.Unlock()

	for _, u := range gone {
		if u.done != nil {
			<-u.done
		}
		u.connMu.Lock()
		_ = u.spec.Upstream.Close()
		u.connected = false
		u.connMu.Unlock()
	}
	withdrew := len(res.Removed) > 0
	for _, name := range res.Removed {
		res.Diffs = append(res.Diffs, im.withdraw(name, core.UpstreamStatus{Name: name, State: core.StateDisconnected, Removed: true}))
	}

	listings := make([]Listing, len(fresh))
	done := make(chan struct{}, len(fresh))
	for i, u := range fresh {
		go func() {
			listings[i] = im.listWith(ctx, u, im.attempts)
			done <- struct{}{}
		}()
	}
	for range fresh {
		<-done
	}
	started := false
	for i, u := range fresh {
		l := listings[i]
		if l.err != nil {
			if res.Pending == nil {
				res.Pending = map[string]error{}
			}
			res.Pending[u.spec.Name] = l.err
			if slices.Contains(res.Replaced, u.spec.Name) {
				im.mu.Lock()
				st := u.status
				im.mu.Unlock()
				res.Diffs = append(res.Diffs, im.withdraw(u.spec.Name, st))
				withdrew = true
			}
			continue
		}
		res.Diffs = append(res.Diffs, im.apply(u, l))
		started = true
	}
	if withdrew && !started {
		// Names the gone upstreams held go to whoever wanted them; apply
		// does this when it runs.
		im.reclaim(nil)
	}
	im.mu.Lock()
	if im.looping {
		for _, u := range fresh {
			im.startLoop(u)
		}
	}
	im.mu.Unlock()
	return res, nil
}

// withdraw unregisters every tool source registered, forgets its drops
// and collisions, and publishes that as the refresh that emptied it, with
// st as its state. refreshMu must be held.
func (im *Importer) withdraw(source string, st core.UpstreamStatus) core.Diff {
	d := core.Diff{Upstream: source}
	for _, name := range im.reg.Names(source) {
		if t, ok := im.reg.Get(name); ok {
			d.Removed = append(d.Removed, t.Info())
		}
		_ = im.reg.Unregister(source, name)
	}
	im.reg.ForgetCollisions(source)
	st.Tools = 0
	im.bus.Commit(func() []core.EventData {
		return []core.EventData{
			core.UpstreamChanged{Status: st},
			core.ToolsDropped{Source: source},
			core.RefreshApplied{Diff: d},
		}
	})
	return d
}
