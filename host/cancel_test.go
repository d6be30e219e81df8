package host_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/bus"
	"github.com/ward-run/ward/jobstore"
)

// TestCancelStopsTheSandbox: a cancel on sys.job.cancel stops a running
// job's sandbox at once (the job would sleep a minute), and a job cancelled
// before it came to run is dropped; the host goes on serving.
func TestCancelStopsTheSandbox(t *testing.T) {
	f := newFixture(t, 1)
	ctx := context.Background()
	results := make(chan *wardv1.JobResult, 10)
	started := make(chan string, 10)
	sub, err := f.conn.NATS().Subscribe("sys.job.*", func(m *nats.Msg) {
		switch m.Subject {
		case bus.SubjectResult:
			r := &wardv1.JobResult{}
			if proto.Unmarshal(m.Data, r) == nil {
				results <- r
			}
		case bus.SubjectProgress:
			p := &wardv1.JobProgress{}
			if proto.Unmarshal(m.Data, p) == nil && p.GetKind() == wardv1.JobProgress_KIND_STARTED {
				started <- p.GetJobId()
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = f.conn.Flush()
	if err := f.agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.agent.Shutdown(ctx)

	send := func(id, payload string) {
		t.Helper()
		job := &jobstore.Job{ID: id, Topic: "job.sleep", Tenant: "t"}
		if _, _, err := f.store.Create(ctx, job, []byte(payload)); err != nil {
			t.Fatal(err)
		}
		if err := f.conn.Publish(bus.WorkerJobsSubject("h1"), &wardv1.JobRequest{JobId: id, Topic: job.Topic,
			ContextPtr: job.ContextPtr, Pool: "sleep", TenantId: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	cancel := func(id string) {
		t.Helper()
		if err := f.conn.Publish(bus.SubjectCancel, &wardv1.JobCancel{JobId: id, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
		_ = f.conn.Flush()
	}
	next := func() *wardv1.JobResult {
		t.Helper()
		select {
		case r := <-results:
			return r
		case <-time.After(30 * time.Second):
			t.Fatal("no result within 30s")
		}
		return nil
	}

	send("long", "1m")
	select {
	case id := <-started:
		if id != "long" {
			t.Fatalf("started %s", id)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the long job did not start")
	}
	// With one slot taken, "queued" waits on the host; cancel it first.
	send("queued", "1ms")
	cancel("queued")
	cancel("long")
	if r := next(); r.GetJobId() != "long" || r.GetStatus() != wardv1.JobState_JOB_STATE_FAILED || r.GetErrorCode() != "cancelled" {
		t.Fatalf("cancelled job's result %v", r)
	}
	// The slot is free again: the next job runs, the cancelled one never did.
	send("after", "1ms")
	if r := next(); r.GetJobId() != "after" || r.GetStatus() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("after the cancels: %v (a job cancelled before it ran must not run)", r)
	}
	// A cancel for a job no host knows is harmless.
	cancel("nobody")
	send("last", "1ms")
	if r := next(); r.GetJobId() != "last" {
		t.Fatalf("last: %v", r)
	}
}
