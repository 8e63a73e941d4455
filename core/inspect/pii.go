package inspect

import (
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// PII detectors (IN-1). Each candidate a pattern finds must pass the
// format's own check — Luhn and issuer ranges for cards, mod 97 and the
// country's length for IBANs, the assignment rules for SSNs, the phone
// library's validity for phone numbers — so digit runs that merely look
// alike (order numbers, timestamps, hashes) are not personal data.

var (
	ibanRe = lazyCompile(`^[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b`)
)

func (in *Inspector) piiFindings(s, path string) []Finding {
	var out []Finding
	var kept spanSet // out's spans
	add := func(det string, start, end int) {
		if !kept.overlaps(start, end) {
			kept.insert(start, end)
			out = append(out, Finding{Type: PII, Detector: det, Path: path, Start: start, End: end})
		}
	}
	if in.pii[PIIEmail] {
		for at := 0; at < len(s); {
			i := strings.IndexByte(s[at:], '@')
			if i < 0 {
				break
			}
			i += at
			at = i + 1
			start, end, ok := emailAt(s, i)
			if !ok {
				continue
			}
			// user:pass@host in a URL is the url-password rule's.
			if before := s[max(0, start-64):start]; strings.Contains(before, "://") && !strings.ContainsAny(before, " \t\n") {
				continue
			}
			// git@host:org/repo is an SSH remote, not an address.
			if end+1 < len(s) && s[end] == ':' && s[end+1] != ' ' {
				continue
			}
			add(PIIEmail, start, end)
		}
	}
	if in.pii[PIIIBAN] {
		for i := 0; i+15 <= len(s); i++ {
			// An IBAN starts with a capital; most bytes are not.
			if i = nextUpper(s, i); i+15 > len(s) {
				break
			}
			if !ibanStart(s, i) {
				continue
			}
			if m := ibanRe.FindStringIndex(s[i:min(len(s), i+48)]); m != nil && m[0] == 0 && validIBAN(s[i:i+m[1]]) {
				add(PIIIBAN, i, i+m[1])
				i += m[1]
			}
		}
	}
	if !in.pii[PIICard] && !in.pii[PIISSN] && !in.pii[PIIPhone] {
		return out
	}
	for i := 0; i < len(s); {
		start, end, ok := numberRun(s, i)
		if !ok {
			break
		}
		i = end
		in.number(s, start, end, add)
	}
	return out
}

// numberRun finds, from i, the next run of digits joined by single
// separators (space, -, ., parentheses, a leading +) that holds seven
// digits or more: the candidates for cards, SSNs and phone numbers.
func numberRun(s string, i int) (start, end int, ok bool) {
	for i < len(s) {
		if i = nextNumberStart(s, i); i == len(s) {
			break
		}
		if i > 0 && isWordByte(s[i-1]) {
			i++
			continue
		}
		start = i
		j, digits := i, 0
		for j < len(s) {
			c := s[j]
			if isDigit(c) {
				digits++
				j++
				continue
			}
			if (c == ' ' || c == '-' || c == '.' || c == '(' || c == ')' || c == '+' && j == start) && j+1 < len(s) && (isDigit(s[j+1]) || s[j+1] == '(' || c == ')' && s[j+1] == ' ' && j+2 < len(s) && isDigit(s[j+2])) {
				j++
				continue
			}
			break
		}
		for j > start && !isDigit(s[j-1]) {
			j--
		}
		if digits >= 7 {
			return start, j, true
		}
		i = max(j, i+1)
	}
	return 0, 0, false
}

// number reads one run: a card, an SSN, a phone number, or the same with
// trailing groups dropped (a number followed by another number in text).
func (in *Inspector) number(s string, start, end int, add func(string, int, int)) {
	for range 4 {
		c := s[start:end]
		if isolated(s, start, end) {
			switch {
			case in.pii[PIICard] && validCard(c):
				add(PIICard, start, end)
				return
			case in.pii[PIISSN] && ssnShape(c) && validSSNText(c):
				add(PIISSN, start, end)
				return
			case in.pii[PIIPhone] && in.validPhone(c):
				add(PIIPhone, start, end)
				return
			}
		}
		k := strings.LastIndexAny(c, " -.")
		if k <= 0 {
			return
		}
		end = start + k
		for end > start && !isDigit(s[end-1]) {
			end--
		}
	}
}

func ibanStart(s string, i int) bool {
	return isUpper(s[i]) && isUpper(s[i+1]) && isDigit(s[i+2]) && isDigit(s[i+3]) && (i == 0 || !isWordByte(s[i-1]))
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

func validSSNText(c string) bool {
	if c[3] != c[6] {
		return false
	}
	return validSSN(c[:3], c[4:6], c[7:])
}

// emailAt reads the address around the "@" at i: a local part of up to 64
// characters before it, a domain of dot-separated labels after it ending in
// a top-level domain of letters.
func emailAt(s string, i int) (start, end int, ok bool) {
	start = i
	for start > 0 && i-start < 64 && (isAlnum(s[start-1]) || strings.IndexByte("._%+-", s[start-1]) >= 0) {
		start--
	}
	for start < i && !isAlnum(s[start]) {
		start++
	}
	if start == i {
		return 0, 0, false
	}
	end = i + 1
	label, lastDot := 0, -1
	for end < len(s) && end-i < 254 {
		c := s[end]
		if isAlnum(c) || c == '-' {
			label++
		} else if c == '.' && label > 0 && label <= 63 && s[end-1] != '-' {
			lastDot, label = end, 0
		} else {
			break
		}
		end++
	}
	for end > i+1 && (s[end-1] == '.' || s[end-1] == '-') {
		end--
	}
	if lastDot < 0 || lastDot >= end-2 || s[i+1] == '-' {
		return 0, 0, false
	}
	for j := lastDot + 1; j < end; j++ {
		if !('a' <= s[j]|0x20 && s[j]|0x20 <= 'z') {
			return 0, 0, false
		}
	}
	if end-lastDot-1 > 24 || end < len(s) && isWordByte(s[end]) {
		return 0, 0, false
	}
	return start, end, true
}

func hasDigits(s string, n int) bool {
	for i := 0; i < len(s) && n > 0; i++ {
		if isDigit(s[i]) {
			n--
		}
	}
	return n == 0
}

// isolated reports whether s[start:end] stands apart from what is around
// it: not part of a UUID, hash, version string, path or longer number.
func isolated(s string, start, end int) bool {
	if start > 0 {
		c := s[start-1]
		if isAlnum(c) || strings.IndexByte("_-./:=#", c) >= 0 {
			return false
		}
	}
	if end < len(s) {
		c := s[end]
		if isAlnum(c) || c == '_' || c == '-' || c == '/' {
			return false
		}
		if (c == '.' || c == ':') && end+1 < len(s) && isAlnum(s[end+1]) {
			return false
		}
	}
	return true
}

func (in *Inspector) validPhone(cand string) bool {
	digits := digitsOnly(cand)
	if len(digits) < 7 || len(digits) > 15 {
		return false
	}
	// 3-2-4 is how SSNs are written, and a date is not a number to call.
	if ssnShape(cand) || looksLikeDate(cand) {
		return false
	}
	// Without "+" the number must be written in groups: a bare run of
	// digits is far more often an id or a date than a number to call.
	// Its first group is an area or trunk code: five digits at most.
	if !strings.HasPrefix(cand, "+") && (!strings.ContainsAny(cand, " -.()") || leadingDigits(cand) > 5) {
		return false
	}
	if strings.HasPrefix(cand, "+") {
		n, err := phonenumbers.Parse(cand, "")
		return err == nil && phonenumbers.IsValidNumber(n)
	}
	for _, r := range in.regions {
		if n, err := phonenumbers.Parse(cand, r); err == nil && phonenumbers.IsValidNumberForRegion(n, r) {
			return true
		}
	}
	return false
}

func leadingDigits(s string) int {
	s = strings.TrimPrefix(s, "(")
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	return n
}

// ssnShape: three digits, two and four, apart by "-" or " ", how an SSN
// is written. Written out rather than as an expression (what
// ssnShapeExpr, in the tests, says): every run of digits in a result is
// asked, and the expression's machinery cost more than the rest of the
// PII detectors together.
func ssnShape(s string) bool {
	return len(s) == 11 && digitsAt(s, 0, 3) && byteIn(s, 3, "- ") && digitsAt(s, 4, 2) && byteIn(s, 6, "- ") && digitsAt(s, 7, 4)
}

// looksLikeDate: s starts with a date, its year first or last, or is a
// time of day (what dateExpr, in the tests, says).
func looksLikeDate(s string) bool {
	if digitsAt(s, 0, 4) && byteIn(s, 4, "-./") {
		for _, m := range []int{1, 2} {
			if digitsAt(s, 5, m) && byteIn(s, 5+m, "-./") && digitsAt(s, 6+m, 1) {
				return true
			}
		}
	}
	for _, d := range []int{1, 2} {
		if !digitsAt(s, 0, d) {
			continue
		}
		if byteIn(s, d, "-./") {
			for _, m := range []int{1, 2} {
				if digitsAt(s, d+1, m) && byteIn(s, d+1+m, "-./") && digitsAt(s, d+2+m, 4) {
					return true
				}
			}
		}
		if byteIn(s, d, ".:") && digitsAt(s, d+1, 2) {
			if rest := s[d+3:]; rest == "" || len(rest) == 3 && byteIn(rest, 0, ".:") && digitsAt(rest, 1, 2) {
				return true
			}
		}
	}
	return false
}

// digitsAt: s holds n digits from i.
func digitsAt(s string, i, n int) bool {
	if i+n > len(s) {
		return false
	}
	for _, c := range []byte(s[i : i+n]) {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// byteIn: s has at i one of the bytes of set.
func byteIn(s string, i int, set string) bool {
	return i < len(s) && strings.IndexByte(set, s[i]) >= 0
}

// validCard checks Luhn and the issuer's number ranges and lengths; the
// separators, if any, must be one kind.
func validCard(s string) bool {
	if strings.Contains(s, " ") && strings.Contains(s, "-") {
		return false
	}
	d := digitsOnly(s)
	if !luhn(d) || allSame(d) {
		return false
	}
	n := len(d)
	p := func(k int) int {
		v := 0
		for i := 0; i < k; i++ {
			v = v*10 + int(d[i]-'0')
		}
		return v
	}
	switch {
	case d[0] == '4':
		return n == 13 || n == 16 || n == 19 // Visa
	case p(2) >= 51 && p(2) <= 55, p(4) >= 2221 && p(4) <= 2720:
		return n == 16 // Mastercard
	case p(2) == 34 || p(2) == 37:
		return n == 15 // American Express
	case p(4) == 6011, p(3) >= 644 && p(3) <= 649, p(2) == 65:
		return n >= 16 && n <= 19 // Discover
	case p(4) >= 3528 && p(4) <= 3589:
		return n >= 16 && n <= 19 // JCB
	case p(3) >= 300 && p(3) <= 305, p(2) == 36, p(2) == 38, p(2) == 39:
		return n >= 14 && n <= 19 // Diners Club
	case p(2) == 62:
		return n >= 16 && n <= 19 // UnionPay
	case p(2) == 50, p(2) >= 56 && p(2) <= 69:
		return n >= 12 && n <= 19 // Maestro
	}
	return false
}

func luhn(d string) bool {
	sum, double := 0, false
	for i := len(d) - 1; i >= 0; i-- {
		v := int(d[i] - '0')
		if double {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
		double = !double
	}
	return sum%10 == 0
}

func allSame(d string) bool {
	return strings.Count(d, d[:1]) == len(d)
}

// ibanLengths is each IBAN country's length (SWIFT's IBAN registry).
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27,
	"BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28,
	"EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
	"GL": 18, "GR": 27, "GT": 28, "HN": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
	"IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21,
	"LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28,
	"NL": 18, "NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22,
	"RU": 33, "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25,
	"SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}

func validIBAN(s string) bool {
	c := strings.ReplaceAll(s, " ", "")
	if want, ok := ibanLengths[c[:2]]; !ok || want != len(c) {
		return false
	}
	// Move the country and check digits to the end, letters to 10..35,
	// and take the remainder digit by digit.
	r := c[4:] + c[:4]
	rem := 0
	for i := 0; i < len(r); i++ {
		ch := r[i]
		switch {
		case isDigit(ch):
			rem = (rem*10 + int(ch-'0')) % 97
		case 'A' <= ch && ch <= 'Z':
			rem = (rem*100 + int(ch-'A'+10)) % 97
		default:
			return false
		}
	}
	return rem == 1
}

// validSSN applies the Social Security Administration's rules: no area 000,
// 666 or 900–999, no group 00, no serial 0000; and leaves out the numbers
// printed on sample cards and in advertising.
func validSSN(area, group, serial string) bool {
	if area == "000" || area == "666" || area[0] == '9' || group == "00" || serial == "0000" {
		return false
	}
	switch area + group + serial {
	case "078051120", "219099999", "123456789":
		return false
	}
	return true
}
