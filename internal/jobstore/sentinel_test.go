package jobstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// TestLoggedSentinelFailover: the logged store through Sentinel
// (redis+sentinel://...&log=NAME) outlives its primary's crash: the owner
// keeps its lease and epoch across the failover (lease=10s), appends to
// the promoted replica, and where the replica had not had its last batches
// (replication is asynchronous; nothing waits for it here) makes the log
// whole from its state; an owner that takes the log over afterwards has
// every change.
func TestLoggedSentinelFailover(t *testing.T) {
	sen := redistest.StartSentinel(t)
	s, err := jobstore.Open(sen.URL + "&log=sen&lease=10s")
	if err != nil {
		t.Fatal(err)
	}
	a, ok := s.(*jobstore.Logged)
	if !ok {
		t.Fatalf("Open = %T, want *jobstore.Logged", s)
	}
	defer a.Close()
	ctx := context.Background()
	for i := range 50 {
		if _, _, err := a.Create(ctx, &jobstore.Job{ID: fmt.Sprintf("before-%d", i), Topic: "job.echo", Tenant: "acme"}, []byte("p")); err != nil {
			t.Fatal(err)
		}
	}
	redistest.Kill(t, sen.Primary) // no WAIT: the replica may lack the last batches

	// The change waits while its append is retried (30 s at most): until
	// Sentinel promotes the replica and the client follows it.
	cctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	_, err = a.Transition(cctx, "before-49", jobstore.Transition{To: jobstore.Cancelled})
	cancel()
	if err != nil {
		t.Fatalf("the owner did not outlive the failover: %v (store: %v)", err, a.Err())
	}
	if _, _, err := a.Create(ctx, &jobstore.Job{ID: "after", Topic: "job.echo", Tenant: "acme"}, nil); err != nil {
		t.Fatalf("a job made after the failover: %v", err)
	}
	opt, err := redis.ParseFailoverURL(strings.Replace(sen.URL, "redis+sentinel://", "redis://", 1))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewFailoverClient(opt)
	defer c.Close()
	b, err := jobstore.OpenLogged(ctx, c, "sen", jobstore.LoggedOptions{Steal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := jobstore.SameState(a, b); err != nil {
		t.Fatalf("after the failover: %v", err)
	}
}

// TestLoggedCluster: the logged store on a Redis Cluster
// (redis+cluster://...&log=NAME): its keys share the slot of {NAME}, and a
// replay makes the owner's state.
func TestLoggedCluster(t *testing.T) {
	url := redistest.StartCluster(t, 3)
	s, err := jobstore.Open(url + "&log=c&snapshot=5")
	if err != nil {
		t.Fatal(err)
	}
	a, ok := s.(*jobstore.Logged)
	if !ok {
		t.Fatalf("Open = %T, want *jobstore.Logged", s)
	}
	ctx := context.Background()
	for i := range 30 {
		id := fmt.Sprintf("j%d", i)
		if _, _, err := a.Create(ctx, &jobstore.Job{ID: id, Topic: "job.echo", Tenant: fmt.Sprintf("t%d", i%4)}, []byte("p")); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Transition(ctx, id, jobstore.Transition{To: jobstore.Cancelled}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := jobstore.Open(url + "&log=c")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := jobstore.SameState(a, r.(*jobstore.Logged)); err != nil {
		t.Fatal(err)
	}
}
