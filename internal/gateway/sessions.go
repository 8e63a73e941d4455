package gateway

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
)

// sessionKey seals the endpoints' session ids (SV-2, OP-5). Derived from
// the confirm secret, which replicas sharing a store must already share
// (CF-5), under its own label: every replica, and this gateway restarted,
// can continue a session with no new setting. Without a secret the key is
// this process's own, and sessions end with it.
func sessionKey(cfg *config.Config) ([]byte, error) {
	secret := cfg.Gateway.Confirm.Secret.Reveal()
	if secret == "" {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		return key, nil
	}
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, "toolgate session ids v1", 32)
	if err != nil {
		return nil, fmt.Errorf("deriving the session key: %w", err)
	}
	return key, nil
}

// sessionEndedWait bounds telling the other replicas that a session ended:
// a DELETE waits for it.
const sessionEndedWait = 2 * time.Second

// broadcastSessionEnded is the endpoints' SessionTerminated over a shared
// store: the other replicas refuse the id from then on. nil otherwise.
func (g *Gateway) broadcastSessionEnded() func(id string) {
	b, ok := g.store.(core.Broadcaster)
	if !ok {
		return nil
	}
	return func(id string) {
		ctx, cancel := context.WithTimeout(g.life, sessionEndedWait)
		defer cancel()
		if err := b.Broadcast(ctx, core.SharedEvent{Kind: core.SharedSessionEnded, ID: id}); err != nil && g.life.Err() == nil {
			g.log.Warn("telling other replicas a session ended", "err", err)
		}
	}
}

// replicaName names this process in the sessions it serves.
func replicaName() string {
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}
