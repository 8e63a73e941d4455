package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/cel-go/cel"
	"golang.org/x/time/rate"

	"github.com/toolgate/toolgate/core"
)

// Per is what a limit counts calls by (PO-3).
type Per string

const (
	PerActor     Per = "actor"
	PerActorTool Per = "actor+tool"
	PerUpstream  Per = "upstream"
	PerEndpoint  Per = "endpoint"
)

// Valid reports whether p is a Per a limit may have.
func (p Per) Valid() bool {
	return p == PerActor || p == PerActorTool || p == PerUpstream || p == PerEndpoint
}

// LimitSpec is one configured limit: a token-bucket rate (per replica), a
// windowed quota (counted in the store, so replicas share it), or both.
type LimitSpec struct {
	ID  string
	Per Per
	// Match, when set, is a CEL expression over the same variables as a
	// rule: the limit counts only the calls it holds for.
	Match string
	// Rate is calls per second; 0 sets no rate. Burst is the bucket's size.
	Rate  float64
	Burst int
	// Quota calls per Window; 0 sets no quota. Windows are aligned to the
	// Unix epoch in UTC (a day runs from midnight UTC).
	Quota  int64
	Window time.Duration
	// Path is the limit's key path (`limits[0]`), for errors.
	Path string
}

// ParseRate reads "N/UNIT" (10/s, 100/min, 200/day): N may have a
// fraction; UNIT is s, sec, second, m, min, minute, h, hour, d or day.
func ParseRate(s string) (n float64, per time.Duration, err error) {
	num, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, 0, fmt.Errorf("%q is not N/UNIT, such as 10/s or 200/day", s)
	}
	n, err = strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || n <= 0 || math.IsInf(n, 0) || math.IsNaN(n) {
		return 0, 0, fmt.Errorf("%q: the count must be a positive number", s)
	}
	switch strings.TrimSpace(unit) {
	case "s", "sec", "second":
		per = time.Second
	case "m", "min", "minute":
		per = time.Minute
	case "h", "hour":
		per = time.Hour
	case "d", "day":
		per = 24 * time.Hour
	default:
		return 0, 0, fmt.Errorf("%q: the unit must be s, min, h or day", s)
	}
	return n, per, nil
}

// LimitedError is a call a limit refused; RetryAfter is when the limit
// lets the next one through.
type LimitedError struct {
	ID         string
	RetryAfter time.Duration
}

// RetrySeconds is RetryAfter in whole seconds, rounded up, at least 1.
func (e *LimitedError) RetrySeconds() int64 {
	return max(1, int64(math.Ceil(e.RetryAfter.Seconds())))
}

func (e *LimitedError) Error() string {
	return fmt.Sprintf("rate limit reached for %s; retry after %ds", e.ID, e.RetrySeconds())
}

// ErrQuotaUncounted: the store could not count a quota; the call is
// refused rather than let past a quota nobody counted.
var ErrQuotaUncounted = errors.New("the call could not be counted against its quota")

// Limits are the configured limits of one gateway, shared by its
// endpoints. Safe for concurrent use.
//
// A quota is counted in the store in leases (PO-3): a replica takes a
// block of calls at once (LeaseQuota) and runs them without asking the
// store again. A key's first lease in a window is one call, each next one
// twice the last, up to leaseCap: a party that calls rarely is counted
// call by call, one that calls often asks the store once every few
// hundred calls. The store never counts past the quota, so replicas
// together never run more calls than it allows; what a replica has leased
// and not run, at most one lease a key, is counted as used for the
// others until it is run, returned (Close) or its window ends.
type Limits struct {
	limits []*limit
	slots  int // inputs the matches' guards read
	quotas core.QuotaCounter
	now    func() time.Time
	// closed: leases are returned; a call still counted here leases one
	// unit at a time and keeps none.
	closed atomic.Bool
}

