package auth

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/core"
)

// introspect verifies an opaque token by RFC 7662 introspection (AU-9).
func (s *oauth) introspect(r *http.Request, token string) (core.Actor, error) {
	key := cacheKey(token)
	claims, ok := s.cache.get(key, time.Now())
	if !ok {
		var err error
		claims, err = s.introspectRemote(r, token)
		if err != nil {
			return core.Actor{}, err
		}
		if active, _ := claims["active"].(bool); !active {
			// Never cached, so a token the issuer starts accepting again
			// is seen at once; "not mine" because RFC 7662 answers the same
			// for tokens it never issued.
			return core.Actor{}, notMine{"the token is not active"}
		}
		if iss, ok := claims["iss"]; ok && iss != s.cfg.Issuer {
			return core.Actor{}, invalidToken("the token was not issued by this issuer")
		}
		exp, hasExp := numericDate(claims["exp"])
		s.cache.put(key, claims, time.Now(), exp, hasExp)
	}
	now := time.Now()
	if exp, ok := numericDate(claims["exp"]); ok && now.After(exp.Add(s.leeway)) {
		return core.Actor{}, invalidToken("the token has expired")
	}
	if nbf, ok := numericDate(claims["nbf"]); ok && now.Add(s.leeway).Before(nbf) {
		return core.Actor{}, invalidToken("the token is not valid yet")
	}
	return s.actorFrom(r, claims)
}

// introspectRemote asks the issuer about token. A 4xx about the request —
// and so about the token, the only thing in it that varies — is the issuer
// refusing the token, which the endpoint answers 401 invalid_token. Any failure to get an answer is a
// 503, since the token may well be good: the network, a 5xx, and the 4xx
// that are not about the token — 401 and 403 (toolgate's own client
// credentials, RFC 7662 §2.3), 404 and 405 (the endpoint's address), 408
// and 429 (ask again later).
func (s *oauth) introspectRemote(r *http.Request, token string) (map[string]any, error) {
	unavailable := &Error{Status: http.StatusServiceUnavailable, Description: "the token could not be verified now; try again later"}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, s.cfg.IntrospectionURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, unavailable
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if s.cfg.ClientID != "" {
		// RFC 6749 §2.3.1: the credentials are form-encoded before Basic.
		req.SetBasicAuth(url.QueryEscape(s.cfg.ClientID), url.QueryEscape(s.cfg.ClientSecret))
	}
	resp, err := s.client.Do(req)
	if err != nil {
		// A *url.Error quotes the URL only, never the form body.
		s.log.WarnContext(r.Context(), "auth: token introspection failed", "issuer", s.cfg.Issuer, "error", err)
		return nil, unavailable
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		if tokenRefused(resp.StatusCode) {
			// Like an inactive answer, "not mine": a 401 invalid_token at
			// the endpoint, and the next strategy of an anyOf may know it.
			return nil, notMine{"the issuer refused the token"}
		}
		s.log.WarnContext(r.Context(), "auth: token introspection failed", "issuer", s.cfg.Issuer, "status", resp.Status)
		return nil, unavailable
	}
	var claims map[string]any
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDocumentBytes)).Decode(&claims); err != nil || claims == nil {
		s.log.WarnContext(r.Context(), "auth: token introspection answered no JSON object", "issuer", s.cfg.Issuer)
		return nil, unavailable
	}
	return claims, nil
}

// tokenRefused tells an introspection status that refuses the token from
// one that says the endpoint could not answer (see introspectRemote).
func tokenRefused(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusMethodNotAllowed, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return status >= 400 && status < 500
}

// numericDate reads a JWT NumericDate (seconds since the epoch).
func numericDate(v any) (time.Time, bool) {
	f, ok := v.(float64)
	if !ok {
		return time.Time{}, false
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)), true
}

// cacheKey is what the introspection cache is keyed by: a digest, so the
// cache never holds a usable token.
func cacheKey(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }

// maxCacheEntries bounds the cache; past it, new results are not cached.
const maxCacheEntries = 10000

// introspectionCache keeps active introspection results for a short time.
type introspectionCache struct {
	ttl time.Duration

	mu      sync.Mutex
	entries map[[sha256.Size]byte]cacheEntry
}

type cacheEntry struct {
	claims  map[string]any
	expires time.Time
}

func newIntrospectionCache(ttl time.Duration) *introspectionCache {
	return &introspectionCache{ttl: ttl, entries: map[[sha256.Size]byte]cacheEntry{}}
}

func (c *introspectionCache) get(key [sha256.Size]byte, now time.Time) (map[string]any, bool) {
	if c.ttl <= 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	if !now.Before(e.expires) {
		delete(c.entries, key)
		return nil, false
	}
	return e.claims, true
}

// put caches claims until ttl from now, or exp when that is sooner.
func (c *introspectionCache) put(key [sha256.Size]byte, claims map[string]any, now time.Time, exp time.Time, hasExp bool) {
	if c.ttl <= 0 {
		return
	}
	expires := now.Add(c.ttl)
	if hasExp && exp.Before(expires) {
		expires = exp
	}
	if !now.Before(expires) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCacheEntries {
		maps.DeleteFunc(c.entries, func(_ [sha256.Size]byte, e cacheEntry) bool { return !now.Before(e.expires) })
		if len(c.entries) >= maxCacheEntries {
			return
		}
	}
	c.entries[key] = cacheEntry{claims: claims, expires: expires}
}

// keys lists the cache's keys, hex-encoded, for tests.
func (c *introspectionCache) keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.entries))
	for k := range c.entries {
		out = append(out, fmt.Sprintf("%x", k))
	}
	return out
}
