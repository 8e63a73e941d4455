//go:build !unix

package upstream

import "net"

// Elsewhere net/http's transport sends every call.
const poolSupported = false

func idleOpen(net.Conn) bool { return false }
