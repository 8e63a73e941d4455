package serve

// RelaysForTest counts the calls of 2026-07-28 clients followed or parked
// for their client's answer: zero once each has ended.
func (e *Endpoint) RelaysForTest() int { return e.states.relays.len() }
