package jobstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/testing/redistest"
)

// TestSentinelFailover: the store through Sentinel (redis+sentinel://)
// keeps its jobs when the primary dies: Sentinel promotes the replica,
// the store follows it, a job made (and replicated) before the crash is
// there and goes on moving, and new jobs are made.
func TestSentinelFailover(t *testing.T) {
	sen := redistest.StartSentinel(t)
	s, err := jobstore.Open(sen.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.(*jobstore.Redis); !ok {
		t.Fatalf("Open(%s) = %T, want *jobstore.Redis", sen.URL, s)
	}
	ctx := context.Background()
	if _, _, err := s.Create(ctx, &jobstore.Job{ID: "before", Topic: "job.echo", Tenant: "acme"}, []byte("p")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, "before", jobstore.Transition{To: jobstore.Scheduled, WorkerID: "w1"}); err != nil {
		t.Fatal(err)
	}
	// Replicated before the crash (replication is asynchronous: WAIT).
	primary := redis.NewClient(&redis.Options{Addr: sen.Primary})
	if n, err := primary.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d, %v", n, err)
	}
	primary.Close()
	redistest.Kill(t, sen.Primary)

	deadline := time.Now().Add(30 * time.Second)
	var j *jobstore.Job
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		j, err = s.Transition(cctx, "before", jobstore.Transition{To: jobstore.Dispatched, From: jobstore.Scheduled, IfWorker: "w1"})
		cancel()
		if err == nil {
			break
		}
		var te *jobstore.TransitionError
		if errors.As(err, &te) {
			t.Fatalf("after the failover: %v", err) // the job is there, in another state
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store did not follow the failover within 30 s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if j.State != jobstore.Dispatched || j.WorkerID != "w1" {
		t.Errorf("the job made before the crash: %s on %q", j.State, j.WorkerID)
	}
	// The replica is the primary now.
	replica := redis.NewClient(&redis.Options{Addr: sen.Replica})
	defer replica.Close()
	if role, err := replica.Do(ctx, "ROLE").Slice(); err != nil || role[0] != "master" {
		t.Errorf("the replica's role after the failover: %v, %v", role, err)
	}
	if _, _, err := s.Create(ctx, &jobstore.Job{ID: "after", Topic: "job.echo", Tenant: "acme"}, []byte("q")); err != nil {
		t.Fatalf("a job made after the failover: %v", err)
	}
	if evs, err := s.Events(ctx, "before"); err != nil || len(evs) != 3 {
		t.Errorf("the first job's log: %d events, %v", len(evs), err)
	}
}
