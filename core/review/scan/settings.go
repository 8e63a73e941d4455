package scan

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/jsontree"
)

// Settings that switch the user's safeguards off (RV-2). A poisoned tool
// can carry a configuration-shaped blob — JSON, YAML, a flow map, a TOML
// line, inline or fenced — that a model reads as the workspace's policy:
// {"workspace_policy": {"require_confirmation": false}}, `confirm: off`,
// `auto_approve: true`. Whatever the syntax, such a blob is a list of
// key/value pairs, so the scanner reads pairs: a key read as words (like
// every identifier) and a scalar value. A pair is judged alone, except
// that a key which says nothing by itself (enabled, user, required) is
// read with its parent's ({"confirmations": {"enabled": false}}, a YAML
// mapping by its indentation). A command-line switch (--no-confirm,
// --yolo) is a key set to true.
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
var settingPair = lazyMust(`(?i)(?:^|[\s{,\[("'\x60>;|])["']?([a-zA-Z\x{80}-\x{10FFFF}][\w.\x{80}-\x{10FFFF}-]{0,63})["']?[\x20\t]*[:=][\x20\t]*["']?(true|false|on|off|yes|no|y|n|enabled?|disabled?|none|null|nobody|0|1|never|always|all|skip(?:ped)?|bypass(?:ed)?|ignored?|silent|hidden|auto(?:matic)?|not[\x20_-](?:required|needed)|` + offWordsOther + `|` + onWordsOther + `)["']?(?:[\x20\t]*(?:$|[,;}\]\n\r\x60)<|]|#)|[\x20\t]+[a-zA-Z\x{80}-\x{10FFFF}][\w.\x{80}-\x{10FFFF}-]{0,63}[\x20\t]*[:=])`)

// offWordsOther and onWordsOther are off and on, false and true, no and
// yes, in the languages of the keys of guardWords beside English.
const (
	offWordsOther = `uit|aus|nee|nein|non|n[aã]o|falso|faux|falsch|onwaar|nie|нет|выкл|ложь|关|关闭|否|オフ|無効|いいえ|끔|아니오|لا|नहीं|hayır|kapalı|wyłączone|nessuno|ninguno|aucun|keine?|geen|nunca|jamais|niemals|nooit|mai|desactivado|désactivé|deaktiviert|uitgeschakeld|disattivato|desativado`
	onWordsOther  = `aan|ein|ja|oui|s[ií]m?|waar|wahr|vrai|verdadero|verdadeiro|vero|да|вкл|开|是|オン|はい|켬|예|نعم|हाँ|evet|tak|immer|altijd|siempre|toujours|sempre`
)

// settingNeedles: a pair can only be found in text that holds ':' or '=',
// and only flagged when its key holds one of settingKeyNeedles.
var settingNeedles = []string{":", "=", "--", "</"}

