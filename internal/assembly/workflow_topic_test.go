package assembly_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// TestWorkflowTopics: a topic job.workflow.<name> names a workflow. A job
// submitted on it starts the run under the submitter's tenant, with the
// payload as its input and the job's id as the run's; the job is RUNNING
// while the run runs and ends with it, its result the run's outputs; a
// run that fails fails the job (workflow_failed, in the DLQ); a cancel of
// the job cancels the run, and the step running then; an input that is
// not a JSON object is refused. Beside them, a plain topic still runs.
func TestWorkflowTopics(t *testing.T) {
	dir := t.TempDir()
	for name, def := range map[string]string{
		"greet.yaml": `
name: greet
input: {who: world}
steps:
  - {id: hello, topic: job.echo, payload: {greeting: "hello ${{ input.who }}"}}
outputs: {said: steps.hello.output.greeting}
`,
		"slow.yaml": `
name: slow
steps:
  - {id: nap, topic: job.hostile, payload: {do: sleep}, retries: 0}
  - {id: after, topic: job.echo, depends_on: [nap], payload: {}}
`,
		"outer.yaml": `
name: outer
steps:
  - {id: inner, topic: job.workflow.greet, payload: {who: nested}}
outputs: {inner: steps.inner.output}
`,
		"broken.yaml": `
name: broken
steps:
  - {id: nap, topic: job.hostile, payload: {do: exit}, retries: 0}
`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(def), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pools, err := config.ParsePools("test", []byte("topics:\n  job.echo: echo\n  job.hostile: hostile\npools:\n  echo: {}\n  hostile: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	mods := echoModules(t)
	mods["hostile"] = wasmtest.Build(t, "github.com/ward-run/ward/internal/sandbox/testdata/hostile")
	e := start(t, assembly.Options{Store: memoryStore(t),
		Scheduler: assembly.SchedulerConfig{WorkflowDir: dir},
		Host: assembly.HostConfig{Modules: mods, Pools: pools,
			Manifests: map[string]*sandbox.Manifest{"hostile": {Name: "hostile", Limits: sandbox.Limits{Time: sandbox.Duration(20 * time.Second)}}}},
	})
	acme := e.tenantClient(t, "acme")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// The run's outputs are the job's result; the run is the job's id's.
	rec := submitAndWait(t, acme, &wardv1.JobRequest{Topic: "job.workflow.greet", Payload: []byte(`{"who": "team"}`)})
	if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || string(rec.GetResult()) != `{"said":"hello team"}` {
		t.Fatalf("job.workflow.greet: %s %s %q, result %s", rec.GetState(), rec.GetErrorCode(), rec.GetErrorMessage(), rec.GetResult())
	}
	run, err := acme.Workflow(ctx, rec.GetJobId(), false)
	if err != nil || run.GetState() != "SUCCEEDED" || run.GetWorkflow() != "greet" || run.GetTenantId() != "acme" {
		t.Fatalf("the job's run: %v, %v", run, err)
	}
	var states []string
	for _, ev := range rec.GetEvents() {
		states = append(states, ev.GetState().String())
	}
	if got := strings.Join(states, " "); !strings.HasSuffix(got, "JOB_STATE_RUNNING JOB_STATE_SUCCEEDED") {
		t.Errorf("the job's events: %s", got)
	}

	// A step on a workflow topic runs that workflow: its job follows it.
	rec = submitAndWait(t, acme, &wardv1.JobRequest{Topic: "job.workflow.outer"})
	if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || string(rec.GetResult()) != `{"inner":{"said":"hello nested"}}` {
		t.Fatalf("job.workflow.outer: %s %s %q, result %s", rec.GetState(), rec.GetErrorCode(), rec.GetErrorMessage(), rec.GetResult())
	}

	// A run that fails fails its job, which goes to the DLQ.
	rec = submitAndWait(t, acme, &wardv1.JobRequest{Topic: "job.workflow.broken"})
	if rec.GetState() != wardv1.JobState_JOB_STATE_FAILED || rec.GetErrorCode() != string(reason.WorkflowFailed) ||
		!strings.Contains(rec.GetErrorMessage(), "nap") {
		t.Fatalf("job.workflow.broken: %s %s %q", rec.GetState(), rec.GetErrorCode(), rec.GetErrorMessage())
	}
	checkFor(t, 10*time.Second, func() bool {
		entries, err := e.client.DLQ(ctx, 100)
		if err != nil {
			return false
		}
		for _, d := range entries {
			if d.GetJobId() == rec.GetJobId() && d.GetReason() == string(reason.WorkflowFailed) {
				return true
			}
		}
		return false
	})

	// A cancel of the job cancels its run and the step it runs.
	id := uuid.NewString()
	if _, err := acme.Submit(ctx, &wardv1.JobRequest{JobId: id, Topic: "job.workflow.slow"}); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, func() bool {
		step, err := acme.Get(ctx, id+"-nap", false)
		return err == nil && step.GetState() == wardv1.JobState_JOB_STATE_RUNNING
	})
	if job, err := acme.Get(ctx, id, false); err != nil || job.GetState() != wardv1.JobState_JOB_STATE_RUNNING {
		t.Fatalf("the job while its run runs: %v, %v", job.GetState(), err)
	}
	if _, err := acme.Cancel(ctx, id, "changed my mind"); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, func() bool {
		r, err := acme.Workflow(ctx, id, false)
		step, serr := acme.Get(ctx, id+"-nap", false)
		return err == nil && r.GetState() == "CANCELLED" && serr == nil && step.GetState() == wardv1.JobState_JOB_STATE_CANCELLED
	})
	if job, err := acme.Get(ctx, id, false); err != nil || job.GetState() != wardv1.JobState_JOB_STATE_CANCELLED {
		t.Fatalf("the cancelled job: %v, %v", job.GetState(), err)
	}

	// An input that is not a JSON object: the job fails, saying so.
	rec = submitAndWait(t, acme, &wardv1.JobRequest{Topic: "job.workflow.greet", Payload: []byte(`"team"`)})
	last := rec.GetEvents()[len(rec.GetEvents())-1]
	if rec.GetState() != wardv1.JobState_JOB_STATE_FAILED || rec.GetReason() != string(reason.BadRequest) || !strings.Contains(last.GetMessage(), "not a JSON object") {
		t.Fatalf("a string input: %s %q: %q", rec.GetState(), rec.GetReason(), last.GetMessage())
	}
	// A workflow topic of no workflow is a topic like any other.
	rec = submitAndWait(t, acme, &wardv1.JobRequest{Topic: "job.workflow.nothing"})
	if rec.GetState() != wardv1.JobState_JOB_STATE_FAILED || rec.GetErrorCode()+rec.GetReason() == "" {
		t.Fatalf("job.workflow.nothing: %s %s %q", rec.GetState(), rec.GetErrorCode(), rec.GetReason())
	}
}
