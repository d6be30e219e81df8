package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/testing/poll"
)

// TestLifecycleLog: every job's log holds each state it passed, in order,
// with the placement's reasoning on SCHEDULED: for a job whose host
// reported its start, and for a quick one whose result came first with no
// start reported (RUNNING is then recorded with the end, in one step).
func TestLifecycleLog(t *testing.T) {
	e := start(t, options{})
	e.addHost(hb("slow", "b2"), nil)
	e.waitWorkers("slow")
	want := []jobstore.State{jobstore.Pending, jobstore.Scheduled, jobstore.Dispatched, jobstore.Running, jobstore.Succeeded}
	check := func(host string) {
		t.Helper()
		id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.b", Labels: map[string]string{"preferred_worker_id": host}})
		j := e.waitState(id, jobstore.Succeeded)
		var got []jobstore.State
		for _, ev := range e.events(id) {
			got = append(got, ev.State)
		}
		if j.WorkerID != host || !slices.Equal(got, want) {
			t.Errorf("a job on %s logged %v, want %v", j.WorkerID, got, want)
		}
		if ev := lastEvent(e.events(id), jobstore.Scheduled); !strings.Contains(ev.Message, "worker="+host) {
			t.Errorf("SCHEDULED says %q, not the placement on %s", ev.Message, host)
		}
	}
	check("slow")
	e.addHost(hb("quick", "b2"), func(req *wardv1.JobRequest, _ int) outcome {
		return outcome{quick: true, fail: string(req.GetPayload()) == "fail", code: "module_error"}
	})
	e.waitWorkers("quick")
	check("quick")

	// A quick job whose module failed: it ran, then failed.
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.b", Labels: map[string]string{"preferred_worker_id": "quick"}, Payload: []byte("fail")})
	e.waitState(id, jobstore.Failed)
	var got []jobstore.State
	for _, ev := range e.events(id) {
		got = append(got, ev.State)
	}
	if want := []jobstore.State{jobstore.Pending, jobstore.Scheduled, jobstore.Dispatched, jobstore.Running, jobstore.Failed}; !slices.Equal(got, want) {
		t.Errorf("a quick job that failed logged %v, want %v", got, want)
	}
}

