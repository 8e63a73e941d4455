package inspect

import (
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"
)

const alnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// fresh returns n random characters of alphabet: fake credentials are made
// anew on each run, so no real one is ever written down here.
func fresh(n int, alphabet string) string {
	var b strings.Builder
	for range n {
		b.WriteByte(alphabet[rand.IntN(len(alphabet))])
	}
	return b.String()
}

// githubToken builds a token of GitHub's format with a valid checksum,
// computed here independently of the code under test.
func githubToken(prefix string) string {
	body := fresh(30, alnum)
	c := crc32.ChecksumIEEE([]byte(body))
	sum := make([]byte, 6)
	for i := 5; i >= 0; i-- {
		sum[i] = alnum[c%62]
		c /= 62
	}
	return prefix + "_" + body + string(sum)
}

func mustNew(t testing.TB, o *Options) *Inspector {
	t.Helper()
	in, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// detectors lists the detectors of findings of type typ, with the text each
// span covers, for failure messages.
func detectors(s string, fs []Finding, typ Type) []string {
	var out []string
	for _, f := range fs {
		if f.Type == typ {
			out = append(out, f.Detector+"="+s[f.Start:f.End])
		}
	}
	return out
}
