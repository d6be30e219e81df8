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
	// it was dropped, never started.
	if results, started := f.events.of("queued"); len(results) != 0 || len(started) != 0 {
		t.Fatalf("a job cancelled before it ran: %d results, %d starts", len(results), len(started))
	}
}