type limit struct {
	LimitSpec
	match cel.Program // nil: every call
	loops bool
	guard guard // settles the match without CEL where it can

	mu      sync.Mutex
	buckets map[string]*rate.Limiter

	leaseMu sync.Mutex
	leases  map[string]*lease // by quota key
}

// lease is what one replica holds of one key's quota in one window.
type lease struct {
	mu     sync.Mutex
	window time.Time
	left   int64 // leased, not yet run
	next   int64 // the size of the next lease
	// dead: swept from the map; a caller holding it looks again.
	dead bool
}

const (
	// leaseShare: a lease is at most this share of the quota, so at most
	// that much of it sits unused with each replica.
	leaseShare = 64
	// maxLease bounds a lease whatever the quota.
	maxLease = 1024
	// sweepLeases is the lease count above which a new key first drops
	// the leases that hold nothing or belong to an ended window.
	sweepLeases = 4096
)

// leaseCap is the largest lease of lim's quota.
func (lim *limit) leaseCap() int64 { return max(1, min(maxLease, lim.Quota/leaseShare)) }

// NewLimits compiles specs. quotas counts the windowed quotas; a spec
// with a quota and a nil quotas is an error.
func NewLimits(specs []LimitSpec, quotas core.QuotaCounter) (*Limits, error) {
	e, err := env()
	if err != nil {
		return nil, err
	}
	l := &Limits{quotas: quotas, now: time.Now}
	var gs guards
	var errs []error
	for i, s := range specs {
		if s.Path == "" {
			s.Path = fmt.Sprintf("limits[%d]", i)
		}
		if !s.Per.Valid() {
			errs = append(errs, &Error{Path: s.Path + ".per", Message: fmt.Sprintf("%q is not actor, actor+tool, upstream or endpoint", s.Per)})
			continue
		}
		if s.Quota > 0 && quotas == nil {
			errs = append(errs, &Error{Path: s.Path + ".quota", Message: "the store cannot count quotas"})
			continue
		}
		lim := &limit{LimitSpec: s, buckets: map[string]*rate.Limiter{}, leases: map[string]*lease{}}
		if s.Match != "" {
			ast, err := compile(s.Match)
			if err != nil {
				errs = append(errs, &Error{Path: s.Path + ".match", Message: err.Error()})
				continue
			}
			lim.loops, lim.guard = hasLoop(ast), gs.of(ast)
			var opts []cel.ProgramOption
			if lim.loops {
				opts = append(opts, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(100))
			}
			if lim.match, err = e.Program(ast, opts...); err != nil {
				errs = append(errs, &Error{Path: s.Path + ".match", Message: err.Error()})
				continue
			}
		}
		l.limits = append(l.limits, lim)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	l.slots = len(gs.slots)
	return l, nil
}

// Empty reports whether there is no limit at all.
func (l *Limits) Empty() bool { return l == nil || len(l.limits) == 0 }

// key is what the limit counts in's call by.
func (lim *limit) key(in *Input) string {
	switch lim.Per {
	case PerActor:
		return in.Actor.Tenant + "\x00" + in.Actor.ID
	case PerActorTool:
		return in.Actor.Tenant + "\x00" + in.Actor.ID + "\x00" + in.Tool.Name
	case PerUpstream:
		return in.Tool.Source
	}
	return in.Endpoint.Path
}

// quotaKey is the store's key of in's count: the limit's id, a space
// (which no id has), and the counted parts as a JSON array, so no actor
// id can pass for another's and the key is text every store keeps (no
// NUL, which PostgreSQL's text refuses).
func (lim *limit) quotaKey(in *Input) string {
	var parts []string
	switch lim.Per {
	case PerActor:
		parts = []string{in.Actor.Tenant, in.Actor.ID}
	case PerActorTool:
		parts = []string{in.Actor.Tenant, in.Actor.ID, in.Tool.Name}
	case PerUpstream:
		parts = []string{in.Tool.Source}
	default:
		parts = []string{in.Endpoint.Path}
	}
	b, _ := json.Marshal(parts)
	return quotaPrefix(lim.ID) + string(b)
}

func quotaPrefix(id string) string { return id + " " }

// applies reports whether the limit counts in's call: its match holds. A
// match that fails to evaluate counts the call: a limit is never slipped
// by an input its author did not foresee.
func (lim *limit) applies(in *Input, c **guardIn, slots int) bool {
	if lim.match == nil {
		return true
	}
	if lim.guard != nil {
		if *c == nil {
			*c = newGuardIn(in, false, slots)
		}
		switch lim.guard(*c) {
		case no:
			return false
		case yes:
			return true
		}
	}
	r := &rule{loops: lim.loops}
	matched, err := result(r.eval(lim.match, in.activation()))
	return err != nil || matched
}

// sweepBuckets is the bucket count above which a new key first drops the
// buckets that are full again: a full bucket is the same as a new one, so
// idle actors cost no memory for long.
const sweepBuckets = 4096

func (lim *limit) bucket(key string, now time.Time) *rate.Limiter {
	lim.mu.Lock()
	defer lim.mu.Unlock()
	b, ok := lim.buckets[key]
	if !ok {
		if len(lim.buckets) >= sweepBuckets {
			for k, old := range lim.buckets {
				if old.TokensAt(now) >= float64(old.Burst()) {
					delete(lim.buckets, k)
				}
			}
		}
		burst := lim.Burst
		if burst <= 0 {
			burst = max(1, int(math.Ceil(lim.Rate)))
		}
		b = rate.NewLimiter(rate.Limit(lim.Rate), burst)
		lim.buckets[key] = b
	}
	return b
}

// Take counts one call against every limit it matches, and answers a
// *LimitedError naming the first that refuses it (with when to retry), or
// an error wrapping ErrQuotaUncounted when the store cannot count. Rates
// are taken first and given back if a quota then refuses, so a refused
// call costs no rate; a quota counted before a later one refuses stays
// counted (TakeCounted answers it, to give back).
func (l *Limits) Take(ctx context.Context, in *Input) error {
	_, err := l.TakeCounted(ctx, in)
	return err
}

// Counted is what TakeCounted counted: the quotas, to give back when the
// call is refused after all.
type Counted struct {
	l     *Limits
	takes []quotaTake
}

type quotaTake struct {
	lim    *limit
	key    string
	window time.Time
}

// GiveBack uncounts the quotas of a call that was refused after it was
// counted (a bad confirm token, an operator's rejection): a quota
// budgets the calls that run. The unit goes back to the replica's lease,
// for its next call; to the store once the limits are closed; nowhere
// once its window has ended. Rates are not given back: they bound how
// often a caller may ask, refused asks included. nil gives back nothing.
func (c *Counted) GiveBack(ctx context.Context) error {
	if c == nil {
		return nil
	}
	var errs []error
	for _, t := range c.takes {
		if err := c.l.giveBack(ctx, t); err != nil {
			errs = append(errs, err)
		}
	}
	c.takes = nil
	return errors.Join(errs...)
}

func (l *Limits) giveBack(ctx context.Context, t quotaTake) error {
	if !l.closed.Load() {
		ls := t.lim.leaseOf(t.key)
		ls.mu.Lock()
		kept := !ls.dead && ls.window.Equal(t.window)
		if kept {
			ls.left++
		}
		ls.mu.Unlock()
		if kept {
			return nil
		}
	}
	if !l.now().Before(t.window.Add(t.lim.Window)) {
		return nil // the window has ended: nothing to give back to
	}
	return l.quotas.GiveBackQuota(ctx, t.key, t.window)
}

// leaseOf is key's lease, new when there is none.
func (lim *limit) leaseOf(key string) *lease {
	lim.leaseMu.Lock()
	defer lim.leaseMu.Unlock()
	ls, ok := lim.leases[key]
	if !ok {
		if len(lim.leases) >= sweepLeases {
			lim.sweepLeases()
		}
		ls = &lease{}
		lim.leases[key] = ls
	}
	return ls
}

// sweepLeases drops the leases that hold nothing now: a new one is the
// same but for the size of its next lease. Under leaseMu.
func (lim *limit) sweepLeases() {
	for k, ls := range lim.leases {
		if !ls.mu.TryLock() {
			continue // in use
		}
		if ls.left == 0 {
			ls.dead = true
			delete(lim.leases, k)
		}
		ls.mu.Unlock()
	}
}

// takeQuota counts one call against key's quota in the window starting
// at start: from the replica's lease, or from a new lease of the store.
func (l *Limits) takeQuota(ctx context.Context, lim *limit, key string, start time.Time) (bool, error) {
	prune := start.Add(-lim.Window)
	if l.closed.Load() {
		return l.quotas.TakeQuota(ctx, key, start, lim.Quota, prune)
	}
	for {
		ls := lim.leaseOf(key)
		ls.mu.Lock()
		if ls.dead {
			ls.mu.Unlock()
			continue
		}
		ok, err := l.takeLeased(ctx, lim, ls, key, start, prune)
		ls.mu.Unlock()
		return ok, err
	}
}

// takeLeased is takeQuota on ls, under ls.mu: one lease of a key is asked
// for at a time, so a replica holds at most one.
func (l *Limits) takeLeased(ctx context.Context, lim *limit, ls *lease, key string, start, prune time.Time) (bool, error) {
	if !ls.window.Equal(start) {
		// Units of an ended window end with it.
		ls.window, ls.left, ls.next = start, 0, 1
	}
	if ls.left == 0 {
		got, err := l.quotas.LeaseQuota(ctx, key, start, ls.next, lim.Quota, prune)
		if err != nil || got == 0 {
			return false, err
		}
		ls.left = got
		ls.next = min(ls.next*2, lim.leaseCap())
	}
	ls.left--
	return true, nil
}

// Close returns to the store what the replica leased and did not run, so
// other replicas can: a gateway that stops, or whose reload replaces its
// limits. Calls counted after it lease one unit at a time. A replica that
// dies without it leaves its leases counted until their windows end.
func (l *Limits) Close(ctx context.Context) error {
	if l.Empty() || l.closed.Swap(true) {
		return nil
	}
	var errs []error
	now := l.now()
	for _, lim := range l.limits {
		if lim.Quota <= 0 {
			continue
		}
		lim.leaseMu.Lock()
		leases := lim.leases
		lim.leases = map[string]*lease{}
		lim.leaseMu.Unlock()
		for key, ls := range leases {
			ls.mu.Lock()
			n, w := ls.left, ls.window
			ls.left, ls.dead = 0, true
			ls.mu.Unlock()
			if n == 0 || !now.Before(w.Add(lim.Window)) {
				continue
			}
			if err := l.quotas.ReturnQuota(ctx, key, w, n); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// TakeCounted is Take, and answers what it counted in the store (nil
// when nothing), to give back should the call be refused later.
func (l *Limits) TakeCounted(ctx context.Context, in *Input) (*Counted, error) {
	if l.Empty() {
		return nil, nil
	}
	now := l.now()
	var taken []*rate.Reservation
	giveBack := func() {
		for _, r := range taken {
			r.CancelAt(now)
		}
	}
	var quotas []*limit
	var c *guardIn // built for the first match that reads it
	for _, lim := range l.limits {
		if !lim.applies(in, &c, l.slots) {
			continue
		}
		if lim.Quota > 0 {
			quotas = append(quotas, lim)
		}
		if lim.Rate <= 0 {
			continue
		}
		r := lim.bucket(lim.key(in), now).ReserveN(now, 1)
		if d := r.DelayFrom(now); !r.OK() || d > 0 {
			r.CancelAt(now)
			giveBack()
			if !r.OK() {
				d = time.Second
			}
			return nil, &LimitedError{ID: lim.ID, RetryAfter: d}
		}
		taken = append(taken, r)
	}
	var counted *Counted
	for _, lim := range quotas {
		start := now.Truncate(lim.Window)
		key := lim.quotaKey(in)
		ok, err := l.takeQuota(ctx, lim, key, start)
		if err != nil {
			giveBack()
			return counted, fmt.Errorf("%w (limit %s): %w", ErrQuotaUncounted, lim.ID, err)
		}
		if !ok {
			giveBack()
			return counted, &LimitedError{ID: lim.ID, RetryAfter: start.Add(lim.Window).Sub(now)}
		}
		if counted == nil {
			counted = &Counted{l: l}
		}
		counted.takes = append(counted.takes, quotaTake{lim: lim, key: key, window: start})
	}
	return counted, nil
}

// Specs are the compiled limits' specs, in order.
func (l *Limits) Specs() []LimitSpec {
	if l == nil {
		return nil
	}
	out := make([]LimitSpec, len(l.limits))
	for i, lim := range l.limits {
		out[i] = lim.LimitSpec
	}
	return out
}

// UsageTop is how many of a quota's heaviest users Usage reads.
const UsageTop = 5

// Usage reads the current window's top n counted parties of the limits
// with a quota, highest first (PO-4): one indexed read per quota. The
// store counts what replicas leased; this replica's own unused units are
// taken off, so a single gateway shows the calls that ran, and replicas
// show those plus what the others hold unused.
func (l *Limits) Usage(ctx context.Context, n int) []core.QuotaUsage {
	if l.Empty() {
		return nil
	}
	return usage(ctx, l.Specs(), l.quotas, l.now(), n, l.held)
}

// held is what the replica holds unused of key's quota of limit id in the
// window starting at w.
func (l *Limits) held(id, key string, w time.Time) int64 {
	if l.closed.Load() {
		return 0
	}
	for _, lim := range l.limits {
		if lim.ID != id {
			continue
		}
		lim.leaseMu.Lock()
		ls := lim.leases[key]
		lim.leaseMu.Unlock()
		if ls == nil {
			return 0
		}
		ls.mu.Lock()
		defer ls.mu.Unlock()
		if ls.dead || !ls.window.Equal(w) {
			return 0
		}
		return ls.left
	}
	return 0
}

// Usage reads, for every spec with a quota, the window holding now and
// its top n counted parties from quotas. A store that fails is reported
// in that quota's Err, not as an error, so the others still show.
func Usage(ctx context.Context, specs []LimitSpec, quotas core.QuotaCounter, now time.Time, n int) []core.QuotaUsage {
	return usage(ctx, specs, quotas, now, n, nil)
}

func usage(ctx context.Context, specs []LimitSpec, quotas core.QuotaCounter, now time.Time, n int, held func(id, key string, w time.Time) int64) []core.QuotaUsage {
	if quotas == nil {
		return nil
	}
	var out []core.QuotaUsage
	for _, s := range specs {
		if s.Quota <= 0 || s.Window <= 0 {
			continue
		}
		start := now.Truncate(s.Window)
		u := core.QuotaUsage{Limit: s.ID, Per: string(s.Per), Quota: s.Quota, Start: start.UTC(), End: start.Add(s.Window).UTC(), Top: []core.QuotaUse{}}
		prefix := quotaPrefix(s.ID)
		counts, err := quotas.QuotaUsage(ctx, prefix, start, n)
		if err != nil {
			u.Err = err.Error()
		}
		if held != nil {
			for i := range counts {
				counts[i].Count = max(0, counts[i].Count-held(s.ID, counts[i].Key, start))
			}
			core.SortQuotaCounts(counts)
		}
		for _, c := range counts {
			rest := strings.TrimPrefix(c.Key, prefix)
			var parts []string
			if json.Unmarshal([]byte(rest), &parts) != nil {
				parts = []string{rest}
			}
			u.Top = append(u.Top, core.QuotaUse{Parts: parts, Count: c.Count})
		}
		out = append(out, u)
	}
	return out
}
