package config

import (
	"net/url"
	"strings"
	"unicode"
)

// looksSecret tells import-config which literal env and header values to
// replace with placeholders (OP-2): those under a secret-looking name and
// those that look like a credential themselves. It errs towards secret:
// a needless placeholder costs one variable, a printed token costs a leak.
func looksSecret(key, value string) bool {
	return secretName(key) || secretValue(value)
}

// secretNameWords mark a name as a credential's when one of them is a word
// of it (API_KEY, apiKey, X-Auth-Token); secretNameParts when contained in a
// word (PGPASSWORD, ACCESSTOKEN, CLIENTSECRET).
var (
	secretNameWords = map[string]bool{
		"key": true, "apikey": true, "auth": true, "authorization": true, "bearer": true,
		"pwd": true, "pass": true, "pat": true, "session": true, "sid": true,
		"signature": true, "sig": true, "private": true, "dsn": true, "cookie": true,
	}
	secretNameParts = []string{"token", "secret", "passw", "credential", "cookie"}
)

func secretName(key string) bool {
	for _, w := range nameWords(key) {
		if secretNameWords[w] {
			return true
		}
		for _, p := range secretNameParts {
			// "tokenizer" (TOKENIZERS_PARALLELISM) is not a token.
			if strings.Contains(w, p) && !strings.Contains(w, "tokeniz") {
				return true
			}
		}
	}
	return false
}

// nameWords splits a variable or header name into lower-case words at
// punctuation and camelCase humps.
func nameWords(key string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(key)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && i > 0 && unicode.IsLower(rs[i-1]):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return words
}

// secretPrefixes start well-known credential formats and auth schemes.
var secretPrefixes = []string{
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "xoxa-", "xapp-",
	"sk-", "sk_", "rk_", "AKIA", "ASIA", "AIza", "ya29.", "npm_", "hf_", "eyJ", "-----BEGIN",
	"Bearer ", "Basic ", "Token ",
}

// randomRunRE is a long unbroken run of letters and digits: what random
// keys look like, unlike words, paths and UUIDs.
var randomRunRE = lazyRegexp(`[A-Za-z0-9]{20,}`)

func secretValue(v string) bool {
	for _, p := range secretPrefixes {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	if u, err := url.Parse(v); err == nil && u.Scheme != "" {
		if _, hasPassword := u.User.Password(); hasPassword {
			return true
		}
		for k := range u.Query() {
			if secretName(k) {
				return true
			}
		}
	}
	for _, run := range randomRunRE().FindAllString(v, -1) {
		if strings.ContainsAny(run, "0123456789") && strings.IndexFunc(run, unicode.IsLetter) >= 0 {
			return true
		}
	}
	return false
}
