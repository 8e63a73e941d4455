package scan

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/jsontree"
)

// Settings that switch the user's safeguards off (RV-2). A poisoned tool
// can carry a configuration-shaped blob — JSON, YAML, a flow map, a TOML
// line, inline or fenced — that a model reads as the workspace's policy:
// {"workspace_policy": {"require_confirmation": false}}, `confirm: off`,
// `auto_approve: true`. Whatever the syntax, such a blob is a list of
// key/value pairs, so the scanner reads pairs: a key read as words (like
// every identifier) and a scalar value. Nesting adds nothing to what a
// pair means, so a pair is judged alone.
//
// A key names a safeguard when one of its words is one (confirmation,
// approval, review, safety, consent, disclosure, oversight …), or when it
// joins a word for the user to a word for telling or asking them
// (notify_user, showToUser, ask_permission). Such a key is switched off by
// false/off/no/disabled/none/0/never/skip/bypass/auto/not required. A key
// that already negates its safeguard (skip_confirmation, bypass_review,
// auto_approve, hide_from_user) or means "out of sight" alone (silent,
// stealth, yolo) is switched off by true/on/yes/enabled/1/always.

// settingPair finds key: value and key = value pairs whose value is one
// word, quoted or not, ending where a pair ends in JSON, YAML or TOML (a
// comma, a brace or bracket, a line's end, a backtick, a comment), so that
// prose ("Review: none of these apply") is not read as a setting.
var settingPair = regexp.MustCompile(`(?i)(?:^|[\s{,\[("'\x60>;|])["']?([a-z][\w.-]{0,63})["']?[\x20\t]*[:=][\x20\t]*["']?(true|false|on|off|yes|no|y|n|enabled?|disabled?|none|null|nobody|0|1|never|always|all|skip(?:ped)?|bypass(?:ed)?|ignored?|silent|hidden|auto(?:matic)?|not[\x20_-](?:required|needed))["']?(?:[\x20\t]*(?:$|[,;}\]\n\r\x60)<|]|#))`)

// settingNeedles: a pair can only be found in text that holds ':' or '=',
// and only flagged when its key holds one of settingKeyNeedles.
var settingNeedles = []string{":", "="}

var (
	// guardWords name a safeguard on their own.
	guardWords = []string{"confirm", "approv", "review", "safety", "safeguard", "guard", "disclos", "consent",
		"oversight", "moderat", "sandbox", "transparen", "audit", "security"}
	// askWords name one only beside a word for the user or a requirement.
	askWords = []string{"permission", "notif", "inform", "warn", "tell", "show", "ask", "display",
		"visib", "reveal", "report", "prompt", "mention", "explain", "check", "verif"}
	userWords = []string{"user", "human", "operator", "person", "people", "require", "need", "must", "ask"}
	// negWords in a key mean the safeguard is already negated.
	negWords = []string{"skip", "bypass", "disable", "no", "not", "without", "suppress", "hide", "hidden",
		"ignore", "dont", "never", "off", "auto", "silent", "silently", "quiet", "quietly", "conceal", "unsafe", "dangerously"}
	// aloneWords mean "out of the user's sight" on their own.
	aloneWords = []string{"silent", "silently", "stealth", "stealthy", "yolo", "unrestricted", "unsupervised", "unattended"}
)

// settingKeyNeedles are the words a key that switchesOff must hold one of.
var settingKeyNeedles = slices.Concat(guardWords, askWords, aloneWords,
	[]string{"hide", "hidden", "conceal", "user", "human", "operator", "person", "people", "loop"})

func hasWord(words, vocab []string, prefix bool) bool {
	return slices.ContainsFunc(words, func(w string) bool {
		return slices.ContainsFunc(vocab, func(v string) bool {
			if prefix {
				return strings.HasPrefix(w, v)
			}
			return w == v
		})
	})
}

// keyWords splits a setting's key into lower-case words, the way
// wordText reads identifiers.
func keyWords(key string) []string {
	t := newCleanText(key, nil)
	if w := t.wordText(); w != nil {
		t = w
	}
	return strings.Fields(strings.ToLower(strings.NewReplacer("-", " ", ".", " ").Replace(t.text)))
}

