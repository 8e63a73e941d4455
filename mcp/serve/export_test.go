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
