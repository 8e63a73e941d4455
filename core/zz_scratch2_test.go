package core

import (
	"strings"
	"testing"
	"time"
	"fmt"
)

func TestScratch2(t *testing.T) {
	words := []string{}
	for i := 0; i < 400; i++ {
		words = append(words, fmt.Sprintf("w%03dx", i))
	}
	big := "^(?:" + strings.Join(words, "|") + ")+$"
	bigEvil := "^(?:" + strings.Join(words, "|") + "|w000x)+$"
	for _, p := range []string{`(a|ab)*`, `(ab|ac)*`, `(\w|\s)*`, `(.*a){5}`, `\d+\d+`, `.*.*=.*`, `^(a+)$`, `(?:x{0,10}){0,10}`, `((((a{10}){10}){10}){10})`,
		`(a{2})+`, `(?:ab{0,3})+`, `(a?b?)*`, `[]`, `[^]*`, `(\b\w+\b\s*)*`, `a**`, `(`, `\`, `[a`, `(?<=a)b`, `(?<!a)b`, `\k<x>(?<x>a)`, `(a)\2`, `x{2}{3}`, `\p{Script=Greek}+`, `\p{Emoji}+`, `[\w-z]+`, `[a-\d]`, `[[:alpha:]]+`, `\cJ`, `\u{1F600}`, `\uD83D\uDE00`, `\x4`, `[\b]`, `a{,5}`, `(?i)a`, big, bigEvil} {
		start := time.Now()
		r, bad := ScreenPattern(p)
		q := p
		if len(q) > 60 {
			q = q[:60]
		}
		t.Logf("%v %-60s %s  [%v]", bad, q, r, time.Since(start))
	}
	for _, p := range []string{`\u0041`, `(?=a)`, `\1(a)`, `(a)\1`, `[^]`, `[]`, `\p{Emoji}`, `[[:alpha:]]`, `\cJ`, `\k<n>(?<n>a)`, `(?<a>x)|(?<a>y)`, `a{1,32000}`, `\d{2,}`, `[\w-z]`, `\/`, `\-`} {
		re2, err := ecmaToRE2(p)
		_, cerr := compileECMA(p)
		t.Logf("engine %-20s -> %-30q %v %v", p, re2, err, cerr)
	}
}
