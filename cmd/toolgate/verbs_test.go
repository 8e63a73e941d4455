package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/admin"
)

// Every verb an admin route declares is a command of the CLI, and its
// second word a subcommand or an argument its synopsis offers (CO-9).
func TestRouteVerbsAreCommandsCO9(t *testing.T) {
	byName := map[string]command{}
	for _, c := range commands() {
		byName[c.name] = c
	}
	verbs := 0
	for _, r := range admin.Routes() {
		if r.Verb == "" {
			continue
		}
		verbs++
		name, sub, _ := strings.Cut(r.Verb, " ")
		c, ok := byName[name]
		if !ok {
			t.Errorf("%s: verb %q names no command", r.Pattern, r.Verb)
			continue
		}
		if sub == "" {
			continue
		}
		if name == "review" {
			if !slices.ContainsFunc(reviewSubs(), func(s reviewSub) bool { return s.name == sub }) {
				t.Errorf("%s: review has no subcommand %q", r.Pattern, sub)
			}
			continue
		}
		words := strings.FieldsFunc(c.args, func(r rune) bool { return r == ' ' || r == '[' || r == ']' || r == '|' })
		if !slices.Contains(words, sub) {
			t.Errorf("%s: %q is not in the synopsis of %s: %q", r.Pattern, sub, name, c.args)
		}
	}
	if verbs < 8 {
		t.Fatalf("%d routes declare a verb; at least 8 commands run one", verbs)
	}
}
