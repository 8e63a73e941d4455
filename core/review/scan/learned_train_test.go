package scan

import (
	"flag"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updateLearned = flag.Bool("update-learned", false, "write learned.model from the corpus")

// learnedHeldOut are the sets the learned reader is never trained on: they
// measure it (and the rules) against writers it has not seen.
var learnedHeldOut = map[string]bool{
	"fresh18.json": true, "fresh19.json": true, "fresh20.json": true, "fresh21.json": true,
	"benign18.json": true, "benign19.json": true, "benign20.json": true,
}

// learnedDoc is one training definition: its hashed features (with
// repeats), whether it is poisoned, the group it is held out with in
// cross-validation, and whether it is a real server's honest tool.
type learnedDoc struct {
	keys     []uint32
	sigs     []uint32
	poisoned bool
	group    string
	real     bool
}

func docOf(in ScanInput, poisoned bool, group string) learnedDoc {
	places := learnedPlaces(in)
	tokens := learnedTokens(places)
	feats := learnedFeatures(tokens)
	keys := make([]uint32, len(feats))
	for i, f := range feats {
		keys[i] = f.key
	}
	return learnedDoc{keys: keys, sigs: learnedSignals(places, tokens), poisoned: poisoned, group: group}
}

// learnedCorpus reads every tool of testdata/review but the held-out sets:
// the recall sets' cases (poisoned unless their class is benign) and
// honest tools, the poisoned files' tools, and the real servers' tools
// (hard-negatives.json is honest text written to brush the rules).
func learnedCorpus(t testing.TB) []learnedDoc {
	t.Helper()
	var docs []learnedDoc
	files, _ := filepath.Glob(filepath.Join(scanCorpus, "recall", "*.json"))
	for _, f := range files {
		name := filepath.Base(f)
		if learnedHeldOut[name] {
			continue
		}
		s := readRecallSet(t, name)
		for _, c := range s.Cases {
			docs = append(docs, docOf(c.Tool.input(c.OtherTools), c.Class != "benign", name))
		}
		for _, b := range s.Benign {
			docs = append(docs, docOf(b.input(nil), false, name))
		}
	}
	// In file order: a poisoned file's group is its place in it.
	poisoned := readCorpus[poisonedCase](t, "poisoned")
	for i, name := range slices.Sorted(maps.Keys(poisoned)) {
		if c := poisoned[name]; len(c.Entry) == 0 {
			docs = append(docs, docOf(c.input(c.OtherTools), true, "poisoned/"+string(rune('a'+i%4))))
		}
	}
	servers := readCorpus[benignServer](t, "benign")
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		for _, tool := range servers[name].Tools {
			d := docOf(tool.input(nil), false, "real/"+name+".json")
			d.real = name != "hard-negatives"
			docs = append(docs, d)
		}
	}
	return docs
}

// learnedC is the inverse of the regularisation's strength.
const learnedC = 2.0

// learnedFolds is how many parts cross-validation holds out in turn; each
// recall set, real server and quarter of the poisoned files is held out
// whole.
const learnedFolds = 10

// learnedIters is how many steps the descent takes.
const learnedIters = 1200

