package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"slices"

	"github.com/toolgate/toolgate/core"
)

// APIKey maps one static bearer key to the actor it authenticates.
type APIKey struct {
	Key   string
	Actor core.Actor
}

// APIKeys authenticates static bearer keys (AU-1). The presented token is
// compared with every key, each comparison in constant time over SHA-256
// digests, so neither the position of a match nor the length of a key shows
// in the timing. Keys with an empty Key are ignored; an unknown key is "not
// mine". The strategy exposes no OAuth metadata.
func APIKeys(keys []APIKey) Strategy {
	s := &apiKeys{}
	for _, k := range keys {
		if k.Key == "" {
			continue
		}
		a := k.Actor
		a.Roles = slices.Clone(a.Roles)
		s.digests = append(s.digests, sha256.Sum256([]byte(k.Key)))
		s.actors = append(s.actors, a)
	}
	return s
}

var _ Strategy = (*apiKeys)(nil)

type apiKeys struct {
	digests [][sha256.Size]byte
	actors  []core.Actor
}

func (s *apiKeys) Authenticate(_ *http.Request, token string) (core.Actor, error) {
	got := sha256.Sum256([]byte(token))
	match := -1
	for i := range s.digests {
		eq := subtle.ConstantTimeCompare(got[:], s.digests[i][:])
		// Keep the first match without branching on it.
		first := eq & subtle.ConstantTimeEq(int32(match), -1)
		match = subtle.ConstantTimeSelect(first, i, match)
	}
	if match < 0 {
		return core.Actor{}, notMine{"unknown API key"}
	}
	a := s.actors[match]
	a.Roles = slices.Clone(a.Roles)
	return a, nil
}
