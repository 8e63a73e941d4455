package serve

// KnownSessionsForTest counts the entries the endpoint keeps for sessions,
// over all its maps: zero once every session is gone.
func (e *Endpoint) KnownSessionsForTest() int { return e.ids.count() }

// ParkedSessionsForTest counts the sessions parked while idle.
func (e *Endpoint) ParkedSessionsForTest() int { return len(e.ids.parkedIDs()) }
