package serve

// KnownSessionsForTest counts the records the endpoint keeps for sessions:
// zero once every session is gone.
func (e *Endpoint) KnownSessionsForTest() int {
	n, _ := e.ids.Count()
	return n
}

// ParkedSessionsForTest counts the sessions parked while idle.
func (e *Endpoint) ParkedSessionsForTest() int {
	_, n := e.ids.Count()
	return n
}

// UnsolicitedResponses is how many responses to requests the gateway never
// made clients have posted, logged or not.
func (e *Endpoint) UnsolicitedResponses() int64 { return e.unsolicited.total.Load() }