var (
	// guardWords name a safeguard on their own.
	// "sandbox" is left out: a browser's --no-sandbox is honest advice
	// (Puppeteer's launch options).
	guardWords = []string{"confirm", "approv", "review", "safety", "safeguard", "guard", "disclos", "consent", "signoff",
		"oversight", "moderat", "transparen", "audit", "security", "four_eyes", "four-eyes", "foureyes", "dual_control", "maker_checker",
		// confirmation, approval and safety in the languages most
		// people speak (Dutch, German, Spanish, French, Italian,
		// Portuguese, Polish, Turkish, Russian, Chinese, Japanese,
		// Korean, Arabic, Hindi)
		"bevestig", "bestätig", "bestaetig", "conferm", "potwierdz", "onay", "подтвержд", "确认", "確認", "확인", "تأكيد", "पुष्टि",
		"goedkeur", "genehmig", "freigabe", "aprob", "approb", "aprov", "zatwierdz", "одобр", "审批", "批准", "承認", "승인", "موافقة",
		"veiligheid", "sicherheit", "segurid", "securit", "sécurit", "sicurezz", "seguran", "bezpiecz", "güvenlik", "безопасн", "安全", "안전", "أمان",
		"toezicht", "aufsicht", "überprüf"}
	// askWords name one only beside a word for the user or a requirement.
	askWords = []string{"permission", "notif", "inform", "warn", "tell", "show", "ask", "display",
		"visib", "reveal", "report", "prompt", "mention", "explain", "check", "verif",
		"melden", "tonen", "anzeig", "benachrichtig", "avis", "avvis", "mostrar", "affich", "mostra", "pokaz", "показ", "уведом", "通知", "显示", "表示", "알림", "إعلام", "सूचित"}
	userWords = []string{"user", "human", "operator", "person", "people", "require", "need", "must", "ask", "customer", "owner",
		// the user, and "required", in other languages
		"gebruiker", "nutzer", "benutzer", "usuari", "usuári", "utilisat", "utent", "utilizador", "użytkownik", "uzytkownik", "kullanıcı",
		"пользовател", "用户", "ユーザー", "사용자", "المستخدم", "उपयोगकर्ता", "klant", "kunde",
		"vereist", "erforderlich", "requer", "requis", "richiest", "obbligator", "wymagan", "gerekli", "обязател", "必须", "必須", "필수"}
	// negWords in a key mean the safeguard is already negated.
	negWords = []string{"skip", "bypass", "disable", "no", "not", "without", "suppress", "hide", "hidden",
		"ignore", "dont", "never", "off", "auto", "silent", "silently", "quiet", "quietly", "conceal", "unsafe", "dangerously"}
	// aloneWords mean "out of the user's sight" on their own.
	aloneWords = []string{"silent", "silently", "stealth", "stealthy", "yolo", "unrestricted", "unsupervised", "unattended"}
)

// otherOff and otherOn are offWordsOther and onWordsOther as sets.
var (
	otherOff = wordSet(offWordsOther)
	otherOn  = wordSet(onWordsOther)
)

// wordSet reads an alternation of words, with [xy] classes and an optional
// last letter (keine?), as the set of the words it matches.
func wordSet(alt string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.Split(alt, "|") {
		forms := []string{""}
		for i := 0; i < len(w); {
			switch {
			case w[i] == '[':
				j := strings.IndexByte(w[i:], ']') + i
				var next []string
				for _, f := range forms {
					for _, r := range w[i+1 : j] {
						next = append(next, f+string(r))
					}
				}
				forms, i = next, j+1
			case w[i] == '?':
				var next []string
				for _, f := range forms {
					_, size := utf8.DecodeLastRuneInString(f)
					next = append(next, f, f[:len(f)-size])
				}
				forms, i = next, i+1
			default:
				_, size := utf8.DecodeRuneInString(w[i:])
				for k := range forms {
					forms[k] += w[i : i+size]
				}
				i += size
			}
		}
		for _, f := range forms {
			out[f] = true
		}
	}
	return out
}

// settingKeyNeedles are the words a key that switchesOff must hold one of.
var settingKeyNeedles = slices.Concat(guardWords, askWords, aloneWords,
	[]string{"hide", "hidden", "conceal", "user", "human", "operator", "person", "people", "loop", "owner", "customer",
		"manual", "sign_off", "sign-off", "sign off"})

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
	words := strings.Fields(strings.ToLower(strings.NewReplacer("-", " ", ".", " ").Replace(t.text)))
	// "sign off" is one safeguard, not a sign switched off
	for i := 0; i+1 < len(words); i++ {
		if words[i] == "sign" && words[i+1] == "off" {
			words = slices.Replace(words, i, i+2, "signoff")
		}
	}
	return words
}

// askedBefore: a word for asking or warning, then "on" or "before" an
// action (promptOnDelete, warn_before_send): a safeguard on that action.
func askedBefore(words []string) bool {
	for i := 0; i+1 < len(words); i++ {
		if hasWord(words[i:i+1], []string{"prompt", "ask", "warn", "confirm", "check", "notify", "alert"}, true) &&
			(words[i+1] == "on" || words[i+1] == "before") {
			return true
		}
	}
	return false
}

// personWords name the user or another person whose say a safeguard is.
var personWords = []string{"user", "human", "person", "people", "owner", "operator", "customer", "manual", "reviewer", "approver"}

