package client

import (
	"context"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
)

// DeniedInFlight returns the jobs that flips to DENY name (a policy
// impact's: `ward policy impact`, POST /v1/policies/impact) which run or
// wait now: the work in flight of a kind the candidate policy would deny,
// as far as c can read (a job it cannot read is left out). `ward policy
// push` and `rollback` ask before they go on when there is any.
func (c *Client) DeniedInFlight(ctx context.Context, flips []*safetyv1.ImpactFlip) []*wardv1.JobRecord {
	var out []*wardv1.JobRecord
	for _, f := range flips {
		if f.GetTo() != safetyv1.Decision_DECISION_DENY {
			continue
		}
		for _, id := range f.GetJobIds() {
			rec, err := c.Get(ctx, id, false)
			if err != nil {
				continue
			}
			switch rec.GetState() {
			case wardv1.JobState_JOB_STATE_PENDING, wardv1.JobState_JOB_STATE_SCHEDULED, wardv1.JobState_JOB_STATE_DISPATCHED, wardv1.JobState_JOB_STATE_RUNNING:
				out = append(out, rec)
			}
		}
	}
	return out
}
