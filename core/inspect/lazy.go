package inspect

import (
	"regexp"
	"sync"
)

// lazyRegexp is a regular expression compiled on its first use: a
// process that never inspects (the supervisor, check, a gateway with
// inspection off) does not pay for compiling the detectors at start.
type lazyRegexp struct {
	get func() *regexp.Regexp
}

func lazyCompile(src string) *lazyRegexp {
	return &lazyRegexp{get: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(src) })}
}

func (l *lazyRegexp) MatchString(s string) bool { return l.get().MatchString(s) }

func (l *lazyRegexp) FindStringIndex(s string) []int { return l.get().FindStringIndex(s) }

func (l *lazyRegexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return l.get().FindAllStringSubmatchIndex(s, n)
}

func (l *lazyRegexp) FindAllStringIndex(s string, n int) [][]int {
	return l.get().FindAllStringIndex(s, n)
}
