package core

// Severity says how much a flag of this kind should worry a reviewer:
// "info" for what ordinary tools have too (links, long text), "warn" for
// what is suspicious but has honest uses (base64, naming other tools, odd
// property names, obfuscated text, slow patterns), "danger" for what honest
// descriptions do not contain (instructions to the model, hidden or reordered text,
// secret files, links built to carry data out, script).
func (k FlagKind) Severity() string {
	switch k {
	case FlagURL, FlagTooLong:
		return SeverityInfo
	case FlagBase64, FlagShadowing, FlagSchemaText, FlagObfuscated, FlagSlowPattern, FlagResemblesPoisoning:
		return SeverityWarn
	default:
		return SeverityDanger
	}
}