// TestRouting: a topic maps to a list of pools, tried in order; a job's
// requires narrow the pools; preferred_pool and preferred_worker_id steer;
// other labels constrain; no eligible pool is no_pool_mapping, no live
// host is no_workers.
func TestRouting(t *testing.T) {
	e := start(t, options{})
	plain := e.addHost(hb("plain", "b2"), nil)
	e.waitWorkers("plain")

	// job.b → [b1, b2]: b1 has no live host, b2 takes it.
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.b"})
	if j := e.waitState(id, jobstore.Succeeded); j.Pool != "b2" || j.WorkerID != "plain" {
		t.Fatalf("job.b ran in %s on %s", j.Pool, j.WorkerID)
	}
	// A fast host for b1: the first pool wins.
	fast := e.addHost(&wardv1.Heartbeat{WorkerId: "fast", Pools: []string{"b1", "b2"}, Capabilities: []string{"fast"},
		Labels: map[string]string{"team": "ml"}, MaxParallelJobs: 4}, nil)
	e.waitWorkers("fast")
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.b"})
	if j := e.waitState(id, jobstore.Succeeded); j.Pool != "b1" || j.WorkerID != "fast" {
		t.Fatalf("job.b ran in %s on %s, want b1 on fast", j.Pool, j.WorkerID)
	}
	// preferred_pool narrows to b2 (mapped); to an unmapped pool it is ignored.
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.b", Labels: map[string]string{"preferred_pool": "b2", "team": "ml"}})
	if j := e.waitState(id, jobstore.Succeeded); j.Pool != "b2" || j.WorkerID != "fast" {
		t.Fatalf("preferred_pool b2 (team ml): %s on %s", j.Pool, j.WorkerID)
	}
	// preferred_worker_id goes to that worker when it is eligible.
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.b", Labels: map[string]string{"preferred_pool": "b2", "preferred_worker_id": "plain"}})
	if j := e.waitState(id, jobstore.Succeeded); j.WorkerID != "plain" {
		t.Fatalf("preferred_worker_id plain: ran on %s", j.WorkerID)
	}
	if ev := lastEvent(e.events(id), jobstore.Scheduled); !strings.Contains(ev.Message, "reason=Requested") {
		t.Errorf("decision %q", ev.Message)
	}
	// A label constraint that no worker meets: no_workers, with the reason.
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.b", Labels: map[string]string{"team": "web"}})
	j := e.waitState(id, jobstore.Failed)
	if j.Reason != string(reason.NoWorkers) || !e.inDLQ(id, string(reason.NoWorkers)) ||
		!strings.Contains(lastEvent(e.events(id), jobstore.Failed).Message, "label_mismatch") {
		t.Fatalf("unmet label: %s %s %q", j.State, j.Reason, lastEvent(e.events(id), jobstore.Failed).Message)
	}
	// Requires no pool of the topic offers: no_pool_mapping.
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.b", Requires: []string{"tpu"}})
	if j := e.waitState(id, jobstore.Failed); j.Reason != string(reason.NoPoolMapping) || !e.inDLQ(id, string(reason.NoPoolMapping)) {
		t.Fatalf("requires tpu: %s %s", j.State, j.Reason)
	}
	// Requires only b1 offers: b1, on a worker that has it.
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.b", Requires: []string{"fast"}})
	if j := e.waitState(id, jobstore.Succeeded); j.Pool != "b1" || j.WorkerID != "fast" {
		t.Fatalf("requires fast: %s on %s", j.Pool, j.WorkerID)
	}
	// Unmapped topic.
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.nope"})
	if j := e.waitState(id, jobstore.Failed); j.Reason != string(reason.NoPoolMapping) {
		t.Fatalf("unmapped: %s %s", j.State, j.Reason)
	}
	// No live host at all.
	plain.stop()
	fast.stop()
	poll.Until(t, 10*time.Second, "hosts gone", func() bool { return e.scheds[0].Hosts().Len() == 0 })
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	if j := e.waitState(id, jobstore.Failed); j.Reason != string(reason.NoWorkers) || !e.inDLQ(id, string(reason.NoWorkers)) {
		t.Fatalf("no hosts: %s %s", j.State, j.Reason)
	}
}

// TestOverloadedWorkersAreSkipped: a worker at capacity or above the CPU or
// GPU threshold is skipped; when all are, the job waits in the pool's
// queue and is placed as soon as one has room.
func TestOverloadedWorkersAreSkipped(t *testing.T) {
	e := start(t, options{sched: "placement: {prefetch: 0, prefetch_window: 0s}\n"})
	hot := e.addHost(&wardv1.Heartbeat{WorkerId: "hot", Pools: []string{"a"}, MaxParallelJobs: 4, CpuLoad: 97}, nil)
	gpu := e.addHost(&wardv1.Heartbeat{WorkerId: "gpuhot", Pools: []string{"a"}, MaxParallelJobs: 4, GpuUtilization: 95}, nil)
	full := e.addHost(&wardv1.Heartbeat{WorkerId: "full", Pools: []string{"a"}, MaxParallelJobs: 1},
		func(*wardv1.JobRequest, int) outcome { return outcome{hold: true} })
	e.waitWorkers("hot", "gpuhot", "full")

	first := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	if j := e.waitState(first, jobstore.Running); j.WorkerID != "full" {
		t.Fatalf("first job on %s", j.WorkerID)
	}
	second := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	j := e.waitState(second, jobstore.Pending)
	poll.Until(t, 10*time.Second, "second job queued", func() bool { return e.job(second).Waiting == "queue:a" })
	ev := lastEvent(e.events(second), jobstore.Pending)
	for _, want := range []string{"full=at_capacity", "hot=cpu_over_threshold", "gpuhot=gpu_over_threshold"} {
		if ev.Reason != string(reason.PoolOverloaded) || !strings.Contains(ev.Message, want) {
			t.Errorf("queued event %+v lacks %q", ev, want)
		}
	}
	_ = j
	// The CPU-hot host cools down: the waiting job goes there.
	hot.update(func(hb *wardv1.Heartbeat) { hb.CpuLoad = 10 })
	if j := e.waitState(second, jobstore.Succeeded); j.WorkerID != "hot" {
		t.Fatalf("second job on %s", j.WorkerID)
	}
	// A host busy with its own jobs is not over the threshold: 2 cores
	// at 100% running 2 jobs.
	hot.update(func(hb *wardv1.Heartbeat) { hb.CpuLoad, hb.CpuCores, hb.ActiveJobs = 100, 2, 0 })
	full.releaseAll()
	e.waitState(first, jobstore.Succeeded)
	_ = gpu
	poll.Until(t, 10*time.Second, "queue depth gauge back to 0", func() bool { return metric("ward_scheduler_queue_depth", "pool", "a") == 0 })
}

