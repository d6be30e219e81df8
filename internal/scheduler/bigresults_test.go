package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/testing/poll"
)

// TestLargeResultPointers: the scheduler creates a tenant's result bucket
// when it admits the tenant's job (hosts may not), keeps a result pointer
// that is the attempt's in the job's tenant's bucket, and fails the
// attempt (result_unavailable) of a host that points elsewhere: another
// tenant's bucket, another job's object.
func TestLargeResultPointers(t *testing.T) {
	e := start(t, options{sched: "failure_domains: {quarantine_failures: 100, min_samples: 1000}\n"})
	h := e.addHost(hb("h", "a"), func(*wardv1.JobRequest, int) outcome { return outcome{hold: true} })
	e.waitWorkers("h")

	ok := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	e.waitState(ok, jobstore.Running)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(e.client.Bus().NATS())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.ObjectStore(ctx, bus.ResultBucketOf("acme")); err != nil {
		t.Fatalf("acme's result bucket after its job was admitted: %v", err)
	}
	ptr := bus.ResultObjectPtr("acme", ok, 1)
	digest := bus.ContentDigest([]byte("the result"))
	h.publish(&wardv1.JobResult{JobId: ok, WorkerId: "h", Attempt: 1, Status: wardv1.JobState_JOB_STATE_SUCCEEDED, ResultPtr: ptr, ResultDigest: digest})
	if j := e.waitState(ok, jobstore.Succeeded); j.ResultPtr != ptr || j.ResultDigest != digest {
		t.Fatalf("result pointer %q digest %q, want %q %q", j.ResultPtr, j.ResultDigest, ptr, digest)
	}

	for name, forged := range map[string]func(id string) (ptr, digest string){
		"another tenant's bucket": func(id string) (string, string) { return bus.ResultObjectPtr("globex", id, 1), digest },
		"another job's object":    func(string) (string, string) { return ptr, digest },
		"another attempt's":       func(id string) (string, string) { return bus.ResultObjectPtr("acme", id, 2), digest },
		"not a result bucket": func(id string) (string, string) {
			return bus.ObjectScheme + bus.ContextBucketOf("acme") + "/" + id + "-1", digest
		},
		"no digest":                 func(id string) (string, string) { return bus.ResultObjectPtr("acme", id, 1), "" },
		"another job's stored blob": func(string) (string, string) { return jobstore.ResultPtr(ok), "" },
		"a stored context":          func(id string) (string, string) { return jobstore.ContextPtr(id), "" },
	} {
		id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
		e.waitState(id, jobstore.Running)
		fp, fd := forged(id)
		h.publish(&wardv1.JobResult{JobId: id, WorkerId: "h", Attempt: 1, Status: wardv1.JobState_JOB_STATE_SUCCEEDED, ResultPtr: fp, ResultDigest: fd})
		if j := e.waitState(id, jobstore.Failed); j.ErrorCode != string(reason.ResultUnavailable) || j.ResultPtr != "" {
			t.Errorf("%s: %s %q, result %q", name, j.State, j.ErrorCode, j.ResultPtr)
		}
	}
}

// TestResultBucketRetried: when JetStream cannot create a tenant's result
// bucket at the tenant's first admission (here it is off, as while a
// JetStream cluster elects its leader), the job goes on, and the replica
// creates the bucket once JetStream is back, with no new job to prompt it.
func TestResultBucketRetried(t *testing.T) {
	e := start(t, options{})
	e.addHost(hb("h", "a"), func(*wardv1.JobRequest, int) outcome { return outcome{hold: true} })
	e.waitWorkers("h")
	ns := e.secure.Server
	jsConf := ns.JetStreamConfig()
	if err := ns.DisableJetStream(); err != nil {
		t.Fatal(err)
	}

	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	e.waitState(id, jobstore.Running)

	if err := ns.EnableJetStream(jsConf); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(e.client.Bus().NATS())
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 20*time.Second, "acme's result bucket created after JetStream came back", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := js.ObjectStore(ctx, bus.ResultBucketOf("acme"))
		return err == nil
	})
}
