package inspect

import (
	"fmt"
	"strings"
)

// Action is what happens to a call where a kind is found (IN-1).
type Action string

const (
	ActionOff     Action = "off"
	ActionFlag    Action = "flag"
	ActionRedact  Action = "redact"
	ActionBlock   Action = "block"
	ActionApprove Action = "approve"
)

// strictness orders actions: block ends the call, approve may still let
// it through, redact changes it, flag only tells.
func (a Action) strictness() int {
	switch a {
	case ActionFlag:
		return 1
	case ActionRedact:
		return 2
	case ActionApprove:
		return 3
	case ActionBlock:
		return 4
	}
	return 0
}

// Direction is which way the content flows.
type Direction int

const (
	Arguments Direction = iota
	Results
)

func (d Direction) String() string {
	if d == Arguments {
		return "arguments"
	}
	return "result"
}

// Policy is the inspection that applies to one upstream's calls through
// one endpoint: an action per kind and direction. Built once per
// configuration; safe for concurrent use. A nil *Policy inspects nothing.
type Policy struct {
	Inspector *Inspector
	// Actions per direction, indexed like Types.
	Arguments, Results [4]Action
	// MaxBytes bounds the content read (see Check); 0: no bound.
	MaxBytes int
}

// Action is the action p takes on kind t in direction d.
func (p *Policy) Action(d Direction, t Type) Action {
	acts := &p.Arguments
	if d == Results {
		acts = &p.Results
	}
	for i, x := range Types {
		if x == t && acts[i] != "" {
			return acts[i]
		}
	}
	return ActionOff
}

// Set is the kinds p looks for in direction d.
func (p *Policy) Set(d Direction) Set {
	var s Set
	if p == nil {
		return 0
	}
	for _, t := range Types {
		if a := p.Action(d, t); a != ActionOff {
			s |= Bit(t)
		}
	}
	return s
}

// Reported is a finding with the action taken on it, as the result's
// _meta, the audit, traces and the console show it: never the value.
type Reported struct {
	Type     Type   `json:"type"`
	Detector string `json:"detector"`
	Path     string `json:"path"`
	Action   Action `json:"action"`
	// In is "arguments" or "result": which document Path points into.
	In string `json:"in"`
}

// Report is what Check found in one piece of content.
type Report struct {
	Findings []Finding
	Reported []Reported
	// Action is the strictest action of the findings (ActionOff when none).
	Action Action
	// Oversize: the content was over MaxBytes and not read; Action is the
	// strictest action of the direction, redact read as block.
	Oversize bool
}

// OversizeDetector names the finding of content too large to read.
const OversizeDetector = "max-bytes"

// InjectionMaxBytes bounds the content the injection detector reads. It
// runs the description scanner's rules, written for a tool's few hundred
// bytes of text: gated, ordinary text costs them under a millisecond a
// kilobyte, but text full of orders still about ten, so one large hostile
// result unbounded would take seconds of CPU. Above the bound the
// injection action applies to the whole as unread, like MaxBytes for
// every detector, while the others still read it.
const InjectionMaxBytes = 32 << 10

// Check inspects raw (a call's arguments object, or a CallToolResult) in
// direction d. Of a result, the text of content blocks (and embedded
// resources) and the strings of structuredContent are read; _meta and
// other members are not. A nil Policy or one off for d returns an empty
// report without reading raw.
func (p *Policy) Check(d Direction, raw []byte) (Report, error) {
	return p.check(d, raw, d == Arguments, d.String())
}

// CheckMessage inspects a notification an upstream sends during a call
// (progress, log messages) under the result rules: every string of its
// params is read. in names it in the findings ("progress", "log").
func (p *Policy) CheckMessage(raw []byte, in string) (Report, error) {
	return p.check(Results, raw, true, in)
}

func (p *Policy) check(d Direction, raw []byte, everyString bool, in string) (Report, error) {
	set := p.Set(d)
	if set == 0 {
		return Report{Action: ActionOff}, nil
	}
	if p.MaxBytes > 0 && len(raw) > p.MaxBytes {
		strictest := ActionOff
		var t Type
		for _, x := range Types {
			a := p.Action(d, x)
			if a == ActionRedact {
				a = ActionBlock // no span is known to redact
			}
			if a.strictness() > strictest.strictness() {
				strictest, t = a, x
			}
		}
		return Report{Action: strictest, Oversize: true,
			Reported: []Reported{{Type: t, Detector: OversizeDetector, Path: "", Action: strictest, In: in}}}, nil
	}
	var unread []Reported
	if set.Has(Injection) && len(raw) > InjectionMaxBytes {
		set &^= Bit(Injection)
		a := p.Action(d, Injection)
		if a == ActionRedact {
			a = ActionBlock // no span is known to redact
		}
		unread = append(unread, Reported{Type: Injection, Detector: OversizeDetector, Path: "", Action: a, In: in})
	}
	texts, err := readStrings(raw, everyString)
	if err != nil {
		return Report{}, err
	}
	var fs []Finding
	for _, t := range texts {
		fs = append(fs, p.Inspector.Text(t.s, t.path, set)...)
	}
	r := Report{Findings: fs, Action: ActionOff, Reported: unread}
	for _, u := range unread {
		r.Action = u.Action
	}
	for _, f := range fs {
		a := p.Action(d, f.Type)
		r.Reported = append(r.Reported, Reported{Type: f.Type, Detector: f.Detector, Path: f.Path, Action: a, In: in})
		if a.strictness() > r.Action.strictness() {
			r.Action = a
		}
	}
	return r, nil
}

// Redactable are the findings whose action is redact.
func (r Report) Redactable(p *Policy, d Direction) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if p.Action(d, f.Type) == ActionRedact {
			out = append(out, f)
		}
	}
	return out
}

// kindWords are the kinds as an operator or a model reads them.
var kindWords = map[Type]string{
	Secrets:   "a credential",
	PII:       "personal data",
	Injection: "instructions addressed to the model",
	Links:     "a link that would send data to an unknown host",
}

// Summary says what was found where, for error texts and approval
// reasons: kinds, detectors and places, never values.
func (r Report) Summary(d Direction) string {
	if r.Oversize {
		return fmt.Sprintf("the %s is larger than the inspection limit and was not read", d)
	}
	var parts []string
	seen := map[string]bool{}
	for _, f := range r.Reported {
		if f.Action == ActionOff || f.Action == ActionFlag {
			continue
		}
		s := fmt.Sprintf("%s (%s at %s)", kindWords[f.Type], f.Detector, placeOf(f.Path))
		if !seen[s] {
			seen[s] = true
			parts = append(parts, s)
		}
	}
	verb := "hold"
	if d == Results {
		verb = "held"
	}
	return fmt.Sprintf("the %s %s %s", d, verb, strings.Join(parts, ", "))
}

func placeOf(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}
