package assembly_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/safety"
	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/scheduler"
	"github.com/ward-run/ward/internal/testing/wasmtest"
	"github.com/ward-run/ward/internal/workflow"
)

// fanOut runs echo three ways: a first step whose output lists items, one
// echo job per item, and a last step that gathers them.
const fanOut = `
name: fan-out
steps:
  - id: first
    topic: job.echo
    payload: {items: "${{ input.items }}"}
  - id: each
    topic: job.echo
    depends_on: [first]
    for_each: steps.first.output.items
    max_parallel: 2
    payload: {item: "${{ item }}", n: "${{ index }}"}
  - id: last
    topic: job.echo
    depends_on: [each]
    payload: {all: "${{ steps.each.output }}"}
outputs:
  all: steps.last.output.all
`

// memoryStore is an in-memory job store, closed when t ends.
func memoryStore(t testing.TB) jobstore.Store {
	s := jobstore.NewMemory()
	t.Cleanup(func() { s.Close() })
	return s
}

// tenantClient is a client with tenant name's credential.
func (e *env) tenantClient(t testing.TB, name string) *client.Client {
	t.Helper()
	c, err := client.Dial(e.natsURL, client.Options{Creds: e.sec.Creds(auth.Tenant, name)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// runWorkflow starts req as c and follows it to its end; it returns the
// events it saw and the run as the scheduler reports it.
func runWorkflow(t *testing.T, c *client.Client, req *wardv1.WorkflowRunRequest) ([]*wardv1.WorkflowEvent, *wardv1.WorkflowRun) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if req.RunId == "" {
		req.RunId = fmt.Sprintf("run-%d", time.Now().UnixNano())
	}
	w, err := c.FollowWorkflow(req.RunId)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := c.RunWorkflow(ctx, req); err != nil {
		t.Fatal(err)
	}
	var seen []*wardv1.WorkflowEvent
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("run %s: %v after %d events", req.RunId, err, len(seen))
		}
		seen = append(seen, ev)
		if strings.HasPrefix(ev.GetKind(), "Run") && ev.GetKind() != workflow.KindRunStarted {
			break
		}
	}
	run, err := c.Workflow(ctx, req.RunId, true)
	if err != nil {
		t.Fatal(err)
	}
	return seen, run
}

