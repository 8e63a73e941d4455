package upstreams

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/schema"
	"github.com/toolgate/toolgate/telemetry"
)

// UpstreamSpec is one configured upstream as the importer needs it. The
// caller resolves config defaults (prefix, timeout) and builds the Upstream.
type UpstreamSpec struct {
	Name string
	// Prefix for imported names; "" opts out (IM-11).
	Prefix string
	// Transport is shown to the operator: stdio, http, sse, auto, fake. An
	// upstream that is a core.TransportReporter shows the transport it
	// connected over instead, once it has.
	Transport string
	Include   []string
	Exclude   []string
	Reads     []string
	Actions   []string
	// DefaultKind applies when neither the lists nor the annotations decide;
	// empty means action (IM-15).
	DefaultKind core.Kind
	// Roles an actor needs for any tool of this upstream.
	Roles    []string
	Required bool
	// Timeout applies to each operation: connect, each list, each call (IM-6).
	Timeout time.Duration
	// Health and Reconnect keep the upstream imported in the background
	// (IM-37); their zero values mean the defaults.
	Health    HealthCheck
	Reconnect Reconnect
	Upstream  core.Upstream
}

// DefaultTimeout is the per-operation timeout when a spec gives none.
const DefaultTimeout = 30 * time.Second

// ImporterOptions tunes an Importer; nil means defaults.
type ImporterOptions struct {
	// Retry decides re-issuing for every kind; nil is DefaultRetry (IM-31).
	Retry core.RetryClassifier
	// Attempts bounds connect and read-call attempts (default 3).
	Attempts int
	// Backoff between attempts; nil is randomized exponential from 200 ms.
	Backoff core.Backoff
	// Debounce for tools/list_changed refreshes (default 500 ms).
	Debounce time.Duration
	// ReviewState fills ImportedTool.ReviewState (IM-33); nil leaves it empty.
	ReviewState func(core.ToolInfo) core.ReviewState
	// NoBackground runs no health checks and no reconnects (IM-37): for
	// one-shot commands (check, tools) that report what Start found.
	NoBackground bool
}

// Importer turns upstreams' tools into registry tools and keeps them current.
type Importer struct {
	reg      *core.Registry
	bus      *core.Bus
	ups      []*upstream // configuration order
	byName   map[string]*upstream
	retry    core.RetryClassifier
	review   func(core.ToolInfo) core.ReviewState
	attempts int
	backoff  core.Backoff
	debounce time.Duration
	// background runs one supervise loop per upstream after Start (IM-37).
	background bool

	// refreshMu makes refreshes one at a time, so registration always
	// replays in configuration order against a stable registry.
	refreshMu sync.Mutex

	// life ends debounced refreshes and the supervise loops on Close.
	life   context.Context
	stop   context.CancelFunc
	timers sync.WaitGroup
	loops  sync.WaitGroup

	mu      sync.Mutex // guards looping and the fields of every upstream marked "im.mu"
	looping bool       // the supervise loops were started

	planMu    sync.Mutex
	plans     map[string]heldPlan
	planOrder []string // oldest first
}

type upstream struct {
	spec UpstreamSpec
	// kick wakes u's supervise loop when its state changes (buffered, 1).
	kick chan struct{}
	// life ends u's supervise loop: on Close, or when a reload removes or
	// replaces u (OP-8). done is closed when the loop has returned.
	life context.Context
	stop context.CancelFunc
	done chan struct{}

	// connMu serialises Connect and Close of this upstream.
	connMu    sync.Mutex
	connected bool
	gen       uint64 // connection generation, so a stale failure can't drop a newer connection

	// Guarded by im.mu.
	status   core.UpstreamStatus
	wanted   []core.Tool // the last successful listing, in listing order
	drops    []core.Drop
	catalog  catalogListing
	debounce *time.Timer
	// stale: u failed since its tools were last applied, or never had them
	// applied, so the supervise loop imports it again (IM-37).
	stale bool
	// applied counts applied listings, so a reconnect does not apply a
	// listing over one a refresh applied meanwhile.
	applied uint64
}

