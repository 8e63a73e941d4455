package core

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

func TestScratchCorpus(t *testing.T) {
	for _, f := range []string{"evil-patterns.txt", "benign-patterns.txt"} {
		fh, _ := os.Open("../testdata/schemas/" + f)
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			l := sc.Text()
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			r, bad := ScreenPattern(l)
			t.Logf("%s %v %-60s %s", f[:4], bad, l, r)
		}
	}
}
