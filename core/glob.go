package core

import (
	"fmt"
	"path"
)

// ValidateGlob reports whether pattern is a well-formed glob.
func ValidateGlob(pattern string) error {
	if pattern == "" {
		return fmt.Errorf("empty glob")
	}
	if _, err := path.Match(pattern, ""); err != nil {
		return fmt.Errorf("bad glob %q: %w", pattern, err)
	}
	return nil
}

// MatchAny reports whether name matches one of patterns. A malformed pattern
// matches nothing; config validation refuses those before they get here.
func MatchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
	}
	return false
}
