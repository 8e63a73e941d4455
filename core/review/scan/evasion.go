package scan

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/toolgate/toolgate/core"
)

// The rules in this file catch what an attacker writes once the plain
// phrases are caught: the same words encoded, spaced out, in leetspeak or in
// look-alike letters; links that carry secrets or the conversation out;
// active content in data: URIs.

// Encoded text: plain hex, spaced hex bytes, \x, \u and %XX escapes. A run
// is flagged only if it decodes to text (hashes and ids decode to noise),
// so the thresholds can be low.
var encodedRules = []struct {
	re     *lazyRegexp
	name   string
	decode func(string) ([]byte, bool)
	// ascii: the decoded text must be mostly ASCII letters; %XX of
	// non-ASCII text is how URLs honestly carry it.
	ascii bool
}{
	{lazyMust(`\b[0-9A-Fa-f]{24,}\b`), "hex", decodeHex, false},
	{lazyMust(`\b(?:[0-9A-Fa-f]{2}[ :,-]){11,}[0-9A-Fa-f]{2}\b`), "hex bytes", decodeHex, false},
	{lazyMust(`(?:\\x[0-9A-Fa-f]{2}){4,}`), `\x escapes`, decodeHex, false},
	{lazyMust(`(?:\\u[0-9A-Fa-f]{4}){3,}`), `\u escapes`, decodeUnicodeEscapes, false},
	{lazyMust(`(?:%[0-9A-Fa-f]{2}){8,}`), "percent escapes", decodeHex, true},
}

func decodeHex(s string) ([]byte, bool) {
	digits := strings.Map(func(r rune) rune {
		if '0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F' {
			return r
		}
		return -1
	}, strings.ReplaceAll(s, `\x`, ""))
	b, err := hex.DecodeString(digits[:len(digits)&^1])
	return b, err == nil
}

func decodeUnicodeEscapes(s string) ([]byte, bool) {
	var b strings.Builder
	for _, part := range strings.Split(s, `\u`)[1:] {
		n, err := strconv.ParseUint(part, 16, 32)
		if err != nil {
			return nil, false
		}
		b.WriteRune(rune(n))
	}
	return []byte(b.String()), true
}

// textLike reports whether b reads as words: valid UTF-8, printable, at
// least 8 characters of which most are letters.
func textLike(b []byte, ascii bool) (string, bool) {
	if !utf8.Valid(b) {
		return "", false
	}
	s := string(b)
	var n, letters, bad int
	for _, r := range s {
		n++
		switch {
		case unicode.IsLetter(r) && (!ascii || r < 0x80):
			letters++
		case !unicode.IsPrint(r) && !unicode.IsSpace(r):
			bad++
		}
	}
	return s, n >= 8 && bad == 0 && letters*2 >= n
}

func (t *cleanText) encoded() []core.Flag {
	var out []core.Flag
	for _, r := range encodedRules {
		for _, m := range r.re.findAllIn(t) {
			b, ok := r.decode(t.text[m[0]:m[1]])
			if !ok {
				continue
			}
			text, ok := textLike(b, r.ascii)
			if !ok {
				// A run too short to be text alone may be one word of
				// a sentence ("\u0069\u0067\u006e\u006f\u0072\u0065
				// previous instructions"): read it in place, with the
				// rest of its sentence as written.
				if text, ok = textLike(b, false); !ok && utf8.Valid(b) && len(b) >= 3 {
					start, end := t.span(m[0], m[1])
					a, z := sentence(t.text, m[0], m[1])
					inPlace := t.text[a:m[0]] + string(b) + t.text[m[1]:z]
					if found := payloadFlags(inPlace, start, end, "written as "+r.name+" in a sentence"); len(found) > 0 {
						out = append(out, core.Flag{Kind: core.FlagObfuscated, Start: start, End: end,
							Reason: fmt.Sprintf("%s that decode to a word of the sentence around them: %q", r.name, clip(string(b), 60))})
						out = append(out, found...)
					}
				}
				continue
			}
			start, end := t.span(m[0], m[1])
			out = append(out, core.Flag{Kind: core.FlagObfuscated, Start: start, End: end,
				Reason: fmt.Sprintf("%s that decode to text, hidden from a reader: %q", r.name, clip(text, 60))})
			out = append(out, payloadFlags(text, start, end, "encoded as "+r.name)...)
		}
	}
	return out
}

