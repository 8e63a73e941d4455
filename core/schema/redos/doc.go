// Package redos is the screen for patterns that can backtrack catastrophically (IM-19).
//
// Go's regexp is RE2 and never backtracks, but toolgate re-serves imported
// input schemas verbatim, and clients validate against them with ECMA-262
// engines that do. A pattern such as `^(a+)+$` is harmless here and can hang
// a client, so a schema carrying one is refused.
//
// The screen decides on structure, not on a list of known-bad strings:
//
//  1. The ECMA pattern is rewritten into RE2 syntax (package ecma). Every
//     alternative is wrapped in a capture group of its own, because Go's
//     parser otherwise factors `a|a` into `a` and merges `.|\s` into one
//     class, erasing exactly the overlap being looked for. Counts above 10
//     become unbounded, since they backtrack like unbounded loops and Go's
//     parser refuses counts above 1000. Lookaround bodies are lifted out and
//     screened as patterns of their own: an engine backtracks inside them just
//     the same, but where they stand they consume nothing. A backreference
//     matches one fixed string at run time, so it stands in as a single
//     character drawn from its group's alphabet.
//  2. regexp/syntax parses the result and the raw tree is used as is; it is
//     never simplified, because simplification rewrites repetitions.
//  3. The tree becomes a position (Glushkov) automaton that keeps parallel
//     edges: `(a*)*` has two distinct ways from one `a` to the next, and a
//     backtracking engine tries both.
//  4. Each unbounded repetition is checked for exponential ambiguity: a state
//     with two different paths back to itself over the same input (the EDA
//     criterion of Weber and Seidl), decided on the product automaton. That
//     ambiguity is what lets a backtracking engine try exponentially many
//     ways to fail. It also settles what separates repetitions: in
//     `(\.[a-z]+)*` every repetition starts with a dot the inner loop cannot
//     read, so there is one way only, while `([a-z]+)*` has many.
//
// Counted repeats up to 10 are unrolled, so `(\.\d{1,3}){3}` is just text.
// Polynomial blow-up (`\d+\d+` on its own, `.*a.*a`, `(.*a){5}`) is not
// flagged: it is slow rather than catastrophic, and common in ordinary
// patterns.
//
// Where the screen approximates, it errs towards flagging: anchors and word
// boundaries are taken to match the empty string anywhere (so
// `(\b\w+\b\s*)*` is flagged though its boundaries make it linear), and a
// Unicode property Go does not know is taken as any character. A pattern
// neither the translator nor Go's parser understands is not flagged here; the
// schema compiler decides whether it compiles (IM-18).

package redos
