package mcp

// StdioServerArgForTest makes the test binary the test stdio server, for the
// external tests that build a whole gateway around it.
const StdioServerArgForTest = stdioServerArg

// ModernStdioServerArgForTest makes the test binary a stdio server of the
// stateless revision only.
const ModernStdioServerArgForTest = modernStdioServerArg

// RawServerArgForTest makes the test binary the hand-written stdio server.
const RawServerArgForTest = rawServerArg

// KnownSessionsForTest counts the entries the endpoint keeps for sessions,
// over all its maps: zero once every session is gone.
func (e *Endpoint) KnownSessionsForTest() int { return e.ids.count() }

// ParkedSessionsForTest counts the sessions parked while idle.
func (e *Endpoint) ParkedSessionsForTest() int { return len(e.ids.parkedIDs()) }
