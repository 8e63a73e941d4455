// Package review reviews third-party tools (RV-1…RV-4). An operator approves what an
// imported tool tells the model — its fingerprint (RV-1) — not the tool's
// name: an upstream that later changes its description or schema (a "rug
// pull") has to be approved again before pin mode serves it (RV-3).
//
// The prompts and resources upstreams list are third-party text too: they
// are reviewed alike (Entry), identified by upstream and remote prompt name
// or URI, and gated by the same modes.
package review