// checkRunLog checks run's log (its events and definition: Workflow with
// events): it is the one a follower saw (seen, unless nil), event for
// event, an unbroken hash chain, and what the definition derives.
func checkRunLog(t *testing.T, seen []*wardv1.WorkflowEvent, run *wardv1.WorkflowRun) {
	t.Helper()
	if seen != nil && len(seen) != len(run.GetEvents()) {
		t.Fatalf("followed %d events, stored %d", len(seen), len(run.GetEvents()))
	}
	events := make([]workflow.Event, len(run.GetEvents()))
	for i, ev := range run.GetEvents() {
		if seen != nil && ev.GetHash() != seen[i].GetHash() {
			t.Fatalf("event %d: followed %s, stored %s", i+1, seen[i].GetKind(), ev.GetKind())
		}
		events[i] = scheduler.EventOf(ev)
	}
	if err := workflow.Verify(events); err != nil {
		t.Fatal(err)
	}
	def, err := workflow.Parse(run.GetDefinition())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := workflow.Compile(def, workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := workflow.Replay(plan, events); err != nil {
		t.Fatal(err)
	}
}

// TestWorkflowEndToEnd runs a fan-out of echo jobs through a running
// system, as a tenant: every step is an ordinary job of the tenant, the
// outputs flow from step to step, the run's log is the one its followers
// saw, and it verifies and replays. The host runs one job at a time, so
// that a step's second job waits in a queue: its placement from there is
// logged (TaskPlaced) as an admission's is, once a task.
func TestWorkflowEndToEnd(t *testing.T) {
	sched := config.DefaultScheduler()
	sched.Placement.CPUThreshold = 100
	sched.Placement.Prefetch, sched.Placement.PrefetchWindow = 0, 0 // a host holds no job beyond its one slot
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: echoModules(t), MaxParallel: 1},
		Scheduler: assembly.SchedulerConfig{Config: &config.Bundle{Scheduler: sched}}})
	acme := e.tenantClient(t, "acme")
	seen, run := runWorkflow(t, acme, &wardv1.WorkflowRunRequest{Definition: []byte(fanOut), Input: []byte(`{"items": ["a", "b", "c"]}`)})
	if run.GetState() != "SUCCEEDED" {
		t.Fatalf("run %s: %s", run.GetState(), run.GetReason())
	}
	var out struct {
		All []struct {
			Item string `json:"item"`
			N    int    `json:"n"`
		} `json:"all"`
	}
	if err := json.Unmarshal(run.GetOutputs(), &out); err != nil || len(out.All) != 3 || out.All[2].Item != "c" || out.All[2].N != 2 {
		t.Fatalf("outputs %s (%v)", run.GetOutputs(), err)
	}
	if len(run.GetTasks()) != 5 {
		t.Fatalf("tasks %v", run.GetTasks())
	}
	ctx := context.Background()
	for _, task := range run.GetTasks() {
		if task.GetState() != "SUCCEEDED" {
			t.Errorf("task %s: %s %s", task.GetId(), task.GetState(), task.GetError())
		}
		job, err := acme.Get(ctx, task.GetJobId(), false)
		if err != nil {
			t.Fatalf("task %s's job %s: %v", task.GetId(), task.GetJobId(), err)
		}
		if job.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || job.GetTenantId() != "acme" || job.GetTopic() != "job.echo" ||
			job.GetLabels()[scheduler.LabelRun] != run.GetRunId() || job.GetSafety().GetDecisionId() == "" {
			t.Errorf("task %s's job: %s tenant %s labels %v", task.GetId(), job.GetState(), job.GetTenantId(), job.GetLabels())
		}
		// Each step's own log is a hash chain too (ward jobs verify).
		jevs := scheduler.StoredEvents(job)
		if err := jobstore.VerifyEvents(jevs, job.GetEventsChain()); err != nil || len(jevs) < 5 {
			t.Errorf("task %s's job's log (%d events): %v", task.GetId(), len(jevs), err)
		}
	}
	// What the followers saw is the stored log, event for event.
	if len(seen) != len(run.GetEvents()) {
		t.Fatalf("followed %d events, stored %d", len(seen), len(run.GetEvents()))
	}
	events := make([]workflow.Event, len(run.GetEvents()))
	placed := map[string]int{}
	for i, ev := range run.GetEvents() {
		if ev.GetHash() != seen[i].GetHash() {
			t.Fatalf("event %d: followed %s, stored %s", i+1, seen[i].GetKind(), ev.GetKind())
		}
		events[i] = scheduler.EventOf(ev)
		if ev.GetKind() == workflow.KindTaskPlaced {
			placed[ev.GetTask()]++
			if ev.GetDecisionId() == "" || !strings.Contains(string(ev.GetData()), `"reasoning":"`) || !strings.Contains(string(ev.GetData()), `"worker":"`) {
				t.Errorf("TaskPlaced without its decision, worker or reasoning: %s", ev.GetData())
			}
		}
	}
	for _, task := range run.GetTasks() {
		if placed[task.GetId()] != 1 {
			t.Errorf("task %s's placement logged %d times, want once (TaskPlaced: %v)", task.GetId(), placed[task.GetId()], placed)
		}
	}
	if err := workflow.Verify(events); err != nil {
		t.Fatal(err)
	}
	def, _ := workflow.Parse(run.GetDefinition())
	plan, err := workflow.Compile(def, workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := workflow.Replay(plan, events); err != nil {
		t.Fatal(err)
	}
	// Another tenant neither sees the run nor can cancel it.
	globex := e.tenantClient(t, "globex")
	if _, err := globex.Workflow(ctx, run.GetRunId(), false); err == nil {
		t.Error("tenant globex read acme's run")
	}
	if runs, err := globex.Workflows(ctx, 10); err != nil || len(runs) != 0 {
		t.Errorf("tenant globex lists %d runs (%v)", len(runs), err)
	}
	if runs, err := acme.Workflows(ctx, 10); err != nil || len(runs) != 1 || runs[0].GetRunId() != run.GetRunId() {
		t.Errorf("acme lists %v (%v)", runs, err)
	}
}

