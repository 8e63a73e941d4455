package mcp

// ModernHTTPForTest is the Streamable HTTP test server of the stateless
// revision only (see modernHTTP), for the external tests that build a
// whole gateway around it.
type ModernHTTPForTest = modernHTTP

// NewModernHTTPForTest returns a fresh modern-only test server.
func NewModernHTTPForTest() *ModernHTTPForTest { return newModernHTTP() }

// ModernOptionsForTest are the options that reach a modern test server at
// addr with the credentials it checks.
func ModernOptionsForTest(addr string) UpstreamOptions { return modernOptions(addr) }

// ListeningForTest returns the server's log of subscriptions/listen
// requests and the filters of those open now.
func (m *modernHTTP) ListeningForTest() (log, open []string) { return m.listening() }

// SeenForTest returns the methods the server was sent and what they
// lacked of the revision.
func (m *modernHTTP) SeenForTest() (methods, problems []string) { return m.seen() }
