package inspect

import (
	"encoding/base64"
	"encoding/json"
	"hash/crc32"
	"strings"
)

// The secrets rule table (IN-1). It follows gitleaks' rules for the same
// providers (formats, keywords, entropy floors, allowlists) but is our own:
// gitleaks' Go module brings ~200 modules into the graph (a WebAssembly
// runtime for its RE2 build, viper, cobra, archive readers) and adds about
// 10 MB to a binary, for a rule set of which a gateway needs the providers'
// token formats only. secrets_test.go checks these rules against gitleaks'
// published samples.

// secretRule is one credential format. keywords gate the regexp (a cheap
// substring test first, as gitleaks does); group names the submatch that is
// the secret (0: the whole match); check, when set, must accept it.
type secretRule struct {
	detector string
	keywords []string
	fold     bool // keywords match case-insensitively
	re       *lazyRegexp
	// back and fwd bound the window the regexp reads around each keyword
	// (bytes before its start, after its end): the regexp never reads the
	// whole text, which keeps a large result linear and cheap.
	back, fwd  int
	group      int
	minEntropy float64
	check      func(secret string) bool
	// gate, when set, is a cheap test of a keyword hit at i that must pass
	// before its window is read.
	gate func(s string, i int) bool
}

var secretRules = []secretRule{
	{detector: "private-key", back: 130, fwd: 20000, keywords: []string{"PRIVATE KEY"},
		re:    lazyCompile(`-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S]{64,}?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----`),
		check: func(s string) bool { return entropy(pemBody(s)) >= 4 }},
	{detector: "aws-access-key", back: 1, fwd: 22, keywords: []string{"AKIA", "ASIA", "ABIA", "ACCA", "A3T"},
		re:         lazyCompile(`\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})\b`),
		minEntropy: 3,
		// AWS documents AKIAIOSFODNN7EXAMPLE and its kin as examples.
		check: func(s string) bool { return !strings.HasSuffix(s, "EXAMPLE") }},
	{detector: "aws-secret-key", back: 1, fwd: 150, keywords: []string{"aws"}, fold: true,
		re:         lazyCompile(`(?i)aws.{0,20}?(?:secret|sk|private)[a-z_ -]{0,20}?["']?\s*[:=]+\s*["']?([A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|$)`),
		group:      1,
		minEntropy: 4,
		check:      func(s string) bool { return !strings.Contains(s, "EXAMPLEKEY") }},
	{detector: "github-token", back: 1, fwd: 42, keywords: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"},
		re:    lazyCompile(`\bgh[pousr]_[0-9A-Za-z]{36}\b`),
		check: githubChecksum},
	{detector: "github-pat", back: 1, fwd: 90, keywords: []string{"github_pat_"},
		re:         lazyCompile(`\bgithub_pat_[0-9A-Za-z]{22}_[0-9A-Za-z]{59}\b`),
		minEntropy: 4},
	{detector: "gitlab-token", back: 1, fwd: 300, keywords: []string{"glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glimt-", "glft-", "glsoat-", "gloas-", "glagent-", "glffct-", "GR1348941"},
		re:         lazyCompile(`\b(?:(?:glpat|gldt|glrt|glft|glsoat|glffct)-[\w-]{20}(?:[\w-]{7,280}\.[0-9a-z]{9})?|glptt-[0-9a-f]{40}|glcbt-[0-9a-zA-Z]{1,5}_[\w-]{20}|glimt-[\w-]{25}|glagent-[\w-]{50}|gloas-[\w-]{64}|GR1348941[\w-]{20})\b`),
		minEntropy: 3},
	{detector: "slack-token", back: 6, fwd: 200, keywords: []string{"xox", "xapp-"},
		re: lazyCompile(`xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}` +
			`|xoxb-[0-9]{10,13}-[0-9]{10,13}[a-zA-Z0-9-]*` +
			`|xoxb-[0-9]{8,14}-[a-zA-Z0-9]{18,26}` +
			`|xox[os]-\d+-\d+-\d+-[a-fA-F\d]+` +
			`|xox[ar]-(?:\d-)?[0-9a-zA-Z]{8,48}` +
			`|(?i:xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+)` +
			`|(?i:xoxe\.xox[bp]-\d-[A-Z0-9]{163,166})` +
			`|(?i:xoxe-\d-[A-Z0-9]{146})`),
		minEntropy: 2.5},
	{detector: "slack-webhook", back: 0, fwd: 80, keywords: []string{"hooks.slack.com"},
		re: lazyCompile(`hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56}`)},
	{detector: "stripe-key", back: 1, fwd: 110, keywords: []string{"sk_live_", "rk_live_", "sk_test_", "rk_test_"},
		re:         lazyCompile(`\b[sr]k_(?:live|test)_[0-9A-Za-z]{10,99}\b`),
		minEntropy: 3},
	{detector: "google-api-key", back: 1, fwd: 40, keywords: []string{"AIza"},
		re:         lazyCompile(`(?:^|[^\w-])(AIza[\w-]{35})(?:[^\w-]|$)`),
		group:      1,
		minEntropy: 4,
		check:      func(s string) bool { return !firebaseExamples[s] }},
	{detector: "openai-key", back: 215, fwd: 210, keywords: []string{"T3BlbkFJ"},
		re:         lazyCompile(`\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,200}|[A-Za-z0-9]{20})T3BlbkFJ[A-Za-z0-9_-]{20,200}`),
		minEntropy: 3},
	{detector: "anthropic-key", back: 1, fwd: 400, keywords: []string{"sk-ant-"},
		re: lazyCompile(`\bsk-ant-(?:(?:api03|admin01)-[\w-]{93}AA|(?:oat01|ort01)-[\w-]{40,})(?:[^\w-]|$)`)},
	{detector: "npm-token", back: 1, fwd: 40, keywords: []string{"npm_"},
		re:         lazyCompile(`\bnpm_[A-Za-z0-9]{36}\b`),
		minEntropy: 3},
	{detector: "pypi-token", back: 0, fwd: 1010, keywords: []string{"pypi-AgEIcHlwaS5vcmc"},
		re: lazyCompile(`pypi-AgEIcHlwaS5vcmc[\w-]{50,1000}`)},
	{detector: "jwt", back: 1, fwd: 8192, keywords: []string{"eyJ"},
		re:    lazyCompile(`\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}={0,2}`),
		check: jwtHeader},
	{detector: "url-password", back: 34, fwd: 300, keywords: []string{"://"},
		re:    lazyCompile(`\b[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/?#@"'<>]{1,128}:([^\s/?#@"'<>]{3,128})@[A-Za-z0-9.\[\]_-]`),
		group: 1,
		check: notPlaceholder,
		gate:  authorityHasPassword},
	{detector: "password-assignment", back: 15, fwd: 230, keywords: []string{"pass", "pwd", "secret", "token", "key"}, fold: true,
		re:         lazyCompile(`(?i)(?:^|[^a-z0-9])(?:password|passwd|pwd|passphrase|secret|client[_-]?secret|token|auth[_-]?token|access[_-]?token|api[_-]?key|apikey|private[_-]?key)["']?[ \t]*(?:=|:=|:|=>)[ \t]*["']?([^\s"'&,;<>{}()\[\]]{8,200})`),
		group:      1,
		minEntropy: 3,
		check:      genericSecret,
		gate:       assignmentFollows},
}

