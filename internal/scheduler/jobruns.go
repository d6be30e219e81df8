package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/workflow"
)

// A topic job.workflow.<name>, where <name> is a workflow the schedulers
// know (config/workflows, --workflows), is a workflow topic: a job
// submitted on it, once the policy allowed it, starts a run of that
// workflow under the job's tenant, with the job's payload (a JSON object)
// as the run's input and the job's id as the run's id, and follows it.
// The job is RUNNING while its run runs, held by no host (its worker is
// run:<id>); it ends as the run ends (SUCCEEDED with the run's outputs as
// its result, FAILED workflow_failed, TIMEOUT or CANCELLED), and a cancel
// of the job cancels the run. So `ward submit --topic job.workflow.demo
// --wait` and POST /v1/jobs behave as for any topic.

// workflowTopicPrefix starts a workflow topic.
const workflowTopicPrefix = "job.workflow."

// runWorker is the worker of a job that follows run id: not a host's id
// (a host id has no ':'), so no host's report can move it.
func runWorker(id string) string { return "run:" + id }

// isRunJob reports whether job follows a run of its own.
func isRunJob(job *jobstore.Job) bool { return job.WorkerID != "" && job.WorkerID == runWorker(job.ID) }

// workflowOf returns the workflow a topic names, if it is a workflow
// topic.
func (r *runner) workflowOf(topic string) (string, bool) {
	name, ok := strings.CutPrefix(topic, workflowTopicPrefix)
	if !ok || name == "" || topic == TopicWorkflowRun {
		return "", false
	}
	return name, r.def(name) != nil
}

// startRunOf starts the run of a job on a workflow topic that the policy
// allowed, and moves the job to RUNNING, following the run. A run that
// cannot start ends the job with the run's refusal (and the DLQ). A job
// admitted again (its replica died) finds its run started: the run is
// the same one.
func (s *Scheduler) startRunOf(ctx context.Context, job *jobstore.Job, lim limits, name string) {
	input := lim.payload
	if input == nil && job.PayloadSize > 0 {
		if bus.IsObjectPtr(job.ContextPtr) {
			s.ends.end(ctx, job, lim, jobstore.Transition{To: jobstore.Failed, Reason: string(reason.BadRequest),
				Message: "a workflow's input travels in the submission (a JSON object of at most 512 KiB), not by pointer"}, true)
			return
		}
		b, err := s.cfg.Store.Blob(ctx, job.ContextPtr)
		if err != nil {
			// Left PENDING: the reconciler admits it again.
			s.storeFailed("workflow input", job.ID, err)
			return
		}
		input = b
	}
	reply := s.runner.start(ctx, job.Tenant, &wardv1.WorkflowRunRequest{RunId: job.ID, Name: name, Input: input})
	if !reply.GetAccepted() {
		s.ends.end(ctx, job, lim, jobstore.Transition{To: jobstore.Failed, Reason: reply.GetReason(),
			Message: "workflow " + name + ": " + reply.GetMessage()}, true)
		return
	}
	s.runner.markJobRun(job.ID)
	t := jobstore.Transition{To: jobstore.Running, From: jobstore.Pending, Via: jobstore.Scheduled,
		ViaMessage: "a workflow topic: its job follows run " + job.ID,
		WorkerID:   runWorker(job.ID), Attempt: job.Attempt + 1, Brief: true,
		Message: fmt.Sprintf("workflow %s runs (%d steps): ward workflow get %s", name, len(reply.GetSteps()), job.ID)}
	lim.first(&t)
	moved, err := s.cfg.Store.Transition(ctx, job.ID, t)
	if err != nil {
		// The run ended first and its end moved the job, or another
		// replica moved it: either way the job is past this move.
		s.log.Debug("workflow job not moved to RUNNING", "job_id", job.ID, "err", err)
		return
	}
	s.ends.moved(after(job, moved, t), t)
}

// markJobRun notes that the run this replica drives as id follows a job.
func (r *runner) markJobRun(id string) {
	r.mu.Lock()
	lr := r.runs[id]
	r.mu.Unlock()
	if lr != nil {
		lr.mu.Lock()
		lr.forJob = jobRunYes
		lr.mu.Unlock()
	}
}

// Whether a run follows a job: not known yet (a run carried on from
// another replica), yes, or no.
const (
	jobRunUnknown = iota
	jobRunYes
	jobRunNo
)

// runEnded ends the job that run lr follows, if one does, as the run
// ended. lr.mu is held: the store is written from a goroutine of its own.
func (r *runner) runEnded(lr *liveRun) {
	if lr.forJob == jobRunNo {
		return
	}
	st, why := lr.eng.State()
	out := lr.eng.Outputs()
	id, tenant, name := lr.id, lr.tenant, lr.name
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.jobRunEnded(context.Background(), id, tenant, name, st, why, out)
	}()
}