// TestWorkflowRefusals: a definition that does not compile, a workflow
// nobody knows, and a run the policy denies as a whole are refused at
// once, with their reason codes, and nothing of them runs.
func TestWorkflowRefusals(t *testing.T) {
	e := start(t, assembly.Options{Store: memoryStore(t), Host: assembly.HostConfig{Modules: echoModules(t)}})
	nc := e.client.Bus().NATS()
	ctx := context.Background()
	acme := e.tenantClient(t, "acme")
	for _, c := range []struct {
		req  *wardv1.WorkflowRunRequest
		code reason.Code
		says string
	}{
		{&wardv1.WorkflowRunRequest{Definition: []byte("name: w\nsteps:\n  - {id: a, topic: job.echo, depends_on: [b]}\n  - {id: b, topic: job.echo, depends_on: [a]}\n")},
			reason.WorkflowInvalid, "cycle: a → b → a"},
		{&wardv1.WorkflowRunRequest{Definition: []byte("name: w\nsteps:\n  - {id: a, topic: job.nowhere}\n")},
			reason.WorkflowInvalid, `no pool serves topic "job.nowhere"`},
		{&wardv1.WorkflowRunRequest{Name: "no-such-workflow"}, reason.WorkflowUnknown, "demo"},
		{&wardv1.WorkflowRunRequest{Name: "demo", TenantId: "globex"}, reason.TenantMismatch, "globex"},
	} {
		reply, err := acme.RunWorkflow(ctx, c.req)
		if !errors.Is(err, client.ErrRefused) || reply.GetReason() != string(c.code) || !strings.Contains(reply.GetMessage(), c.says) {
			t.Errorf("%s: %v (%s: %s), want %s saying %q", c.req.GetName()+string(c.req.GetDefinition()), err, reply.GetReason(), reply.GetMessage(), c.code, c.says)
		}
	}
	// The policy sees the run as a whole: a rule forbidding echo inside
	// runs of tenant acme refuses acme's run, and not globex's.
	rule := `package ward.safety

deny contains msg if {
	input.tenant_id == "acme"
	some s in input.workflow.steps
	s.topic == "job.echo"
	msg := sprintf("tenant acme may not run %s inside a workflow", [s.topic])
}
`
	res, err := safety.Push(ctx, nc, "", defaultBundleWith(t, map[string]string{"runs.rego": rule}), safety.PushOptions{By: "test", Unsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, func() bool { return e.n.Safety.Kernel().Revision() == res.Revision })
	reply, err := acme.RunWorkflow(ctx, &wardv1.WorkflowRunRequest{Definition: []byte(fanOut), Input: []byte(`{"items": ["a"]}`)})
	if !errors.Is(err, client.ErrRefused) || reply.GetReason() != string(reason.SafetyDenied) || !strings.Contains(reply.GetMessage(), "may not run job.echo") {
		t.Fatalf("acme's run under the rule: %v (%s)", err, reply.GetMessage())
	}
	if runs, _ := acme.Workflows(ctx, 10); len(runs) != 0 {
		t.Errorf("a refused run was stored: %v", runs)
	}
	// A plain echo job of acme still runs: the rule is about runs.
	if _, rec := e.run(t, echoJob("acme")); rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Errorf("acme's plain job: %s", rec.GetState())
	}
	globex := e.tenantClient(t, "globex")
	if _, run := runWorkflow(t, globex, &wardv1.WorkflowRunRequest{Definition: []byte(fanOut), Input: []byte(`{"items": ["x"]}`)}); run.GetState() != "SUCCEEDED" {
		t.Errorf("globex's run: %s %s", run.GetState(), run.GetReason())
	}
}