// lookAlike maps digits and symbols of leetspeak, and letters of other
// scripts that look Latin, to the Latin letter a reader sees.
var lookAlike = map[rune]rune{
	'0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', '$': 's', '!': 'i', '|': 'l',
	// Cyrillic
	'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'к': 'k', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p', 'с': 'c',
	'т': 't', 'у': 'y', 'х': 'x', 'і': 'i', 'ї': 'i', 'ј': 'j', 'ѕ': 's', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w',
	// Greek
	'α': 'a', 'ε': 'e', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't', 'υ': 'u', 'χ': 'x',
	// Latin look-alikes outside ASCII
	'ı': 'i', 'ɡ': 'g', 'ӏ': 'l', 'ɑ': 'a',
}

// squeezed is the text reduced to its Latin letters, lower-cased, with
// leetspeak and look-alike letters read as the letters they imitate and
// everything else dropped: "I g n 0 r e", "i.g.n.o.r.e" and "іgnоrе" all
// become "ignore". pos maps each byte back to the clean text.
type squeezed struct {
	text string
	pos  []int
}

func squeeze(s string) squeezed {
	var b strings.Builder
	var pos []int
	for i, r := range s {
		if compat, ok := compatLatin(r); ok {
			for _, c := range compat {
				b.WriteRune(c)
				pos = append(pos, i)
			}
			continue
		}
		r = unicode.ToLower(r)
		if m, ok := lookAlike[r]; ok {
			r = m
		}
		if 'a' <= r && r <= 'z' {
			b.WriteRune(r)
			pos = append(pos, i)
		} else if unicode.IsLetter(r) && r >= 0x80 {
			// another script's letter ends any Latin word run, so words
			// of two scripts never join into one
			b.WriteByte('#')
			pos = append(pos, i)
		}
	}
	return squeezed{b.String(), pos}
}

// squeezedRules are instruction phrases written without spaces, matched in
// the squeezed text. Each is long and specific: with word boundaries gone,
// a short one would match across ordinary words.
var squeezedRules = []struct {
	re     *lazyRegexp
	reason string
}{
	{lazyMust(`(?:ignore|disregard|forget|bypass|override)(?:all|the|any|of|your|my|these|those)*(?:previous|prior|above|earlier|preceding|former|system|original|safety|other)+(?:the|all)?(?:instructions?|prompts?|directives?|guidelines|guardrails|rules|commands|messages|context)`), reasonOverride},
	{lazyMust(`forgeteverything(?:above|before|else)`), reasonOverride},
	{lazyMust(`(?:donot|dont|never|mustnot)(?:ever)?(?:tell|inform|notify|mention|reveal|alert|show)(?:this|it|that|anything)?(?:to)?(?:the)?(?:users?|humans?|operators?)`), reasonConceal},
	{lazyMust(`without(?:telling|informing|notifying|alerting|asking)(?:the)?(?:users?|humans?|operators?)`), reasonConceal},
	{lazyMust(`youarenow(?:in|a|an)?(?:unrestricted|jailbroken|unfiltered|developermode|godmode|adminmode)`), "tries to change the model's role"},
	{lazyMust(`(?:reveal|print|output|leak|dump|disclose)(?:your|the)(?:system|initial|hidden)prompt`), "asks the model to reveal its instructions"},
	{lazyMust(`(?:read|cat|send|upload|exfiltrate|steal|include|attach|copy)(?:the|your|all|my|users?)*(?:sshkeys?|idrsa|privatekeys?|awscredentials|envfile|dotenv)`), "asks for the user's keys or credentials"},
	{lazyMust(`(?:send|pass|include|forward|upload|post|copy|attach|leak)(?:the|all|your|this|a|copyof)*(?:entire|full|whole|complete)?(?:conversation|chathistory|messagehistory)`), "asks the model to pass the conversation along"},
	{lazyMust(`(?:send|pass|include|forward|upload|post|copy|attach|leak|steal)(?:the|all|your|their|any)*(?:users?|saved|stored)+(?:passwords?|credentials|apikeys?|accesstokens?|cookies|secrets|privatekeys?)`), "asks the model to hand over the user's secrets"},
}