// trainLearned fits the model on docs: idf over features in at least two
// definitions, then a logistic regression with balanced class weights.
func trainLearned(docs []learnedDoc) *learnedModel {
	df := map[uint32]int{}
	for _, d := range docs {
		seen := map[uint32]bool{}
		for _, k := range d.keys {
			if !seen[k] {
				seen[k] = true
				df[k]++
			}
		}
	}
	m := &learnedModel{idf: map[uint32]float32{}, weight: map[uint32]float32{}}
	n := float64(len(docs))
	for k, c := range df {
		if c >= 2 {
			m.idf[k] = float32(math.Log((1+n)/(1+float64(c))) + 1)
		}
	}
	// Dense indexes of the kept features, in key order, so the sums run in
	// one order and the model is the same on every run.
	keys := make([]uint32, 0, len(m.idf))
	for k := range m.idf {
		keys = append(keys, k)
	}
	for _, d := range docs {
		keys = append(keys, d.sigs...)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	index := make(map[uint32]int32, len(keys))
	for i, k := range keys {
		index[k] = int32(i)
	}
	type row struct {
		cols []int32
		vals []float64
		y    float64
		cw   float64
	}
	var pos int
	for _, d := range docs {
		if d.poisoned {
			pos++
		}
	}
	rows := make([]row, len(docs))
	for i, d := range docs {
		v := m.vector(featsOf(d.keys), d.sigs)
		r := row{y: -1, cw: n / (2 * float64(len(docs)-pos))}
		if d.poisoned {
			r.y, r.cw = 1, n/(2*float64(pos))
		}
		for j, k := range v.keys {
			r.cols = append(r.cols, index[k])
			r.vals = append(r.vals, v.vals[j])
		}
		rows[i] = r
	}
	// Minimise ½‖w‖² + ½b² + C Σ cw·log(1+e^(−y(w·x+b))) by accelerated
	// gradient descent: the objective is 1-strongly convex and its gradient
	// L-Lipschitz (L ≤ 1 + C·Σ cw·(‖x‖²+1)/4).
	dim := len(keys) + 1 // the last is the bias
	lip := 1.0
	for _, r := range rows {
		sq := 1.0 // the bias
		for _, v := range r.vals {
			sq += v * v
		}
		lip += learnedC * r.cw * sq / 4
	}
	step := 1 / lip
	q := math.Sqrt(lip)
	beta := (q - 1) / (q + 1)
	w := make([]float64, dim)
	prev := make([]float64, dim)
	look := make([]float64, dim)
	grad := make([]float64, dim)
	for range learnedIters {
		for j := range look {
			look[j] = w[j] + beta*(w[j]-prev[j])
		}
		copy(grad, look)
		for _, r := range rows {
			z := look[dim-1]
			for j, c := range r.cols {
				z += look[c] * r.vals[j]
			}
			g := -learnedC * r.cw * r.y / (1 + math.Exp(r.y*z))
			grad[dim-1] += g
			for j, c := range r.cols {
				grad[c] += g * r.vals[j]
			}
		}
		copy(prev, w)
		for j := range w {
			w[j] = look[j] - step*grad[j]
		}
	}
	for i, k := range keys {
		m.weight[k] = float32(w[i])
	}
	m.bias = w[dim-1]
	return m
}

func featsOf(keys []uint32) []learnedFeature {
	out := make([]learnedFeature, len(keys))
	for i, k := range keys {
		out[i].key = k
	}
	return out
}

// learnedFold assigns each group to a fold, by the order of group names.
func learnedFold(docs []learnedDoc) map[string]int {
	var groups []string
	for _, d := range docs {
		groups = append(groups, d.group)
	}
	slices.Sort(groups)
	groups = slices.Compact(groups)
	fold := map[string]int{}
	for i, g := range groups {
		fold[g] = i % learnedFolds
	}
	return fold
}

// crossScores returns each document's score by a model trained without
// its fold.
func crossScores(docs []learnedDoc) []float64 {
	fold := learnedFold(docs)
	scores := make([]float64, len(docs))
	for f := range learnedFolds {
		var train []learnedDoc
		for _, d := range docs {
			if fold[d.group] != f {
				train = append(train, d)
			}
		}
		m := trainLearned(train)
		for i, d := range docs {
			if fold[d.group] == f {
				scores[i] = m.score(m.vector(featsOf(d.keys), d.sigs))
			}
		}
	}
	return scores
}

// buildLearned trains on the whole corpus and sets the threshold to the
// highest score a real server's honest tool got while held out.
func buildLearned(docs []learnedDoc) *learnedModel {
	scores := crossScores(docs)
	var threshold float64
	for i, d := range docs {
		if d.real {
			threshold = max(threshold, scores[i])
		}
	}
	m := trainLearned(docs)
	m.threshold = threshold
	return m
}

// TestLearnedModelIsTheCorpusModel: the embedded model is the one the
// corpus trains, so a change to the corpus or the features cannot leave a
// stale model behind (RV-2). -update-learned writes it.
//
// Under the race detector only the weights are trained again (the
// threshold's cross-validation trains the model ten times more, minutes
// there); the threshold is checked without it.
func TestLearnedModelIsTheCorpusModel(t *testing.T) {
	docs := learnedCorpus(t)
	var m *learnedModel
	if raceBuild && !*updateLearned {
		m = trainLearned(docs)
		m.threshold = learned().threshold
	} else {
		m = buildLearned(docs)
	}
	if *updateLearned {
		if err := os.WriteFile("learned.model", encodeLearnedModel(m), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	// Equal to the last bits of a float32: a compiler that fuses
	// multiply-adds (arm64) rounds differently from one that does not.
	want := learned()
	const tolerance = 1e-4
	if math.Abs(m.threshold-want.threshold) > tolerance || math.Abs(m.bias-want.bias) > tolerance || len(m.weight) != len(want.weight) {
		t.Fatalf("learned.model is not the model the corpus trains (%d features, threshold %.4f, bias %.4f; the file: %d, %.4f, %.4f); run go test -run TestLearnedModelIsTheCorpusModel -update-learned ./core/review/scan",
			len(m.weight), m.threshold, m.bias, len(want.weight), want.threshold, want.bias)
	}
	for k, w := range m.weight {
		if math.Abs(float64(w-want.weight[k])) > tolerance || math.Abs(float64(m.idf[k]-want.idf[k])) > tolerance {
			t.Fatalf("feature %d: weight %g idf %g, the file %g %g; run with -update-learned", k, w, m.idf[k], want.weight[k], want.idf[k])
		}
	}
	t.Logf("learned model: %d features, threshold %.3f", len(m.weight), m.threshold)
}

// TestLearnedModelRoundTrips: the file format keeps every number (RV-2).
func TestLearnedModelRoundTrips(t *testing.T) {
	m := learned()
	back, err := decodeLearnedModel(encodeLearnedModel(m))
	if err != nil {
		t.Fatal(err)
	}
	if back.bias != m.bias || back.threshold != m.threshold || len(back.idf) != len(m.idf) {
		t.Fatalf("round trip changed the model")
	}
	for k, w := range m.weight {
		if back.weight[k] != w || back.idf[k] != m.idf[k] {
			t.Fatalf("feature %d changed", k)
		}
	}
	if _, err := decodeLearnedModel([]byte("TGLM1\nshort")); err == nil {
		t.Fatal("a truncated model decoded")
	}
	if !strings.HasPrefix(string(learnedModelFile), learnedMagic) {
		t.Fatal("the embedded model has no header")
	}
}
