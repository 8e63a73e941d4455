//go:build unix

package upstream

import (
	"net"
	"syscall"
)

const poolSupported = true

// idleOpen reports whether an idle connection is still open: the server
// may have closed it while it sat in the pool, and a request written to it
// then would be lost after it left, where it was never sent. One
// non-blocking peek tells: nothing to read is open, an end or data is not.
func idleOpen(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true // never wait
	})
	return err == nil && open
}