// letterSpaced is a run of twelve or more single letters, each followed by
// spaces or a dot: words spelt out letter by letter. Prose never has so
// many one-letter words in a row.
var letterSpaced = lazyMust(`(?:\b\p{L}\.?[\x20\t]{1,3}){11,}\p{L}\b\.?`)

const reasonObfuscated = "written letter by letter, in leetspeak or with look-alike letters, a way to slip words past a reader or a filter"

// obfuscated finds instruction phrases in the squeezed text that the plain
// rules, given in plain, did not already find, and letter-spaced runs.
func (t *cleanText) obfuscated(plain []core.Flag) []core.Flag {
	return t.obfuscatedReadings(plain, true)
}

// obfuscatedReadings is obfuscated; hidden false leaves out the flags of
// text hidden from a reader (styled letters, blank space, comments, hidden
// elements, letters spelt out), which are all FlagObfuscated.
func (t *cleanText) obfuscatedReadings(plain []core.Flag, hidden bool) []core.Flag {
	var out []core.Flag
	sq := squeeze(t.text)
	// The squeezed text is read three ways: as written, backwards (bidi
	// overrides display reversed text the right way round), and in rot13.
	readings := []struct {
		text, how string
		back      bool
	}{{sq.text, "", false}, {reverse(sq.text), " (written backwards)", true}, {rot13(sq.text), " (in rot13)", false}}
	for _, rd := range readings {
		rt := &cleanText{text: rd.text}
		for _, r := range squeezedRules {
			if !r.re.mayMatch(rt) {
				continue
			}
			for _, m := range r.re.FindAllStringIndex(rd.text, -1) {
				a, z := m[0], m[1]-1
				if rd.back {
					a, z = len(rd.text)-m[1], len(rd.text)-1-m[0]
				}
				s, e := sq.pos[a], sq.pos[z]
				_, size := utf8.DecodeRuneInString(t.text[e:])
				start, end := t.span(s, e+size)
				overlaps := func(f core.Flag) bool {
					return f.Kind == core.FlagHiddenInstruction && f.Start < end && start < f.End
				}
				if rd.how == "" && !disguised(t.text[s:e+size]) || containsFlag(plain, overlaps) || containsFlag(out, overlaps) {
					continue
				}
				out = append(out,
					core.Flag{Kind: core.FlagHiddenInstruction, Start: start, End: end, Reason: r.reason + ", " + reasonObfuscated + rd.how},
					core.Flag{Kind: core.FlagObfuscated, Start: start, End: end, Reason: reasonObfuscated + rd.how})
			}
		}
	}
	if !hidden {
		return out
	}
	for _, m := range mixedScriptWords(t.text) {
		start, end := t.span(m[0], m[1])
		out = append(out, core.Flag{Kind: core.FlagObfuscated, Start: start, End: end,
			Reason: fmt.Sprintf("a word that mixes Latin letters with look-alike letters of another script (%q reads as %q), which filters do not read as the word", clip(t.text[m[0]:m[1]], 40), clip(squeeze(t.text[m[0]:m[1]]).text, 40))})
	}
	for _, m := range styledRun.findAllIn(t) {
		start, end := t.span(m[0], m[1])
		out = append(out, core.Flag{Kind: core.FlagObfuscated, Start: start, End: end,
			Reason: fmt.Sprintf("letters in a styled or full-width form (%q), which filters do not read as words", clip(squeeze(t.text[m[0]:m[1]]).text, 60))})
	}
	for _, m := range blankRun.findAllIn(t) {
		start, end := t.span(m[0], m[1])
		out = append(out, core.Flag{Kind: core.FlagObfuscated, Start: start, End: end,
			Reason: "a long run of blank space, which pushes the text after it out of a reader's sight"})
	}
	for _, m := range htmlComment.findAllIn(t) {
		start, end := t.span(m[0], m[1])
		out = append(out, core.Flag{Kind: core.FlagObfuscated, Start: start, End: end,
			Reason: "an HTML comment, hidden wherever the text is rendered as markdown or HTML"})
	}
	for _, m := range hiddenElement.findAllIn(t) {
		start, end := t.span(m[0], m[1])
		out = append(out, core.Flag{Kind: core.FlagObfuscated, Start: start, End: end,
			Reason: "an HTML element its own markup hides (hidden, display:none, zero size or opacity), unseen wherever the text is rendered"})
	}
	for _, m := range markdownComment.findAllIn(t) {
		start, end := t.span(m[0], m[1])
		out = append(out, core.Flag{Kind: core.FlagObfuscated, Start: start, End: end,
			Reason: "a markdown comment (a link definition nothing uses), hidden wherever the text is rendered as markdown"})
	}
	for _, m := range letterSpaced.findAllIn(t) {
		start, end := t.span(m[0], m[1])
		out = append(out, core.Flag{Kind: core.FlagObfuscated, Start: start, End: end,
			Reason: fmt.Sprintf("words spelt letter by letter (%q), a way to slip them past a reader or a filter", clip(squeeze(t.text[m[0]:m[1]]).text, 60))})
	}
	return out
}

