// Package redos is the screen for patterns that can backtrack catastrophically (IM-19).
//
// Go's regexp is RE2 and never backtracks, but toolgate re-serves imported
// input and output schemas verbatim, and clients validate against them with
// ECMA-262 engines that do. A pattern such as `^(a+)+$` is harmless here and can hang
// a client, so a schema carrying one is refused.
//
// The screen decides on structure, not on a list of known-bad strings:
//
//  1. The ECMA pattern is rewritten into RE2 syntax (package ecma). Every
//     alternative is wrapped in a capture group of its own, because Go's
//     parser otherwise factors `a|a` into `a` and merges `.|\s` into one
//     class, erasing exactly the overlap being looked for. Count ranges
//     wider than 10 become unbounded, since they backtrack like unbounded
//     loops and Go's parser refuses counts above 1000; a fixed count such
//     as .{38} is kept, because it reads one number of repetitions and
//     makes no choice of its own. Lookaround bodies are lifted out and
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
//     read, so there is one way only, while `([a-z]+)*` has many. A loop
//     is refused whether or not $ ends the pattern: a search that may stop
//     anywhere succeeds before it backtracks `^(a+)+`, but validators that
//     match the whole value (a full-match API, an anchoring wrapper) meet
//     it in full.
//
// Counted repeats whose range is up to 10 are unrolled, so `(\.\d{1,3}){3}`
// and `.{38}` are just text.
//
// Two more measures catch what has no exponential loop:
//
//  5. Polynomial degree (the IDA criterion of Weber and Seidl): the longest
//     chain of quantifiers that can all read one word v, each able to hand
//     v on to the next, decided on the product of three copies of the
//     automaton. Each link multiplies the ways to split a pumped input by
//     its length. An unanchored pattern is searched from every offset, so
//     it starts with an implicit [^]*; the search stops at its first
//     success, so no way through a position a match can end at with no $
//     still to pass is ever backtracked, and those positions are left out
//     (JSON Schema's search semantics). A branch that ends in $ keeps its
//     positions whatever the other branches do: the trim
//     `^[\s\u200c]+|[\s\u200c]+$` behind the 2016 Stack Overflow outage
//     tries its second branch at every offset of a run of spaces the input
//     does not end with, and is quadratic. Degree 4 and more is refused: `^(a+){4}$`
//     takes V8 seconds on 200 characters, and `^((a+){1,10}){1,10}$` is
//     degree 100. Degree 3 passes, because it needs kilobytes to cost a
//     second and published schemas carry it: ajv-formats' url (0.2 s on
//     3,200 characters), `^\S+@\S+\.\S+$` (1.4 s on 2,000). Degree 2
//     (`^\d+\d+$`, `^.*a.*b$`, `\s+$`) is everywhere. PatternBacktracking
//     reports the degree of what passes, and the scanner shows a reviewer
//     those of degree 2 and 3 (core.FlagSlowPattern).
//  6. Nested counted repeats have no loop to pump, yet multiply the ways to
//     read an input: `^(a{1,10}){1,10}$` reads 34 a's in hundreds of
//     millions. The screen follows the most ambiguous input it can build,
//     one character at a time, counts the ways for up to 64 characters, and
//     refuses over ten million (about half a second in V8).
//
// recheck (the npm ReDoS checker) is the oracle in this package's tests.
// Where they disagree the screen errs towards flagging: where the links of a
// chain complete a match without $ (`(.*a){5}`: pumping it reads the five
// a's that end the search), a count range wider than 10 (`(\d{0,20}){1,5}$`, which
// recheck calls safe and which takes V8 25 s on 101 digits), a loop in a
// pattern that cannot fail at all (`^(.+|[^,])+$`). Anchors and word
// boundaries are taken to match the empty string anywhere (so
// `(\b\w+\b\s*)*` is flagged though its boundaries make it linear), and a
// Unicode property Go does not know is taken as any character. A pattern
// neither the translator nor Go's parser understands is not flagged here; the
// schema compiler decides whether it compiles (IM-18).

package redos
