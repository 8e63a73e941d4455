package core

// FlagKind names what a scanner rule found.
type FlagKind string

const (
	// FlagHiddenInstruction: text that addresses the model rather than
	// describing the tool — "ignore previous instructions", "do not tell the
	// user", <IMPORTANT> blocks, chat-template tokens, "before using this
	// tool, read …", orders to redirect recipients or pass file contents on.
	FlagHiddenInstruction FlagKind = "hidden-instruction"
	// FlagInvisible: characters a person does not see and a model reads —
	// zero-width characters, soft hyphens, Unicode tag characters (which can
	// spell out a whole hidden sentence), stray variation selectors, other
	// format and control characters (a terminal escape can hide text in a
	// console). Joiners and selectors inside emoji and scripts that need
	// them are not flagged.
	FlagInvisible FlagKind = "invisible"
	// FlagBidi: bidirectional controls (U+202A–U+202E, U+2066–U+2069, and
	// the LRM, RLM and ALM marks) that make text display in another order
	// than it is read.
	FlagBidi FlagKind = "bidi"
	// FlagShadowing: the text names another tool in the registry, the way
	// a poisoned tool steers how a trusted one is used ("when send_email is
	// used, BCC …").
	FlagShadowing FlagKind = "shadowing"
	// FlagSecretPath: a secret file or credential store (~/.ssh, id_rsa,
	// .env, ~/.aws/credentials, .npmrc, .netrc, /etc/passwd, mcp.json, …).
	FlagSecretPath FlagKind = "secret-path"
	// FlagURL: an http(s), ftp, file or ws(s) link, or a data: URI.
	FlagURL FlagKind = "url"
	// FlagBase64: a run of base64 that decodes to text, or a long encoded
	// blob.
	FlagBase64 FlagKind = "base64"
	// FlagTooLong: more text than a person reviewing it will read; the span
	// is the excess.
	FlagTooLong FlagKind = "too-long"
	// FlagSchemaText: a name, label or value that reads like prose where
	// an identifier, a label or data belongs: a property name, a required
	// entry that names no property, an enum, const, default or example
	// value or a title that is a sentence addressed to the model. Models
	// read them as much as descriptions, and model APIs expect identifiers
	// there.
	FlagSchemaText FlagKind = "schema-text"
	// FlagObfuscated: text written to slip past a reader or a filter — hex
	// or escapes that decode to text, words spelt letter by letter, in
	// leetspeak or with look-alike letters from other scripts.
	FlagObfuscated FlagKind = "obfuscated"
	// FlagExfiltration: a link built to carry data out — a query that names
	// a secret or the conversation, a template for the model to fill with
	// them, a markdown image (fetched with no click) with a templated query.
	FlagExfiltration FlagKind = "exfiltration"
	// FlagScript: active content — a data: URI of HTML or JavaScript, an SVG
	// or other payload carrying script, a javascript: link.
	FlagScript FlagKind = "script"
	// FlagSlowPattern: a schema pattern (or patternProperties key) that
	// the pattern screen lets through but that backtracks polynomially,
	// degree 2 or 3 (`\s+$`, `^.*.*.*=$`): a client validating with a
	// backtracking engine takes a second on a few thousand characters
	// (degree 2) or a few hundred (degree 3), and no maxLength keeps inputs
	// that long out (IM-19). The tool is still served.
	FlagSlowPattern FlagKind = "slow-pattern"
	// FlagResemblesPoisoning: no rule matched, but the definition's words,
	// weighed together by a model trained on the scanner's corpus of
	// poisoned and honest tools, score above anything an honest real tool
	// scored. The span is the word that weighed most.
	FlagResemblesPoisoning FlagKind = "resembles-poisoning"
)

// Severities, from least to most alarming.
const (
	SeverityInfo   = "info"
	SeverityWarn   = "warn"
	SeverityDanger = "danger"
)

// Flag is one finding, with the span of text it is about.
type Flag struct {
	Kind FlagKind `json:"kind"`
	// Where is "name" (the tool's name read as words), "description" or
	// "title"; an RFC 6901 pointer into the input
	// schema ("/properties/path/description"); or a field's name and a
	// pointer into it ("outputSchema/properties/x/description",
	// "annotations/title", "icons/0/src", "_meta/…"). For a prompt or a
	// resource it is a pointer into its entry ("/description"). A pointer
	// that resolves to a string means that string; one that resolves to
	// anything else means the member name it ends with (a property name).
	// scan.ScanInput.Text and scan.EntryInput.Text resolve it.
	Where string `json:"where"`
	// Start and End are byte offsets into that text, [Start, End).
	Start  int    `json:"start"`
	End    int    `json:"end"`
	Reason string `json:"reason"`
}