// firebaseExamples are Google API keys published as examples in Firebase's
// SDK (gitleaks allowlists them too).
var firebaseExamples = map[string]bool{
	"AIzaSyabcdefghijklmnopqrstuvwxyz1234567": true, "AIzaSyAnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIs": true,
	"AIzaSyCkEhVjf3pduRDt6d1yKOMitrUEke8agEM": true, "AIzaSyDMAScliyLx7F0NPDEJi1QmyCgHIAODrlU": true,
	"AIzaSyD3asb-2pEZVqMkmL6M9N6nHZRR_znhrh0": true, "AIzayDNSXIbFmlXbIE6mCzDLQAqITYefhixbX4A": true,
	"AIzaSyAdOS2zB6NCsk1pCdZ4-P6GBdi_UUPwX7c": true, "AIzaSyASWm6HmTMdYWpgMnjRBjxcQ9CKctWmLd4": true,
	"AIzaSyANUvH9H9BsUccjsu2pCmEkOPjjaXeDQgY": true, "AIzaSyA5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM": true,
	"AIzaSyA4UrcGxgwQFTfaI3no3t7Lt1sjmdnP5sQ": true, "AIzaSyDSb51JiIcB6OJpwwMicseKRhhrOq1cS7g": true,
	"AIzaSyBF2RrAIm4a0mO64EShQfqfd2AFnzAvvuU": true, "AIzaSyBcE-OOIbhjyR83gm4r2MFCu4MJmprNXsw": true,
	"AIzaSyB8qGxt4ec15vitgn44duC5ucxaOi4FmqE": true, "AIzaSyA8vmApnrHNFE0bApF4hoZ11srVL_n0nvY": true,
}