// TestWorkflowCancelInterruptsItsSteps: cancelling a run whose step loops
// for ever in its module interrupts the module (the job ends CANCELLED
// while the host keeps serving), and the steps after it never start.
func TestWorkflowCancelInterruptsItsSteps(t *testing.T) {
	pools, err := config.ParsePools("test", []byte("topics:\n  job.echo: echo\n  job.hostile: hostile\npools:\n  echo: {}\n  hostile: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	mods := echoModules(t)
	mods["hostile"] = wasmtest.Build(t, "github.com/ward-run/ward/internal/sandbox/testdata/hostile")
	// One slot: the host runs a job only once the looping one left it.
	e := start(t, assembly.Options{Store: memoryStore(t),
		Host: assembly.HostConfig{Modules: mods, Pools: pools, MaxParallel: 1,
			Manifests: map[string]*sandbox.Manifest{"hostile": {Name: "hostile", Limits: sandbox.Limits{Time: sandbox.Duration(120 * time.Second)}}}},
	})
	acme := e.tenantClient(t, "acme")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	def := `
name: stuck
steps:
  - {id: spin, topic: job.hostile, payload: {do: loop}}
  - {id: after, topic: job.echo, depends_on: [spin], payload: never}
`
	id := "run-stuck"
	w, err := acme.FollowWorkflow(id)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := acme.RunWorkflow(ctx, &wardv1.WorkflowRunRequest{RunId: id, Definition: []byte(def)}); err != nil {
		t.Fatal(err)
	}
	spin := id + "-spin"
	checkFor(t, 30*time.Second, func() bool {
		job, err := acme.Get(ctx, spin, false)
		return err == nil && job.GetState() == wardv1.JobState_JOB_STATE_RUNNING
	})
	// Another tenant cannot cancel it: its cancel finds no run, and no
	// replica answers one sent on its own subject for acme's run.
	globex := e.tenantClient(t, "globex")
	gctx, gstop := context.WithTimeout(ctx, 2*time.Second)
	if _, err := globex.CancelWorkflow(gctx, id, "mine now"); err == nil {
		t.Fatal("tenant globex cancelled acme's run")
	}
	reply := &wardv1.WorkflowGetReply{}
	if err := globex.Bus().Request(gctx, bus.TenantSubject(bus.SubjectWorkflowCancel, "globex"), &wardv1.WorkflowCancelRequest{RunId: id}, reply); err == nil {
		t.Fatalf("a cancel of acme's run on globex's subject was answered: %v", reply)
	}
	gstop()
	if r, err := acme.Workflow(ctx, id, false); err != nil || r.GetState() != "RUNNING" {
		t.Fatalf("after globex's tries, the run is %s (%v)", r.GetState(), err)
	}
	start := time.Now()
	run, err := acme.CancelWorkflow(ctx, id, "enough")
	if err != nil {
		t.Fatal(err)
	}
	if run.GetState() != "CANCELLED" || run.GetReason() != "enough" {
		t.Fatalf("run %s (%s)", run.GetState(), run.GetReason())
	}
	job, err := acme.Get(ctx, spin, false)
	if err != nil || job.GetState() != wardv1.JobState_JOB_STATE_CANCELLED {
		t.Fatalf("the looping step's job: %v %v", job.GetState(), err)
	}
	// The module is really interrupted: the host's one slot is free
	// again, and it serves the next job long before the module's time
	// limit (120 s).
	if _, rec := e.run(t, echoJob("acme")); rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("after the cancel, a job ended %s", rec.GetState())
	}
	if time.Since(start) > 60*time.Second {
		t.Errorf("the host took %s to serve again", time.Since(start))
	}
	if _, err := acme.Get(ctx, id+"-after", false); err == nil {
		t.Error("the step after the cancelled one started")
	}
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetKind() == workflow.KindRunCancelled {
			break
		}
	}
}

