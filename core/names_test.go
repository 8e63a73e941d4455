package core

import (
	"regexp"
	"strings"
	"testing"
)

var providerNameRule = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// IM-11, IM-12: prefixing and reshaping to the strictest provider rule.
func TestToolName(t *testing.T) {
	long200 := strings.Repeat("a", 200)
	cases := []struct {
		name, prefix, remote string
		want                 string
	}{
		{"plain", "github", "create_issue", "github_create_issue"},
		{"dots", "github", "create.issue", "github_create_issue"},
		{"slashes", "github", "repo/create.issue", "github_repo_create_issue"},
		{"dash kept", "fs", "read-file", "fs_read-file"},
		{"unicode letter", "docs", "résumé", "docs_r_sum_"},
		{"emoji is one rune", "fun", "party🎉time", "fun_party_time"},
		{"spaces", "x", "get weather now", "x_get_weather_now"},
		{"empty prefix opts out", "", "create.issue", "create_issue"},
		{"empty prefix keeps name", "", "echo", "echo"},
		{"prefix reshaped too", "my.server", "t", "my_server_t"},
		{"exactly 64", "", strings.Repeat("b", 64), strings.Repeat("b", 64)},
		{"65 truncated with hash", "", strings.Repeat("b", 65), strings.Repeat("b", 55) + "_" + nameHash(strings.Repeat("b", 65))},
		{"200 truncated with hash", "p", long200, "p_" + strings.Repeat("a", 53) + "_" + nameHash("p_"+long200)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ToolName(tc.prefix, tc.remote)
			if got != tc.want {
				t.Fatalf("ToolName(%q, %q) = %q, want %q", tc.prefix, tc.remote, got, tc.want)
			}
			if !providerNameRule.MatchString(got) {
				t.Fatalf("%q breaks ^[a-zA-Z0-9_-]{1,64}$", got)
			}
			if again := ToolName(tc.prefix, tc.remote); again != got {
				t.Fatalf("not deterministic: %q then %q", got, again)
			}
		})
	}
}

func TestReshapeNameEdgeCases(t *testing.T) {
	// An empty original still yields a legal, stable name.
	empty := ReshapeName("")
	if !providerNameRule.MatchString(empty) || empty != ReshapeName("") {
		t.Fatalf("empty name reshaped to %q", empty)
	}

	// Multi-byte runes near the cut must not leave a partial rune: the cut
	// happens on the reshaped ASCII string.
	tricky := strings.Repeat("é", 70)
	if got := ReshapeName(tricky); !providerNameRule.MatchString(got) || len(got) != 64 {
		t.Fatalf("ReshapeName(70×é) = %q (len %d)", got, len(got))
	}

	// Two long names that share the kept head differ by their hash.
	a := ReshapeName(strings.Repeat("x", 60) + "_alpha")
	b := ReshapeName(strings.Repeat("x", 60) + "_beta")
	if a == b {
		t.Fatalf("distinct long names collapsed to %q", a)
	}

	// Two short names that reshape alike do collide: the registry reports
	// that as a collision (IM-13) rather than the names silently differing.
	if ToolName("gh", "a.b") != ToolName("gh", "a/b") {
		t.Fatalf("a.b and a/b should reshape to the same name")
	}
}

func TestValidToolName(t *testing.T) {
	for name, want := range map[string]bool{
		"ok_name-1":             true,
		"":                      false,
		"has.dot":               false,
		strings.Repeat("z", 64): true,
		strings.Repeat("z", 65): false,
		"ünï":                   false,
	} {
		if got := ValidToolName(name); got != want {
			t.Errorf("ValidToolName(%q) = %v, want %v", name, got, want)
		}
	}
}
