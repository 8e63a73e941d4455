package admin

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/core"
)

// UpstreamPlan is one upstream's refresh plan, or why it could not be made.
type UpstreamPlan struct {
	Upstream string            `json:"upstream"`
	Plan     *core.RefreshPlan `json:"plan,omitempty"`
	Err      error             `json:"-"`
}

// PlanEach plans a refresh of every upstream of the gateway, in its order,
// so a refresh of all can be previewed before RefreshAll applies it. A plan
// that fails is reported in its entry; the error is for the gateway not
// answering at all.
func (c *Client) PlanEach(ctx context.Context) ([]UpstreamPlan, error) {
	snap, err := c.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]UpstreamPlan, 0, len(snap.Upstreams))
	for _, u := range snap.Upstreams {
		p, err := c.PlanRefresh(ctx, u.Name)
		if err != nil {
			if _, unreachable := err.(*UnreachableError); unreachable {
				c.CancelPlans(out)
				return nil, err
			}
			out = append(out, UpstreamPlan{Upstream: u.Name, Err: err})
			continue
		}
		out = append(out, UpstreamPlan{Upstream: u.Name, Plan: &p})
	}
	return out, nil
}

// CancelPlans cancels the plans that were made, best effort: a plan left
// behind expires on the gateway by itself.
func (c *Client) CancelPlans(plans []UpstreamPlan) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, p := range plans {
		if p.Plan != nil {
			_ = c.CancelRefresh(ctx, p.Plan.ID)
		}
	}
}