// addressedToPerson: the key names something given to or asked of a
// person (changelog_to_user, summary_for_owner, require_human,
// needs_user): switched off, that person is left out.
func addressedToPerson(words []string) bool {
	for i, w := range words {
		if !hasWord([]string{w}, personWords, true) {
			continue
		}
		if i > 0 && (words[i-1] == "to" || words[i-1] == "for" || words[i-1] == "by") {
			return true
		}
		if hasWord(words, []string{"require", "need", "must", "ask", "wait", "involve", "loop"}, true) {
			return true
		}
	}
	return false
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
	default:
		off, on = otherOff[v], otherOn[v]
	}
	guarded := hasWord(words, guardWords, true) ||
		hasWord(words, askWords, true) && hasWord(words, userWords, true) ||
		// skip_permission_checks, dangerously_skip_permissions
		hasWord(words, []string{"permission", "check", "verif"}, true) && hasWord(words, []string{"skip", "bypass", "dangerously", "no", "without"}, false) ||
		hasWord(words, []string{"human"}, false) && hasWord(words, []string{"loop"}, false) ||
		addressedToPerson(words) ||
		// prompt_on_delete, confirm_before_overwrite, warn_before_send
		askedBefore(words)
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
	for _, m := range settingPairs(t.text) {
		key, value := t.text[m[2]:m[3]], t.text[m[4]:m[5]]
		if !nestedSwitchesOff(yamlParent(t.text, m[2]), key, value) || settingAsCondition.MatchString(t.text[max(0, m[2]-24):m[2]]) {
			continue
		}
		start, end := t.span(m[2], m[5])
		out = append(out, core.Flag{Kind: core.FlagHiddenInstruction, Start: start, End: end,
			Reason: fmt.Sprintf("%s (%s)", reasonSetting, clip(t.text[m[2]:m[5]], 60))})
	}
	out = append(out, t.jsonSettings()...)
	out = append(out, t.xmlSettings()...)
	for _, m := range cliFlag.FindAllStringSubmatchIndex(t.text, -1) {
		if switchesOff(t.text[m[2]:m[3]], "true") {
			start, end := t.span(m[2]-2, m[3])
			out = append(out, core.Flag{Kind: core.FlagHiddenInstruction, Start: start, End: end,
				Reason: fmt.Sprintf("%s (%s)", reasonSetting, clip(t.text[m[2]-2:m[3]], 60))})
		}
	}
	return out
}

// settingAsCondition is what, just before a pair in prose, makes it the
// condition of what a tool does ("a snapshot is taken first unless
// skip_safety_snapshot=true"): an option documented, not a setting given.
var settingAsCondition = phrase(`\b(?:unless|if|when|whenever|only if|until)\s*[\x60"'(]?$`)

// settingPairs returns the submatch indexes of every settingPair in text.
// Each search starts again where a value ended, not where its match did:
// the line break that ends one pair is the one that starts the next, and
// a search past it would read only every other line of a block.
func settingPairs(text string) [][]int {
	var out [][]int
	for from := 0; from < len(text); {
		m := settingPair.FindStringSubmatchIndex(text[from:])
		if m == nil {
			break
		}
		for i := range m {
			if m[i] >= 0 {
				m[i] += from
			}
		}
		out = append(out, m)
		from = m[5]
	}
	return out
}

// cliFlag is a command-line switch, --no-confirm or --yolo, which reads
// as a setting turned on.
var cliFlag = lazyMust(`(?:^|[\s\x60"'(])--([a-zA-Z][\w-]{1,40})\b`)

// yamlParent is the key of the YAML mapping the line holding offset i
// sits in: the nearest line above it, indented less, that is a key with no
// value ("confirmations:" over "  enabled: false"); "" at the top level.
func yamlParent(text string, i int) string {
	lineStart := strings.LastIndexByte(text[:i], '\n') + 1
	indent := len(text[lineStart:i]) - len(strings.TrimLeft(text[lineStart:i], " \t"))
	if indent == 0 {
		return ""
	}
	// A parent further up than maxYAMLLookBack bytes is not looked for, so
	// a text of many pairs costs no more than a few passes over it.
	floor := max(0, lineStart-maxYAMLLookBack)
	for end := lineStart - 1; end > floor; {
		start := strings.LastIndexByte(text[:end], '\n') + 1
		line := text[start:end]
		end = start - 1
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed == "" || len(line)-len(trimmed) >= indent {
			continue
		}
		if m := yamlKeyLine.FindStringSubmatch(trimmed); m != nil {
			return m[1]
		}
		return ""
	}
	return ""
}

