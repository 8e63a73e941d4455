package inspect

import (
	"net/url"
	"strings"
)

// Links (IN-1): a URL that would carry data to a host the operator has not
// allowed. A markdown image is fetched by the client as soon as it is shown,
// so it sends its URL without anyone clicking; a link or bare URL sends it
// when followed. Either counts only when the URL carries data: a query
// value or path segment long enough, and random or encoded enough, to hold
// more than an identifier. Hex ids (git SHAs, UUIDs) and short words do
// not count.

func (in *Inspector) linkFindings(s, path string) []Finding {
	var out []Finding
	for at := 0; at < len(s); {
		i := strings.Index(s[at:], "://")
		if i < 0 {
			break
		}
		i += at
		at = i + 3
		start := i
		for start > 0 && i-start < 5 && 'a' <= s[start-1]|0x20 && s[start-1]|0x20 <= 'z' {
			start--
		}
		if scheme := strings.ToLower(s[start:i]); scheme != "http" && scheme != "https" {
			continue
		}
		end := i + 3
		for end < len(s) && !urlStop(s[end]) {
			end++
		}
		at = end
		md, spanStart, spanEnd := markdownAround(s, start, end)
		if !md {
			for end > start && strings.IndexByte(".,;:!?*", s[end-1]) >= 0 {
				end--
			}
			spanStart, spanEnd = start, end
		}
		if !in.carriesData(s[start:end]) {
			continue
		}
		det := "url"
		switch {
		case md && s[spanStart] == '!':
			det = "markdown-image"
		case md:
			det = "markdown-link"
		}
		out = append(out, Finding{Type: Links, Detector: det, Path: path, Start: spanStart, End: spanEnd})
	}
	return out
}

func urlStop(c byte) bool {
	return c <= ' ' || strings.IndexByte("<>\"'()[]{}`", c) >= 0
}

// markdownAround reports whether the URL s[start:end] is the target of a
// markdown link or image, "[text](url)" or "![alt](url "title")", and
// returns the whole construct's span.
func markdownAround(s string, start, end int) (bool, int, int) {
	j := start
	if j > 0 && s[j-1] == '<' {
		j--
	}
	for j > 0 && s[j-1] == ' ' {
		j--
	}
	if j < 2 || s[j-1] != '(' || s[j-2] != ']' {
		return false, 0, 0
	}
	open := strings.LastIndexByte(s[max(0, j-2-1000):j-2], '[')
	if open < 0 {
		return false, 0, 0
	}
	open += max(0, j-2-1000)
	if strings.IndexByte(s[open:j-2], '\n') >= 0 && strings.Contains(s[open:j-2], "\n\n") {
		return false, 0, 0
	}
	close := strings.IndexByte(s[end:min(len(s), end+300)], ')')
	if close < 0 {
		return false, 0, 0
	}
	if open > 0 && s[open-1] == '!' {
		open--
	}
	return true, open, end + close + 1
}

// carriesData: the URL raw carries data to a host not allowed.
func (in *Inspector) carriesData(raw string) bool {
	return mayCarryData(raw) && in.parsedCarriesData(raw)
}

// mayCarryData bounds carriesData without parsing raw: the parts it reads
// (query values, the fragment, path segments) each decode to no more than
// their raw length, so a URL none of whose raw parts is as long as the
// shortest data value counted there (16 bytes in the query, 24 in the
// fragment, 32 in the path) carries none. Most URLs in text are such, and
// parsing them was most of what the links detector cost
// (TestMayCarryDataBoundsIN1).
func mayCarryData(raw string) bool {
	i := strings.Index(raw, "://")
	if i < 0 {
		return true // the parser decides
	}
	rest := raw[i+3:]
	if h := strings.IndexByte(rest, '#'); h >= 0 {
		if len(rest)-h-1 >= 24 {
			return true
		}
		rest = rest[:h]
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		if longPart(rest[q+1:], '&', 16) {
			return true
		}
		rest = rest[:q]
	}
	p := strings.IndexByte(rest, '/')
	return p >= 0 && longPart(rest[p:], '/', 32)
}

// longPart: s, cut at each sep, has a part of n bytes or more.
func longPart(s string, sep byte, n int) bool {
	for len(s) >= n {
		i := strings.IndexByte(s, sep)
		if i < 0 {
			return true
		}
		if i >= n {
			return true
		}
		s = s[i+1:]
	}
	return false
}

func (in *Inspector) parsedCarriesData(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	if in.allowed(u.Hostname()) {
		return false
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			if dataValue(v, 16) {
				return true
			}
		}
	}
	if u.Fragment != "" && dataValue(u.Fragment, 24) {
		return true
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		if dec, err := url.PathUnescape(seg); err == nil && dataValue(dec, 32) && (dec != seg || entropy(dec) >= 4) {
			return true
		}
	}
	return false
}

func (in *Inspector) allowed(host string) bool {
	host = strings.ToLower(host)
	for _, h := range in.allowHosts {
		if host == h || strings.HasSuffix(host, "."+h) {
			return true
		}
	}
	return false
}

// dataValue: at least min bytes, and not an identifier — not all hex (a
// SHA, a UUID without or with dashes), not all digits, not a slug of words.
func dataValue(v string, min int) bool {
	if len(v) < min {
		return false
	}
	if isHex(strings.ReplaceAll(v, "-", "")) {
		return false
	}
	if strings.ContainsAny(v, " \n\t") {
		return true // sentences or lines of text
	}
	if slug(v) {
		return false
	}
	return entropy(v) >= 3.5
}

// slug reports whether v is words joined by - or _ (a title in a URL).
func slug(v string) bool {
	words := strings.FieldsFunc(v, func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	if len(words) < 2 {
		return false
	}
	for _, w := range words {
		if len(w) > 15 {
			return false
		}
		for i := 0; i < len(w); i++ {
			if !('a' <= w[i] && w[i] <= 'z' || isDigit(w[i])) {
				return false
			}
		}
	}
	return true
}