// NewImporter prepares the importer; nothing connects until Start.
// Upstream names must be unique; the config layer guarantees it.
func NewImporter(reg *core.Registry, specs []UpstreamSpec, opts *ImporterOptions) *Importer {
	if opts == nil {
		opts = &ImporterOptions{}
	}
	im := &Importer{
		reg: reg, bus: reg.Bus(), byName: make(map[string]*upstream), plans: make(map[string]heldPlan),
		retry: opts.Retry, review: opts.ReviewState, attempts: opts.Attempts, backoff: opts.Backoff, debounce: opts.Debounce,
		background: !opts.NoBackground,
	}
	if im.retry == nil {
		im.retry = core.DefaultRetry
	}
	if im.attempts <= 0 {
		im.attempts = 3
	}
	if im.backoff == nil {
		im.backoff = jitterBackoff
	}
	if im.debounce <= 0 {
		im.debounce = 500 * time.Millisecond
	}
	im.life, im.stop = context.WithCancel(context.Background())
	for _, s := range specs {
		u := im.newUpstream(s)
		im.ups = append(im.ups, u)
		im.byName[s.Name] = u
	}
	im.bus.AddSnapshotPart(im.fillSnapshot)
	return im
}

// newUpstream fills s's defaults and prepares its state; nothing connects.
func (im *Importer) newUpstream(s UpstreamSpec) *upstream {
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.DefaultKind == "" {
		s.DefaultKind = core.KindAction
	}
	s.Health, s.Reconnect = s.Health.withDefaults(s.Timeout), s.Reconnect.withDefaults()
	u := &upstream{spec: s, kick: make(chan struct{}, 1), stale: true, status: core.UpstreamStatus{
		Name: s.Name, Transport: s.Transport, Required: s.Required, State: core.StateDisconnected,
	}}
	u.life, u.stop = context.WithCancel(im.life)
	if n, ok := s.Upstream.(core.ToolsChangedNotifier); ok {
		// By name: after a reload replaced u, its successor is refreshed.
		name := s.Name
		n.OnToolsChanged(func() { im.toolsChanged(name) })
	}
	return u
}

// lookup is the upstream configured under name now, or nil.
func (im *Importer) lookup(name string) *upstream {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.byName[name]
}

func jitterBackoff(n int) time.Duration {
	base := 200 * time.Millisecond << min(n-1, 4)
	return base/2 + mrand.N(base)
}

type Listing struct {
	tools []core.RemoteTool
	// prep is tools turned into registry tools, done while listing so the
	// schema compiles of all upstreams run in parallel too.
	prep    prepared
	catalog *catalogListing // nil: the upstream serves no resources or prompts
	err     error
}

// prepared is one listing turned into registry tools and drops.
type prepared struct {
	tools   []core.Tool
	schemas map[string]*schema.Schema
	drops   []core.Drop
	// collisions are this upstream's own tools whose names reshape to one
	// already taken by a tool it listed earlier (IM-12, IM-13).
	collisions []core.Collision
}

// kindOf: config lists win (actions over reads when both match), then the
// readOnlyHint annotation, then the upstream's default (IM-15).
func kindOf(s UpstreamSpec, rt core.RemoteTool) core.Kind {
	switch {
	case core.MatchAny(s.Actions, rt.Name):
		return core.KindAction
	case core.MatchAny(s.Reads, rt.Name):
		return core.KindRead
	}
	var ann struct {
		ReadOnlyHint *bool `json:"readOnlyHint"`
	}
	if len(rt.Annotations) > 0 && json.Unmarshal(rt.Annotations, &ann) == nil && ann.ReadOnlyHint != nil && *ann.ReadOnlyHint {
		return core.KindRead
	}
	return s.DefaultKind
}

func changedFields(old, cur *core.Tool) []string {
	var f []string
	if old.Description != cur.Description {
		f = append(f, "description")
	}
	if !jsonEqual(old.InputSchema, cur.InputSchema) {
		f = append(f, "inputSchema")
	}
	if !jsonEqual(old.OutputSchema, cur.OutputSchema) {
		f = append(f, "outputSchema")
	}
	if !jsonEqual(old.Annotations, cur.Annotations) {
		f = append(f, "annotations")
	}
	if old.Title != cur.Title {
		f = append(f, "title")
	}
	if !jsonEqual(old.Icons, cur.Icons) {
		f = append(f, "icons")
	}
	if !jsonEqual(old.Execution, cur.Execution) {
		f = append(f, "execution")
	}
	if !jsonEqual(old.Meta, cur.Meta) {
		f = append(f, "_meta")
	}
	if old.Kind != cur.Kind {
		f = append(f, "kind")
	}
	return f
}