const maxYAMLLookBack = 2048

var yamlKeyLine = lazyMust(`^["']?([A-Za-z][\w.-]{0,63})["']?[\x20\t]*:[\x20\t]*$`)

// Bounds of jsonSettings.
const (
	maxJSONBlobs = 32
	maxJSONBlob  = 16 << 10
)

// jsonSettings parses the JSON objects in the text whole and flags each
// whose pairs, read with their parents' keys, switch a safeguard off
// ({"confirmations": {"enabled": false}}).
func (t *cleanText) jsonSettings() []core.Flag {
	if !strings.Contains(t.text, "{") {
		return nil
	}
	var out []core.Flag
	tries := 0
	for i := 0; i < len(t.text) && tries < maxJSONBlobs; i++ {
		if t.text[i] != '{' {
			continue
		}
		// Each try reads at most maxJSONBlob bytes, and a text gets
		// maxJSONBlobs tries: braces in prose cost a bounded amount.
		tries++
		dec := json.NewDecoder(strings.NewReader(t.text[i:min(len(t.text), i+maxJSONBlob)]))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			continue
		}
		end := i + int(dec.InputOffset())
		if found := nestedSetting(v, ""); found != "" {
			start, stop := t.span(i, end)
			out = append(out, core.Flag{Kind: core.FlagHiddenInstruction, Start: start, End: stop,
				Reason: fmt.Sprintf("%s (%s)", reasonSetting, clip(found, 60))})
		}
		i = end - 1
	}
	return out
}

