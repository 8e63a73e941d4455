package confirm

import "time"

// ApprovalWait is how long a call may wait on a person (CF-5): an
// operator's decision here, and the same bound wherever else a call waits
// for someone's answer.
func (g *Gate) ApprovalWait() time.Duration {
	if g == nil || g.approvalWait <= 0 {
		return DefaultApprovalWait
	}
	return g.approvalWait
}