// endJobOfRun ends job id, which follows run id of workflow name, as the
// run ended: SUCCEEDED with its outputs (JSON) as the result, else
// FAILED workflow_failed, TIMEOUT or CANCELLED with the run's reason. A
// job that is no such job, or that ended already, is left alone.
func (s *Scheduler) endJobOfRun(ctx context.Context, id, tenant, name string, st workflow.RunState, why string, outputs any) {
	t := jobstore.Transition{Message: fmt.Sprintf("workflow run %s ended %s", id, st)}
	if why != "" {
		t.Message += ": " + why
	}
	dlq := false
	switch st {
	case workflow.RunSucceeded:
		b, err := json.Marshal(outputs)
		switch {
		case err != nil:
			t.To, t.Reason, t.ErrorCode, t.ErrorMessage = jobstore.Failed, string(reason.Internal), string(reason.Internal), "the run's outputs do not encode: "+err.Error()
		case len(b) > bus.InlineResultMax:
			t.To, t.Reason, t.ErrorCode = jobstore.Failed, string(reason.OutputTooLarge), string(reason.OutputTooLarge)
			t.ErrorMessage = fmt.Sprintf("the run's outputs are %d bytes, more than a job's result holds (%d): read them with ward workflow get %s", len(b), bus.InlineResultMax, id)
		default:
			t.To, t.Result, t.StoreResult = jobstore.Succeeded, b, true
		}
	case workflow.RunCancelled:
		t.To, t.Reason = jobstore.Cancelled, string(reason.Cancelled)
	case workflow.RunTimedOut:
		t.To, t.Reason, t.ErrorCode, t.ErrorMessage = jobstore.Timeout, string(reason.DeadlineExceeded), string(reason.DeadlineExceeded), why
	default:
		t.To, t.Reason, t.ErrorCode, t.ErrorMessage = jobstore.Failed, string(reason.WorkflowFailed), string(reason.WorkflowFailed), why
		dlq = true
	}
	for range 3 {
		job, err := s.cfg.Store.Get(ctx, id)
		switch {
		case errors.Is(err, jobstore.ErrNotFound):
			return // a run of its own, not a job's
		case err != nil:
			// The reconciler settles it from the run later (settleRunJob).
			s.storeFailed("workflow job end", id, err)
			return
		case job.Tenant != tenant || job.Topic != workflowTopicPrefix+name || job.State.Terminal():
			return
		}
		t.From, t.Via, t.ViaMessage = job.State, "", ""
		if job.State == jobstore.Pending {
			// The run ended before its job was moved to RUNNING.
			t.Via, t.ViaMessage = jobstore.Scheduled, "a workflow topic: its job follows run "+id
		}
		moved, err := s.cfg.Store.Transition(ctx, id, t)
		var te *jobstore.TransitionError
		if errors.As(err, &te) {
			continue // moved meanwhile: read it again
		}
		if err != nil {
			s.storeFailed("workflow job end", id, err)
			return
		}
		if dlq {
			s.ends.deadLettered(ctx, moved, t)
			return
		}
		jobsCompleted.WithLabelValues(s.ends.topicLabel(moved.Topic), string(moved.State)).Inc()
		s.ends.moved(moved, t)
		return
	}
}

// settleRunJob is the reconciler's look at a job that follows its run and
// has not moved for a while: it ends the job as its run ended (an end this
// replica or another missed: a store failure, a replica that died between
// the two), or, when the run is gone, FAILED.
func (s *Scheduler) settleRunJob(ctx context.Context, job *jobstore.Job) {
	run, _, err := s.cfg.Store.GetRun(ctx, job.ID)
	switch {
	case errors.Is(err, jobstore.ErrNotFound):
		s.ends.end(ctx, job, limits{}, jobstore.Transition{To: jobstore.Failed, From: job.State, Reason: string(reason.WorkflowFailed),
			ErrorCode: string(reason.WorkflowFailed), ErrorMessage: "its workflow run " + job.ID + " is gone",
			Message: "its workflow run " + job.ID + " is gone"}, true)
		return
	case err != nil:
		s.storeFailed("workflow job run", job.ID, err)
		return
	case run.State == string(workflow.RunRunning):
		return
	}
	rec, err := runRecord(ctx, s.cfg.Store, s.log, run.ID, run.Tenant, false)
	if err != nil {
		return
	}
	var out any
	if len(rec.GetOutputs()) > 0 {
		_ = json.Unmarshal(rec.GetOutputs(), &out)
	}
	s.endJobOfRun(ctx, job.ID, run.Tenant, run.Workflow, workflow.RunState(run.State), run.Reason, out)
}

// stopRunOfJob cancels the run a job followed when the job ended
// otherwise than by the run's end (cancelled, past its deadline), if this
// replica drives it; a replica that drives it learns of it when it polls
// (pollJob). After the run's own end it finds no run here.
func (r *runner) stopRunOfJob(job *jobstore.Job) {
	if !strings.HasPrefix(job.Topic, workflowTopicPrefix) {
		return
	}
	r.mu.Lock()
	lr := r.runs[job.ID]
	r.mu.Unlock()
	if lr == nil || lr.tenant != job.Tenant || job.Topic != workflowTopicPrefix+lr.name {
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.stop(lr, lr.eng.Cancel, "its job "+job.ID+" ended "+string(job.State))
	}()
}

// pollJob stops lr when the job it follows ended (cancelled at another
// replica, or timed out by its deadline).
func (r *runner) pollJob(ctx context.Context, lr *liveRun) {
	lr.mu.Lock()
	forJob := lr.forJob
	lr.mu.Unlock()
	if forJob == jobRunNo {
		return
	}
	job, err := r.store.Get(ctx, lr.id)
	if err != nil && !errors.Is(err, jobstore.ErrNotFound) {
		return
	}
	if err != nil || job.Tenant != lr.tenant || job.Topic != workflowTopicPrefix+lr.name {
		lr.mu.Lock()
		lr.forJob = jobRunNo
		lr.mu.Unlock()
		return
	}
	lr.mu.Lock()
	lr.forJob = jobRunYes
	lr.mu.Unlock()
	if job.State.Terminal() {
		r.stop(lr, lr.eng.Cancel, "its job "+job.ID+" ended "+string(job.State))
	}
}
