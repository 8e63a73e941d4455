// Package flows holds flow labels (IN-3): the labels a tool carries, the
// labels a finished call adds to its flow, and the set of flows one
// replica holds, kept beyond memory in a core.FlowLabels store.
//
// A tool's labels are its upstream's configured ones, those of the globs
// its name matches, and open-world, read-only and destructive where its
// annotations say so (true, explicitly: MCP's defaults would make every
// unannotated tool open-world and destructive). A session gathers the
// labels of the tools it called, untrusted when a result had an injection
// finding or came from an open-world tool, and private when a result had
// a secrets or PII finding. Policy rules read them as tool.labels and
// session.labels.
package flows

import (
	"encoding/json"
	"slices"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/inspect"
)

// Built-in labels.
const (
	OpenWorld   = "open-world"
	ReadOnly    = "read-only"
	Destructive = "destructive"
	Untrusted   = "untrusted"
	Private     = "private"
)

// Rules are one upstream's configured labels.
type Rules struct {
	Labels []string
	// ByGlob: labels of the tools whose own or gateway name matches.
	ByGlob map[string][]string
}

// ToolLabels are t's flow labels under its upstream's rules r (nil: none
// configured), sorted, without repeats (IN-3).
func ToolLabels(r *Rules, t core.Tool) []string {
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
			for l, on := range map[string]*bool{OpenWorld: a.OpenWorld, ReadOnly: a.ReadOnly, Destructive: a.Destructive} {
				if on != nil && *on {
					out = append(out, l)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Gathered are the labels a finished call adds to its session: the tool's,
// untrusted and private from what reached the client.
func Gathered(toolLabels []string, found []inspect.Reported) []string {
	out := slices.Clone(toolLabels)
	if slices.Contains(toolLabels, OpenWorld) {
		out = append(out, Untrusted)
	}
	for _, f := range found {
		if f.In == "arguments" || f.Action == inspect.ActionBlock || f.Action == inspect.ActionOff {
			continue // not read by the client, or not from the upstream
		}
		switch f.Type {
		case inspect.Injection:
			out = append(out, Untrusted)
		case inspect.Secrets, inspect.PII:
			out = append(out, Private)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
