package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/review"
	"github.com/toolgate/toolgate/core/upstreams"
	"github.com/toolgate/toolgate/internal/store/memory"
)

// Importer is the import-only assembly: review, registry and importer over
// a store, and nothing that serves — no confirm gate, endpoints,
// authentication, listener or admin API; the configured port is never
// tried. It is what check, tools, policy test and the review commands
// work with. Its importer makes one import (Start) and does not retry or
// refresh behind it.
type Importer struct {
	g *Gateway
}

// ImporterOptions adjust what NewImporter builds; nil means defaults.
type ImporterOptions struct {
	// Logger receives the importer's logs; nil discards them.
	Logger *slog.Logger
	// Reviews says where review decisions are read and recorded; the zero
	// value keeps them in memory.
	Reviews ReviewStore
}

// ReviewStore is where an Importer keeps the review decisions.
type ReviewStore int

const (
	// ReviewsInMemory keeps them in memory: no store is read or written.
	ReviewsInMemory ReviewStore = iota
	// ReviewsIfStored reads them from the configured store (or the
	// default file) if it exists, and keeps them in memory otherwise: the
	// approvals are seen without a store being created as a side effect.
	ReviewsIfStored
	// ReviewsStored opens the configured store, creating it if missing:
	// decisions made through the importer's Reviewer are recorded there.
	ReviewsStored
)

// openReviewStore sets g's store as r says.
func (g *Gateway) openReviewStore(ctx context.Context, r ReviewStore) (err error) {
	switch r {
	case ReviewsInMemory:
	case ReviewsIfStored:
		if g.store, err = existingStore(ctx, g.cfg); err != nil {
			return err
		}
		g.ownStore = g.store != nil
	case ReviewsStored:
		if g.store, err = OpenStore(ctx, g.cfg.Gateway.Store); err != nil {
			return err
		}
		g.ownStore = true
	default:
		return fmt.Errorf("unknown review store %d", r)
	}
	if g.store == nil {
		g.store = memory.NewMemStore()
	}
	return nil
}

// NewImporter builds the import-only assembly cfg describes. Nothing
// connects to an upstream yet: Start imports. On error everything built
// so far is released.
func NewImporter(ctx context.Context, cfg *config.Config, opts *ImporterOptions) (*Importer, error) {
	var o ImporterOptions
	if opts != nil {
		o = *opts
	}
	open := func(g *Gateway, ctx context.Context) error { return g.openReviewStore(ctx, o.Reviews) }
	g, err := assemble(ctx, cfg, &Options{Logger: o.Logger}, assembly{open: open})
	if err != nil {
		return nil, err
	}
	return &Importer{g: g}, nil
}

// Start imports every upstream once and returns when that is done, with
// its error (a required upstream that failed).
func (im *Importer) Start(ctx context.Context) error { return im.g.Start(ctx) }

// Close disconnects every upstream, stopping their child processes, and
// closes the store if the importer opened it. It is safe more than once.
func (im *Importer) Close(ctx context.Context) error { return im.g.Close(ctx) }

// Registry, Importer and Reviewer are the assembly's parts, for the
// command line's reports and for tests.
func (im *Importer) Registry() *core.Registry      { return im.g.reg }
func (im *Importer) Importer() *upstreams.Importer { return im.g.importer }
func (im *Importer) Reviewer() *review.Reviewer    { return im.g.review }

// TryPolicy is Gateway.TryPolicy over the imported tools: Start first.
func (im *Importer) TryPolicy(ctx context.Context, path string, actor core.Actor, tool string, args json.RawMessage, via string, sessionLabels []string) (PolicyTrial, error) {
	return im.g.TryPolicy(ctx, path, actor, tool, args, via, sessionLabels)
}