// spacedLetters is four single letters in a row, with anything but
// letters and digits between them.
var spacedLetters = lazyMust(`(?:^|[^\p{L}\p{N}])\p{L}[^\p{L}\p{N}]+\p{L}[^\p{L}\p{N}]+\p{L}[^\p{L}\p{N}]+\p{L}(?:[^\p{L}\p{N}]|$)`)

// disguised reports whether s is written to look like other text than it
// is: letter by letter, with digits or symbols for letters inside a word, or
// with letters of another script that look Latin. A phrase the squeezed
// rules find in plain words is left to the plain rules.
func disguised(s string) bool {
	if spacedLetters.MatchString(s) {
		return true
	}
	rs := []rune(s)
	for i, r := range rs {
		if _, ok := compatLatin(r); ok {
			return true
		}
		l := unicode.ToLower(r)
		if _, ok := lookAlike[l]; !ok {
			continue
		}
		if r >= 0x80 {
			return true
		}
		if !unicode.IsLetter(r) && (i > 0 && isASCIILetter(rs[i-1]) || i+1 < len(rs) && isASCIILetter(rs[i+1])) {
			return true
		}
	}
	return false
}

// mixedScriptWords returns the words of s (runs of letters) that hold
// both ASCII letters and letters of another script that look Latin
// ("Аlwаys" with Cyrillic а): no language writes a word so, and a reader
// sees the Latin word a filter does not.
func mixedScriptWords(s string) [][2]int {
	var out [][2]int
	start, latin, alike := -1, false, false
	end := func(i int) {
		if start >= 0 && latin && alike {
			out = append(out, [2]int{start, i})
		}
		start, latin, alike = -1, false, false
	}
	for i, r := range s {
		if !unicode.IsLetter(r) {
			end(i)
			continue
		}
		if start < 0 {
			start = i
		}
		if isASCIILetter(r) {
			latin = true
		} else if _, ok := lookAlike[unicode.ToLower(r)]; ok && (unicode.Is(unicode.Cyrillic, r) || unicode.Is(unicode.Greek, r)) {
			// Latin letters outside ASCII (Turkish ı) are Latin
			alike = true
		}
	}
	end(len(s))
	return out
}

