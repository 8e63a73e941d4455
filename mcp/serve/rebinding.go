package serve

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// RejectRebinding answers 403 to a request that reached a loopback address
// with a Host that is not a loopback name: a page whose domain was rebound
// to 127.0.0.1 drives the victim's browser at the local gateway. mcp-go
// checks this only on what it serves itself; the gateway's own path (calls
// and listings on a session) and the auth in front need it too, so the
// check runs before anything reads the request. A request to a non-loopback
// address is never refused here: rebinding only reaches loopback servers.
func RejectRebinding(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if local != nil && loopbackHost(local.String()) && !loopbackHost(r.Host) {
			http.Error(w, "Forbidden: the Host header is not a loopback name", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a host or host:port names a loopback
// interface: localhost, 127.0.0.0/8 or ::1.
func loopbackHost(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