// TestQueuePriorityAndAging: waiting jobs are placed highest effective
// priority first; a low-priority job that waited long enough goes before
// a high-priority newcomer (aging).
func TestQueuePriorityAndAging(t *testing.T) {
	for _, tc := range []struct {
		name, sched string
		want        []string
	}{
		{"priority", "placement: {prefetch: 0, prefetch_window: 0s}\nqueue: {aging_factor: 1h}\n", []string{"p0", "p5", "p9"}},
		// With an aging factor of 1ms a priority level is worth 1ms of
		// waiting: the job submitted first goes first.
		{"aging", "placement: {prefetch: 0, prefetch_window: 0s}\nqueue: {aging_factor: 1ms}\n", []string{"p9", "p5", "p0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t, options{sched: tc.sched})
			h := e.addHost(&wardv1.Heartbeat{WorkerId: "one", Pools: []string{"a"}, MaxParallelJobs: 1},
				func(*wardv1.JobRequest, int) outcome { return outcome{hold: true} })
			e.waitWorkers("one")
			blocker := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", JobId: "blocker"})
			e.waitState(blocker, jobstore.Running)
			for _, p := range []int32{9, 5, 0} {
				id := fmt.Sprintf("p%d", p)
				e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", JobId: id, Priority: p})
				poll.Until(t, 10*time.Second, id+" queued", func() bool { return e.job(id).Waiting == "queue:a" })
				time.Sleep(20 * time.Millisecond) // distinct submission times: the ordering under test depends on them
			}
			// Free the slot one job at a time and watch the order.
			for want := 0; want < 3; want++ {
				h.releaseAll()
				poll.Until(t, 10*time.Second, "next job runs", func() bool { n, _ := h.got(); return n == want+2 })
			}
			h.releaseAll()
			_, order := h.got()
			if !slices.Equal(order[1:], tc.want) {
				t.Fatalf("placed %v, want %v", order[1:], tc.want)
			}
		})
	}
}

