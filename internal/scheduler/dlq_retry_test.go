package scheduler_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/jobstore"
)

// TestDLQRetryOnlyFailed: ward dlq retry re-submits only a job that ended
// FAILED, TIMEOUT, DENIED or CANCELLED; a SUCCEEDED one is refused with a
// reason, and no new job is made.
func TestDLQRetryOnlyFailed(t *testing.T) {
	e := start(t, options{})
	ctx := context.Background()
	e.addHost(hb("h", "a"), nil)
	e.waitWorkers("h")
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", Payload: []byte("once")})
	e.waitState(id, jobstore.Succeeded)
	reply, err := e.admin.RetryDLQ(ctx, id)
	if err == nil || reply.GetAccepted() || !strings.Contains(err.Error(), string(reason.BadRequest)) ||
		!strings.Contains(err.Error(), "is SUCCEEDED: only a job that ended FAILED, TIMEOUT, DENIED or CANCELLED can be retried") {
		t.Fatalf("retry of a SUCCEEDED job: %v %v", reply, err)
	}
	jobs, err := e.admin.List(ctx, 10, wardv1.JobState_JOB_STATE_UNSPECIFIED)
	if err != nil || len(jobs) != 1 {
		t.Errorf("jobs after the refused retry: %d, %v", len(jobs), err)
	}

}