// TestWorkflowCarriedOnWhenItsReplicaDies: the replica driving a run stops
// in the middle of it; another replica, sharing the store, claims the run
// once its claim runs out, rebuilds it from its log, takes the end of the
// step that ended meanwhile, and drives it to its end. The log stays one
// unbroken chain, and replays.
func TestWorkflowCarriedOnWhenItsReplicaDies(t *testing.T) {
	pools, err := config.ParsePools("test", []byte("topics:\n  job.echo: echo\n  job.hostile: hostile\npools:\n  echo: {}\n  hostile: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	timeouts, err := config.ParseTimeouts("test", []byte("reconciler:\n  lease_ttl: 1s\n"))
	if err != nil {
		t.Fatal(err)
	}
	mods := echoModules(t)
	mods["hostile"] = wasmtest.Build(t, "github.com/ward-run/ward/internal/sandbox/testdata/hostile")
	store := memoryStore(t)
	e := start(t, assembly.Options{Store: store,
		Scheduler: assembly.SchedulerConfig{Config: &config.Bundle{Timeouts: timeouts}},
		Host: assembly.HostConfig{Modules: mods, Pools: pools,
			Manifests: map[string]*sandbox.Manifest{"hostile": {Name: "hostile", Limits: sandbox.Limits{Time: sandbox.Duration(3 * time.Second)}}}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b, err := assembly.StartScheduler(ctx, assembly.SchedulerConfig{ID: "replica-b", NATSURL: e.natsURL, Store: store, SafetyAddr: e.n.Safety.Addr(),
		Config: &config.Bundle{Pools: pools, Timeouts: timeouts}, Creds: e.creds.Scheduler, DispatchSecret: e.creds.DispatchSecret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Shutdown(context.Background()) }) // a second Shutdown does nothing
	acme := e.tenantClient(t, "acme")
	// The first step sleeps past its module's time limit (3 s) and fails,
	// which it may; the replica dies while it sleeps.
	def := `
name: survivor
steps:
  - {id: slow, topic: job.hostile, payload: {do: sleep}, retries: 0, allow_failure: true}
  - {id: next, topic: job.echo, depends_on: [slow], payload: "${{ steps.slow.state }}"}
outputs: {seen: steps.next.output}
`
	id := "run-survivor"
	if _, err := acme.RunWorkflow(ctx, &wardv1.WorkflowRunRequest{RunId: id, Definition: []byte(def)}); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, func() bool {
		job, err := acme.Get(ctx, id+"-slow", false)
		return err == nil && job.GetState() == wardv1.JobState_JOB_STATE_RUNNING
	})
	// The replica that took the run (either: they share a queue group)
	// stops; the other must carry it on.
	started, err := acme.Workflow(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	first, survivor := started.GetOwner(), e.n.Scheduler.ID()
	dying := b.Shutdown
	if first == e.n.Scheduler.ID() {
		survivor, dying = "replica-b", e.n.Scheduler.Shutdown
	}
	if err := dying(ctx); err != nil {
		t.Fatal(err)
	}
	var run *wardv1.WorkflowRun
	checkFor(t, 60*time.Second, func() bool {
		run, err = acme.Workflow(ctx, id, true)
		return err == nil && run.GetState() != "RUNNING"
	})
	if run.GetState() != "SUCCEEDED" || run.GetOwner() != survivor || string(run.GetOutputs()) != `{"seen":"FAILED"}` {
		t.Fatalf("run %s (%s), owner %s (first %s), outputs %s", run.GetState(), run.GetReason(), run.GetOwner(), first, run.GetOutputs())
	}
	checkRunLog(t, nil, run)
}

// TestWorkflowRerunFromAStep: a run that failed at a step (its module
// failed on the input it was given) is run again from that step with
// another input: the steps before it are not run again (no new jobs),
// their outputs are reused, and the new run succeeds.
func TestWorkflowRerunFromAStep(t *testing.T) {
	pools, err := config.ParsePools("test", []byte("topics:\n  job.echo: echo\n  job.hostile: hostile\npools:\n  echo: {}\n  hostile: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	mods := echoModules(t)
	mods["hostile"] = wasmtest.Build(t, "github.com/ward-run/ward/internal/sandbox/testdata/hostile")
	e := start(t, assembly.Options{Store: memoryStore(t), Host: assembly.HostConfig{Modules: mods, Pools: pools}})
	acme := e.tenantClient(t, "acme")
	def := `
name: flaky
input: {do: fail}
steps:
  - {id: prepare, topic: job.echo, payload: {ready: true}}
  - {id: risky, topic: job.hostile, depends_on: [prepare], retries: 0, payload: {do: "${{ input.do }}", arg: "done"}}
  - {id: after, topic: job.echo, depends_on: [risky], payload: {risky: "${{ steps.risky.output }}", prepared: "${{ steps.prepare.output.ready }}"}}
outputs: {after: steps.after.output}
`
	_, first := runWorkflow(t, acme, &wardv1.WorkflowRunRequest{RunId: "run-flaky", Definition: []byte(def)})
	if first.GetState() != "FAILED" || !strings.Contains(first.GetReason(), "step risky failed") {
		t.Fatalf("first run %s (%s)", first.GetState(), first.GetReason())
	}
	ctx := context.Background()
	_, again := runWorkflow(t, acme, &wardv1.WorkflowRunRequest{RunId: "run-flaky-2", RerunOf: "run-flaky", FromStep: "risky",
		Input: []byte(`{"do": "echo"}`)})
	if again.GetState() != "SUCCEEDED" || string(again.GetOutputs()) != `{"after":{"prepared":true,"risky":"done"}}` {
		t.Fatalf("rerun %s (%s) outputs %s", again.GetState(), again.GetReason(), again.GetOutputs())
	}
	for _, task := range again.GetTasks() {
		_, err := acme.Get(ctx, "run-flaky-2-"+task.GetId(), false)
		if task.GetId() == "prepare" {
			if err == nil || task.GetJobId() != "" {
				t.Error("the rerun ran prepare again")
			}
			continue
		}
		if err != nil {
			t.Errorf("the rerun's %s has no job: %v", task.GetId(), err)
		}
	}
	// Another tenant cannot rerun it (nor learn of it).
	globex := e.tenantClient(t, "globex")
	if reply, err := globex.RunWorkflow(ctx, &wardv1.WorkflowRunRequest{RerunOf: "run-flaky", FromStep: "risky"}); !errors.Is(err, client.ErrRefused) ||
		!strings.Contains(reply.GetMessage(), "not found") {
		t.Errorf("globex's rerun of acme's run: %v", err)
	}
	// A rerun of a run that does not exist, or from a step it lacks, is refused.
	if _, err := acme.RunWorkflow(ctx, &wardv1.WorkflowRunRequest{RerunOf: "run-nope", FromStep: "risky"}); !errors.Is(err, client.ErrRefused) {
		t.Errorf("a rerun of no run: %v", err)
	}
	if _, err := acme.RunWorkflow(ctx, &wardv1.WorkflowRunRequest{RerunOf: "run-flaky", FromStep: "nope"}); !errors.Is(err, client.ErrRefused) {
		t.Errorf("a rerun from no step: %v", err)
	}
}

// TestWorkflowDefinitionsReload: the schedulers serve the definitions of
// their --workflows directory, and a definition added or changed there is
// served without a restart; one that does not compile is left out, and
// the ones in force stay.
func TestWorkflowDefinitionsReload(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("one.yaml", "name: one\nsteps:\n  - {id: a, topic: job.echo, payload: one}\n")
	e := start(t, assembly.Options{Store: memoryStore(t), Scheduler: assembly.SchedulerConfig{WorkflowDir: dir}, Host: assembly.HostConfig{Modules: echoModules(t)}})
	acme := e.tenantClient(t, "acme")
	if _, run := runWorkflow(t, acme, &wardv1.WorkflowRunRequest{Name: "one"}); run.GetState() != "SUCCEEDED" {
		t.Fatalf("one: %s", run.GetState())
	}
	ctx := context.Background()
	if _, err := acme.RunWorkflow(ctx, &wardv1.WorkflowRunRequest{Name: "two"}); !errors.Is(err, client.ErrRefused) {
		t.Fatalf("two, before it is written: %v", err)
	}
	write("two.yaml", "name: two\nsteps:\n  - {id: b, topic: job.echo, payload: two}\n")
	write("broken.yaml", "name: broken\nsteps:\n  - {id: c, topic: job.echo, depends_on: [c]}\n")
	checkFor(t, 10*time.Second, func() bool {
		_, err := acme.RunWorkflow(ctx, &wardv1.WorkflowRunRequest{Name: "two"})
		return err == nil
	})
	reply, err := acme.RunWorkflow(ctx, &wardv1.WorkflowRunRequest{Name: "broken"})
	if !errors.Is(err, client.ErrRefused) || reply.GetReason() != string(reason.WorkflowUnknown) {
		t.Errorf("a definition that does not compile was served: %v", err)
	}
	if _, run := runWorkflow(t, acme, &wardv1.WorkflowRunRequest{Name: "one"}); run.GetState() != "SUCCEEDED" {
		t.Errorf("one, after the reload: %s", run.GetState())
	}
}

// TestWorkflowCancelAfterItsReplicaDied: a run whose driving replica died
// is cancelled as soon as its claim runs out: a replica claims it, rebuilds
// it, and cancels it and its running step.
func TestWorkflowCancelAfterItsReplicaDied(t *testing.T) {
	pools, err := config.ParsePools("test", []byte("topics:\n  job.echo: echo\n  job.hostile: hostile\npools:\n  echo: {}\n  hostile: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	timeouts, err := config.ParseTimeouts("test", []byte("reconciler:\n  lease_ttl: 1s\n"))
	if err != nil {
		t.Fatal(err)
	}
	mods := echoModules(t)
	mods["hostile"] = wasmtest.Build(t, "github.com/ward-run/ward/internal/sandbox/testdata/hostile")
	store := memoryStore(t)
	e := start(t, assembly.Options{Store: store,
		Scheduler: assembly.SchedulerConfig{Config: &config.Bundle{Timeouts: timeouts}},
		Host: assembly.HostConfig{Modules: mods, Pools: pools,
			Manifests: map[string]*sandbox.Manifest{"hostile": {Name: "hostile", Limits: sandbox.Limits{Time: sandbox.Duration(60 * time.Second)}}}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b, err := assembly.StartScheduler(ctx, assembly.SchedulerConfig{ID: "replica-b", NATSURL: e.natsURL, Store: store, SafetyAddr: e.n.Safety.Addr(),
		Config: &config.Bundle{Pools: pools, Timeouts: timeouts}, Creds: e.creds.Scheduler, DispatchSecret: e.creds.DispatchSecret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Shutdown(context.Background()) })
	acme := e.tenantClient(t, "acme")
	id := "run-orphan"
	def := "name: orphan\nsteps:\n  - {id: slow, topic: job.hostile, payload: {do: sleep}, retries: 0}\n  - {id: next, topic: job.echo, depends_on: [slow], payload: never}\n"
	if _, err := acme.RunWorkflow(ctx, &wardv1.WorkflowRunRequest{RunId: id, Definition: []byte(def)}); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, func() bool {
		job, err := acme.Get(ctx, id+"-slow", false)
		return err == nil && job.GetState() == wardv1.JobState_JOB_STATE_RUNNING
	})
	started, err := acme.Workflow(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	dying := b.Shutdown
	if started.GetOwner() == e.n.Scheduler.ID() {
		dying = e.n.Scheduler.Shutdown
	}
	if err := dying(ctx); err != nil {
		t.Fatal(err)
	}
	var run *wardv1.WorkflowRun
	checkFor(t, 30*time.Second, func() bool {
		actx, stop := context.WithTimeout(ctx, 2*time.Second) // no answer while its claim lasts
		defer stop()
		run, err = acme.CancelWorkflow(actx, id, "stop it")
		return err == nil || strings.Contains(err.Error(), "ended already")
	})
	if run.GetState() != "CANCELLED" {
		t.Fatalf("run %s (%s)", run.GetState(), run.GetReason())
	}
	if job, err := acme.Get(ctx, id+"-slow", false); err != nil || job.GetState() != wardv1.JobState_JOB_STATE_CANCELLED {
		t.Fatalf("the sleeping step's job: %v %v", job.GetState(), err)
	}
	if _, err := acme.Get(ctx, id+"-next", false); err == nil {
		t.Error("the step after it started")
	}
}