// TestQueueCap: past queue.cap waiting jobs a submission is refused at
// once (queue_full), visible in the metrics; a job that waited
// queue.max_wait ends FAILED pool_overloaded.
func TestQueueCap(t *testing.T) {
	e := start(t, options{timeouts: fastTimeouts, sched: "placement: {prefetch: 0, prefetch_window: 0s}\nqueue: {cap: 2, max_wait: 1500ms}\n"})
	h := e.addHost(&wardv1.Heartbeat{WorkerId: "one", Pools: []string{"a"}, MaxParallelJobs: 1},
		func(*wardv1.JobRequest, int) outcome { return outcome{hold: true} })
	e.waitWorkers("one")
	e.waitState(e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"}), jobstore.Running)
	var queued []string
	for range 2 {
		id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
		poll.Until(t, 10*time.Second, "queued", func() bool { return e.job(id).Waiting == "queue:a" })
		queued = append(queued, id)
	}
	before := metric("ward_scheduler_submissions_refused_total", "reason", string(reason.QueueFull))
	reply, err := e.submit(&wardv1.JobRequest{Topic: "job.a"})
	if !errors.Is(err, client.ErrRefused) || reply.GetReason() != string(reason.QueueFull) {
		t.Fatalf("submission past the cap: %v %v", reply, err)
	}
	if got := metric("ward_scheduler_submissions_refused_total", "reason", string(reason.QueueFull)); got != before+1 {
		t.Errorf("refusals counted %v, want %v", got, before+1)
	}
	if got := metric("ward_scheduler_queue_cap"); got != 2 {
		t.Errorf("queue cap gauge %v", got)
	}
	poll.Until(t, 10*time.Second, "queue depth gauge", func() bool { return metric("ward_scheduler_queue_depth", "pool", "a") == 2 })
	// They wait past max_wait: pool_overloaded, in the DLQ.
	for _, id := range queued {
		if j := e.waitState(id, jobstore.Failed); j.Reason != string(reason.PoolOverloaded) || !e.inDLQ(id, string(reason.PoolOverloaded)) {
			t.Fatalf("waited too long: %s %s", j.State, j.Reason)
		}
	}
	h.releaseAll()
}

// TestTenantLimit: a tenant's max_concurrent_jobs (from the safety
// decision) holds at every instant across two replicas; the rest wait with
// backoff and run; a job whose tenant stays at its limit past the wait
// budget ends FAILED tenant_limit.
func TestTenantLimit(t *testing.T) {
	// A wait budget that 12 jobs of 50 ms, two at a time, meet with room
	// to spare on a loaded machine (under -race beside other packages,
	// a second was once not enough), and that the last part then waits out.
	e := start(t, options{replicas: 2, sched: "tenants: {wait_budget: 5s, backoff: {base: 20ms, max: 100ms}}\n"})
	e.safety.set("acme", &wardv1.Constraints{MaxConcurrentJobs: 2})
	h1 := e.addHost(&wardv1.Heartbeat{WorkerId: "h1", Pools: []string{"a"}, MaxParallelJobs: 8},
		func(*wardv1.JobRequest, int) outcome { return outcome{delay: 50 * time.Millisecond} })
	h2 := e.addHost(&wardv1.Heartbeat{WorkerId: "h2", Pools: []string{"a"}, MaxParallelJobs: 8},
		func(*wardv1.JobRequest, int) outcome { return outcome{delay: 50 * time.Millisecond} })
	e.waitWorkers("h1", "h2")
	stop := make(chan struct{})
	var sampled, over int
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n, err := e.store.ActiveCount(context.Background(), "acme"); err == nil {
				sampled++
				if n > 2 {
					over++
				}
			}
		}
	})
	var ids []string
	for range 12 {
		ids = append(ids, e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"}))
	}
	other := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", TenantId: "beta"})
	for _, id := range append(ids, other) {
		e.waitState(id, jobstore.Succeeded)
	}
	close(stop)
	wg.Wait()
	if over > 0 || sampled == 0 {
		t.Errorf("acme held more than 2 active jobs in %d of %d samples", over, sampled)
	}
	h1.mu.Lock()
	m1 := h1.tenantMax["acme"]
	h1.mu.Unlock()
	h2.mu.Lock()
	m2 := h2.tenantMax["acme"]
	h2.mu.Unlock()
	if m1+m2 > 4 || m1 > 2 || m2 > 2 {
		t.Errorf("hosts ran acme jobs %d and %d at once", m1, m2)
	}
	waited := 0
	for _, id := range ids {
		if hasEvent(e.events(id), jobstore.Pending, string(reason.TenantLimit), "concurrent jobs") {
			waited++
		}
	}
	if waited == 0 {
		t.Error("no job waited for its tenant")
	}

	// The wait budget: one job holds the only slot, the next gives up.
	e.safety.set("solo", &wardv1.Constraints{MaxConcurrentJobs: 1})
	h1.mu.Lock()
	h1.behave = func(req *wardv1.JobRequest, _ int) outcome { return outcome{hold: req.GetTenantId() == "solo"} }
	h1.mu.Unlock()
	h2.stop()
	e.waitState(e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", TenantId: "solo"}), jobstore.Running)
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", TenantId: "solo"})
	if j := e.waitState(id, jobstore.Failed); j.Reason != string(reason.TenantLimit) || !e.inDLQ(id, string(reason.TenantLimit)) {
		t.Fatalf("over the wait budget: %s %s", j.State, j.Reason)
	}
	h1.releaseAll()
}

// TestRateLimit: a tenant's submissions past its token bucket are refused
// at once with rate_limited; other tenants are not affected.
func TestRateLimit(t *testing.T) {
	e := start(t, options{sched: "tenants:\n  overrides:\n    slow: {rate: 1, burst: 3}\n"})
	e.addHost(hb("h", "a"), nil)
	e.waitWorkers("h")
	for i := range 3 {
		if _, err := e.submit(&wardv1.JobRequest{Topic: "job.a", TenantId: "slow"}); err != nil {
			t.Fatalf("submission %d within the burst: %v", i, err)
		}
	}
	reply, err := e.submit(&wardv1.JobRequest{Topic: "job.a", TenantId: "slow"})
	if !errors.Is(err, client.ErrRefused) || reply.GetReason() != string(reason.RateLimited) || !strings.Contains(reply.GetMessage(), "1 jobs a second") {
		t.Fatalf("over the rate: %v %v", reply, err)
	}
	if _, err := e.submit(&wardv1.JobRequest{Topic: "job.a", TenantId: "acme"}); err != nil {
		t.Fatalf("another tenant: %v", err)
	}
	// The bench tenant has no rate limit by default.
	for range 150 {
		if _, err := e.submit(&wardv1.JobRequest{Topic: "job.a", TenantId: "bench"}); err != nil {
			t.Fatalf("bench: %v", err)
		}
	}
}

// TestStrategies: round-robin takes the workers in turn, hash spreads by
// the job id, affinity prefers the pool's preferred capability and falls
// back to the others, resource fit places by free CPU; every decision is
// an event with its reasoning, as ward jobs get shows it.
func TestStrategies(t *testing.T) {
	e := start(t, options{sched: `
pools:
  a: {strategy: round-robin}
  b2: {strategy: hash}
  b1: {strategy: resource-fit}
`})
	for _, id := range []string{"w1", "w2", "w3"} {
		e.addHost(&wardv1.Heartbeat{WorkerId: id, Pools: []string{"a", "b2"}, MaxParallelJobs: 100}, nil)
	}
	e.addHost(&wardv1.Heartbeat{WorkerId: "small", Pools: []string{"b1"}, Capabilities: []string{"fast"}, MaxParallelJobs: 8,
		CpuCores: 2, CpuMillicoresFree: 800, Memory: &wardv1.Memory{AvailableBytes: 8 << 30}}, nil)
	e.addHost(&wardv1.Heartbeat{WorkerId: "big", Pools: []string{"b1"}, Capabilities: []string{"fast"}, MaxParallelJobs: 8,
		CpuCores: 16, CpuMillicoresFree: 12000, Memory: &wardv1.Memory{AvailableBytes: 8 << 30}}, nil)
	gpu := e.addHost(&wardv1.Heartbeat{WorkerId: "gpu1", Pools: []string{"gpu"}, Capabilities: []string{"ollama", "gpu"}, MaxParallelJobs: 1},
		func(*wardv1.JobRequest, int) outcome { return outcome{hold: true} })
	e.addHost(&wardv1.Heartbeat{WorkerId: "cpu1", Pools: []string{"gpu"}, Capabilities: []string{"ollama"}, MaxParallelJobs: 4}, nil)
	e.waitWorkers("w1", "w2", "w3", "small", "big", "gpu1", "cpu1")

	t.Run("round-robin", func(t *testing.T) {
		var got []string
		for i := range 6 {
			id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
			j := e.waitState(id, jobstore.Succeeded)
			got = append(got, j.WorkerID)
			if ev := lastEvent(e.events(id), jobstore.Scheduled); i > 0 && !strings.HasPrefix(ev.Message, "RoundRobin{worker="+j.WorkerID+"}") {
				t.Errorf("decision %q", ev.Message)
			}
		}
		if !slices.Equal(got, []string{"w1", "w2", "w3", "w1", "w2", "w3"}) {
			t.Errorf("round robin %v", got)
		}
	})
	t.Run("hash", func(t *testing.T) {
		seen := map[string]int{}
		for i := range 30 {
			id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.b", JobId: fmt.Sprintf("rand-%d", i), Labels: map[string]string{"preferred_pool": "b2"}})
			j := e.waitState(id, jobstore.Succeeded)
			seen[j.WorkerID]++
			if ev := lastEvent(e.events(id), jobstore.Scheduled); !strings.HasPrefix(ev.Message, "Hash{worker="+j.WorkerID+" hash=") {
				t.Fatalf("decision %q", ev.Message)
			}
		}
		if len(seen) != 3 {
			t.Errorf("hash spread %v", seen)
		}
	})
	t.Run("resource-fit", func(t *testing.T) {
		id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.b", Requires: []string{"fast"}, Resources: &wardv1.Resources{CpuMillicores: 2000}})
		j := e.waitState(id, jobstore.Succeeded)
		ev := lastEvent(e.events(id), jobstore.Scheduled)
		if j.WorkerID != "big" || !strings.HasPrefix(ev.Message, "ResourceFit{worker=big available_cpu=12000m required_cpu=2000m") ||
			!strings.Contains(ev.Message, "small=insufficient_resources") {
			t.Fatalf("resource fit: %s, %q", j.WorkerID, ev.Message)
		}
		// A small job fits the small host best.
		id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.b", Requires: []string{"fast"}, Resources: &wardv1.Resources{CpuMillicores: 500}})
		if j := e.waitState(id, jobstore.Succeeded); j.WorkerID != "small" {
			t.Fatalf("small job on %s", j.WorkerID)
		}
	})
	t.Run("affinity", func(t *testing.T) {
		// The default scheduler.yaml: chat-advanced and code-llm are
		// affinity pools; here job.gpu's pool prefers gpu.
		e.stopReplica(0)
		e.scheds = e.scheds[:0]
		if err := os.WriteFile(e.files.Scheduler, []byte("pools:\n  gpu: {strategy: affinity, prefetch: 0, prefetch_window: 0s}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		e.addReplica(false)
		e.waitWorkers("gpu1", "cpu1")
		first := e.mustSubmit(&wardv1.JobRequest{Topic: "job.gpu"})
		j := e.waitState(first, jobstore.Running)
		ev := lastEvent(e.events(first), jobstore.Scheduled)
		if j.WorkerID != "gpu1" || !strings.Contains(ev.Message, "Affinity{worker=gpu1 reason=PreferredCapability") {
			t.Fatalf("first LLM job: %s, %q", j.WorkerID, ev.Message)
		}
		// The GPU host is full: the CPU host with Ollama serves.
		second := e.waitState(e.mustSubmit(&wardv1.JobRequest{Topic: "job.gpu"}), jobstore.Succeeded)
		if second.WorkerID != "cpu1" {
			t.Fatalf("second LLM job on %s", second.WorkerID)
		}
		if ev := lastEvent(e.events(second.ID), jobstore.Scheduled); !strings.Contains(ev.Message, "gpu1=at_capacity") {
			t.Errorf("decision %q does not say why gpu1 was skipped", ev.Message)
		}
		gpu.releaseAll()
		// ward jobs get shows the reasoning.
		rec, err := e.client.Get(context.Background(), first, false)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, ev := range rec.GetEvents() {
			found = found || strings.Contains(ev.GetMessage(), "Affinity{worker=gpu1")
		}
		if !found {
			t.Errorf("jobs get events %v", rec.GetEvents())
		}
	})
}

// metric returns the value of the scheduler metric name with the label
// pairs given (0 when there is none yet).
func metric(name string, labels ...string) float64 {
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return -1
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
