package redos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
	"unicode"

	"github.com/toolgate/toolgate/core/schema/schematest"
	// Test-only: the npm peers (recheck among them) and their installer.
	"github.com/toolgate/toolgate/internal/lab/peers"
)

// Bounds of the oracle test: replays run one node each, killed at
// replayTimeout; at most maxReplays of recheck's attacks and
// maxExtraReplays of the screen's own (attackLength characters) are
// replayed.
const (
	replayTimeout   = 2 * time.Second
	maxReplays      = 16
	maxExtraReplays = 16
	attackLength    = 400
)

// recheckVerdict is one line of testdata/peers/recheck-corpus.mjs.
type recheckVerdict struct {
	Source string `json:"source"`
	Flags  string `json:"flags"`
	Status string `json:"status"` // safe, vulnerable, unknown, error
	Type   string `json:"type"`   // linear, polynomial, exponential, safe
	Degree int    `json:"degree"`
	Fuzz   bool   `json:"fuzz"`
	Attack string `json:"attack"`
}

// evil reports whether recheck's verdict is one the screen must refuse:
// exponential, or polynomial of at least MinPolynomialDegree.
func (v recheckVerdict) evil() bool {
	return v.Status == "vulnerable" && (v.Type == "exponential" || v.Type == "polynomial" && v.Degree >= MinPolynomialDegree)
}

// IM-19: recheck, the npm ReDoS checker, is the oracle. Over the evil, benign
// and generated corpora: every pattern recheck finds exponential is refused;
// polynomial ones from MinPolynomialDegree up too. Attacks are replayed in
// node to show the patterns really hang, recheck's and, for nested counted
// repeats recheck calls safe, the screen's own. Catch rate and false
// positives are logged.
func TestIM19RecheckOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs recheck over the corpus and replays attacks in node")
	}
	corpus := map[string]string{} // pattern -> where it came from
	for _, name := range []string{"evil-patterns.txt", "benign-patterns.txt"} {
		for _, p := range schematest.ReadPatterns(t, name) {
			corpus[p] = name
		}
	}
	for _, p := range schematest.GeneratedPatterns() {
		if _, ok := corpus[p]; !ok {
			corpus[p] = "generated"
		}
	}
	patterns := make([]string, 0, len(corpus))
	for p := range corpus {
		patterns = append(patterns, p)
	}
	slices.Sort(patterns)
	verdicts := runRecheck(t, patterns)

	var evil, caught, missed, extra, unknown, unended int
	var replays, extras []recheckVerdict
	for _, p := range patterns {
		v, ok := verdicts[p]
		if !ok || v.Status == "unknown" || v.Status == "error" {
			unknown++
			continue
		}
		reason, flagged := ScreenPattern(p)
		switch {
		case v.evil() && flagged:
			evil++
			caught++
			if v.Attack != "" && !v.Fuzz {
				replays = append(replays, v)
			}
		case v.evil():
			evil++
			missed++
			if v.Type == "exponential" {
				t.Errorf("%s (%s): recheck finds it exponential, the screen passes it", p, corpus[p])
			} else {
				t.Logf("missed: %s (%s): recheck degree %d", p, corpus[p], v.Degree)
			}
		case flagged:
			extra++
			if corpus[p] == "benign-patterns.txt" {
				t.Errorf("%s: benign, flagged: %s", p, reason)
			}
			trees, _ := translateForScreen(p)
			if ruleOf(reason) != reasonPolynomial && ruleOf(reason) != reasonBounded && !endAnchored(trees[0]) {
				// A loop is refused whether or not $ ends the pattern (see
				// the package doc); a search that may stop anywhere does
				// not backtrack it, so there is nothing to replay.
				unended++
				continue
			}
			if attack, ok := screenAttack(t, p); ok {
				extras = append(extras, recheckVerdict{Source: p, Flags: v.Flags, Attack: attack})
			}
		}
	}
	if evil == 0 {
		t.Fatal("recheck found nothing evil in the corpus")
	}

	hung := func(vs []recheckVerdict, limit int) (tried, slow int, fast []string) {
		for _, v := range spread(vs, limit) {
			tried++
			d, killed := replay(t, v)
			if killed {
				slow++
			} else {
				fast = append(fast, v.Source+" ("+d.Round(time.Millisecond).String()+")")
			}
		}
		return tried, slow, fast
	}
	tried, slow, fast := hung(replays, maxReplays)
	for _, f := range fast {
		t.Errorf("recheck's attack on %s did not hang node for %v", f, replayTimeout)
	}
	// Patterns the screen refuses and recheck passes: where the screen's
	// own attack hangs node, recheck missed them (it takes bounded repeats
	// for safe).
	etried, eslow, efast := hung(extras, maxExtraReplays)
	for _, f := range efast {
		t.Logf("the screen's attack on %s did not hang node for %v", f, replayTimeout)
	}
	passed := len(patterns) - unknown - evil
	t.Logf("corpus %d patterns (%d unknown to recheck); recheck-evil %d: caught %d (%.1f%%), missed %d; "+
		"recheck's attacks hung node %d/%d", len(patterns), unknown, evil, caught,
		100*float64(caught)/float64(evil), missed, slow, tried)
	t.Logf("of %d that recheck passes, the screen refuses %d: %d loops in patterns without a final $ "+
		"(refused by design), %d others, of which %d replayed and %d hung node for %v",
		passed, extra, unended, extra-unended, etried, eslow, replayTimeout)
}

