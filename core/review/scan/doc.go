// Package scan is the review scanner (RV-2). It reads everything of a
// third-party tool that a client shows or a model reads — title,
// description, input and output schemas, annotations, icons, _meta — and
// the descriptions of prompts and resources, the way a model will, and
// flags what a person approving the tool should look at: instructions
// aimed at the model, text hidden or disguised, references to other tools,
// secret files, links that carry data out, script, and encoded blobs.
//
// It is a reviewer's aid, not a filter. Each rule is written to be specific
// enough that the reference servers' descriptions pass clean (the benign
// corpus under testdata/review proves it), so a flag is worth reading; text
// that evades every rule is still shown in full and pinned by its
// fingerprint (RV-1), so a change after approval is caught regardless.
//
// Text rules run on a copy of the text with invisible and bidi characters
// removed, so "ig\u200bnore previous instructions" matches like the plain
// phrase, and spans are mapped back to byte offsets in the original.
// Phrases match case-insensitively and across any run of white space,
// including line breaks and Unicode spaces, in English and in the languages
// of languageRules. The same phrases are looked for again in the text
// reduced to its letters, with leetspeak and look-alike letters read as
// the letters they imitate, so "I g n o r e", "1gn0r3" and "іgnоrе" (Cyrillic)
// are caught where they are written to look like something else. Decoded
// payloads — Unicode tag characters, base64, hex and escapes, data: URIs —
// go through the rules too, and their flags cover the encoded span.
//
// Instructions without a trigger word are caught by what they do (intent.go):
// a sentence that sends a copy, money or goods to an address or account it
// writes out, changes an amount, switches off the user's confirmation,
// reaches past this tool to other tools or later turns, or tells the model
// to carry out what a result says; and, in the languages most people speak
// (conceal.go), a word for the user beside a word for keeping something
// from them.
//
// Identifiers are read as the words they are made of wherever they are —
// the tool's name, property names, enum and const values, defaults,
// examples, required entries, words inside a description — whether written
// in snake_case, kebab-case, dotted or camelCase (words.go). A required
// entry that names no property is there only to be read, and is flagged
// when it reads as a phrase. In an output schema, what a description says
// of "it" or "this field" it says of the result, so an order to carry that
// out is flagged there (outputRules). Configuration-shaped text — JSON,
// YAML, a flow map, a TOML line, inline or fenced — and JSON values
// themselves (a default that is an object, an annotation, _meta) are read
// as key/value pairs for settings that switch the user's confirmation,
// review or disclosure off (settings.go).
//
// A word is read in its context: one that says the opposite of an order —
// quietly as what is refused, what the tool cannot do, a destructive
// option by its name, a command shown as what never to do, a setting as
// the condition of what the tool does — does not count toward a signal
// pair (negation.go) or a rule.
package scan
