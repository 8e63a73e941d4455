package gateway

import (
	"context"
	"net"
	"os"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp/serve"
)

// Any request on any replica (OP-11): each replica advertises where the
// others reach it through the shared store, and the endpoints pass a
// request that belongs to another replica's call or session to it
// (mcp/serve/forward.go).

// peers is serve.Peers over the store's directory and the shared session
// listing.
type peers struct {
	dir   core.ReplicaDirectory
	share *sessionShare
}

var _ serve.Peers = peers{}

func (p peers) Addrs(ctx context.Context) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, sharedWait)
	defer cancel()
	m, err := p.dir.ReplicaAddrs(ctx, time.Now().Add(-sessionStale))
	if err != nil {
		// The store being down is said by its own errors; nothing is
		// passed on meanwhile.
		return nil
	}
	return m
}

func (p peers) SessionReplica(key string) (string, bool) {
	replica, ok, _ := p.share.listed(key)
	return replica, ok
}

// forwarding is what the endpoints need to pass requests to other
// replicas: nil, nil unless the store is shared and the confirm secret,
// from which all replicas derive one key, is set.
func (g *Gateway) forwarding(sessionKey []byte) (serve.Peers, []byte) {
	dir, ok := g.store.(core.ReplicaDirectory)
	if !ok || g.sessionShare == nil || g.cfg.Gateway.Confirm.Secret.Reveal() == "" {
		return nil, nil
	}
	key, err := serve.ForwardKey(sessionKey)
	if err != nil {
		return nil, nil
	}
	return peers{dir: dir, share: g.sessionShare}, key
}

// advertise records where the other replicas reach this one, once the
// listener is bound (its port may have been 0).
func (g *Gateway) advertise() {
	dir, ok := g.store.(core.ReplicaDirectory)
	if !ok || g.sessionShare == nil || g.ln == nil {
		return
	}
	addr := advertiseAddr(g.cfg.Gateway.Advertise, g.ln.Addr().String())
	ctx, cancel := context.WithTimeout(g.life, sharedWait)
	defer cancel()
	if err := dir.AdvertiseReplica(ctx, g.replica, addr, time.Now()); err != nil {
		g.log.Warn("recording where the other replicas reach this one failed; requests for its calls reaching them are refused", "err", err)
	}
}

// advertiseAddr is the configured address, or the bound one with, for a
// host binding every interface, the pod's address: POD_IP (as Kubernetes'
// downward API is usually named), else the first address of the machine's
// interfaces that is neither loopback nor link-local (a pod's own), else
// the host name.
func advertiseAddr(configured, bound string) string {
	if configured != "" {
		return configured
	}
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return bound
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = reachableHost()
	}
	return net.JoinHostPort(host, port)
}

func reachableHost() string {
	if pod := os.Getenv("POD_IP"); pod != "" {
		return pod
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() && !n.IP.IsLinkLocalUnicast() {
				return n.IP.String()
			}
		}
	}
	if name, err := os.Hostname(); err == nil {
		return name
	}
	return "localhost"
}