// compatLatin reads a styled or full-width letter (𝐈, ｉ, ℐ, ﬁ) as the
// lower-case Latin letters it stands for.
func compatLatin(r rune) (string, bool) {
	if r < 0x80 {
		return "", false
	}
	// Small capitals have no compatibility mapping, yet read as Latin.
	if c, ok := smallCaps[r]; ok {
		return string(c), true
	}
	// Nor have the squared and negative circled letters (🄰, 🅘, 🅰) or
	// the regional indicators (🇦), which show as letters in a box.
	for _, base := range []rune{0x1F130, 0x1F150, 0x1F170, 0x1F1E6} {
		if base <= r && r < base+26 {
			return string('a' + (r - base)), true
		}
	}
	n := norm.NFKC.String(string(r))
	if n == string(r) || n == "" {
		return "", false
	}
	n = strings.ToLower(n)
	for _, c := range n {
		if c < 'a' || c > 'z' {
			return "", false
		}
	}
	return n, true
}

// smallCaps are the small capital letters (ᴀ, ʙ, ꜱ …) a reader takes for
// Latin ones.
var smallCaps = map[rune]byte{0x1D00: 'a', 0x0299: 'b', 0x1D04: 'c', 0x1D05: 'd', 0x1D07: 'e', 0xA730: 'f',
	0x0262: 'g', 0x029C: 'h', 0x026A: 'i', 0x1D0A: 'j', 0x1D0B: 'k', 0x029F: 'l', 0x1D0D: 'm', 0x0274: 'n',
	0x1D0F: 'o', 0x1D18: 'p', 0x01EB: 'q', 0x0280: 'r', 0xA731: 's', 0x1D1B: 't', 0x1D1C: 'u', 0x1D20: 'v',
	0x1D21: 'w', 0x028F: 'y', 0x1D22: 'z'}

func isASCIILetter(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' }

// styledRun is words in mathematical alphanumerics (four letters or more)
// or full-width Latin (eight or more): Japanese text has a few full-width
// letters ("ＵＲＬ"), prose never has runs of them.
var styledRun = lazyMust(`[\x{1D400}-\x{1D7FF}](?:[\x{1D400}-\x{1D7FF}\x20]*[\x{1D400}-\x{1D7FF}]){3,}|[\x{24B6}-\x{24E9}\x{1F130}-\x{1F189}](?:[\x{24B6}-\x{24E9}\x{1F130}-\x{1F189}\x20]*[\x{24B6}-\x{24E9}\x{1F130}-\x{1F189}]){3,}|[\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}](?:[\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x20\x{3000}]*[\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}]){7,}`)

// blankRun is more blank space than layout needs: 80 spaces or tabs on a
// line, or 20 empty lines.
var blankRun = lazyMust(`[\t \x{00A0}\x{3000}]{80,}|(?:[\t \x{00A0}]*\n){20,}`)

// htmlComment is a comment with something in it.
var htmlComment = lazyMust(`<!--[\s\S]*?[\pL\pN][\s\S]*?-->`)

// hiddenElement is an inline or block element whose attributes hide it,
// with words in it.
var hiddenElement = lazyMust(`(?i)<(?:span|div|p|section|font|small|sub|sup|i|b|em|strong|a)\b[^>]*?(?:\shidden\b|display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?:px|em|pt|%)?\s*[;"']|opacity\s*:\s*0(?:\.0+)?\s*[;"'])[^>]*>[^<]*?[\pL\pN][\s\S]*?</\s*(?:span|div|p|section|font|small|sub|sup|i|b|em|strong|a)\s*>`)

// markdownComment is the idiom [//]: # (text) or [comment]: <> (text): a
// link reference definition, which renders as nothing.
var markdownComment = lazyMust(`(?m)^[\t\x20]{0,3}\[[^\]\n]{0,40}\]:[\t\x20]*(?:#|<>)[\t\x20]*(?:\([^)\n]*[\pL\pN][^)\n]*\)|"[^"\n]*[\pL\pN][^"\n]*")`)

func reverse(s string) string {
	b := []byte(s) // squeezed text is ASCII but for '#'
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

func rot13(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = 'a' + (c-'a'+13)%26
		}
	}
	return string(b)
}

