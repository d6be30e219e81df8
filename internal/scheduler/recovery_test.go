package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/scheduler"
	"github.com/ward-run/ward/internal/testing/poll"
	"github.com/ward-run/ward/internal/testing/redistest"
)

// TestFailureDomains: a zone whose failure rate is over the threshold is
// throttled and the other zone preferred; a worker that fails repeatedly
// is quarantined and gets nothing during its cool-down.
func TestFailureDomains(t *testing.T) {
	// The zone gauges are the process's: a zone of its own per run keeps
	// a run's (with -count) from seeing the last one's throttle.
	za := fmt.Sprintf("zone-a%d", failureDomainRuns.Add(1))
	e := start(t, options{sched: `
failure_domains:
  threshold: 0.3
  min_samples: 4
  throttle_rate: 0.001
  quarantine_failures: 100
`})
	// It fails on its own (internal): a failure on the job's input
	// (exit, trap, module_error ...) would not count against it.
	bad := e.addHost(&wardv1.Heartbeat{WorkerId: "a-bad", Zone: za, Pools: []string{"a", "b2"}, MaxParallelJobs: 50},
		func(*wardv1.JobRequest, int) outcome { return outcome{fail: true, code: string(reason.Internal)} })
	e.waitWorkers("a-bad")
	// Zone a fails everything: after a few failures it is throttled.
	for range 5 {
		e.waitState(e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"}), jobstore.Failed)
	}
	poll.Until(t, 10*time.Second, za+" throttled", func() bool { return metric("ward_scheduler_zone_throttled", "zone", za) == 1 })
	if r := metric("ward_scheduler_zone_failure_rate", "zone", za); r <= 0.3 {
		t.Errorf("%s failure rate %v", za, r)
	}
	// A healthy host in zone b, more loaded than a-bad: zone b is preferred.
	e.addHost(&wardv1.Heartbeat{WorkerId: "b-good", Zone: "zone-b", Pools: []string{"a"}, MaxParallelJobs: 50, CpuLoad: 80}, nil)
	e.waitWorkers("b-good")
	n, _ := bad.got()
	for range 5 {
		if j := e.waitEnd(e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})); j.State != jobstore.Succeeded || j.WorkerID != "b-good" {
			t.Fatalf("with %s throttled: %s on %s", za, j.State, j.WorkerID)
		}
	}
	if m, _ := bad.got(); m != n {
		t.Errorf("the throttled zone got %d more jobs while another zone could run them", m-n)
	}
	// Only the throttled zone serves b2: its token bucket (0.001/s, one
	// token to start) lets one job through, then holds the next back in
	// the queue.
	b2 := map[string]string{"preferred_pool": "b2"}
	if j := e.waitEnd(e.mustSubmit(&wardv1.JobRequest{Topic: "job.b", Labels: b2})); j.WorkerID != "a-bad" {
		t.Fatalf("the throttled zone's token: ran on %q", j.WorkerID)
	}
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.b", Labels: b2})
	poll.Until(t, 10*time.Second, "job waits for the throttled zone", func() bool { return e.job(id).Waiting == "queue:b2" })
	if !hasEvent(e.events(id), jobstore.Pending, string(reason.PoolOverloaded), "zone "+za+" is throttled") {
		t.Errorf("events %+v", e.events(id))
	}
	_, _ = e.client.Cancel(context.Background(), id, "")
}

// failureDomainRuns numbers TestFailureDomains' runs.
var failureDomainRuns atomic.Int32

