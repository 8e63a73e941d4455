package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/idtest"
)

// subcommandWord is a bare lowercase word of a synopsis or a Subcommands
// list: a subcommand's name, where flags start with "-" and placeholders
// are in capitals.
var subcommandWord = regexp.MustCompile(`^[a-z][a-z-]*$`)

// helpPages runs `toolgate --help`, every command's --help and the --help of
// every subcommand its help names, and returns each page by its command
// line. Every flag set a command builds is printed by its --help.
func helpPages(t *testing.T) map[string]string {
	t.Helper()
	pages := map[string]string{}
	code, out, errOut := runCLI(t, "--help")
	if code != 0 {
		t.Fatalf("toolgate --help: %d %s", code, errOut)
	}
	pages["toolgate --help"] = out
	for _, cmd := range commands() {
		code, out, errOut := runCLI(t, cmd.name, "--help")
		if code != 0 {
			t.Fatalf("toolgate %s --help: %d %s", cmd.name, code, errOut)
		}
		pages["toolgate "+cmd.name+" --help"] = out
		for _, sub := range subcommandsIn(out) {
			code, subOut, _ := runCLI(t, cmd.name, sub, "--help")
			if code == 0 && strings.HasPrefix(subOut, "Usage: toolgate "+cmd.name+" "+sub+" ") {
				pages["toolgate "+cmd.name+" "+sub+" --help"] = subOut
			}
		}
	}
	return pages
}

// subcommandsIn reads the words of a help page's synopsis and of its
// Subcommands list that may name subcommands.
func subcommandsIn(page string) []string {
	var words []string
	lines := strings.Split(page, "\n")
	if rest, ok := strings.CutPrefix(lines[0], "Usage: toolgate "); ok {
		_, synopsis, _ := strings.Cut(rest, " ")
		words = append(words, strings.FieldsFunc(synopsis, func(r rune) bool { return strings.ContainsRune(" []|…", r) })...)
	}
	in := false
	for _, l := range lines {
		switch {
		case l == "Subcommands:":
			in = true
		case in && strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "   "):
			words = append(words, strings.Fields(l)[0])
		case in && l == "":
			in = false
		}
	}
	var subs []string
	for _, w := range words {
		if subcommandWord.MatchString(w) && !slices.Contains(subs, w) {
			subs = append(subs, w)
		}
	}
	return subs
}

// Operators read plain words: no command's help, flag help included, names
// a requirement id. (QB-4)
func TestHelpHasNoRequirementIDs(t *testing.T) {
	pages := helpPages(t)
	// The walk reaches subcommands and their flags, not only the top.
	for _, want := range []string{"toolgate serve --help", "toolgate policy test --help", "toolgate review approve --help", "toolgate audit verify --help"} {
		if _, ok := pages[want]; !ok {
			t.Errorf("the walk did not reach %q; it read %d pages", want, len(pages))
		}
	}
	if p := pages["toolgate serve --help"]; !strings.Contains(p, "-insecure-open") {
		t.Errorf("serve --help shows no flags:\n%s", p)
	}
	for line, page := range pages {
		if ids := idtest.Find(page); len(ids) > 0 {
			t.Errorf("%s names %s:\n%s", line, strings.Join(ids, ", "), page)
		}
	}
}
