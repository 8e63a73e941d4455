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
type Limits struct {
	limits []*limit
	slots  int // inputs the matches' guards read
	quotas core.QuotaCounter
	now    func() time.Time
}

type limit struct {
	LimitSpec
	match cel.Program // nil: every call
	loops bool
	guard guard // settles the match without CEL where it can

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

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
		lim := &limit{LimitSpec: s, buckets: map[string]*rate.Limiter{}}
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
func (lim *limit) applies(in *Input, c *guardIn) bool {
	if lim.match == nil {
		return true
	}
	if lim.guard != nil {
		switch lim.guard(c) {
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

// Counted is what TakeCounted counted in the store: the quotas, to give
// back when the call is refused after all.
type Counted struct {
	quotas core.QuotaCounter
	takes  []quotaTake
}

type quotaTake struct {
	key    string
	window time.Time
}

// GiveBack uncounts the quotas of a call that was refused after it was
// counted (a bad confirm token, an operator's rejection): a quota
// budgets the calls that run. Rates are not given back: they bound how
// often a caller may ask, refused asks included. nil gives back nothing.
func (c *Counted) GiveBack(ctx context.Context) error {
	if c == nil {
		return nil
	}
	var errs []error
	for _, t := range c.takes {
		if err := c.quotas.GiveBackQuota(ctx, t.key, t.window); err != nil {
			errs = append(errs, err)
		}
	}
	c.takes = nil
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
	c := newGuardIn(in, false, l.slots)
	for _, lim := range l.limits {
		if !lim.applies(in, c) {
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
		ok, err := l.quotas.TakeQuota(ctx, key, start, lim.Quota, start.Add(-lim.Window))
		if err != nil {
			giveBack()
			return counted, fmt.Errorf("%w (limit %s): %w", ErrQuotaUncounted, lim.ID, err)
		}
		if !ok {
			giveBack()
			return counted, &LimitedError{ID: lim.ID, RetryAfter: start.Add(lim.Window).Sub(now)}
		}
		if counted == nil {
			counted = &Counted{quotas: l.quotas}
		}
		counted.takes = append(counted.takes, quotaTake{key: key, window: start})
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
// with a quota, highest first (PO-4): one indexed read per quota.
func (l *Limits) Usage(ctx context.Context, n int) []core.QuotaUsage {
	if l.Empty() {
		return nil
	}
	return Usage(ctx, l.Specs(), l.quotas, l.now(), n)
}

// Usage reads, for every spec with a quota, the window holding now and
// its top n counted parties from quotas. A store that fails is reported
// in that quota's Err, not as an error, so the others still show.
func Usage(ctx context.Context, specs []LimitSpec, quotas core.QuotaCounter, now time.Time, n int) []core.QuotaUsage {
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