func TestQuarantine(t *testing.T) {
	e := start(t, options{sched: "failure_domains: {quarantine_failures: 3, quarantine_cooldown: 1h, min_samples: 1000}\n"})
	flaky := e.addHost(&wardv1.Heartbeat{WorkerId: "flaky", Pools: []string{"a"}, MaxParallelJobs: 50},
		func(*wardv1.JobRequest, int) outcome { return outcome{fail: true, code: string(reason.Internal)} })
	e.waitWorkers("flaky")
	for range 3 {
		e.waitState(e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"}), jobstore.Failed)
	}
	poll.Until(t, 10*time.Second, "flaky quarantined", func() bool {
		q, _ := e.store.Quarantined(context.Background(), time.Now())
		_, ok := q["flaky"]
		return ok && metric("ward_scheduler_quarantined_workers") == 1
	})
	// A job now waits (the only worker cools down) ...
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	poll.Until(t, 10*time.Second, "job waits", func() bool { return e.job(id).Waiting == "queue:a" })
	if ev := lastEvent(e.events(id), jobstore.Pending); !strings.Contains(ev.Message, "flaky=quarantined") {
		t.Errorf("queued event %q", ev.Message)
	}
	// ... and a healthy worker takes it.
	e.addHost(hb("healthy", "a"), nil)
	if j := e.waitState(id, jobstore.Succeeded); j.WorkerID != "healthy" {
		t.Fatalf("ran on %s", j.WorkerID)
	}
	if n, _ := flaky.got(); n != 3 {
		t.Errorf("the quarantined worker got %d jobs, want 3", n)
	}
}

// TestModes: the mode is set through any replica and followed by all:
// DEGRADED refuses low priorities, READ_ONLY and DRAINING refuse
// everything, DRAINING also starts nothing that waits.
func TestModes(t *testing.T) {
	e := start(t, options{replicas: 2, sched: "placement: {prefetch: 0, prefetch_window: 0s}\n"})
	h := e.addHost(&wardv1.Heartbeat{WorkerId: "one", Pools: []string{"a"}, MaxParallelJobs: 1},
		func(*wardv1.JobRequest, int) outcome { return outcome{hold: true} })
	e.waitWorkers("one")
	ctx := context.Background()
	setMode := func(m string) {
		t.Helper()
		got, err := e.admin.SchedulerMode(ctx, m)
		if err != nil || got != m {
			t.Fatalf("mode %s: %q %v", m, got, err)
		}
		poll.Until(t, 10*time.Second, "every replica in "+m, func() bool {
			for _, s := range e.scheds {
				if string(s.Mode()) != m {
					return false
				}
			}
			return true
		})
	}
	refused := func(priority int32, reason string) {
		t.Helper()
		reply, err := e.submit(&wardv1.JobRequest{Topic: "job.a", Priority: priority})
		if !errors.Is(err, client.ErrRefused) || reply.GetReason() != reason {
			t.Fatalf("priority %d: %v %v, want %s", priority, reply, err, reason)
		}
	}
	if _, err := e.admin.SchedulerMode(ctx, "sideways"); err == nil {
		t.Fatal("an unknown mode was accepted")
	}
	setMode("DEGRADED")
	refused(6, string(reason.ModeDegraded))
	running := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", Priority: 5})
	e.waitState(running, jobstore.Running)
	waiting := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", Priority: 0})
	poll.Until(t, 10*time.Second, "queued", func() bool { return e.job(waiting).Waiting == "queue:a" })
	setMode("READ_ONLY")
	refused(0, string(reason.ModeReadOnly))
	setMode("DRAINING")
	refused(0, string(reason.ModeDraining))
	// Draining: the running job ends; the waiting one is not started.
	h.release(running)
	e.waitState(running, jobstore.Succeeded)
	for range 5 {
		e.scheds[0].Hosts() // let a few pump rounds pass
		time.Sleep(50 * time.Millisecond)
	}
	if j := e.job(waiting); j.State != jobstore.Pending {
		t.Fatalf("DRAINING started a waiting job: %s", j.State)
	}
	// READ_ONLY processes what waits.
	setMode("READ_ONLY")
	e.waitState(waiting, jobstore.Running)
	h.releaseAll()
	setMode("NORMAL")
	e.waitState(e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", Priority: 9}), jobstore.Running)
	h.releaseAll()
	// A replica started later reads the mode from the store.
	setMode("DEGRADED")
	if s := e.addReplica(false); s.Mode() != scheduler.ModeDegraded {
		t.Errorf("new replica in %s", s.Mode())
	}
	setMode("NORMAL")
}

// TestRetries: a failed attempt is retried with backoff up to the job's
// max_retries; the last failure goes to the DLQ max_retries_exceeded. An
// attempt whose module refused its input is not retried.
func TestRetries(t *testing.T) {
	e := start(t, options{sched: "retries: {base: 10ms, max: 50ms}\nfailure_domains: {quarantine_failures: 0}\n", timeouts: `
topics:
  job.a: {max_retries: 1}
`})
	e.addHost(hb("h", "a"), func(req *wardv1.JobRequest, attempt int) outcome {
		if strings.HasPrefix(req.GetJobId(), "flaky") && attempt < 3 {
			return outcome{fail: true, code: "exit"}
		}
		if strings.HasPrefix(req.GetJobId(), "broken") {
			return outcome{fail: true, code: "trap"}
		}
		if strings.HasPrefix(req.GetJobId(), "refused") {
			return outcome{fail: true, code: string(reason.InputRefused)}
		}
		return outcome{}
	})
	e.waitWorkers("h")
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", JobId: "flaky", Budget: &wardv1.Budget{MaxRetries: 3}})
	j := e.waitState(id, jobstore.Succeeded)
	if j.Attempt != 3 || j.MaxRetries != 3 || j.Reason != "" || j.ErrorCode != "" {
		t.Fatalf("flaky job: attempt %d of max_retries %d, reason %q code %q", j.Attempt, j.MaxRetries, j.Reason, j.ErrorCode)
	}
	retriesSeen := 0
	for _, ev := range e.events(id) {
		if ev.State == jobstore.Pending && ev.Reason == string(reason.Retry) {
			retriesSeen++
			if !strings.Contains(ev.Message, "failed (exit: it broke); retry in") {
				t.Errorf("retry event %q", ev.Message)
			}
		}
	}
	if retriesSeen != 2 {
		t.Errorf("%d retry events, want 2", retriesSeen)
	}
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", JobId: "broken", Budget: &wardv1.Budget{MaxRetries: 2}})
	j = e.waitState(id, jobstore.Failed)
	if j.Attempt != 3 || j.Reason != string(reason.MaxRetriesExceeded) || j.ErrorCode != "trap" || !e.inDLQ(id, string(reason.MaxRetriesExceeded)) {
		t.Fatalf("broken job: attempt %d reason %q code %q", j.Attempt, j.Reason, j.ErrorCode)
	}
	// A refused input fails at once, whatever its retries: no attempt
	// can run it. It ends with its own reason, in no DLQ.
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", JobId: "refused", Budget: &wardv1.Budget{MaxRetries: 3}})
	j = e.waitState(id, jobstore.Failed)
	if j.Attempt != 1 || j.Reason != string(reason.InputRefused) || j.ErrorCode != string(reason.InputRefused) {
		t.Fatalf("refused job: attempt %d reason %q code %q", j.Attempt, j.Reason, j.ErrorCode)
	}
	if dlq, err := e.store.DLQ(context.Background(), "", 1000); err != nil || slices.ContainsFunc(dlq, func(d jobstore.DLQEntry) bool { return d.JobID == id }) {
		t.Fatalf("the refused job is in the DLQ (%v)", err)
	}
	// No budget: the topic's max_retries (1) applies.
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", JobId: "broken-topic"})
	if j := e.waitState(id, jobstore.Failed); j.Attempt != 2 || j.MaxRetries != 1 {
		t.Fatalf("topic retries: attempt %d of %d", j.Attempt, j.MaxRetries)
	}
	// The safety decision caps them.
	e.safety.set("capped", &wardv1.Constraints{MaxRetries: 1})
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", JobId: "broken-capped", TenantId: "capped", Budget: &wardv1.Budget{MaxRetries: 5}})
	if j := e.waitState(id, jobstore.Failed); j.Attempt != 2 || j.MaxRetries != 1 {
		t.Fatalf("capped retries: attempt %d of %d", j.Attempt, j.MaxRetries)
	}
}

// TestTimeouts: the topic's running timeout ends a silent job TIMEOUT (or
// retries it); budget.deadline_ms ends a job TIMEOUT deadline_exceeded
// whatever its state, and its host is told to stop it.
func TestTimeouts(t *testing.T) {
	e := start(t, options{timeouts: fastTimeouts + `
topics:
  job.a: {running_timeout: 500ms}
`, sched: "failure_domains: {quarantine_failures: 0}\n"})
	h := e.addHost(hb("h", "a", "b2"), func(*wardv1.JobRequest, int) outcome { return outcome{hold: true} })
	e.waitWorkers("h")
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	j := e.waitState(id, jobstore.Timeout)
	if j.Reason != string(reason.RunningTimeout) {
		t.Fatalf("running timeout: %s %s", j.State, j.Reason)
	}
	poll.Until(t, 10*time.Second, "host told to stop", func() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.cancelsSeen[id] })
	// A deadline, relative to submission: the job ends TIMEOUT at it.
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.b", Labels: map[string]string{"preferred_pool": "b2"}, Budget: &wardv1.Budget{DeadlineMs: 300}})
	j = e.waitState(id, jobstore.Timeout)
	if j.Reason != string(reason.DeadlineExceeded) || j.Deadline.IsZero() {
		t.Fatalf("deadline: %s %s %v", j.State, j.Reason, j.Deadline)
	}
	poll.Until(t, 10*time.Second, "host told to stop", func() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.cancelsSeen[id] })
	// An absolute deadline already past: ended before it runs.
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.b", Budget: &wardv1.Budget{DeadlineMs: time.Now().Add(-time.Second).UnixMilli()}})
	if j := e.waitState(id, jobstore.Timeout); j.Reason != string(reason.DeadlineExceeded) || j.WorkerID != "" {
		t.Fatalf("past deadline: %s %s on %q", j.State, j.Reason, j.WorkerID)
	}
	h.releaseAll()
}