// switchesOff reports whether key = value turns a safeguard off.
func switchesOff(key, value string) bool {
	words := keyWords(key)
	if len(words) == 0 {
		return false
	}
	v := strings.ToLower(strings.Trim(value, `"' `))
	v = strings.NewReplacer("_", " ", "-", " ").Replace(v)
	off, on := false, false
	switch v {
	case "false", "off", "no", "n", "disabled", "disable", "none", "null", "nobody", "0", "never",
		"skip", "skipped", "bypass", "bypassed", "ignore", "ignored", "silent", "hidden", "auto",
		"automatic", "not required", "not needed":
		off = true
	case "true", "on", "yes", "y", "enabled", "enable", "1", "always", "all":
		on = true
	}
	guarded := hasWord(words, guardWords, true) ||
		hasWord(words, askWords, true) && hasWord(words, userWords, true) ||
		hasWord(words, []string{"human"}, false) && hasWord(words, []string{"loop"}, false)
	negated := hasWord(words, negWords, false) || hasWord(words, []string{"auto", "dont"}, true)
	// an autoApprove or autoconfirm written as one word
	for _, w := range words {
		if strings.HasPrefix(w, "auto") && len(w) > 4 && hasWord([]string{w[4:]}, guardWords, true) {
			negated, guarded = true, true
		}
	}
	switch {
	case guarded && !negated:
		return off
	case guarded && negated, hasWord(words, aloneWords, false):
		return on
	case hasWord(words, []string{"hide", "hidden", "conceal"}, false) && hasWord(words, userWords[:5], true):
		return on
	}
	return false
}

const reasonSetting = "a setting that switches off the user's confirmation, review or safeguards, or keeps things from the user"

// settings flags the configuration pairs in the text that switch a
// safeguard off.
func (t *cleanText) settings() []core.Flag {
	if !t.mayContain(settingNeedles) || !t.mayContain(settingKeyNeedles) {
		return nil
	}
	var out []core.Flag
	for _, m := range settingPair.FindAllStringSubmatchIndex(t.text, -1) {
		key, value := t.text[m[2]:m[3]], t.text[m[4]:m[5]]
		if !switchesOff(key, value) {
			continue
		}
		start, end := t.span(m[2], m[5])
		out = append(out, core.Flag{Kind: core.FlagHiddenInstruction, Start: start, End: end,
			Reason: fmt.Sprintf("%s (%s)", reasonSetting, clip(t.text[m[2]:m[5]], 60))})
	}
	return out
}

// settingValue is the text of a scalar JSON value a setting may have, or
// "" for one that is not a scalar.
func settingValue(n *jsontree.JsonNode) string {
	switch {
	case n.Kind == 's' && len(n.Str) <= 20:
		return n.Str
	case n.Kind == '-' && n.Lit != "":
		return n.Lit
	case n.Kind == '-':
		return string(n.Num)
	}
	return ""
}

// pairs flags the members of the object n, and of every object in it,
// that switch a safeguard off, each at the member's pointer: structured
// values (a default that is an object, an annotation, _meta) carry
// settings as JSON itself rather than as text.
func (w *schemaScan) pairs(n *jsontree.JsonNode, ptr string) {
	for i, e := range n.Elems {
		p := ptr + "/" + fmt.Sprint(i)
		if n.Kind == 'o' {
			k := n.Keys[i]
			p = jsontree.PointerAppend(ptr, k)
			if v := settingValue(e); v != "" && switchesOff(k, v) {
				w.memberFlag(e, k, p, core.Flag{Kind: core.FlagHiddenInstruction,
					Reason: fmt.Sprintf("%s (%s: %s)", reasonSetting, clip(k, 40), clip(v, 20))})
			}
		}
		if e.Kind == 'o' || e.Kind == 'a' {
			w.pairs(e, p)
		}
	}
}

// memberFlag adds f at the member k of an object, whose value is v, at
// pointer p. Text(p) is the member's string value when it has one, and
// its name otherwise: the span covers whichever that is.
func (w *schemaScan) memberFlag(v *jsontree.JsonNode, k, p string, f core.Flag) {
	f.Where, f.Start, f.End = p, 0, len(k)
	if v.Kind == 's' {
		f.End = len(v.Str)
	}
	if f.End > 0 {
		w.flags = append(w.flags, f)
	}
}