// runRecheck runs testdata/peers/recheck-corpus.mjs over the patterns.
func runRecheck(t *testing.T, patterns []string) map[string]recheckVerdict {
	t.Helper()
	dir := peers.Dir(t)
	in, err := json.Marshal(patterns)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, peers.Node(t), filepath.Join(dir, "recheck-corpus.mjs"))
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("recheck: %v\n%s", err, stderr.String())
	}
	verdicts := map[string]recheckVerdict{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var v recheckVerdict
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("recheck output: %v: %s", err, sc.Text())
		}
		verdicts[v.Source] = v
	}
	if len(verdicts) != len(patterns) {
		t.Fatalf("recheck answered %d of %d patterns", len(verdicts), len(patterns))
	}
	return verdicts
}

// replayScript tests one attack string against its pattern in V8.
const replayScript = `
let data = "";
process.stdin.on("data", (c) => (data += c));
process.stdin.on("end", () => {
  const { source, flags, attack } = JSON.parse(data);
  new RegExp(source, flags).test(attack);
});`

// replay runs v's attack in node, which is killed at replayTimeout; killed
// says it was.
func replay(t *testing.T, v recheckVerdict) (time.Duration, bool) {
	t.Helper()
	in, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), replayTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, peers.Node(t), "-e", replayScript)
	cmd.Stdin = bytes.NewReader(in)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return d, true
	}
	if err != nil {
		t.Fatalf("replay of %s: %v\n%s", v.Source, err, out)
	}
	return d, false
}

// spread picks up to n verdicts evenly across vs, so a capped replay still
// covers every shape of the corpus.
func spread(vs []recheckVerdict, n int) []recheckVerdict {
	if len(vs) <= n {
		return vs
	}
	out := make([]recheckVerdict, 0, n)
	for i := range n {
		out = append(out, vs[i*len(vs)/n])
	}
	return out
}

// screenAttack is the most ambiguous input the screen's count of ways
// builds for pattern, attackLength characters, followed by a character
// nothing in the pattern reads.
func screenAttack(t *testing.T, pattern string) (string, bool) {
	t.Helper()
	trees, ok := translateForScreen(pattern)
	if !ok {
		return "", false
	}
	work := 0
	a, f := newAutomaton(trees[0], false, &work)
	if a.ways(f, endAnchored(trees[0]), attackLength, 1e300) == 0 {
		return "", false
	}
	fail := '!'
	for _, r := range []rune{'!', 0, '\n', '\u2028', unicode.MaxRune} {
		read := false
		for _, l := range a.labels {
			read = read || rangesMeet(l, []rune{r, r})
		}
		if !read {
			fail = r
			break
		}
	}
	return string(a.witness) + string(fail), true
}