func secretFindings(s, path string) []Finding {
	ix := indexText(s, 1<<secretsFamily)
	defer ix.release()
	return secretFindingsIn(ix, path)
}

// secretFindingsIn reads the windows around the secrets rules' keywords
// found in ix.
func secretFindingsIn(ix textIndex, path string) []Finding {
	hits := ix.scan.of(secretsFamily)
	var out []Finding
	for i := range secretRules {
		if len(hits[i]) > 0 {
			out = secretRules[i].find(ix.s, path, out, hits[i])
		}
	}
	return out
}

// find appends the rule's matches in s. Each keyword occurrence opens a
// window; windows that touch are read as one.
func (r *secretRule) find(s, path string, out []Finding, hits []keywordHit) []Finding {
	var wins [][2]int
	for _, h := range hits {
		k, i := r.keywords[h.kw], h.at
		if r.gate == nil || r.gate(s, i) {
			wins = append(wins, [2]int{max(0, i-r.back), min(len(s), i+len(k)+r.fwd)})
		}
	}
	return r.matchWindows(s, path, out, wins)
}

// matchWindows reads the windows, merged where they touch, in order.
func (r *secretRule) matchWindows(s, path string, out []Finding, wins [][2]int) []Finding {
	first := len(out)
	eachMergedWindow(wins, len(s), func(lo, hi int) { out = r.match(s, lo, hi, path, first, out) })
	return out
}

func (r *secretRule) match(s string, lo, hi int, path string, first int, out []Finding) []Finding {
	win := s[lo:hi]
	for _, m := range r.re.FindAllStringSubmatchIndex(win, -1) {
		start, end := m[2*r.group], m[2*r.group+1]
		if start < 0 {
			continue
		}
		v := win[start:end]
		if r.minEntropy > 0 && entropy(v) < r.minEntropy {
			continue
		}
		if r.check != nil && !r.check(v) {
			continue
		}
		f := Finding{Type: Secrets, Detector: r.detector, Path: path, Start: lo + start, End: lo + end}
		if !overlaps(out[first:], f) {
			out = append(out, f)
		}
	}
	return out
}

func overlaps(fs []Finding, f Finding) bool {
	for _, g := range fs {
		if f.Start < g.End && g.Start < f.End {
			return true
		}
	}
	return false
}