// jsonEqual compares byte-for-byte: the gateway serves schemas verbatim, so
// a reformatted schema is a change a client will see.
func jsonEqual(a, b json.RawMessage) bool { return string(a) == string(b) }

// ambiguous: the request may have reached the upstream and run.
func ambiguous(err error) bool {
	var rpc *core.RPCError
	return !errors.Is(err, core.ErrNotSent) && !errors.As(err, &rpc)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Start connects to every upstream and lists its tools in parallel, then
// registers them in configuration order, so a contested name goes to the
// upstream configured first however fast the other answered (IM-7). An
// unreachable upstream is reported and skipped (IM-8); the returned error
// names every required upstream that failed.
//
// Registration does not wait for the slowest upstream: each listing is
// applied as soon as it and every listing configured before it are in, so
// when upstreams answer roughly in configuration order nearly everything is
// registered, and served, by the time the last one answers. A refresh asked
// for meanwhile waits until Start is done.
//
// Then each upstream is kept imported in the background until Close: a
// failed one is retried, a connected one health-checked (IM-37).
func (im *Importer) Start(ctx context.Context) error {
	im.refreshMu.Lock()
	defer im.refreshMu.Unlock()
	defer im.startLoops()
	var errs []error
	im.listInOrder(ctx, func(u *upstream, l Listing) {
		if l.err != nil {
			if u.spec.Required {
				errs = append(errs, fmt.Errorf("required upstream %q: %w", u.spec.Name, l.err))
			}
			return
		}
		if im.life.Err() != nil {
			// Close began while listing: nothing more is imported.
			return
		}
		im.apply(u, l)
	})
	return errors.Join(errs...)
}

// listInOrder lists every upstream in parallel and hands each listing to
// each in configuration order, as soon as that listing and all the ones
// before it are in. It returns when every listing was handed over.
func (im *Importer) listInOrder(ctx context.Context, each func(u *upstream, l Listing)) {
	n := len(im.ups)
	out := make([]Listing, n)
	done := make(chan int, n)
	for i, u := range im.ups {
		go func() {
			out[i] = im.list(ctx, u)
			done <- i
		}()
	}
	in := make([]bool, n)
	next := 0
	for range n {
		in[<-done] = true
		for next < n && in[next] {
			each(im.ups[next], out[next])
			out[next] = Listing{}
			next++
		}
	}
}

// list connects if needed and reads the upstream's tools, then its
// resources and prompts, retrying transient failures with backoff.
func (im *Importer) list(ctx context.Context, u *upstream) Listing {
	return im.listWith(ctx, u, im.attempts)
}

// listWith is list with its own bound on connect and list attempts.
func (im *Importer) listWith(ctx context.Context, u *upstream, attempts int) Listing {
	tools, err := im.listTools(ctx, u, attempts)
	if err != nil {
		return Listing{err: err}
	}
	return Listing{tools: tools, prep: im.prepare(u, tools), catalog: im.listCatalog(ctx, u)}
}

func (im *Importer) listTools(ctx context.Context, u *upstream, attempts int) ([]core.RemoteTool, error) {
	var err error
	for attempt := range attempts {
		if attempt > 0 {
			if werr := sleep(ctx, im.backoff(attempt)); werr != nil {
				break
			}
		}
		var gen uint64
		if gen, err = im.connect(ctx, u); err != nil {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, u.spec.Timeout)
		start := time.Now()
		var tools []core.RemoteTool
		tools, err = u.spec.Upstream.ListTools(lctx)
		cancel()
		if err == nil {
			im.setStatus(u, func(s *core.UpstreamStatus) {
				s.State, s.Latency, s.LastError = core.StateConnected, time.Since(start), ""
			})
			return tools, nil
		}
		if !core.Transient(err) {
			im.failed(u, err)
			return nil, err
		}
		im.disconnect(u, gen)
	}
	im.failed(u, err)
	return nil, err
}

// ErrClosed is returned for an upstream that would connect after the
// importer began to close.
var ErrClosed = errors.New("importer closed")

// connect makes sure u is connected and returns the connection generation.
// Its errors say what happened to the handshake, as the upstream reported
// it: a server that answered initialize with a status is not "not sent"
// (IM-29), though no call was made on it yet.
//
// Once Close has begun nothing connects: a connection under way is cut
// (its context ends with the importer's life) and closed, and a later
// attempt is refused with ErrClosed, so no upstream process is started
// after shutdown began (IM-10).
func (im *Importer) connect(ctx context.Context, u *upstream) (uint64, error) {
	u.connMu.Lock()
	defer u.connMu.Unlock()
	if u.connected {
		return u.gen, nil
	}
	if im.life.Err() != nil {
		return 0, fmt.Errorf("connect %q: %w", u.spec.Name, ErrClosed)
	}
	im.setStatus(u, func(s *core.UpstreamStatus) { s.State = core.StateConnecting })
	cctx, cancel := context.WithTimeout(ctx, u.spec.Timeout)
	defer cancel()
	defer context.AfterFunc(im.life, cancel)()
	start := time.Now()
	info, err := u.spec.Upstream.Connect(cctx)
	if err == nil && im.life.Err() != nil {
		// Connected while Close was beginning: Close may already have
		// passed this upstream, so it is closed here, never used.
		err = ErrClosed
	}
	if err != nil {
		_ = u.spec.Upstream.Close()
		err = fmt.Errorf("connect: %w", err)
		im.failed(u, err)
		return 0, err
	}
	u.connected = true
	u.gen++
	transport := u.spec.Transport
	if tr, ok := u.spec.Upstream.(core.TransportReporter); ok && tr.Transport() != "" {
		// auto until it is known which transport answered (IM-9).
		transport = tr.Transport()
	}
	im.setStatus(u, func(s *core.UpstreamStatus) {
		s.State, s.Server, s.Latency, s.LastError = core.StateConnected, info, time.Since(start), ""
		s.Transport = transport
	})
	return u.gen, nil
}

// disconnect drops connection generation gen after a transient failure, so
// the next attempt reconnects (IM-27).
func (im *Importer) disconnect(u *upstream, gen uint64) {
	u.connMu.Lock()
	defer u.connMu.Unlock()
	if !u.connected || u.gen != gen {
		return
	}
	u.connected = false
	_ = u.spec.Upstream.Close()
	im.setStatus(u, func(s *core.UpstreamStatus) {
		if s.State == core.StateConnected {
			s.State = core.StateDisconnected
		}
	})
}

func (im *Importer) failed(u *upstream, err error) {
	im.setStatus(u, func(s *core.UpstreamStatus) {
		s.State, s.LastError, s.LastErrorAt = core.StateFailed, err.Error(), time.Now()
	})
}

func (im *Importer) setStatus(u *upstream, change func(*core.UpstreamStatus)) {
	im.bus.Commit(func() []core.EventData {
		im.mu.Lock()
		defer im.mu.Unlock()
		before := u.status
		change(&u.status)
		if u.status.State == core.StateFailed {
			u.stale = true
		} else {
			u.status.NextAttempt = time.Time{} // only a failed upstream waits for one
		}
		if u.status == before {
			return nil
		}
		if u.status.State != before.State {
			u.poke()
		}
		return []core.EventData{core.UpstreamChanged{Status: u.status}}
	})
}

// prepare applies filters, kinds, names and the schema gates to a listing.
func (im *Importer) prepare(u *upstream, listed []core.RemoteTool) prepared {
	s := u.spec
	p := prepared{schemas: make(map[string]*schema.Schema)}
	seen := make(map[string]bool)
	claimed := make(map[string]string) // served name -> the remote name that has it
	for _, rt := range listed {
		drop := func(kind core.DropKind, reason string) {
			p.drops = append(p.drops, core.Drop{Source: s.Name, RemoteName: rt.Name, Kind: kind, Reason: reason})
		}
		switch {
		case rt.Name == "":
			drop(core.DropInvalid, "tool without a name")
			continue
		case seen[rt.Name]:
			drop(core.DropInvalid, "listed twice")
			continue
		case len(s.Include) > 0 && !core.MatchAny(s.Include, rt.Name):
			drop(core.DropFilter, "not in include")
			continue
		case core.MatchAny(s.Exclude, rt.Name):
			drop(core.DropFilter, "excluded")
			continue
		}
		seen[rt.Name] = true
		if err := schema.CheckObjectRoot(rt.InputSchema); err != nil {
			drop(core.DropSchema, err.Error())
			continue
		}
		compiled, err := schema.CompileSchema(rt.InputSchema)
		if err != nil {
			var dp *schema.DangerousPatternError
			if errors.As(err, &dp) {
				drop(core.DropPattern, err.Error())
			} else {
				drop(core.DropSchema, err.Error())
			}
			continue
		}
		// The output schema is served as sent, and clients check results
		// against it with backtracking engines (IM-19).
		if dp := schema.ScreenServedSchema(rt.OutputSchema); dp != nil {
			drop(core.DropPattern, "outputSchema: "+dp.Error())
			continue
		}
		desc := "MCP tool: " + rt.Name // IM-36
		if rt.Description != nil && *rt.Description != "" {
			desc = *rt.Description
		}
		t := core.Tool{
			Name:         core.ToolName(s.Prefix, rt.Name),
			Source:       s.Name,
			RemoteName:   rt.Name,
			Kind:         kindOf(s, rt),
			Description:  desc,
			InputSchema:  compiled.Raw(),
			OutputSchema: rt.OutputSchema,
			Annotations:  rt.Annotations,
			Title:        rt.Title,
			Icons:        rt.Icons,
			Execution:    rt.Execution,
			Meta:         rt.Meta,
			Roles:        slices.Clone(s.Roles),
		}
		if first, ok := claimed[t.Name]; ok {
			// Two remote names that reshape alike: the first listed keeps
			// the name, the second is refused, and both are named.
			p.collisions = append(p.collisions, core.Collision{Name: t.Name,
				Kept:    core.Claimant{Source: s.Name, RemoteName: first},
				Refused: core.Claimant{Source: s.Name, RemoteName: rt.Name}})
			continue
		}
		claimed[t.Name] = rt.Name
		t.Handler = im.handler(u, t.RemoteName, t.Kind)
		p.tools = append(p.tools, t)
		p.schemas[t.Name] = compiled
	}
	return p
}

// apply makes the registry match u's listing: stale names of u are freed,
// listed ones claimed, then names freed anywhere are offered to the other
// upstreams in configuration order (IM-20..22). refreshMu must be held.
func (im *Importer) apply(u *upstream, l Listing) core.Diff {
	im.applyCatalog(u, l.catalog)
	p := l.prep
	diff := im.predict(u, p)

	im.reg.ForgetCollisions(u.spec.Name)
	want := make(map[string]string, len(p.tools)) // name -> remote name
	for _, t := range p.tools {
		want[t.Name] = t.RemoteName
	}
	for _, name := range im.reg.Names(u.spec.Name) {
		// A name now wanted for another of the upstream's remote names (a
		// rename that reshapes alike) is freed too, so the new one claims it.
		if held, ok := im.reg.Get(name); !ok || want[name] != held.RemoteName {
			_ = im.reg.Unregister(u.spec.Name, name)
		}
	}
	for _, t := range p.tools {
		_ = im.reg.RegisterCompiled(t, p.schemas[t.Name])
	}
	for _, c := range p.collisions {
		im.reg.RecordCollision(c)
	}

	held := len(im.reg.Names(u.spec.Name))
	im.bus.Commit(func() []core.EventData {
		im.mu.Lock()
		defer im.mu.Unlock()
		u.wanted, u.drops = p.tools, p.drops
		u.status.Tools = held
		u.stale = false
		u.applied++
		u.poke()
		return []core.EventData{
			core.UpstreamChanged{Status: u.status},
			core.ToolsDropped{Source: u.spec.Name, Drops: slices.Clone(p.drops)},
			core.RefreshApplied{Diff: diff},
		}
	})
	im.reclaim(u)
	return diff
}

// reclaim offers names that are free again to every other upstream that
// wanted them, in configuration order.
func (im *Importer) reclaim(except *upstream) {
	for _, v := range im.ups {
		if v == except {
			continue
		}
		// apply replaces wanted and never changes its elements, so the
		// slice can be read without a copy.
		im.mu.Lock()
		wanted := v.wanted
		im.mu.Unlock()
		claimed := false
		for _, t := range im.reg.NotHeld(v.spec.Name, wanted) {
			if im.reg.Register(t) == nil {
				claimed = true
			}
		}
		if claimed {
			n := len(im.reg.Names(v.spec.Name))
			im.setStatus(v, func(s *core.UpstreamStatus) { s.Tools = n })
		}
	}
}

// predict computes the diff that applying p to u would make now.
func (im *Importer) predict(u *upstream, p prepared) core.Diff {
	d := core.Diff{Upstream: u.spec.Name}
	want := make(map[string]bool, len(p.tools))
	for _, t := range p.tools {
		want[t.Name] = true
		cur, ok := im.reg.Get(t.Name)
		switch {
		case !ok:
			d.Added = append(d.Added, t.Info())
		case cur.Source == u.spec.Name:
			if fields := changedFields(&cur, &t); len(fields) > 0 {
				d.Changed = append(d.Changed, core.ToolChange{Old: cur.Info(), New: t.Info(), Fields: fields})
			}
		default:
			c := core.Collision{Name: t.Name, Kept: core.ClaimantOf(&cur), Refused: core.ClaimantOf(&t)}
			if !slices.Contains(im.reg.Collisions(), c) {
				d.Collisions = append(d.Collisions, c)
			}
		}
	}
	for _, name := range im.reg.Names(u.spec.Name) {
		if !want[name] {
			cur, _ := im.reg.Get(name)
			d.Removed = append(d.Removed, cur.Info())
		}
	}
	im.mu.Lock()
	old := slices.Clone(u.drops)
	im.mu.Unlock()
	for _, dr := range p.drops {
		if !slices.Contains(old, dr) {
			d.Dropped = append(d.Dropped, dr)
		}
	}
	return d
}

// PlanRefresh lists one upstream and returns what applying it would change,
// without changing anything.
func (im *Importer) PlanRefresh(ctx context.Context, name string) (*core.RefreshPlan, error) {
	u, err := im.upstream(name)
	if err != nil {
		return nil, err
	}
	l := im.list(ctx, u)
	if l.err != nil {
		return nil, l.err // IM-23: unreachable prunes nothing
	}
	im.refreshMu.Lock()
	diff := im.predict(u, l.prep)
	im.refreshMu.Unlock()
	id := rand.Text()
	im.planMu.Lock()
	defer im.planMu.Unlock()
	if len(im.planOrder) >= maxPlans {
		delete(im.plans, im.planOrder[0])
		im.planOrder = im.planOrder[1:]
	}
	im.plans[id] = heldPlan{upstream: u, listed: l, at: time.Now()}
	im.planOrder = append(im.planOrder, id)
	return &core.RefreshPlan{ID: id, Diff: diff}, nil
}

// maxPlans bounds the plans kept for operators who never apply or cancel
// them; the oldest goes first.
const maxPlans = 32

// PlanTTL is how long a plan can be applied: after that the listing is too
// old to trust and the operator plans again.
const PlanTTL = 10 * time.Minute

type heldPlan struct {
	upstream *upstream
	listed   Listing
	at       time.Time
}

// takePlan removes the plan with id and returns it, if it is still held and
// fresh. A plan is applied or cancelled at most once.
func (im *Importer) takePlan(id string) (heldPlan, error) {
	im.planMu.Lock()
	defer im.planMu.Unlock()
	p, ok := im.plans[id]
	if !ok {
		return heldPlan{}, fmt.Errorf("%w: %q", core.ErrUnknownPlan, id)
	}
	delete(im.plans, id)
	im.planOrder = slices.DeleteFunc(im.planOrder, func(s string) bool { return s == id })
	if time.Since(p.at) > PlanTTL {
		return heldPlan{}, fmt.Errorf("%w: %q is older than %s", core.ErrUnknownPlan, id, PlanTTL)
	}
	return p, nil
}

// ApplyRefresh applies the plan PlanRefresh returned under id. The registry
// may have moved since; the returned diff is what was actually applied.
func (im *Importer) ApplyRefresh(id string) (core.Diff, error) {
	p, err := im.takePlan(id)
	if err != nil {
		return core.Diff{}, err
	}
	im.refreshMu.Lock()
	defer im.refreshMu.Unlock()
	return im.apply(p.upstream, p.listed), nil
}

// CancelRefresh forgets the plan held under id without applying it.
func (im *Importer) CancelRefresh(id string) error {
	_, err := im.takePlan(id)
	return err
}

// Refresh re-imports one upstream: its current answer to tools/list,
// adding and removing (IM-20). An unreachable upstream prunes nothing
// (IM-23); an unknown name is ErrUnknownUpstream, never "0 tools" (IM-24).
func (im *Importer) Refresh(ctx context.Context, name string) (core.Diff, error) {
	plan, err := im.PlanRefresh(ctx, name)
	if err != nil {
		return core.Diff{}, err
	}
	return im.ApplyRefresh(plan.ID)
}

// RefreshAll re-imports every upstream: listing in parallel, applying in
// configuration order, so a name freed by one is claimable by the next in
// the same refresh (IM-22). Unreachable upstreams keep their tools.
func (im *Importer) RefreshAll(ctx context.Context) ([]core.Diff, error) {
	im.refreshMu.Lock()
	defer im.refreshMu.Unlock()
	var diffs []core.Diff
	var errs []error
	im.listInOrder(ctx, func(u *upstream, l Listing) {
		if l.err != nil {
			errs = append(errs, fmt.Errorf("upstream %q: %w", u.spec.Name, l.err))
			return
		}
		diffs = append(diffs, im.apply(u, l))
	})
	return diffs, errors.Join(errs...)
}

func (im *Importer) upstream(name string) (*upstream, error) {
	u := im.lookup(name)
	if u == nil {
		im.bus.Publish(core.Warning{Source: name, Message: fmt.Sprintf("refresh: no upstream named %q", name)})
		return nil, fmt.Errorf("%w: %q", core.ErrUnknownUpstream, name)
	}
	return u, nil
}

// toolsChanged debounces an upstream's list_changed into one refresh (IM-25).
func (im *Importer) toolsChanged(name string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	u := im.byName[name]
	if u == nil || im.life.Err() != nil {
		return
	}
	if u.debounce != nil && u.debounce.Stop() {
		im.timers.Done() // the stopped timer will never run
	}
	im.timers.Add(1)
	u.debounce = time.AfterFunc(im.debounce, func() {
		defer im.timers.Done()
		if _, err := im.Refresh(im.life, name); err != nil && im.life.Err() == nil {
			im.bus.Publish(core.Warning{Source: name, Message: "refresh after tools/list_changed: " + err.Error()})
		}
	})
}

// handler is the registry handler of one imported tool.
func (im *Importer) handler(u *upstream, remote string, kind core.Kind) core.Handler {
	return func(ctx context.Context, args json.RawMessage) (core.Result, error) {
		return im.call(ctx, u, remote, kind, args)
	}
}

// call runs one upstream call. Reads are retried in place on transient
// failures (IM-28); an action is re-issued only if the classifier says so,
// which by default is only when the request never left (IM-29). An
// isError result is a result, never retried (IM-30).
func (im *Importer) call(ctx context.Context, u *upstream, remote string, kind core.Kind, args json.RawMessage) (core.Result, error) {
	var res core.Result
	// mayHaveRun: an attempt reached the upstream and failed ambiguously. A
	// call whose every attempt failed to connect, or failed definitely, did
	// not run, whatever the connect error was.
	mayHaveRun := false
	attempt := 0
	if p, ok := u.spec.Upstream.(core.CallPreparer); ok {
		// Outside do: waiting for a person to connect is no attempt, so
		// neither the per-attempt timeout nor a retry applies to it.
		if pres, ok := p.PrepareCall(ctx, remote); !ok {
			return pres, nil
		}
	}
	err := im.do(ctx, u, kind, func(ctx context.Context) (err error) {
		attempt++
		ctx, span := telemetry.Attempt(ctx, u.spec.Name, u.spec.Transport, remote, attempt)
		res, err = u.spec.Upstream.CallTool(ctx, remote, args)
		telemetry.EndAttempt(span, res.IsError, err)
		mayHaveRun = mayHaveRun || err != nil && ambiguous(err)
		return err
	})
	if err == nil {
		return res, nil
	}
	if kind == core.KindAction && mayHaveRun {
		return core.Result{}, fmt.Errorf("%s on %q: %w (%w)", remote, u.spec.Name, core.ErrOutcomeUnknown, err)
	}
	return core.Result{}, fmt.Errorf("%s on %q: %w", remote, u.spec.Name, err)
}

// do runs op against u's connection with the per-operation timeout,
// connecting first and dropping the connection after a transient failure
// (IM-27); the classifier decides whether op may run again, and a transient
// failure to connect is tried again.
func (im *Importer) do(ctx context.Context, u *upstream, kind core.Kind, op func(context.Context) error) error {
	var last error
	for attempt := range im.attempts {
		if attempt > 0 {
			if werr := sleep(ctx, im.backoff(attempt)); werr != nil {
				break
			}
		}
		gen, err := im.connect(ctx, u)
		var again bool
		if err != nil {
			// Nothing of the call left: connecting again re-issues
			// nothing, so a transient failure is tried again for every
			// kind without asking the classifier.
			again = core.Transient(err)
		} else {
			cctx, cancel := context.WithTimeout(ctx, u.spec.Timeout)
			err = op(cctx)
			cancel()
			if err == nil {
				return nil
			}
			if core.Transient(err) {
				im.disconnect(u, gen)
			}
			again = im.retry(kind, err)
		}
		last = err
		if ctx.Err() != nil || !again {
			break
		}
	}
	return last
}

// Ping runs a health check on one upstream and records its latency (IM-9).
func (im *Importer) Ping(ctx context.Context, name string) (time.Duration, error) {
	u, err := im.upstream(name)
	if err != nil {
		return 0, err
	}
	return im.ping(ctx, u, u.spec.Timeout, true)
}

// ping connects if needed and pings u within timeout. A ping that fails
// marks u failed only if markFailed: the periodic check wants a second
// opinion first (IM-37). Failing to connect always does.
func (im *Importer) ping(ctx context.Context, u *upstream, timeout time.Duration, markFailed bool) (time.Duration, error) {
	gen, err := im.connect(ctx, u)
	if err != nil {
		return 0, err
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	if err := u.spec.Upstream.Ping(pctx); err != nil {
		if core.Transient(err) {
			im.disconnect(u, gen)
		}
		if markFailed {
			im.failed(u, err)
		}
		return 0, err
	}
	d := time.Since(start)
	im.setStatus(u, func(s *core.UpstreamStatus) { s.State, s.Latency, s.LastError = core.StateConnected, d, "" })
	return d, nil
}

// Statuses returns every upstream's status in configuration order.
func (im *Importer) Statuses() []core.UpstreamStatus {
	im.mu.Lock()
	defer im.mu.Unlock()
	out := make([]core.UpstreamStatus, len(im.ups))
	for i, u := range im.ups {
		out[i] = u.status
	}
	return out
}

// Drops returns every tool the last listings left out, in configuration order.
func (im *Importer) Drops() []core.Drop {
	im.mu.Lock()
	defer im.mu.Unlock()
	var out []core.Drop
	for _, u := range im.ups {
		out = append(out, u.drops...)
	}
	return out
}

// ImportedTools lists the registry's imported tools (IM-33), sorted by name.
func (im *Importer) ImportedTools() []core.ImportedTool {
	var out []core.ImportedTool
	for _, t := range im.bus.Snapshot().Tools {
		if t.Source == "" {
			continue
		}
		it := core.ImportedTool{Name: t.Name, Source: t.Source, RemoteName: t.RemoteName, Kind: t.Kind, Description: t.Description}
		if im.review != nil {
			it.ReviewState = im.review(t)
		}
		out = append(out, it)
	}
	return out
}

// Close stops pending refreshes and the supervise loops, and closes every
// upstream connection (for stdio upstreams, that stops their processes).
func (im *Importer) Close() error {
	im.mu.Lock()
	im.stop()
	for _, u := range im.ups {
		if u.debounce != nil && u.debounce.Stop() {
			im.timers.Done()
		}
	}
	ups := slices.Clone(im.ups)
	im.mu.Unlock()
	im.timers.Wait()
	im.loops.Wait()
	var errs []error
	for _, u := range ups {
		u.connMu.Lock()
		if err := u.spec.Upstream.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %q: %w", u.spec.Name, err))
		}
		u.connected = false
		u.connMu.Unlock()
		im.setStatus(u, func(s *core.UpstreamStatus) { s.State = core.StateDisconnected })
	}
	return errors.Join(errs...)
}

func (im *Importer) fillSnapshot(s *core.Snapshot) {
	im.mu.Lock()
	defer im.mu.Unlock()
	s.Upstreams = make([]core.UpstreamStatus, len(im.ups))
	for i, u := range im.ups {
		s.Upstreams[i] = u.status
		s.Dropped = append(s.Dropped, u.drops...)
	}
}
