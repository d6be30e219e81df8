package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/testing/poll"
)

// TestResultLog: the module's log a host reports with its result is
// stored with the end of the job — the log of the attempt that ended it,
// a success's or a failure's, dead-lettered or not — and a get returns
// it; lists and DLQ entries carry none.
func TestResultLog(t *testing.T) {
	e := start(t, options{sched: "retries: {base: 10ms, max: 50ms}\nfailure_domains: {quarantine_failures: 1000, min_samples: 1000}\n"})
	// The host takes each job and says nothing: the test reports for it.
	h := e.addHost(hb("h", "a"), func(*wardv1.JobRequest, int) outcome { return outcome{silent: true} })
	e.waitWorkers("h")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dispatched := func(id string, attempt int32) {
		t.Helper()
		poll.Until(t, 15*time.Second, "attempt dispatched", func() bool {
			j := e.job(id)
			return j.State == jobstore.Dispatched && int32(j.Attempt) == attempt && h.attempt(id) == attempt
		})
	}
	fail := func(id string, attempt int32, log string) {
		t.Helper()
		dispatched(id, attempt)
		h.publish(&wardv1.JobResult{JobId: id, WorkerId: "h", Attempt: attempt, Status: wardv1.JobState_JOB_STATE_FAILED,
			ErrorCode: string(reason.Exit), ErrorMessage: "exit status 2", Module: "m", Log: []byte(log)})
	}
	logOf := func(id string) (string, bool) {
		t.Helper()
		rec, err := e.client.Get(ctx, id, false)
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		return string(rec.GetLog()), rec.GetLogTruncated()
	}

	// Retried once, then a success with a truncated log: the second's.
	e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", JobId: "ok", Budget: &wardv1.Budget{MaxRetries: 1}})
	fail("ok", 1, "first attempt\n")
	dispatched("ok", 2)
	ptr, err := e.store.PutResult(ctx, "ok", []byte("done"))
	if err != nil {
		t.Fatal(err)
	}
	h.publish(&wardv1.JobResult{JobId: "ok", WorkerId: "h", Attempt: 2, Status: wardv1.JobState_JOB_STATE_SUCCEEDED,
		ResultPtr: ptr, Module: "m", Log: []byte("second attempt\n"), LogTruncated: true})
	e.waitState("ok", jobstore.Succeeded)
	if log, trunc := logOf("ok"); log != "second attempt\n" || !trunc {
		t.Errorf("ok: log %q (truncated %v), want the second attempt's, truncated", log, trunc)
	}

	// A failure, no retries: its log.
	e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", JobId: "failed"})
	fail("failed", 1, "panic: boom\n")
	e.waitState("failed", jobstore.Failed)
	if log, trunc := logOf("failed"); log != "panic: boom\n" || trunc {
		t.Errorf("failed: log %q (truncated %v), want %q", log, trunc, "panic: boom\n")
	}

	// Out of retries, dead-lettered: the last attempt's.
	e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", JobId: "dead", Budget: &wardv1.Budget{MaxRetries: 1}})
	fail("dead", 1, "attempt 1\n")
	fail("dead", 2, "attempt 2\n")
	if !e.inDLQ("dead", string(reason.MaxRetriesExceeded)) {
		t.Fatal("dead is not in the DLQ")
	}
	if log, _ := logOf("dead"); log != "attempt 2\n" {
		t.Errorf("dead: log %q, want the last attempt's", log)
	}

	// Lists and the DLQ carry no log.
	jobs, err := e.client.List(ctx, 100, wardv1.JobState_JOB_STATE_UNSPECIFIED)
	if err != nil || len(jobs) != 3 {
		t.Fatalf("list: %d jobs, %v", len(jobs), err)
	}
	for _, j := range jobs {
		if j.GetLog() != nil || j.GetLogTruncated() {
			t.Errorf("list: job %s carries a log", j.GetJobId())
		}
	}
	entries, err := e.admin.DLQ(ctx, 10)
	if err != nil || len(entries) != 1 || entries[0].GetJob() == nil {
		t.Fatalf("dlq: %v, %v", entries, err)
	}
	if entries[0].GetJob().GetLog() != nil {
		t.Errorf("dlq: job %s carries a log", entries[0].GetJobId())
	}
}
