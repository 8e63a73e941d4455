//go:build !linux

package main

import "testing"

// IM-10: detached descendants are ended by the supervisor as a child
// subreaper, which only Linux has (PR_SET_CHILD_SUBREAPER).
func TestServeNoDetachedSurvivorsIM10(t *testing.T) {
	t.Skip("Linux only: elsewhere there is no supervisor and no child subreaper, so processes an upstream detaches (setsid) are not ended")
}
