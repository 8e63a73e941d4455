package serve

import (
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/inspect"
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

// flowStore keeps the labels each flow gathered: a session's until it
// ends, a sessionless client's (per actor and client name) until it has
// made no call for the flow window. Safe for concurrent use.
type flowStore struct {
	mu    sync.Mutex
	flows map[string]*flow
	calls int // since the last sweep
}

type flow struct {
	labels    []string
	last      time.Time
	sessioned bool
}

// sweepEvery: a sweep of expired sessionless flows every so many calls
// keeps the map bounded by the clients active within the window.
const sweepEvery = 1024

func (s *flowStore) labels(key string, window time.Duration, now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.flows[key]
	if f == nil || !f.sessioned && now.Sub(f.last) > window {
		return nil
	}
	return slices.Clone(f.labels)
}

func (s *flowStore) add(key string, sessioned bool, window time.Duration, now time.Time, labels []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.flows == nil {
		s.flows = map[string]*flow{}
	}
	if s.calls++; s.calls >= sweepEvery {
		s.calls = 0
		for k, f := range s.flows {
			if !f.sessioned && now.Sub(f.last) > window {
				delete(s.flows, k)
			}
		}
	}
	f := s.flows[key]
	if f == nil || !f.sessioned && now.Sub(f.last) > window {
		f = &flow{sessioned: sessioned}
		s.flows[key] = f
	}
	f.last = now
	f.labels = append(f.labels, labels...)
	slices.Sort(f.labels)
	f.labels = slices.Compact(f.labels)
}

func (s *flowStore) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.flows, key)
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
// nothing and labels nothing.
func (e *Endpoint) flowOf(in *Inspection, client string, actor core.Actor, session string, t core.Tool) *flowCall {
	if in == nil {
		return nil
	}
	key, sessioned := flowKey(session, actor, client)
	fc := &flowCall{key: key, sessioned: sessioned, window: in.FlowWindow, tool: in.toolLabels(t)}
	fc.session = e.flows.labels(key, fc.window, time.Now())
	return fc
}

// finish adds what the call gathered to its flow.
func (e *Endpoint) finishFlow(fc *flowCall, found []inspect.Reported) {
	e.flows.add(fc.key, fc.sessioned, fc.window, time.Now(), gathered(fc.tool, found))
}