func containsFlag(flags []core.Flag, f func(core.Flag) bool) bool {
	for _, x := range flags {
		if f(x) {
			return true
		}
	}
	return false
}

// Links that carry data out.
var (
	httpLink = lazyMust(`(?i)\b(?:https?|wss?)://[^\s<>"'\x60]+`)
	// markdownImage is ![alt](link: a client that renders the text fetches
	// the image with no click.
	markdownImage = lazyMust(`!\[[^\]\n]{0,200}\]\(\s*<?((?:https?:)?//[^\s)>]+)`)
	// placeholder is a slot for the model to fill: {x}, {{x}}, ${x}, $X,
	// <x>, [X], %X%, or a word in capitals (CONVERSATION, API_KEY).
	placeholder = lazyMust(`\{\{?[^{}]{1,60}\}\}?|\$\{[^}]{1,60}\}|\$[A-Za-z_][A-Za-z0-9_]{1,60}|<[^<>]{1,60}>|\[[^\[\]]{1,60}\]|%[A-Za-z_][A-Za-z0-9_]{1,60}%|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*\b`)
	// sensitiveWord names what an attacker wants carried out.
	sensitiveWord = lazyMust(`(?i)conversation|chat|history|messages?|transcript|context|prompt|memory|summary|secret|token|passw(?:or)?d|credential|ssh|private|id_rsa|\benv\b|dotenv|cookie|api[_ -]?key|session|\bpat\b|对话|對話|聊天|会话|會話|密码|密碼|令牌|密钥|密鑰|会話|履歴|パスワード|переписк|парол|токен`)
	// envSecret is the name of a variable that holds a secret
	// (GITHUB_TOKEN, OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY).
	envSecret = lazyMust(`\b[A-Z][A-Z0-9]*_(?:[A-Z0-9]+_)*(?:TOKEN|KEY|SECRET|PASSWORD|PASS|PAT|CREDENTIALS?)\b`)
)

// secretParams are query parameter names that only a link built to carry
// a secret or the conversation has.
var secretParams = map[string]bool{
	"secret": true, "secrets": true, "token": true, "accesstoken": true, "authtoken": true, "apitoken": true,
	"password": true, "passwd": true, "pwd": true, "credentials": true, "creds": true, "cookie": true,
	"cookies": true, "ssh": true, "sshkey": true, "privatekey": true, "idrsa": true, "conversation": true,
	"chathistory": true, "transcript": true, "systemprompt": true, "dotenv": true, "apikey": true,
	"sessiontoken": true,
}

func normParam(k string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			return r
		}
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return -1
	}, k)
}

// exfilReason says why link is built to carry data out, or "". near is
// the text around the link; image says the link is a markdown image.
func exfilReason(link, near string, image bool) string {
	rest, query, hasQuery := strings.Cut(link, "?")
	query, _, _ = strings.Cut(query, "#")
	if uq, err := url.QueryUnescape(query); err == nil {
		query = uq
	}
	var empty bool
	if hasQuery {
		for _, kv := range strings.Split(query, "&") {
			k, v, _ := strings.Cut(kv, "=")
			if secretParams[normParam(k)] {
				return fmt.Sprintf("a link whose query has a %q parameter: built to carry a secret or the conversation out", k)
			}
			empty = v == ""
		}
	}
	for _, m := range placeholder.FindAllString(rest[strings.Index(rest, "//")+2:]+"?"+query, -1) {
		if sensitiveWord.MatchString(m) || envSecret.MatchString(m) {
			return fmt.Sprintf("a link with a slot %s for the model to fill: built to carry a secret or the conversation out", clip(m, 40))
		}
	}
	if image {
		if hasQuery && placeholder.MatchString(query) {
			return "a markdown image with a templated query: a client that renders it sends the data with no click"
		}
		if empty {
			return "a markdown image whose query ends open for data: a client that renders it sends the data with no click"
		}
	}
	if empty {
		if sensitiveWord.MatchString(near) || envSecret.MatchString(near) {
			return "a link whose query ends open, next to words for a secret or the conversation: built to carry them out"
		}
	}
	return ""
}

