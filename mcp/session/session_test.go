package session

import "testing"

// allPhases is every phase a record can be in: each state, and Ending
// with each cause.
func allPhases() []Phase {
	ps := []Phase{{State: Absent}, {State: Live}, {State: Parked}, {State: TakenIdle}}
	for c := ByClient; c <= Dropped; c++ {
		ps = append(ps, Phase{State: Ending, Cause: c})
	}
	return ps
}

func allEvents() []Event {
	es := []Event{{Kind: Open}, {Kind: Park}, {Kind: Wake}, {Kind: TakeIdle}, {Kind: Forget}}
	for c := ByClient; c <= Dropped; c++ {
		es = append(es, Event{Kind: End, Cause: c})
	}
	return es
}

// SV-2, OP-5: Step is exactly the table of the package's doc comment,
// written out here once more pair by pair: every pair listed moves as
// listed, every other pair is refused and leaves the phase as it was.
func TestStepIsTheTableSV2(t *testing.T) {
	type pair struct {
		from Phase
		ev   Event
	}
	type move struct {
		to  Phase
		out Outcome
	}
	live, parked, idle := Phase{State: Live}, Phase{State: Parked}, Phase{State: TakenIdle}
	ending := func(c Cause) Phase { return Phase{State: Ending, Cause: c} }
	end := func(c Cause) Event { return Event{Kind: End, Cause: c} }
	table := map[pair]move{
		{Phase{}, Event{Kind: Open}}:    {live, Moved},
		{live, Event{Kind: Park}}:       {parked, Moved},
		{parked, Event{Kind: Wake}}:     {live, Moved},
		{live, Event{Kind: TakeIdle}}:   {idle, Moved},
		{parked, Event{Kind: TakeIdle}}: {idle, Moved},
	}
	for c := ByClient; c <= Dropped; c++ {
		for _, from := range []Phase{live, parked, idle} {
			table[pair{from, end(c)}] = move{ending(c), Claimed}
		}
		table[pair{ending(c), Event{Kind: Forget}}] = move{Phase{}, Moved}
	}
	for _, was := range []Cause{Idle, Dropped} {
		for _, now := range []Cause{ByClient, Elsewhere} {
			table[pair{ending(was), end(now)}] = move{ending(now), Upgraded}
		}
	}
	seen := 0
	for _, from := range allPhases() {
		for _, ev := range allEvents() {
			to, out := Step(from, ev)
			want, listed := table[pair{from, ev}]
			if !listed {
				want = move{from, Refused}
			} else {
				seen++
			}
			if to != want.to || out != want.out {
				t.Errorf("%s on %s %s: got %s (%s), want %s (%s)", from, ev.Kind, ev.Cause, to, out, want.to, want.out)
			}
		}
	}
	if seen != len(table) {
		t.Errorf("the table lists %d pairs, %d of them reachable from the phases and events", len(table), seen)
	}
}

// SV-2: only a live or parked session serves; an end is claimed once, and
// only an end for good upgrades one under way that is not.
func TestPhasePropertiesSV2(t *testing.T) {
	for _, p := range allPhases() {
		serves := p.State == Live || p.State == Parked
		if p.Serves() != serves {
			t.Errorf("%s serves: %v", p, p.Serves())
		}
		for _, ev := range allEvents() {
			to, out := Step(p, ev)
			if out == Claimed && !p.Endable() {
				t.Errorf("%s: an end claimed from a phase no end may claim", p)
			}
			if to.State == Ending && p.State == Ending && to.Cause != p.Cause && !(to.Cause.ForGood() && !p.Cause.ForGood()) {
				t.Errorf("%s → %s: the cause of an end under way changed other than to one for good", p, to)
			}
			if p.State == Ending && to.Serves() {
				t.Errorf("%s → %s: an end under way served again", p, to)
			}
		}
	}
	for c := ByClient; c <= Dropped; c++ {
		if c.ForGood() != (c == ByClient || c == Elsewhere) {
			t.Errorf("%s for good: %v", c, c.ForGood())
		}
	}
}

func TestNamesSV2(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Phase{State: Ending, Cause: Idle}.String(), "ending(idle)"},
		{Phase{State: Parked}.String(), "parked"},
		{State(99).String(), "state(99)"},
		{Cause(99).String(), "cause(99)"},
		{Kind(99).String(), "kind(99)"},
		{TakeIdle.String(), "take idle"},
		{Upgraded.String(), "upgraded"},
		{Outcome(99).String(), "outcome(99)"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
