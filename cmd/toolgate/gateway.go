package main

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp"
)

// SelfEnv names the running toolgate binary for ${…} in configs that spawn
// the built-in demo upstreams (`command: ${TOOLGATE_SELF}`).
const SelfEnv = "TOOLGATE_SELF"

// lookupEnv resolves ${VAR} for configs: the process environment, plus
// TOOLGATE_SELF when the environment does not set it.
func lookupEnv(name string) (string, bool) {
	if v, ok := os.LookupEnv(name); ok {
		return v, true
	}
	if name == SelfEnv {
		if exe, err := os.Executable(); err == nil {
			return exe, true
		}
	}
	return "", false
}

// gateway is the in-process gateway as far as this version builds it.
type gateway struct {
	reg       *core.Registry
	importer  *core.Importer
	review    *core.Reviewer
	sessions  *core.Sessions      // set by serve
	gate      *core.Gate          // set by serve
	approvals *core.ApprovalQueue // set by serve
	store     core.Store          // set by serve
	hub       *mcp.Hub            // resource updates to subscribed sessions
	ready     atomic.Bool         // the first import finished
}

// newGateway builds the review, registry and importer for cfg; nothing
// connects. store holds the review approvals; nil means none are kept.
func newGateway(ctx context.Context, cfg *config.Config, store core.Store) (*gateway, error) {
	if store == nil {
		store = core.NewMemStore()
	}
	bus := core.NewBus()
	rev, err := core.NewReviewer(ctx, core.ReviewMode(cfg.Gateway.Review.Mode), store, bus)
	if err != nil {
		return nil, err
	}
	// SV-4: review state is the last filter of what an actor sees (RV-3).
	reg := core.NewRegistry(&core.RegistryOptions{Bus: bus, CanUse: rev.CanUse})
	bus.AddSnapshotPart(func(s *core.Snapshot) { s.Reviews = rev.States(s.Tools) })
	hub := mcp.NewHub()
	specs := make([]core.UpstreamSpec, 0, len(cfg.Upstreams))
	for _, u := range cfg.Upstreams {
		up, err := newUpstreamOn(u, hub)
		if err != nil {
			return nil, fmt.Errorf("upstream %q: %w", u.Name, err)
		}
		specs = append(specs, core.UpstreamSpec{
			Name:        u.Name,
			Prefix:      u.EffectivePrefix(),
			Transport:   transportOf(u),
			Include:     u.Include,
			Exclude:     u.Exclude,
			Reads:       u.Reads,
			Actions:     u.Actions,
			DefaultKind: core.Kind(u.DefaultKind),
			Roles:       u.Roles,
			Required:    u.Required,
			Timeout:     u.Timeout,
			Upstream:    up,
		})
	}
	im := core.NewImporter(reg, specs, &core.ImporterOptions{ReviewState: rev.State})
	return &gateway{reg: reg, importer: im, review: rev, hub: hub}, nil
}

// start imports every upstream (IM-7, IM-8).
func (g *gateway) start(ctx context.Context) error { return g.importer.Start(ctx) }

// close stops every upstream connection and child process (IM-10).
func (g *gateway) close() error { return g.importer.Close() }