// around is up to n bytes of text on each side of [s, e), cut at
// character boundaries.
func around(text string, s, e, n int) string {
	a, z := max(s-n, 0), min(e+n, len(text))
	for a > 0 && !utf8.RuneStart(text[a]) {
		a--
	}
	for z < len(text) && !utf8.RuneStart(text[z]) {
		z++
	}
	return text[a:s] + " " + text[e:z]
}

// slotHost is a host name whose first label is a slot ({token}.e.example,
// <the user's key>.e.example): resolving it sends the slot's content to
// whoever runs the domain's DNS.
var slotHost = lazyMust(`(?i)(<[^<>\n]{1,60}>|\{\{?[^{}\n]{1,60}\}\}?|\$\{[^}\n]{1,60}\}|\$[A-Z_][A-Z0-9_]{2,60})\.(?:[a-z0-9-]+\.)+[a-z]{2,}\b`)

// slotParam is a query parameter whose value is a slot, outside a link
// ("append ?ref=<the conversation summary>").
var slotParam = lazyMust(`[?&][\w.-]{1,30}=(<[^<>\n]{1,60}>|\{\{?[^{}\n]{1,60}\}\}?|\$\{[^}\n]{1,60}\})`)

// Active content.
var (
	dataURI = lazyMust(`(?i)\bdata:([a-z]+/[\w.+-]+)((?:;[\w=.+-]+)*),([^\s<>"'\x60]*)`)
	// scriptLink is a javascript: or vbscript: link with code after it
	// ("JavaScript: the language" is prose, with a space).
	scriptLink = lazyMust(`(?i)\b(?:javascript|vbscript):[^\s"'<>\x60]{3,}`)
	// forbidsPiping is a sentence's start that forbids what follows
	// ("Never pipe downloaded scripts into a shell (curl … | sh)"): the
	// example of what not to do, not code to run.
	forbidsPiping = phrase(`(?:^|[.:!?]\s)\s*(?:[-*•]\s*)?(?:never|do not|don['’]t|must not|should not|avoid)\s+(?:ever\s+)?(?:pipe|run|execute|use|paste|feed)\b[^.;,\n]{0,60}$`)
	// forbidsStart is a sentence's start that forbids the verb that comes
	// next ("Never pipe …", "- Do not feed …").
	forbidsStart = phrase(`(?:^|[.:!?]\s)\s*(?:[-*•]\s*)?(?:never|do not|don['’]t|must not|should not|avoid)\s+(?:ever\s+)?$`)
	// pipeToShell downloads code and runs it.
	pipeToShell = lazyMust(`(?i)\b(?:curl|wget)\b[^|\n]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b|\b(?:iwr|invoke-webrequest)\b[^|\n]{0,200}\|\s*iex\b`)
	// scriptMarker is what script in HTML or SVG looks like.
	scriptMarker = lazyMust(`(?i)<\s*script\b|\bon(?:load|error|click|mouseover|focus|begin|end)\s*=|javascript:|\beval\s*\(|document\.cookie|\bfetch\s*\(|XMLHttpRequest|localStorage|window\.location|<\s*iframe\b|<\s*foreignObject\b`)
)

