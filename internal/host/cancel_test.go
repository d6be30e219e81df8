package host_test

import (
	"context"
	"testing"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/testing/poll"
)

// TestCancelStopsTheSandbox: a cancel on sys.host.cancel stops a running
// job's sandbox at once (the job would sleep a minute), and a job cancelled
// before it came to run is dropped; the host goes on serving.
func TestCancelStopsTheSandbox(t *testing.T) {
	f := newFixture(t, 1)
	ctx := context.Background()
	if err := f.agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	send := func(id, payload string) {
		t.Helper()
		dispatch(t, f.conn, "h1", f.create(t, id, payload))
	}

	send("long", "1m")
	poll.Until(t, 30*time.Second, "the long job started", func() bool { return f.events.started("long") })
	// With one slot taken, "queued" waits on the host; cancel it first.
	send("queued", "1ms")
	cancelJob(t, f.conn, "queued")
	cancelJob(t, f.conn, "long")
	if r := f.events.wait(t, "long"); r.GetStatus() != wardv1.JobState_JOB_STATE_FAILED || r.GetErrorCode() != "cancelled" {
		t.Fatalf("cancelled job's result %v", r)
	}
	// The slot is free again: the next job runs, the cancelled one never did.
	send("after", "1ms")
	if r := f.events.wait(t, "after"); r.GetStatus() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("after the cancels: %v", r)
	}
	// A cancel for a job no host knows is harmless.
	cancelJob(t, f.conn, "nobody")
	send("last", "1ms")
	if r := f.events.wait(t, "last"); r.GetStatus() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("last: %v", r)
	}
	// "queued" came to the host before "after", which ran on the one slot:
	// it never started, and its attempt's result says it was refused.
	results, started := f.events.of("queued")
	if len(results) != 1 || len(started) != 0 || results[0].GetErrorCode() != "cancelled" || results[0].GetAttempt() != 1 {
		t.Fatalf("a job cancelled before it ran: results %v, %d starts", results, len(started))
	}
}

// TestCancelNamesItsAttempt: a cancel ends the attempt it names and the
// earlier ones, never a later one. A retry of a job whose first attempt was
// cancelled here runs (it used to be dropped without a word for ten
// minutes); a dispatch of the cancelled attempt that comes late is refused
// and reported; and with two attempts of one job running here at once (a
// host paused past its running timeout comes back running attempt 1 while
// attempt 2 was placed on it again), a cancel of attempt 1 stops that one
// only.
func TestCancelNamesItsAttempt(t *testing.T) {
	f := newFixture(t, 2)
	ctx := context.Background()
	if err := f.agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	attempt := func(id, payload string, n int32) *wardv1.JobRequest {
		req := f.create(t, id, payload)
		req.Attempt = n
		return req
	}

	// Attempt 1 of "retried" timed out at the scheduler before it came
	// here: the cancel names it. Its late dispatch is refused; attempt 2
	// runs.
	cancelAttempt(t, f.conn, "retried", 1)
	dispatch(t, f.conn, "h1", attempt("retried", "1ms", 1))
	dispatch(t, f.conn, "h1", attempt("retried", "1ms", 2))
	rs := f.events.waitN(t, "retried", 2)
	byAttempt := map[int32]*wardv1.JobResult{}
	for _, r := range rs {
		byAttempt[r.GetAttempt()] = r
	}
	if r := byAttempt[1]; r.GetStatus() != wardv1.JobState_JOB_STATE_FAILED || r.GetErrorCode() != "cancelled" {
		t.Errorf("the cancelled attempt's late dispatch: %v", r)
	}
	if r := byAttempt[2]; r.GetStatus() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Errorf("the retry after a cancel of attempt 1: %v", r)
	}
	if _, started := f.events.of("retried"); len(started) > 1 || len(started) == 1 && started[0].GetAttempt() != 2 {
		t.Errorf("starts %v, want attempt 2's only", started)
	}

	// Two attempts of "twice" at once; the cancel of attempt 1 leaves 2.
	dispatch(t, f.conn, "h1", attempt("twice", "1m", 1))
	dispatch(t, f.conn, "h1", attempt("twice", "2s", 2))
	poll.Until(t, 30*time.Second, "both attempts started", func() bool {
		_, started := f.events.of("twice")
		return len(started) == 2
	})
	cancelAttempt(t, f.conn, "twice", 1)
	rs = f.events.waitN(t, "twice", 2)
	if rs[0].GetAttempt() != 1 || rs[0].GetErrorCode() != "cancelled" {
		t.Errorf("first result %v, want attempt 1 cancelled", rs[0])
	}
	if rs[1].GetAttempt() != 2 || rs[1].GetStatus() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Errorf("second result %v, want attempt 2 succeeded", rs[1])
	}
}
