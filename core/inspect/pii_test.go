package inspect

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"
)

// Personal data in the real formats is found: e-mail, phone numbers of
// several countries, Luhn-valid cards, mod-97 IBANs, SSNs (IN-1).
func TestPIIFound(t *testing.T) { // IN-1
	in := mustNew(t, nil)
	cases := []struct{ text, detector, span string }{
		{"write to jane.roe+crm@mail.example.co.uk today", "email", "jane.roe+crm@mail.example.co.uk"},
		{"call (202) 456-1111", "phone", "(202) 456-1111"},
		{"US: +1 202-456-1111.", "phone", "+1 202-456-1111"},
		{"London +44 20 7946 0958", "phone", "+44 20 7946 0958"},
		{"Berlin +49 30 18272 0", "phone", "+49 30 18272 0"},
		{"Paris: +33 1 42 92 81 00", "phone", "+33 1 42 92 81 00"},
		{"Tokyo +81 3-3581-3111", "phone", "+81 3-3581-3111"},
		{"Mumbai +91 22 2202 5070", "phone", "+91 22 2202 5070"},
		{"UK national 020 7946 0958", "phone", "020 7946 0958"},
		{"visa 4111 1111 1111 1111 exp", "card", "4111 1111 1111 1111"},
		{"mc 5500-0000-0000-0004", "card", "5500-0000-0000-0004"},
		{"amex 378282246310005", "card", "378282246310005"},
		{"discover 6011111111111117", "card", "6011111111111117"},
		{"mc2 2223003122003222", "card", "2223003122003222"},
		{"iban GB82 WEST 1234 5698 7654 32", "iban", "GB82 WEST 1234 5698 7654 32"},
		{"DE89370400440532013000", "iban", "DE89370400440532013000"},
		{"FR1420041010050500013M02606", "iban", "FR1420041010050500013M02606"},
		{"ssn 536-22-1234", "ssn", "536-22-1234"},
	}
	for _, c := range cases {
		fs := in.Text(c.text, "", Bit(PII))
		got := detectors(c.text, fs, PII)
		if !slices.Contains(got, c.detector+"="+c.span) {
			t.Errorf("%q: want %s=%s, got %v", c.text, c.detector, c.span, got)
		}
	}
}

// Look-alikes are not personal data: numbers failing Luhn or mod 97,
// impossible SSNs, git SHAs, UUIDs, dates, timestamps and versions (IN-1).
func TestPIIBenign(t *testing.T) { // IN-1
	in := mustNew(t, nil)
	cases := []string{
		"4111 1111 1111 1112",          // fails Luhn
		"1234 5678 9012 3456",          // fails Luhn
		"order 4111111111111111111111", // too long
		"GB82WEST12345698765433",       // fails mod 97
		"GB82 WEST 1234 5698 7654",     // wrong length for GB
		"000-12-3456", "666-12-3456", "912-34-5678", "536-00-1234", "536-22-0000", "078-05-1120",
		"commit 3f786850e387550fdab836ed7e6dc881de23001b",
		"id 550e8400-e29b-41d4-a716-446655440000",
		"released 2024-01-15, build 20240115",
		"timestamp 1700000000123",
		"version 1.22.3 and 10.0.19045.3803",
		"price 1,234,567.89",
		"postgres://app:Zq8vT2mLp4Xw@db.internal/app",
		"git@github.com:org/repo.git",
		"at 12:30:45",
		"PIN 1234",
	}
	for _, s := range cases {
		if fs := in.Text(s, "", Bit(PII)); len(fs) > 0 {
			t.Errorf("%q: flagged %v", s, detectors(s, fs, PII))
		}
	}
}

// inspect.pii.types limits which kinds count, and an unknown kind is
// refused (IN-1).
func TestPIITypesLimit(t *testing.T) { // IN-1
	in := mustNew(t, &Options{PIITypes: []string{"email"}})
	s := "jane@example.org 4111 1111 1111 1111"
	if got := detectors(s, in.Text(s, "", Bit(PII)), PII); !slices.Equal(got, []string{"email=jane@example.org"}) {
		t.Errorf("got %v, want email only", got)
	}
	if _, err := New(&Options{PIITypes: []string{"passport"}}); err == nil {
		t.Error("unknown pii type accepted")
	}
}

// The expressions ssnShape and looksLikeDate are written out from.
var (
	ssnShapeExpr = regexp.MustCompile(`^\d{3}[- ]\d{2}[- ]\d{4}$`)
	dateExpr     = regexp.MustCompile(`^\d{4}[-./]\d{1,2}[-./]\d{1,2}|^\d{1,2}[-./]\d{1,2}[-./]\d{4}|^\d{1,2}[.:]\d{2}(?:[.:]\d{2})?$`)
)

// ssnShape and looksLikeDate answer as their expressions do (IN-1): on
// every string of up to six bytes made of a digit, each separator the
// expressions know, a space and a letter, and on longer ones drawn at
// random from the same bytes, digits weighted.
func TestShapesMatchExpressionsIN1(t *testing.T) {
	alphabet := []byte("0-./: x")
	checked, ssn, date := 0, 0, 0
	check := func(s string) {
		if got, want := ssnShape(s), ssnShapeExpr.MatchString(s); got != want {
			t.Fatalf("ssnShape(%q) = %v, the expression says %v", s, got, want)
		} else if want {
			ssn++
		}
		if got, want := looksLikeDate(s), dateExpr.MatchString(s); got != want {
			t.Fatalf("looksLikeDate(%q) = %v, the expression says %v", s, got, want)
		} else if want {
			date++
		}
		checked++
	}
	var gen func(prefix []byte, n int)
	gen = func(prefix []byte, n int) {
		check(string(prefix))
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			gen(append(prefix, c), n-1)
		}
	}
	gen(nil, 6)
	rng := rand.New(rand.NewPCG(11, 13))
	weighted := []byte("0123456789012345678901234-./: x")
	for range 300_000 {
		b := make([]byte, 8+rng.IntN(8))
		for i := range b {
			b[i] = weighted[rng.IntN(len(weighted))]
		}
		check(string(b))
	}
	// Near the shapes: each of these with a byte or two changed, taken
	// out or added.
	shapes := []string{"123-45-6789", "123 45 6789", "2024-01-15", "2024.1.5x", "15/01/2024", "1/1/2024", "9:30", "09:30:15", "09:30:1", "09.30.15"}
	for _, s := range shapes {
		check(s)
	}
	for range 300_000 {
		b := []byte(shapes[rng.IntN(len(shapes))])
		for range rng.IntN(3) {
			i := rng.IntN(len(b))
			switch c := weighted[rng.IntN(len(weighted))]; rng.IntN(3) {
			case 0:
				b[i] = c
			case 1:
				b = append(b[:i], b[i+1:]...)
			default:
				b = append(b[:i], append([]byte{c}, b[i:]...)...)
			}
			if len(b) == 0 {
				break
			}
		}
		check(string(b))
	}
	if ssn < 1000 || date < 1000 {
		t.Fatalf("%d strings, only %d SSN shapes and %d dates among them", checked, ssn, date)
	}
	t.Logf("%d strings, %d SSN shapes, %d dates: the same answers", checked, ssn, date)
}