// activeTypes run as a page or a script when a client opens them.
var activeTypes = map[string]bool{
	"text/html": true, "application/xhtml+xml": true, "text/javascript": true, "application/javascript": true,
	"application/ecmascript": true, "text/ecmascript": true, "application/x-javascript": true,
}

// links flags links that carry data out and active content; scripts false
// leaves out the FlagScript flags of a pipe to a shell and of a script
// link.
func (t *cleanText) links(scripts bool) []core.Flag {
	if !t.mayContain([]string{"://", "data:", "script:", "curl", "wget", "iwr", "invoke-webrequest", ">.", "}.", "$", "="}) {
		return nil
	}
	var out []core.Flag
	flag := func(kind core.FlagKind, s, e int, reason string) {
		start, end := t.span(s, e)
		out = append(out, core.Flag{Kind: kind, Start: start, End: end, Reason: reason})
	}
	images := map[int]bool{}
	for _, m := range markdownImage.findAllSubmatchIn(t) {
		images[m[2]] = true
	}
	for _, m := range httpLink.findAllIn(t) {
		s, e := m[0], m[0]+len(trimURL(t.text[m[0]:m[1]]))
		if reason := exfilReason(t.text[s:e], around(t.text, s, e, 80), images[s]); reason != "" {
			flag(core.FlagExfiltration, s, e, reason)
		}
	}
	for _, m := range slotParam.findAllSubmatchIn(t) {
		if slot := t.text[m[2]:m[3]]; sensitiveWord.MatchString(slot) || envSecret.MatchString(slot) {
			flag(core.FlagExfiltration, m[0], m[1], fmt.Sprintf("a query parameter with a slot %s for the model to fill: built to carry a secret or the conversation out", clip(slot, 40)))
		}
	}
	for _, m := range slotHost.findAllSubmatchIn(t) {
		if slot := t.text[m[2]:m[3]]; sensitiveWord.MatchString(slot) || envSecret.MatchString(slot) {
			flag(core.FlagExfiltration, m[0], m[1], fmt.Sprintf("a host name with a slot %s for the model to fill: a lookup of it carries the data out", clip(slot, 40)))
		}
	}
	for _, m := range dataURI.findAllSubmatchIn(t) {
		mime := strings.ToLower(t.text[m[2]:m[3]])
		params, payload := strings.ToLower(t.text[m[4]:m[5]]), t.text[m[6]:m[7]]
		var decoded []byte
		if strings.Contains(params, ";base64") {
			decoded, _ = base64.StdEncoding.DecodeString(strings.TrimRight(payload, "=") + strings.Repeat("=", (4-len(strings.TrimRight(payload, "="))%4)%4))
		} else if u, err := url.PathUnescape(payload); err == nil {
			decoded = []byte(u)
		}
		switch {
		case activeTypes[mime]:
			flag(core.FlagScript, m[0], m[1], fmt.Sprintf("a data: URI of type %s, a page or script a client may run", mime))
		case scriptMarker.Match(decoded):
			flag(core.FlagScript, m[0], m[1], fmt.Sprintf("a data: URI of type %s that carries script (%s)", mime, clip(scriptMarker.FindString(string(decoded)), 30)))
		}
		if text, ok := readable(decoded); ok {
			s, e := t.span(m[0], m[1])
			out = append(out, payloadFlags(text, s, e, "in a data: URI")...)
		}
	}
	if !scripts {
		return out
	}
	for _, m := range pipeToShell.findAllIn(t) {
		if a, _ := sentence(t.text, m[0], m[1]); forbidsPiping.MatchString(t.text[a:m[0]]) {
			continue
		}
		flag(core.FlagScript, m[0], m[1], "downloads code and pipes it into a shell")
	}
	for _, m := range scriptLink.findAllIn(t) {
		flag(core.FlagScript, m[0], m[0]+len(trimURL(t.text[m[0]:m[1]])), "a script link, which runs code when it is opened")
	}
	return out
}
