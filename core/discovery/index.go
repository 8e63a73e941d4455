package discovery

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/core"
)

// Doc is one tool as the index reads it.
type Doc struct {
	Name        string
	Title       string
	Description string
	// Source is the upstream's name; empty for a native tool.
	Source     string
	RemoteName string
	Params     []Param
}

// Param is one argument of a tool: its name and description.
type Param struct {
	Name        string
	Description string
}

// DocOf reads t's searchable text: its names, title, description, upstream
// and its input schema's parameters (the top-level properties, and those
// of objects nested in them, which is where wrappers put the real ones).
func DocOf(t core.ToolInfo) Doc {
	d := Doc{Name: t.Name, Title: t.Title, Description: t.Description, Source: t.Source, RemoteName: t.RemoteName}
	d.Params = params(t.InputSchema, 2, d.Params)
	return d
}

func params(schema json.RawMessage, depth int, out []Param) []Param {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Items      json.RawMessage            `json:"items"`
	}
	if depth == 0 || json.Unmarshal(schema, &s) != nil {
		return out
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		var p struct {
			Description string `json:"description"`
		}
		_ = json.Unmarshal(s.Properties[n], &p)
		out = append(out, Param{Name: n, Description: p.Description})
		out = params(s.Properties[n], depth-1, out)
	}
	if len(s.Items) > 0 {
		out = params(s.Items, depth-1, out)
	}
	return out
}

// Field weights: a word in a tool's name says more about what it does than
// the same word in a parameter's description.
const (
	weightName       = 3.0
	weightTitle      = 2.0
	weightSource     = 1.5
	weightDesc       = 1.0
	weightParamName  = 0.5
	weightParamDesc  = 0.3
	weightSynonym    = 0.4 // a query word's synonym, relative to the word
	bm25K1           = 1.2
	bm25B            = 0.75
	defaultLimitHits = 5
)

// Index ranks a fixed set of tools. It is immutable once built and safe
// for concurrent searches; a change of the tools builds a new one.
type Index struct {
	names    []string // sorted; a doc is its position here
	postings map[string][]posting
	norms    []float32 // per doc: k1·(1−b+b·len/avglen)
}

type posting struct {
	doc int32
	tf  float32
}

// Build indexes docs. Two docs of one name keep the last.
func Build(docs []Doc) *Index {
	byName := make(map[string]Doc, len(docs))
	for _, d := range docs {
		byName[d.Name] = d
	}
	ix := &Index{names: make([]string, 0, len(byName)), postings: map[string][]posting{}}
	for n := range byName {
		ix.names = append(ix.names, n)
	}
	slices.Sort(ix.names)
	lens := make([]float64, len(ix.names))
	var total float64
	tf := map[string]float64{}
	for i, n := range ix.names {
		d := byName[n]
		clear(tf)
		add := func(text string, w float64) {
			for _, t := range Terms(text) {
				tf[t] += w
				lens[i] += w
			}
		}
		add(d.Name, weightName)
		if d.RemoteName != "" && !strings.Contains(d.Name, d.RemoteName) {
			add(d.RemoteName, weightName)
		}
		add(d.Title, weightTitle)
		add(d.Source, weightSource)
		add(d.Description, weightDesc)
		for _, p := range d.Params {
			add(p.Name, weightParamName)
			add(p.Description, weightParamDesc)
		}
		total += lens[i]
		for t, f := range tf {
			ix.postings[t] = append(ix.postings[t], posting{doc: int32(i), tf: float32(f)})
		}
	}
	avg := 1.0
	if len(lens) > 0 && total > 0 {
		avg = total / float64(len(lens))
	}
	ix.norms = make([]float32, len(lens))
	for i, l := range lens {
		ix.norms[i] = float32(bm25K1 * (1 - bm25B + bm25B*l/avg))
	}
	return ix
}

// Len is the number of tools indexed.
func (ix *Index) Len() int { return len(ix.names) }

// Hit is one ranked tool.
type Hit struct {
	Name  string
	Score float64
}

// Search ranks the indexed tools against query and answers the best limit
// of those keep accepts (nil keeps all), best first, equal scores in name
// order. keep is asked only about tools that match, best first, until
// limit are kept. A query with no word the index knows answers nothing.
func (ix *Index) Search(query string, limit int, keep func(name string) bool) []Hit {
	if limit <= 0 {
		limit = defaultLimitHits
	}
	weights := queryWeights(query)
	if len(weights) == 0 || len(ix.names) == 0 {
		return nil
	}
	scores := make([]float32, len(ix.names))
	n := float64(len(ix.names))
	for t, qw := range weights {
		ps := ix.postings[t]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := float32(qw * math.Log(1+(n-df+0.5)/(df+0.5)))
		for _, p := range ps {
			scores[p.doc] += idf * p.tf * (bm25K1 + 1) / (p.tf + ix.norms[p.doc])
		}
	}
	var cand []int32
	for i, s := range scores {
		if s > 0 {
			cand = append(cand, int32(i))
		}
	}
	slices.SortFunc(cand, func(a, b int32) int {
		if c := cmp.Compare(scores[b], scores[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b) // names are sorted: a stable tie-break
	})
	var hits []Hit
	for _, d := range cand {
		if keep != nil && !keep(ix.names[d]) {
			continue
		}
		hits = append(hits, Hit{Name: ix.names[d], Score: float64(scores[d])})
		if len(hits) == limit {
			break
		}
	}
	return hits
}

// queryWeights are the query's terms with their weights: 1 for each word
// the query says (once, however often it says it), less for a synonym it
// does not say.
func queryWeights(query string) map[string]float64 {
	w := map[string]float64{}
	terms := Terms(query)
	for _, t := range terms {
		w[t] = 1
	}
	for _, t := range terms {
		for _, s := range synonyms()[t] {
			if _, ok := w[s]; !ok {
				w[s] = weightSynonym
			}
		}
	}
	return w
}
