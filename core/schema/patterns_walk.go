package schema

// schemaWalker screens the patterns jsontree.WalkSchemaPatterns finds.
type schemaWalker struct {
	verdict map[string]string // pattern -> reason ("" = safe), so repeats are screened once
	found   []*DangerousPatternError
}

func (w *schemaWalker) check(pattern, ptr string) {
	reason, seen := w.verdict[pattern]
	if !seen {
		reason = screenCached(pattern)
		w.verdict[pattern] = reason
	}
	if reason != "" {
		w.found = append(w.found, &DangerousPatternError{Pointer: ptr, Pattern: pattern, Reason: reason})
	}
}