// indexFrom is strings.Index from at; with fold, keyword (lower case)
// matches in any case.
func indexFrom(s, keyword string, at int, fold bool) int {
	if !fold {
		if i := strings.Index(s[at:], keyword); i >= 0 {
			return at + i
		}
		return -1
	}
	c0, n := keyword[0], len(keyword)
	for i := at; i+n <= len(s); i++ {
		if c := s[i] | 0x20; c == c0 && strings.EqualFold(s[i:i+n], keyword) {
			return i
		}
	}
	return -1
}

// githubChecksum checks the last six characters of a GitHub token: the
// CRC32 of its 30 random characters in base62, zero-padded. It tells a
// real token from a string shaped like one.
func githubChecksum(tok string) bool {
	body, sum := tok[4:34], tok[34:]
	c := crc32.ChecksumIEEE([]byte(body))
	return base62(c, base62Digits) == sum || base62(c, base62DigitsLowerFirst) == sum
}

// GitHub has not published which of the two usual base62 alphabets it
// uses; both are accepted (a random string passes either with odds of
// 2 in 62^6).
const (
	base62Digits           = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	base62DigitsLowerFirst = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)

func base62(n uint32, digits string) string {
	var b [6]byte
	for i := 5; i >= 0; i-- {
		b[i] = digits[n%62]
		n /= 62
	}
	return string(b[:])
}

// jwtHeader accepts a token whose first part decodes to a JSON object
// naming an algorithm: base64url text that merely starts with "eyJ" does
// not.
func jwtHeader(tok string) bool {
	head, _, _ := strings.Cut(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return false
	}
	var h struct {
		Alg *string `json:"alg"`
	}
	return json.Unmarshal(raw, &h) == nil && h.Alg != nil && *h.Alg != ""
}

func pemBody(s string) string {
	if i := strings.Index(s[5:], "-----"); i >= 0 {
		s = s[5+i+5:]
	}
	if i := strings.LastIndex(s, "-----END"); i >= 0 {
		s = s[:i]
	}
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, s)
}

// authorityHasPassword: after "://" at i, the authority holds
// "user:password@".
func authorityHasPassword(s string, i int) bool {
	colon := false
	for j := i + 3; j < len(s) && j < i+3+260; j++ {
		switch s[j] {
		case ':':
			colon = true
		case '@':
			return colon
		case '/', '?', '#', ' ', '\t', '\n', '"', '\'', '<', '>':
			return false
		}
	}
	return false
}

// assignmentFollows: the keyword at i is followed, within a name's length,
// by "=" or ":" ("password=", "api_key: ", "client_secret\" =>").
func assignmentFollows(s string, i int) bool {
	for j := i + 3; j < len(s) && j < i+40; j++ {
		c := s[j]
		switch {
		case c == '=' || c == ':':
			return true
		case isWordByte(c) || c == '-' || c == '"' || c == '\'' || c == ' ' || c == '\t':
		default:
			return false
		}
	}
	return false
}

// placeholders are values documentation writes where a secret goes.
var placeholders = []string{"password", "passwd", "secret", "changeme", "example", "xxxx", "****", "...", "${", "{{", "$(", "<", "redacted", "your", "dummy", "placeholder", "pass", "pwd", "token"}

func notPlaceholder(v string) bool {
	l := strings.ToLower(v)
	for _, p := range placeholders {
		if strings.Contains(l, p) {
			return false
		}
	}
	return entropy(v) >= 2
}

// genericSecret keeps an assigned value that looks generated: letters and
// digits mixed, not a word, a path, a variable or a placeholder.
func genericSecret(v string) bool {
	if !notPlaceholder(v) {
		return false
	}
	if strings.HasPrefix(v, "$") || strings.HasPrefix(v, "%") || strings.Contains(v, "/") && !strings.ContainsAny(v, "+=") {
		return false
	}
	var lower, upper, digit bool
	for i := 0; i < len(v); i++ {
		c := v[i]
		lower = lower || 'a' <= c && c <= 'z'
		upper = upper || 'A' <= c && c <= 'Z'
		digit = digit || isDigit(c)
	}
	return digit && (lower || upper)
}
