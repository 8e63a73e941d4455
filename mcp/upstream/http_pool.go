package upstream

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// connPool keeps idle HTTP/1.1 connections to one plain-HTTP upstream for
// tools/call. A call writes its request and reads the answer on the
// connection from its own goroutine; net/http's transport hands each
// request to a write goroutine and each answer back from a read goroutine,
// two wake-ups per call that cost more CPU than the call's own work here.
type connPool struct {
	addr string
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu     sync.Mutex
	idle   []*poolConn
	closed bool
}

type poolConn struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

// maxIdleConns is as many idle connections as the net/http client keeps per
// host (MaxIdleConnsPerHost in dialWith).
const maxIdleConns = 64

// newConnPool returns a pool for rawURL, or nil where net/http must do the
// work: TLS (and with it HTTP/2), or a proxy from the environment.
func newConnPool(rawURL string) *connPool {
	if !poolSupported {
		return nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" {
		return nil
	}
	if p, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err != nil || p != nil {
		return nil
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "80")
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &connPool{addr: host, dial: d.DialContext}
}

// get returns an idle connection the server has not closed, or a new one.
// A dial error is a request not sent (IM-29).
func (p *connPool) get(ctx context.Context) (pc *poolConn, err error) {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n > 0 {
			pc = p.idle[n-1]
			p.idle = p.idle[:n-1]
		}
		p.mu.Unlock()
		if pc == nil {
			break
		}
		if idleOpen(pc.c) {
			return pc, nil
		}
		_ = pc.c.Close()
		pc = nil
	}
	c, err := p.dial(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	return &poolConn{c: c, br: bufio.NewReaderSize(c, 4096), bw: bufio.NewWriterSize(c, 4096)}, nil
}

// put keeps pc for the next call, if there is room.
func (p *connPool) put(pc *poolConn) {
	p.mu.Lock()
	if !p.closed && len(p.idle) < maxIdleConns {
		p.idle = append(p.idle, pc)
		pc = nil
	}
	p.mu.Unlock()
	if pc != nil {
		_ = pc.c.Close()
	}
}

// close closes the idle connections; those in use are closed when their
// calls end.
func (p *connPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, pc := range idle {
		_ = pc.c.Close()
	}
}
