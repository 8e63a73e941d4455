package downstream

import (
	"context"
	"sync"
)

// Cancels holds the cancel functions of requests in progress by key, so a
// notifications/cancelled naming one can end it. Both sides keep one: the
// endpoint for its clients' calls, an upstream for the requests it made of
// the gateway. The zero value is ready to use.
type Cancels struct {
	mu sync.Mutex
	m  map[string]context.CancelFunc
}

// Add registers cancel under key, replacing what was there.
func (c *Cancels) Add(key string, cancel context.CancelFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]context.CancelFunc{}
	}
	c.m[key] = cancel
}

// Remove forgets key; its request ended.
func (c *Cancels) Remove(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// Cancel cancels the request under key, if one is in progress.
func (c *Cancels) Cancel(key string) {
	c.mu.Lock()
	cancel := c.m[key]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Has reports whether a request under key is in progress.
func (c *Cancels) Has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key] != nil
}
