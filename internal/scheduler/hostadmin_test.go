package scheduler_test

import (
	"context"
	"testing"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/testing/poll"
)

// TestDrainHost: a drained host is given no new job by any replica, even
// one that prefers it, while what it runs finishes; with every host of the
// pool drained a job waits in the queue (it is not dead-lettered); the
// drain is in the store, so a replica started later follows it; undrained,
// the host takes jobs again. A host's jobs are listed by worker.
func TestDrainHost(t *testing.T) {
	e := start(t, options{replicas: 2})
	ctx := context.Background()
	hold := func(*wardv1.JobRequest, int) outcome { return outcome{hold: true} }
	one := e.addHost(&wardv1.Heartbeat{WorkerId: "one", Pools: []string{"a"}, MaxParallelJobs: 8}, hold)
	two := e.addHost(&wardv1.Heartbeat{WorkerId: "two", Pools: []string{"a"}, MaxParallelJobs: 8}, hold)
	e.waitWorkers("one", "two")
	on := func(worker string) *wardv1.JobRequest {
		return &wardv1.JobRequest{Topic: "job.a", Labels: map[string]string{"preferred_worker_id": worker}}
	}
	before := e.mustSubmit(on("one"))
	if j := e.waitState(before, jobstore.Running); j.WorkerID != "one" {
		t.Fatalf("the first job ran on %s", j.WorkerID)
	}

	drain := func(worker string, undrain bool, changed bool) {
		t.Helper()
		r, err := e.admin.DrainHost(ctx, worker, undrain)
		if err != nil || r.GetChanged() != changed {
			t.Fatalf("drain %s (undrain %v): %v, %v; want changed %v", worker, undrain, r, err, changed)
		}
		poll.Until(t, 10*time.Second, "every replica follows the drain of "+worker, func() bool {
			for _, s := range e.scheds {
				if _, ok := s.Hosts().Drained()[worker]; ok == undrain {
					return false
				}
			}
			return true
		})
	}
	drain("one", false, true)
	drain("one", false, false) // again: nothing changes
	var after []string
	for range 6 {
		id := e.mustSubmit(on("one"))
		after = append(after, id)
		if j := e.waitState(id, jobstore.Running); j.WorkerID != "two" {
			t.Fatalf("job %s ran on the drained host %s", id, j.WorkerID)
		}
	}
	// What ran there before the drain finishes there.
	one.release(before)
	e.waitState(before, jobstore.Succeeded)

	// Every replica says so, and so does one started later.
	sts, err := e.admin.Schedulers(ctx, time.Second)
	if err != nil || len(sts) != 2 {
		t.Fatalf("schedulers: %v, %v", sts, err)
	}
	for _, st := range sts {
		if _, ok := st.GetDrained()["one"]; !ok {
			t.Errorf("scheduler %s does not list the drain: %v", st.GetSchedulerId(), st.GetDrained())
		}
	}
	late := e.addReplica(false)
	poll.Until(t, 10*time.Second, "a later replica reads the drain", func() bool {
		_, ok := late.Hosts().Drained()["one"]
		return ok
	})

	// Both drained: a job waits, placed nowhere and not dead-lettered.
	drain("two", false, true)
	waiting := e.mustSubmit(on("two"))
	poll.Until(t, 10*time.Second, "queued", func() bool { return e.job(waiting).Waiting == "queue:a" })
	if j := e.job(waiting); j.State != jobstore.Pending || j.WorkerID != "" {
		t.Fatalf("with every host drained a job is %s on %q", j.State, j.WorkerID)
	}
	drain("one", true, true)
	if j := e.waitState(waiting, jobstore.Running); j.WorkerID != "one" {
		t.Fatalf("the waiting job ran on %s once one was undrained", j.WorkerID)
	}

	// The host's jobs, by worker.
	page, err := e.admin.ListJobs(ctx, &wardv1.ListJobsRequest{WorkerId: "two", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, j := range page.GetJobs() {
		if j.GetWorkerId() != "two" {
			t.Errorf("listed job %s of %s", j.GetJobId(), j.GetWorkerId())
		}
		got[j.GetJobId()] = true
	}
	for _, id := range after {
		if !got[id] {
			t.Errorf("job %s of two is not listed among its jobs (%v)", id, got)
		}
	}
	if _, err := e.admin.DrainHost(ctx, "", false); err == nil {
		t.Error("a drain of no host was taken")
	}
	two.releaseAll()
	one.releaseAll()
}

// TestStats: the counts by state are exact, and the steps count what was
// created and ended in them.
func TestStats(t *testing.T) {
	e := start(t, options{sched: "placement: {prefetch: 0, prefetch_window: 0s}\n"})
	ctx := context.Background()
	h := e.addHost(&wardv1.Heartbeat{WorkerId: "h", Pools: []string{"a"}, MaxParallelJobs: 4}, func(*wardv1.JobRequest, int) outcome { return outcome{hold: true} })
	e.waitWorkers("h")
	var ids []string
	for range 7 {
		ids = append(ids, e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"}))
	}
	// 4 run (max_parallel_jobs), 3 wait in the queue; 2 of the running end.
	poll.Until(t, 10*time.Second, "4 running", func() bool { return len(h.runningNow()) == 4 })
	running := h.runningNow()
	for _, id := range running[:2] {
		h.release(id)
		e.waitState(id, jobstore.Succeeded)
	}
	want := map[string]int64{"SUCCEEDED": 2}
	poll.Until(t, 10*time.Second, "2 more running", func() bool { return len(h.runningNow()) == 4 })
	st, err := e.admin.Stats(ctx, time.Minute, 3, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	states := st.GetStates()
	if states["SUCCEEDED"] != want["SUCCEEDED"] || states["PENDING"]+states["SCHEDULED"]+states["DISPATCHED"]+states["RUNNING"] != 5 {
		t.Errorf("states %v: want 2 SUCCEEDED and 5 not ended", states)
	}
	if n := len(st.GetCreated()); n != 3 || st.GetCreated()[2] != int64(len(ids)) {
		t.Errorf("created per step %v, want the 7 jobs in the last of 3 steps", st.GetCreated())
	}
	if c := st.GetEnded()["SUCCEEDED"].GetCounts(); len(c) != 3 || c[2] != 2 {
		t.Errorf("SUCCEEDED per step %v, want 2 in the last step", c)
	}
	if _, err := e.admin.Stats(ctx, 0, 10, time.Time{}); err == nil {
		t.Error("steps of 0 ms were taken")
	}
	h.releaseAll()
}
