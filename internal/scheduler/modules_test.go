package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/testing/poll"
)

// TestDeployedModules: with the registry, the scheduler routes the topic a
// deployed manifest declares, sends jobs only to hosts holding the version
// in force, lets a job wait while the host it needs loads it, serves on a
// host that refused the version (it keeps its old one), keeps pools.yaml's
// routes over a manifest's, and dead-letters a retired module's jobs.
func TestDeployedModules(t *testing.T) {
	e := start(t, options{registry: true})
	// Deploying is an admin's.
	reg, err := modreg.Open(context.Background(), e.admin.Bus().NATS())
	if err != nil {
		t.Fatal(err)
	}
	s := e.scheds[0]
	deploy := func(version string, route modreg.Route) string {
		t.Helper()
		a, err := reg.Deploy(context.Background(), modreg.Version{Name: "hello", Version: version, Route: route},
			[]byte("\x00asm hello "+version))
		if err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 10*time.Second, "the scheduler knows "+version, func() bool {
			_, d, _ := s.ModuleVersion("hello")
			return d == a.Digest
		})
		return a.Digest
	}
	holding := func(id, digest string) *wardv1.Heartbeat {
		h := hb(id, "hello")
		h.Labels = map[string]string{"machine": id}
		h.Modules = map[string]string{"hello": digest}
		return h
	}
	route := modreg.Route{Topic: "job.hello", Pool: "hello"}

	d1 := deploy("1", route)
	one := e.addHost(holding("one", d1), nil)
	two := e.addHost(holding("two", d1), nil)
	e.waitWorkers("one", "two")
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.hello"})
	if j := e.waitState(id, jobstore.Succeeded); j.Pool != "hello" {
		t.Fatalf("job.hello ran in pool %q", j.Pool)
	}

	// v2: one has it, two is still loading it. Jobs go to one only; a job
	// that only two may run waits until two has it.
	d2 := deploy("2", route)
	one.update(func(hb *wardv1.Heartbeat) { hb.Modules["hello"] = d2 })
	for range 4 {
		id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.hello"})
		if j := e.waitState(id, jobstore.Succeeded); j.WorkerID != "one" {
			t.Fatalf("during the rollout a job ran on %s, which holds v1", j.WorkerID)
		}
	}
	pinned := e.mustSubmit(&wardv1.JobRequest{Topic: "job.hello", Labels: map[string]string{"machine": "two"}})
	poll.Until(t, 10*time.Second, "the pinned job waits for the rollout", func() bool {
		return hasEvent(e.events(pinned), jobstore.Pending, string(reason.PoolOverloaded), "rolling out")
	})
	if j := e.job(pinned); j.State.Terminal() || j.WorkerID != "" {
		t.Fatalf("pinned job %s on %q before two holds v2", j.State, j.WorkerID)
	}
	two.update(func(hb *wardv1.Heartbeat) { hb.Modules["hello"] = d2 })
	if j := e.waitState(pinned, jobstore.Succeeded); j.WorkerID != "two" {
		t.Fatalf("pinned job ran on %s", j.WorkerID)
	}

	// The safety check names the version in force and what its manifest asks.
	if m := e.safety.module(pinned); m.GetName() != "hello" || m.GetDigest() != d2 || m.GetSigned() || m.GetRequested() != nil {
		t.Errorf("safety check of a v2 job named %v", m)
	}

	// v3: one takes it, two refuses it and keeps v2: two still serves.
	a3, err := reg.Deploy(context.Background(), modreg.Version{Name: "hello", Version: "3", Route: route, Signature: []byte("sig"),
		Requested: &modreg.Requested{HTTPHosts: []string{"api.example.com"}, MemoryLimitBytes: 64 << 20}}, []byte("\x00asm hello 3"))
	if err != nil {
		t.Fatal(err)
	}
	d3 := a3.Digest
	poll.Until(t, 10*time.Second, "the scheduler knows 3", func() bool {
		_, d, _ := s.ModuleVersion("hello")
		return d == d3
	})
	one.update(func(hb *wardv1.Heartbeat) { hb.Modules["hello"] = d3 })
	if err := reg.ReportRefusal(context.Background(), modreg.Event{Name: "hello", Version: "3", Digest: d3, Host: "two", Error: "bad"}); err != nil {
		t.Fatal(err)
	}
	var onTwo string
	poll.Until(t, 10*time.Second, "a job on the host that refused v3", func() bool {
		onTwo = e.mustSubmit(&wardv1.JobRequest{Topic: "job.hello", Labels: map[string]string{"machine": "two"}})
		return e.waitEnd(onTwo).State == jobstore.Succeeded
	})
	m := e.safety.module(onTwo)
	if m.GetDigest() != d3 || !m.GetSigned() || m.GetRequested().GetMemoryLimitBytes() != 64<<20 ||
		len(m.GetRequested().GetHttpHosts()) != 1 {
		t.Errorf("safety check of a v3 job named %v", m)
	}

	// A manifest may not take a topic pools.yaml maps.
	if _, err := reg.Deploy(context.Background(), modreg.Version{Name: "thief", Version: "1",
		Route: modreg.Route{Topic: "job.a", Pool: "thief"}}, []byte("\x00asm thief")); err != nil {
		t.Fatal(err)
	}
	a := e.addHost(hb("a-host", "a"), nil)
	e.waitWorkers("a-host")
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	if j := e.waitState(id, jobstore.Succeeded); j.Pool != "a" || j.WorkerID != "a-host" {
		t.Fatalf("job.a ran in %s on %s", j.Pool, j.WorkerID)
	}
	a.stop()

	// A job submitted the moment a deploy returns finds the route the
	// deploy declares: admission waits for the registry revision of the
	// moment (on a loaded machine the watch can deliver the deploy after
	// the job arrives; here it rarely does).
	greet := []byte("\x00asm greet")
	e.addHost(&wardv1.Heartbeat{WorkerId: "g", Pools: []string{"greet"}, MaxParallelJobs: 4, Status: "ready",
		Modules: map[string]string{"greet": modreg.Digest(greet)}}, nil)
	e.waitWorkers("g")
	for i := range 5 {
		v := modreg.Version{Name: "greet", Version: fmt.Sprint(i), Route: modreg.Route{Topic: fmt.Sprintf("job.greet%d", i), Pool: "greet"}}
		if _, err := reg.Deploy(context.Background(), v, greet); err != nil {
			t.Fatal(err)
		}
		id := e.mustSubmit(&wardv1.JobRequest{Topic: v.Route.Topic})
		if j := e.waitEnd(id); j.State != jobstore.Succeeded || j.WorkerID != "g" {
			t.Fatalf("%s right after its deploy: %s %s %q", v.Route.Topic, j.State, j.Reason, lastEvent(e.events(id), j.State).Message)
		}
	}

	// rm: module_retired, in the DLQ.
	if _, err := reg.Remove(context.Background(), "hello"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the scheduler knows hello is retired", func() bool {
		_, _, ok := s.ModuleVersion("hello")
		return !ok
	})
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.hello"})
	j := e.waitState(id, jobstore.Failed)
	if j.Reason != string(reason.ModuleRetired) || !e.inDLQ(id, string(reason.ModuleRetired)) ||
		!strings.Contains(lastEvent(e.events(id), jobstore.Failed).Message, "retired") {
		t.Fatalf("retired: %s %s %q", j.State, j.Reason, lastEvent(e.events(id), jobstore.Failed).Message)
	}
}

