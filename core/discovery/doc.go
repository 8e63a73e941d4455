// Package discovery ranks the tools a client may call against a query in
// plain words (DS-3): the index behind an endpoint's search_tools.
//
// One Index holds every served tool, whoever may call it; a search is
// filtered per caller as it runs (keep), so an index costs the same for one
// actor or ten thousand and is rebuilt only when the tools change.
//
// Ranking is BM25 over one bag of words per tool, its fields weighted
// (BM25F's simplification: weighted term frequencies and a weighted
// length): the name split into words (snake_case, kebab-case, camelCase),
// the title, the description, the parameters' names and descriptions, and
// the upstream's name. Words are case-folded, stripped of diacritics and
// lightly stemmed (plurals, -ing, -ed, a final e), and a few very common
// English words are left out. A small table of everyday synonyms widens a
// query word to its usual alternatives at a lower weight. Ties are broken
// by name, so equal scores always come back in the same order.
//
// The method is lexical: a query matches through the words it shares with
// a tool's text. A query in another language finds tools through the words
// the languages share (product names, "GitHub", "PDF", "SQL", loan words);
// a word translated ("Fehler" for "error") matches nothing.
package discovery