// TestCancel: ward jobs cancel ends a running job CANCELLED and its host
// stops it; a waiting job is cancelled before it ever runs.
func TestCancel(t *testing.T) {
	e := start(t, options{sched: "placement: {prefetch: 0, prefetch_window: 0s}\n"})
	h := e.addHost(&wardv1.Heartbeat{WorkerId: "one", Pools: []string{"a"}, MaxParallelJobs: 1},
		func(*wardv1.JobRequest, int) outcome { return outcome{hold: true} })
	e.waitWorkers("one")
	ctx := context.Background()
	running := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	e.waitState(running, jobstore.Running)
	waiting := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	poll.Until(t, 10*time.Second, "queued", func() bool { return e.job(waiting).Waiting == "queue:a" })

	rec, err := e.client.Cancel(ctx, waiting, "not needed")
	if err != nil || rec.GetState() != wardv1.JobState_JOB_STATE_CANCELLED {
		t.Fatalf("cancel waiting: %v %v", rec, err)
	}
	rec, err = e.client.Cancel(ctx, running, "")
	if err != nil || rec.GetState() != wardv1.JobState_JOB_STATE_CANCELLED || rec.GetReason() != string(reason.Cancelled) {
		t.Fatalf("cancel running: %v %v", rec, err)
	}
	// The host stopped it (its result, cancelled, is late and ignored).
	poll.Until(t, 10*time.Second, "host stopped the job", func() bool { return len(h.runningNow()) == 0 })
	if j := e.job(running); j.State != jobstore.Cancelled {
		t.Fatalf("after the host's result: %s", j.State)
	}
	if _, err := e.client.Cancel(ctx, running, ""); err == nil || !strings.Contains(err.Error(), "ended already") {
		t.Errorf("second cancel: %v", err)
	}
	if _, err := e.client.Cancel(ctx, "nope", ""); err == nil {
		t.Error("cancel of an unknown job succeeded")
	}
	if n, order := h.got(); n != 1 || order[0] != running {
		t.Errorf("host got %v: the cancelled waiting job must never run", order)
	}
	// The slot is free: the next job runs.
	e.waitState(e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"}), jobstore.Running)
	h.releaseAll()
}

// TestExactlyOnceAcrossReplicas: three replicas and three hosts, many
// jobs: every job ends SUCCEEDED once, is dispatched once, and is received
// by exactly one host once. It runs against the in-memory store and, where
// redis-server is installed, against Redis: the store's atomic checks are
// what makes it hold across replicas.
func TestExactlyOnceAcrossReplicas(t *testing.T) {
	t.Run("memory", func(t *testing.T) { exactlyOnce(t, "") })
	t.Run("redis", func(t *testing.T) {
		if _, err := exec.LookPath("redis-server"); err != nil {
			t.Skip("redis-server is not on PATH; jobstore's conformance suite runs the Redis store where it is")
		}
		exactlyOnce(t, redistest.Start(t))
	})
}

func exactlyOnce(t *testing.T, redis string) {
	e := start(t, options{replicas: 3, sched: "placement: {prefetch_window: 0s}\n", redis: redis})
	var hosts []*fakeHost
	for i := range 3 {
		hosts = append(hosts, e.addHost(&wardv1.Heartbeat{WorkerId: fmt.Sprintf("h%d", i), Pools: []string{"a"}, MaxParallelJobs: 4},
			func(*wardv1.JobRequest, int) outcome { return outcome{delay: time.Millisecond} }))
	}
	e.waitWorkers("h0", "h1", "h2")
	const n = 300
	ids := make([]string, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				reply, err := e.submit(&wardv1.JobRequest{Topic: "job.a", TenantId: "bench"})
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					ids[i] = reply.GetJobId()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d submissions failed, the first: %v", len(errs), errs[0])
	}
	for _, id := range ids {
		e.waitState(id, jobstore.Succeeded)
	}
	received := map[string]int{}
	for _, h := range hosts {
		h.mu.Lock()
		for id, c := range h.received {
			received[id] += c
		}
		if h.maxRunning > 4+1 {
			t.Errorf("host %s ran %d jobs at once (max_parallel_jobs 4, prefetch 1)", h.id, h.maxRunning)
		}
		h.mu.Unlock()
	}
	for _, id := range ids {
		if received[id] != 1 {
			t.Errorf("job %s received %d times", id, received[id])
		}
		dispatched := 0
		for _, ev := range e.events(id) {
			if ev.State == jobstore.Dispatched {
				dispatched++
			}
		}
		if dispatched != 1 {
			t.Errorf("job %s dispatched %d times", id, dispatched)
		}
	}
}

// TestReconcilerLease: one replica at a time runs the reconciler; when it
// stops, another takes over within the lease's ttl and times out what the
// first left.
func TestReconcilerLease(t *testing.T) {
	e := start(t, options{replicas: 2, timeouts: fastTimeouts + "  dispatch_timeout: 1s\n", sched: "failure_domains: {quarantine_failures: 0}\n"})
	leaders := func() []int {
		var out []int
		for i, s := range e.scheds {
			if s.Leader() {
				out = append(out, i)
			}
		}
		return out
	}
	poll.Until(t, 10*time.Second, "one leader", func() bool { return len(leaders()) == 1 })
	first := leaders()[0]
	if ok, err := e.store.AcquireLease(context.Background(), "reconciler", "intruder", time.Minute); ok || err != nil {
		t.Fatalf("a third owner took the held lease: %v %v", ok, err)
	}
	// A ghost host takes jobs and never answers.
	e.addHost(hb("ghost", "a"), func(*wardv1.JobRequest, int) outcome { return outcome{silent: true} })
	e.waitWorkers("ghost")
	e.stopReplica(first)
	other := 1 - first
	poll.Until(t, 5*time.Second, "the other replica leads", func() bool { return e.scheds[other].Leader() })
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	if j := e.waitEnd(id); j.State != jobstore.Timeout || j.Reason != string(reason.DispatchTimeout) {
		t.Fatalf("job on a dead host ended %s %s, want TIMEOUT dispatch_timeout", j.State, j.Reason)
	}
}

// TestLeaseTakeover: a replica that dies without giving its lease up (it
// is killed) is replaced within the lease's ttl.
func TestLeaseTakeover(t *testing.T) {
	e := start(t, options{timeouts: fastTimeouts})
	poll.Until(t, 10*time.Second, "leader", func() bool { return e.scheds[0].Leader() })
	// The dead replica's lease, as it would be left: held, not renewed.
	ctx := context.Background()
	e.stopReplica(0)
	if ok, err := e.store.AcquireLease(ctx, "reconciler", "dead", 600*time.Millisecond); !ok || err != nil {
		t.Fatalf("taking the free lease: %v %v", ok, err)
	}
	s := e.addReplica(false)
	if s.Leader() {
		t.Fatal("a replica took a lease that another holds")
	}
	poll.Until(t, 5*time.Second, "takeover after the ttl", s.Leader)
}

// TestDLQ: dead-lettered jobs are listed with their reason and job, and
// re-submitted as new jobs by ward dlq retry.
func TestDLQ(t *testing.T) {
	e := start(t, options{})
	ctx := context.Background()
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", Payload: []byte("again")})
	e.waitState(id, jobstore.Failed)
	if !e.inDLQ(id, string(reason.NoWorkers)) {
		t.Fatal("not in the DLQ")
	}
	entries, err := e.admin.DLQ(ctx, 10)
	if err != nil || len(entries) != 1 || entries[0].GetJobId() != id || entries[0].GetReason() != string(reason.NoWorkers) ||
		entries[0].GetJob().GetState() != wardv1.JobState_JOB_STATE_FAILED {
		t.Fatalf("dlq ls: %v %v", entries, err)
	}
	e.addHost(hb("h", "a"), nil)
	e.waitWorkers("h")
	reply, err := e.admin.RetryDLQ(ctx, id)
	if err != nil || reply.GetJobId() == id {
		t.Fatalf("dlq retry: %v %v", reply, err)
	}
	j := e.waitState(reply.GetJobId(), jobstore.Succeeded)
	if b, _ := e.store.Blob(ctx, j.ContextPtr); string(b) != "again" {
		t.Errorf("retried job's input %q", b)
	}
	if entries, _ := e.admin.DLQ(ctx, 10); len(entries) != 0 {
		t.Errorf("entry left after the retry: %v", entries)
	}
	again, err := e.admin.RetryDLQ(ctx, id)
	if err != nil || !again.GetDuplicate() || again.GetJobId() != reply.GetJobId() {
		t.Errorf("second retry: %v %v", again, err)
	}
	if _, err := e.admin.RetryDLQ(ctx, "nope"); err == nil {
		t.Error("retry of an unknown job succeeded")
	}
}

// TestHotReload: a change to pools.yaml (and scheduler.yaml) takes effect
// without a restart; a broken file leaves the configuration in force.
func TestHotReload(t *testing.T) {
	e := start(t, options{watch: true})
	e.addHost(hb("h", "a", "new"), nil)
	e.waitWorkers("h")
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.new"})
	if j := e.waitState(id, jobstore.Failed); j.Reason != string(reason.NoPoolMapping) {
		t.Fatalf("before the change: %s", j.Reason)
	}
	if err := os.WriteFile(e.files.Pools, []byte(testPools+"  new: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A topic can only be added with its pool: rewrite both.
	if err := os.WriteFile(e.files.Pools, []byte(strings.Replace(testPools, "topics:\n", "topics:\n  job.new: new\n", 1)+"  new: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "job.new routed", func() bool {
		id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.new"})
		return e.waitEnd(id).State == jobstore.Succeeded
	})
	before := metric("ward_scheduler_config_reloads_total", "result", "error")
	if err := os.WriteFile(e.files.Scheduler, []byte("queue: {cap: lots}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "reload error counted", func() bool {
		return metric("ward_scheduler_config_reloads_total", "result", "error") > before
	})
	e.waitState(e.mustSubmit(&wardv1.JobRequest{Topic: "job.new"}), jobstore.Succeeded)
}

// TestRecovery: what a dead replica leaves is taken over by the
// reconciler: a PENDING job it never admitted, a SCHEDULED job it never
// dispatched, and a job whose result message was lost.
func TestRecovery(t *testing.T) {
	e := start(t, options{timeouts: fastTimeouts})
	h := e.addHost(hb("h", "a"), nil)
	e.waitWorkers("h")
	ctx := context.Background()
	create := func(id string) {
		t.Helper()
		if _, _, err := e.store.Create(ctx, &jobstore.Job{ID: id, Topic: "job.a", Tenant: "acme"}, []byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	// Stored, acknowledged, never admitted.
	create("orphan")
	// Scheduled on h, never dispatched (and its lock held by the dead replica).
	create("scheduled")
	if _, err := e.store.Transition(ctx, "scheduled", jobstore.Transition{To: jobstore.Scheduled, WorkerID: "h", Pool: "a",
		Lock: &jobstore.Lock{Owner: "dead", TTL: 200 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	// Ran on h, which stored the result; the result message was lost.
	create("lost")
	for _, st := range []jobstore.State{jobstore.Scheduled, jobstore.Dispatched, jobstore.Running} {
		if _, err := e.store.Transition(ctx, "lost", jobstore.Transition{To: st, WorkerID: "h", Pool: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.store.PutResult(ctx, "lost", []byte("done")); err != nil {
		t.Fatal(err)
	}
	// A quick job: it ended before its host reported the start, so it is
	// DISPATCHED; its host stored the result, the message was lost.
	create("lost-quick")
	if _, err := e.store.Transition(ctx, "lost-quick", jobstore.Transition{To: jobstore.Dispatched, Via: jobstore.Scheduled,
		WorkerID: "h", Pool: "a", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.PutResult(ctx, "lost-quick", []byte("done")); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"orphan", "scheduled", "lost", "lost-quick"} {
		if j := e.waitState(id, jobstore.Succeeded); j.ResultPtr == "" {
			t.Errorf("%s: no result", id)
		}
	}
	if n, _ := h.got(); n != 2 {
		t.Errorf("host got %d jobs, want 2 (the lost result is not run again)", n)
	}
	if !hasEvent(e.events("lost"), jobstore.Succeeded, "", "result recovered") || !hasEvent(e.events("lost-quick"), jobstore.Succeeded, "", "result recovered") || !hasEvent(e.events("scheduled"), jobstore.Pending, string(reason.Requeued), "") {
		t.Errorf("events: %+v / %+v", e.events("lost"), e.events("scheduled"))
	}
}

// TestSafetyAndIdempotency: the safety kernel's denial and its absence end
// jobs DENIED (fail closed); the same tenant and idempotency key give the
// first job's id.
func TestSafetyAndIdempotency(t *testing.T) {
	e := start(t, options{})
	e.addHost(hb("h", "a"), nil)
	e.waitWorkers("h")
	e.safety.mu.Lock()
	e.safety.deny = map[string]string{"job.a": "job.a is off today"}
	e.safety.mu.Unlock()
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	if j := e.waitState(id, jobstore.Denied); j.Reason != string(reason.SafetyDenied) || !e.inDLQ(id, string(reason.SafetyDenied)) {
		t.Fatalf("denied: %s", j.Reason)
	}
	e.safety.mu.Lock()
	e.safety.deny, e.safety.unavailable = nil, true
	e.safety.mu.Unlock()
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	if j := e.waitState(id, jobstore.Denied); j.Reason != string(reason.SafetyUnavailable) {
		t.Fatalf("kernel down: %s", j.Reason)
	}
	e.safety.mu.Lock()
	e.safety.unavailable = false
	e.safety.mu.Unlock()
	first := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", IdempotencyKey: "k"})
	reply, err := e.submit(&wardv1.JobRequest{Topic: "job.a", IdempotencyKey: "k"})
	if err != nil || reply.GetJobId() != first || !reply.GetDuplicate() {
		t.Fatalf("same key: %v %v", reply, err)
	}
	e.waitState(first, jobstore.Succeeded)
}