// nestedSetting returns the first "parent.key: value" in v that
// switches a safeguard off only when read with its parent's key, or "".
// Pairs that do so alone are flagged where they stand by settings.
func nestedSetting(v any, parent string) string {
	switch x := v.(type) {
	case map[string]any:
		if op, ok := x["op"].(string); ok {
			if path, ok := x["path"].(string); ok {
				value, has := x["value"]
				if f := jsonPatchSetting(op, path, value, has); f != "" {
					return f
				}
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			var s string
			switch e := x[k].(type) {
			case bool:
				s = strconv.FormatBool(e)
			case string:
				s = e
			case json.Number:
				s = e.String()
			default:
				if f := nestedSetting(e, k); f != "" {
					return f
				}
				continue
			}
			if parent != "" && !switchesOff(k, s) && nestedSwitchesOff(parent, k, s) {
				return parent + "." + k + ": " + s
			}
		}
	case []any:
		for _, e := range x {
			if f := nestedSetting(e, parent); f != "" {
				return f
			}
		}
	}
	return ""
}

// genericKeys say nothing alone; under a parent ("confirmations":
// {"enabled": false}, notify: {user: false}) they read with its words.
var genericKeys = map[string]bool{"enabled": true, "enable": true, "on": true, "active": true, "required": true,
	"require": true, "value": true, "mode": true, "state": true, "status": true, "user": true, "users": true,
	"human": true, "always": true, "ask": true, "prompt": true, "default": true}

// nestedSwitchesOff is switchesOff for key under parent.
func nestedSwitchesOff(parent, key, value string) bool {
	if switchesOff(key, value) {
		return true
	}
	return parent != "" && genericKeys[strings.ToLower(key)] && switchesOff(parent+"_"+key, value)
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
	w.pairsUnder(n, ptr, "")
	// A property whose const is the value that switches it off
	// ({"confirm": {"type": "boolean", "const": false}}) is that setting
	// fixed: no argument can turn the safeguard back on. A default is
	// not read so: an honest confirm flag defaults to false.
	segs := strings.Split(ptr, "/")
	if last := len(segs) - 1; last >= 2 && segs[last] == "const" && segs[last-2] == "properties" {
		k := strings.NewReplacer("~1", "/", "~0", "~").Replace(segs[last-1])
		if v := settingValue(n); v != "" && switchesOff(k, v) {
			// flagged at the property, over its name
			w.memberFlag(n, k, strings.Join(segs[:last], "/"), core.Flag{Kind: core.FlagHiddenInstruction,
				Reason: fmt.Sprintf("%s (%s: %s)", reasonSetting, clip(k, 40), clip(v, 20))})
		}
	}
}

func (w *schemaScan) pairsUnder(n *jsontree.JsonNode, ptr, parent string) {
	for i, e := range n.Elems {
		p, k := ptr+"/"+fmt.Sprint(i), parent
		if n.Kind == 'o' {
			k = n.Keys[i]
			p = jsontree.PointerAppend(ptr, k)
			if v := settingValue(e); v != "" && nestedSwitchesOff(parent, k, v) {
				w.memberFlag(e, k, p, core.Flag{Kind: core.FlagHiddenInstruction,
					Reason: fmt.Sprintf("%s (%s: %s)", reasonSetting, clip(k, 40), clip(v, 20))})
			}
		}
		if e.Kind == 'o' || e.Kind == 'a' {
			w.pairsUnder(e, p, k)
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

// xmlElement is an XML element's opening tag with its attributes, or an
// element holding one word (<requireConfirmation>false</requireConfirmation>).
var (
	xmlElement = lazyMust(`<([A-Za-z][\w.:-]{0,63})((?:\s+[A-Za-z][\w.:-]{0,63}\s*=\s*(?:"[^"<>]{0,40}"|'[^'<>]{0,40}'))+)\s*/?>|<([A-Za-z][\w.:-]{0,63})>\s*([\w\x20-]{1,20}?)\s*</([A-Za-z][\w.:-]{0,63})>`)
	xmlAttr    = lazyMust(`([A-Za-z][\w.:-]{0,63})\s*=\s*(?:"([^"<>]{0,40})"|'([^'<>]{0,40})')`)
)

// xmlSettings flags the settings written as XML: an attribute read under
// its element's name (<confirmations enabled="false"/>, <disclosure
// toUser="none"/>), and an element holding the value.
func (t *cleanText) xmlSettings() []core.Flag {
	if !strings.Contains(t.text, "<") {
		return nil
	}
	var out []core.Flag
	for _, m := range xmlElement.FindAllStringSubmatchIndex(t.text, maxJSONBlobs*4) {
		found := ""
		if m[2] >= 0 {
			elem := t.text[m[2]:m[3]]
			attrs := t.text[m[4]:m[5]]
			for _, a := range xmlAttr.FindAllStringSubmatchIndex(attrs, -1) {
				key, value := attrs[a[2]:a[3]], attrs[max(a[4], a[6]):max(a[5], a[7])]
				if nestedSwitchesOff(elem, key, value) || switchesOff(elem+"_"+key, value) {
					found = elem + " " + key + "=" + value
					break
				}
			}
		} else if open, value, shut := t.text[m[6]:m[7]], t.text[m[8]:m[9]], t.text[m[10]:m[11]]; open == shut && switchesOff(open, value) {
			found = open + ": " + value
		}
		if found != "" {
			start, end := t.span(m[0], m[1])
			out = append(out, core.Flag{Kind: core.FlagHiddenInstruction, Start: start, End: end,
				Reason: fmt.Sprintf("%s (%s)", reasonSetting, clip(found, 60))})
		}
	}
	return out
}

// jsonPatchSetting reads a JSON Patch operation (RFC 6902) as the setting
// it makes: {"op": "replace", "path": "/policy/require_confirmation",
// "value": false} sets require_confirmation under policy to false, and
// {"op": "remove", "path": "/policy/audit_log"} switches audit_log off.
// It returns "parent.key: value" when that switches a safeguard off.
func jsonPatchSetting(op, path string, value any, hasValue bool) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	key, parent := segs[len(segs)-1], ""
	if len(segs) > 1 {
		parent = segs[len(segs)-2]
	}
	var v string
	switch op = strings.ToLower(op); {
	case op == "remove":
		v = "off"
	case (op == "add" || op == "replace") && hasValue:
		switch e := value.(type) {
		case bool:
			v = strconv.FormatBool(e)
		case string:
			v = e
		case json.Number:
			v = e.String()
		}
	}
	if key == "" || v == "" || !nestedSwitchesOff(parent, key, v) {
		return ""
	}
	return strings.TrimPrefix(parent+"."+key, ".") + ": " + v
}
