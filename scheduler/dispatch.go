package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/bus"
	"github.com/ward-run/ward/jobstore"
	"github.com/ward-run/ward/scheduler/placement"
)

// dispatchLockTTL bounds how long a dead replica's dispatch lock blocks a job.
const dispatchLockTTL = 10 * time.Second

type scheduleResult int

const (
	scheduled scheduleResult = iota // dispatched (or failed past dispatch)
	full                            // the worker was full after all: place again
	gone                            // another replica has it, it waits, or it ended
)

// schedule moves a placed job to SCHEDULED, with the store checking the
// tenant's and the worker's limits and taking the dispatch lock in the
// same step, then dispatches it.
func (s *Scheduler) schedule(ctx context.Context, job *jobstore.Job, lim limits, pool string, p *placement.Policy, d *placement.Decision, w *Worker) scheduleResult {
	t := jobstore.Transition{To: jobstore.Scheduled, From: jobstore.Pending, Pool: pool, WorkerID: w.ID,
		TenantLimit: lim.tenant, WorkerLimit: p.Capacity(w), Lock: &jobstore.Lock{Owner: s.id, TTL: dispatchLockTTL},
		Message: d.Reasoning()}
	lim.first(&t)
	s.hosts.Reserve(w.ID, job.CPUMillicores, job.MemoryBytes)
	moved, err := s.cfg.Store.Transition(ctx, job.ID, t)
	var le *jobstore.LimitError
	switch {
	case errors.As(err, &le) && errors.Is(err, jobstore.ErrWorkerFull):
		s.hosts.Unreserve(w.ID, job.CPUMillicores, job.MemoryBytes)
		s.hosts.SetHeld(w.ID, le.Held, time.Now())
		return full
	case errors.As(err, &le):
		s.hosts.Unreserve(w.ID, job.CPUMillicores, job.MemoryBytes)
		s.deferTenant(ctx, s.conf.load(), job, lim, le)
		return gone
	case err != nil:
		s.hosts.Unreserve(w.ID, job.CPUMillicores, job.MemoryBytes)
		if errors.Is(err, jobstore.ErrLocked) {
			s.log.Debug("another replica is dispatching the job", "job_id", job.ID)
		} else {
			s.storeFailed("schedule", job.ID, err)
		}
		return gone
	}
	s.hosts.SetHeld(w.ID, moved.WorkerJobs, time.Now())
	s.moved(moved, t)
	s.dispatch(ctx, moved, lim)
	return scheduled
}

// dispatch writes DISPATCHED, under the job's dispatch lock, before it
// publishes: a fast host's result may otherwise arrive first.
func (s *Scheduler) dispatch(ctx context.Context, job *jobstore.Job, lim limits) {
	id, worker := job.ID, job.WorkerID
	// The lock is not released here: the host's report (RUNNING, or the
	// result) drops it in the same move, and so does a requeue
	// (jobstore.Transition.Lock). One store round trip fewer per job.
	t := jobstore.Transition{To: jobstore.Dispatched, From: jobstore.Scheduled, Attempt: job.Attempt + 1,
		Lock: &jobstore.Lock{Owner: s.id, TTL: dispatchLockTTL}, WorkerID: worker}
	job, err := s.cfg.Store.Transition(ctx, id, t)
	if err != nil {
		s.storeFailed("dispatch", id, err)
		return
	}
	cons := lim.constraints
	out := &wardv1.JobRequest{
		JobId: id, Topic: job.Topic, Priority: int32(job.Priority), TenantId: job.Tenant,
		ContextPtr: job.ContextPtr, Labels: job.Labels, Requires: job.Requires, Env: job.Env,
		Budget:  &wardv1.Budget{DeadlineMs: job.DeadlineMS, MaxRetries: int32(job.MaxRetries)},
		TraceId: job.TraceID, ParentJobId: job.ParentJobID, WorkflowId: job.WorkflowID,
		Constraints: cons, Pool: job.Pool, Attempt: int32(job.Attempt),
	}
	if job.CPUMillicores > 0 || job.MemoryBytes > 0 {
		out.Resources = &wardv1.Resources{CpuMillicores: job.CPUMillicores, MemoryBytes: job.MemoryBytes}
	}
	sf := job.Safety
	if sf == nil {
		sf = lim.safety
	}
	module, digest := s.moduleOf(job.Pool, worker)
	d, err := s.ticket(out, worker, module, digest, sf, time.Now())
	if err != nil {
		s.log.Error("dispatch ticket failed", "job_id", id, "err", err)
		return
	}
	// Watchers hear of DISPATCHED before the host can report RUNNING.
	s.moved(job, t)
	if err := s.cfg.Bus.Publish(bus.WorkerJobsSubject(worker), d); err != nil {
		s.log.Error("dispatch publish failed", "job_id", id, "worker_id", worker, "err", err)
		ft := jobstore.Transition{To: jobstore.Failed, From: jobstore.Dispatched, Reason: string(reason.DispatchFailed), Message: err.Error()}
		if job, err := s.cfg.Store.Transition(ctx, id, ft); err == nil {
			s.deadLettered(ctx, job, ft)
		}
		return
	}
	s.owners.set(id, owner{tenant: job.Tenant, worker: worker, attempt: job.Attempt})
	jobsDispatched.WithLabelValues(s.topicLabel(job.Topic)).Inc()
}
