package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/inspect"
	"github.com/toolgate/toolgate/mcp/session"
)

// Flow labels (IN-3). A tool's labels are its upstream's configured ones,
// those of the globs its name matches, and open-world, read-only and
// destructive where its annotations say so (true, explicitly: MCP's
// defaults would make every unannotated tool open-world and destructive).
// A session gathers the labels of the tools it called, untrusted when a
// result had an injection finding or came from an open-world tool, and
// private when a result had a secrets or PII finding. Policy rules read
// them as tool.labels and session.labels.

// Built-in labels.
const (
	LabelOpenWorld   = "open-world"
	LabelReadOnly    = "read-only"
	LabelDestructive = "destructive"
	LabelUntrusted   = "untrusted"
	LabelPrivate     = "private"
)

// LabelRules are one upstream's configured labels.
type LabelRules struct {
	Labels []string
	// ByGlob: labels of the tools whose own or gateway name matches.
	ByGlob map[string][]string
}

// toolLabels are t's flow labels, sorted, without repeats.
func (in *Inspection) toolLabels(t core.Tool) []string {
	return ToolLabels(in.Labels[t.Source], t)
}

// ToolLabels are t's flow labels under its upstream's rules r (nil: none
// configured), sorted, without repeats (IN-3).
func ToolLabels(r *LabelRules, t core.Tool) []string {
	var out []string
	if r != nil {
		out = append(out, r.Labels...)
		for g, ls := range r.ByGlob {
			if core.MatchAny([]string{g}, t.RemoteName) || core.MatchAny([]string{g}, t.Name) {
				out = append(out, ls...)
			}
		}
	}
	if len(t.Annotations) > 0 {
		var a struct {
			OpenWorld   *bool `json:"openWorldHint"`
			ReadOnly    *bool `json:"readOnlyHint"`
			Destructive *bool `json:"destructiveHint"`
		}
		if json.Unmarshal(t.Annotations, &a) == nil {
			for l, on := range map[string]*bool{LabelOpenWorld: a.OpenWorld, LabelReadOnly: a.ReadOnly, LabelDestructive: a.Destructive} {
				if on != nil && *on {
					out = append(out, l)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// gathered are the labels a finished call adds to its session: the tool's,
// untrusted and private from what reached the client.
func gathered(toolLabels []string, found []inspect.Reported) []string {
	out := slices.Clone(toolLabels)
	if slices.Contains(toolLabels, LabelOpenWorld) {
		out = append(out, LabelUntrusted)
	}
	for _, f := range found {
		if f.In == "arguments" || f.Action == inspect.ActionBlock || f.Action == inspect.ActionOff {
			continue // not read by the client, or not from the upstream
		}
		switch f.Type {
		case inspect.Injection:
			out = append(out, LabelUntrusted)
		case inspect.Secrets, inspect.PII:
			out = append(out, LabelPrivate)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Flows outlive the replica that gathered them (IN-3). A session's labels
// live in memory where it is served, and in the store (core.FlowLabels):
// a replica that serves a flow it does not hold — a session adopted after
// its holder died or was restarted, a sessionless client's call that a
// load balancer sent elsewhere — reads the store on the flow's first call
// there, and a flow this replica holds whose labels grew on another
// replica (told by FlowChangedElsewhere), or that it let go of as idle,
// is read again. Were the labels only in memory, landing the next
// request on another replica, or on this one after a restart, would
// start the flow clean and escape a rule on session.labels.
//
// Labels only grow, so the store is written when a call adds labels the
// flow did not have (rare), never per call, and before the call's result
// is handed back: a crash between the two cannot lose what the client
// read. A write that fails withholds that result (fail closed): the
// labels would otherwise live on this replica only. A session is served by
// one replica at a time but for a moment (one adopted while the store did
// not list its holder yet): the others are told when its labels grow, and
// read them again. A sessionless client's next call may land anywhere:
// over a shared store each of its calls reads its flow (one read by key).
// A sessionless flow is also written when its stored until would come
// within a flow window of the call (at most every quarter window while it
// calls), so the store keeps it at least a window after its last call on
// any replica. A session's flow is kept for the adoption window and a
// margin after its last write: no replica may continue an id older than
// that (resume.go).

// flowBacking is where an endpoint keeps its flows beyond memory; a zero
// value keeps them in memory only.
type flowBacking struct {
	store core.FlowLabels
	// grew is told of a session's flow whose labels grew in the store (its
	// digest), for the other replicas to read it again; nil tells no one,
	// and means no other replica shares the store.
	grew func(digest string)
	// keep is how long a session's flow is kept after its last write.
	keep time.Duration
	// sessions: sessions' flows go to the store too. Not when session ids
	// are not sealed: no other replica, and no later process, can
	// continue such a session.
	sessions bool
}

// forFlow is b as it applies to a flow: without the store for a session
// that cannot be continued elsewhere.
func (b flowBacking) forFlow(sessioned bool) flowBacking {
	if sessioned && !b.sessions {
		b.store = nil
	}
	return b
}

// flowBacking is the endpoint's backing, from its options.
func (e *Endpoint) flowBacking() flowBacking {
	return flowBacking{store: e.opts.FlowLabels, grew: e.opts.FlowGrew, keep: session.ContinuableFor(e.opts.SessionIdleTimeout),
		sessions: e.ids.Resumable()}
}

// sessionlessKeep is how long past a call a sessionless flow is kept in
// the store: the window and a quarter, so a touch every quarter window
// keeps it at least the window after the last call.
func sessionlessKeep(window time.Duration) time.Duration { return window + window/4 }

// flowDigest names flow key in the store and in events between replicas:
// a digest, so a session id never leaves the gateway.
func flowDigest(key string) string {
	sum := sha256.Sum256([]byte("toolgate flow labels\x00" + key))
	return hex.EncodeToString(sum[:16])
}

// errFlowUnread and errFlowUnrecorded are what the client reads when the
// store failed under its flow; the log has the cause.
var (
	errFlowUnread     = errors.New("the call is refused: the gateway could not read what this session has already read")
	errFlowUnrecorded = errors.New("the result is withheld: the gateway could not record what this session has read")
)

// flowStore keeps the labels each flow gathered: a session's until it
// ends, a sessionless client's (per actor and client name) until it has
// made no call for the flow window. Safe for concurrent use.
type flowStore struct {
	mu    sync.Mutex
	flows map[string]*flow
	calls int // since the last sweep
	// news counts what changedElsewhere was told: a read of the store that
	// news overtook may predate it, and leaves its flow stale.
	news uint64
}

type flow struct {
	labels    []string
	last      time.Time
	sessioned bool
	digest    string // flowDigest of its key
	// until is how long the store keeps the flow, as this replica last
	// wrote or read it; zero when it never did.
	until time.Time
	// unsaved: labels here may be missing from the store (a write failed);
	// the next call writes them all.
	unsaved bool
	// stale: the store may hold labels this copy lacks (they grew on
	// another replica); the next call reads it again.
	stale bool
}

// sweepEvery: a sweep of expired sessionless flows every so many calls
// keeps the map bounded by the clients active within the window.
const sweepEvery = 1024

// lapsed reports whether f is gone at now: a sessionless flow idle here
// for longer than the window.
func (f *flow) lapsed(window time.Duration, now time.Time) bool {
	return !f.sessioned && now.Sub(f.last) > window
}

// labels are flow key's labels at now. A flow not held here (or lapsed
// here, or grown elsewhere) is read from the store, if there is one.
func (s *flowStore) labels(ctx context.Context, b flowBacking, key string, sessioned bool, window time.Duration, now time.Time) ([]string, error) {
	b = b.forFlow(sessioned)
	s.mu.Lock()
	f := s.flows[key]
	// A sessionless client's calls are spread over the replicas by design:
	// with replicas sharing the store, every call reads it, since the last
	// one may have been served elsewhere a moment ago.
	held := f != nil && !f.lapsed(window, now) && (sessioned || b.grew == nil)
	if b.store == nil || held && !f.stale {
		var out []string
		if f != nil && !f.lapsed(window, now) {
			out = slices.Clone(f.labels)
		}
		s.mu.Unlock()
		return out, nil
	}
	news := s.news
	s.mu.Unlock()
	stored, until, err := b.store.FlowLabels(ctx, flowDigest(key), now)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.flows == nil {
		s.flows = map[string]*flow{}
	}
	f = s.flows[key]
	if f == nil || f.lapsed(window, now) {
		// Held from now on, read or not: the next call does not ask again.
		f = &flow{sessioned: sessioned, last: now, digest: flowDigest(key)}
		s.flows[key] = f
	}
	f.stale = s.news != news
	f.labels = union(f.labels, stored)
	if until.After(f.until) {
		f.until = until
	}
	return slices.Clone(f.labels), nil
}

// add adds labels to flow key at now, and writes the flow to the store
// when it grew (or a touch is due, or an earlier write failed) before it
// returns.
func (s *flowStore) add(ctx context.Context, b flowBacking, key string, sessioned bool, window time.Duration, now time.Time, labels []string) error {
	b = b.forFlow(sessioned)
	s.mu.Lock()
	if s.flows == nil {
		s.flows = map[string]*flow{}
	}
	if s.calls++; s.calls >= sweepEvery {
		s.calls = 0
		for k, f := range s.flows {
			if f.lapsed(window, now) {
				delete(s.flows, k)
			}
		}
	}
	f := s.flows[key]
	if f == nil || f.lapsed(window, now) {
		f = &flow{sessioned: sessioned, digest: flowDigest(key)}
		s.flows[key] = f
	}
	f.last = now
	merged := union(f.labels, labels)
	grown := len(merged) > len(f.labels)
	f.labels = merged
	var until time.Time
	write := false
	if b.store != nil && len(f.labels) > 0 {
		if sessioned {
			until, write = now.Add(b.keep), grown || f.unsaved
		} else {
			until, write = now.Add(sessionlessKeep(window)), grown || f.unsaved || f.until.Before(now.Add(window))
		}
	}
	var snapshot []string
	if write {
		snapshot, f.unsaved = slices.Clone(f.labels), false
	}
	s.mu.Unlock()
	if !write {
		return nil
	}
	err := b.store.AddFlowLabels(ctx, f.digest, snapshot, now, until)
	s.mu.Lock()
	if err != nil {
		f.unsaved = true
	} else if until.After(f.until) {
		f.until = until
	}
	s.mu.Unlock()
	if err == nil && grown && sessioned && b.grew != nil {
		b.grew(f.digest)
	}
	return err
}

// union is a and b, sorted, without repeats; a is not changed.
func union(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

func (s *flowStore) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.flows, key)
}

// changedElsewhere marks the flow of digest (every flow for "") as grown
// on another replica: its next call here reads the store again.
func (s *flowStore) changedElsewhere(digest string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.news++
	for _, f := range s.flows {
		if digest == "" || f.digest == digest {
			f.stale = true
		}
	}
}

// FlowChangedElsewhere is told that another replica added labels to the
// flow named digest, or, for "", that such news may have been missed: the
// flows concerned are read from the store again on their next call here
// (IN-3).
func (e *Endpoint) FlowChangedElsewhere(digest string) {
	e.flows.changedElsewhere(digest)
}

// flowKey names the flow a call belongs to: its session, or (2026-07-28,
// no session) its actor and client.
func flowKey(session string, actor core.Actor, client string) (string, bool) {
	if session != "" {
		return "session\x00" + session, true
	}
	return "actor\x00" + actor.Tenant + "\x00" + actor.ID + "\x00client\x00" + client, false
}

// flowCall is what one call reads and adds of its flow.
type flowCall struct {
	key       string
	sessioned bool
	window    time.Duration
	tool      []string // tool.labels
	session   []string // session.labels before this call
}

// flowOf reads the call's flow (IN-3); nil when the endpoint inspects
// nothing and labels nothing. An error: the store could not be read, and
// the call is refused rather than decided without what the flow read.
func (e *Endpoint) flowOf(ctx context.Context, in *Inspection, client string, actor core.Actor, session string, t core.Tool) (*flowCall, error) {
	if in == nil {
		return nil, nil
	}
	key, sessioned := flowKey(session, actor, client)
	fc := &flowCall{key: key, sessioned: sessioned, window: in.FlowWindow, tool: in.toolLabels(t)}
	var err error
	fc.session, err = e.flows.labels(ctx, e.flowBacking(), key, sessioned, fc.window, time.Now())
	if err != nil {
		e.opts.Logger.Error("reading a session's flow labels from the store failed; the call is refused",
			"endpoint", e.opts.Path, "actor", actor.ID, "err", err)
		return nil, errFlowUnread
	}
	return fc, nil
}

// finishFlow adds what the call gathered to its flow, in the store too
// before the result goes back; an error withholds the result.
func (e *Endpoint) finishFlow(ctx context.Context, fc *flowCall, found []inspect.Reported) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flowWriteWait)
	defer cancel()
	if err := e.flows.add(ctx, e.flowBacking(), fc.key, fc.sessioned, fc.window, time.Now(), gathered(fc.tool, found)); err != nil {
		e.opts.Logger.Error("recording a session's flow labels in the store failed; the call's result is withheld",
			"endpoint", e.opts.Path, "err", err)
		return errFlowUnrecorded
	}
	return nil
}

// flowWriteWait bounds the store write a call's result waits for; a
// client that went away meanwhile does not cut it short.
const flowWriteWait = 10 * time.Second
