package auth

import "time"

// IntrospectionCacheKeys lists the keys of s's introspection cache,
// hex-encoded, so tests can check that tokens are not kept.
func IntrospectionCacheKeys(s Strategy) []string {
	o, ok := s.(*oauth)
	if !ok {
		return nil
	}
	return o.cache.keys()
}

// IntrospectionCacheTTL is s's effective introspection cache lifetime.
func IntrospectionCacheTTL(s Strategy) time.Duration {
	o, ok := s.(*oauth)
	if !ok {
		return 0
	}
	return o.cache.ttl
}

// IntrospectionCachedUntil reports when the cached answer for token expires.
func IntrospectionCachedUntil(s Strategy, token string) (time.Time, bool) {
	o, ok := s.(*oauth)
	if !ok {
		return time.Time{}, false
	}
	o.cache.mu.Lock()
	defer o.cache.mu.Unlock()
	e, ok := o.cache.entries[cacheKey(token)]
	return e.expires, ok
}