// TestBouncedJobsArePlacedAgain: a host that did not start a job because
// it no longer serves the pool (a module retired or swapped under the
// scheduler's view) sends it back; the job is placed again, at no cost to
// its retries, and not held against the host. A host that keeps bouncing
// ends the job after two extra placements.
func TestBouncedJobsArePlacedAgain(t *testing.T) {
	e := start(t, options{})
	e.addHost(hb("h", "a"), func(_ *wardv1.JobRequest, attempt int) outcome {
		if attempt == 1 {
			return outcome{fail: true, code: "module_unavailable"}
		}
		return outcome{}
	})
	e.waitWorkers("h")
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	j := e.waitState(id, jobstore.Succeeded)
	if j.Attempt != 2 || !hasEvent(e.events(id), jobstore.Pending, string(reason.Requeued), "did not start it") {
		t.Fatalf("attempt %d, events %v", j.Attempt, e.events(id))
	}

	e.addHost(hb("stubborn", "b2"), func(*wardv1.JobRequest, int) outcome {
		return outcome{fail: true, code: "capability_missing"}
	})
	e.waitWorkers("stubborn")
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.b"})
	j = e.waitState(id, jobstore.Failed)
	if j.Attempt != 3 || j.ErrorCode != "capability_missing" {
		t.Fatalf("a host that keeps bouncing: attempt %d, %s %s", j.Attempt, j.Reason, j.ErrorCode)
	}
}
