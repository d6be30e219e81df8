package scheduler

import (
	"context"
	"errors"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/failpoint"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/scheduler/placement"
	"github.com/ward-run/ward/internal/telemetry"
	"github.com/ward-run/ward/internal/workflow"
)

type scheduleResult int

const (
	scheduled scheduleResult = iota // dispatched (or failed past dispatch)
	full                            // the worker was full after all: place again
	gone                            // another replica has it, it waits, or it ended
)

// schedule moves a placed job to DISPATCHED, through SCHEDULED, in one
// store step (Transition.Via): the store checks the tenant's and the
// worker's limits and counts the attempt with the move, and logs both
// states with the placement's reasoning. Then it publishes the dispatch.
// DISPATCHED is written before the publish: a fast host's result may
// otherwise arrive first.
//
// The move takes no dispatch lock (Transition.Lock): it is one atomic
// step from PENDING, so of two replicas placing the same job one moves it
// and the other's move is refused, the state checked before any lock
// would be.
func (s *Scheduler) schedule(ctx context.Context, job *jobstore.Job, lim limits, pool string, p *placement.Policy, d *placement.Decision, w *Worker) scheduleResult {
	t := jobstore.Transition{To: jobstore.Dispatched, From: jobstore.Pending, Via: jobstore.Scheduled, ViaMessage: d.Reasoning(),
		Pool: pool, WorkerID: w.ID, Attempt: job.Attempt + 1, TenantLimit: lim.tenant, WorkerLimit: p.Capacity(w), Brief: true}
	lim.first(&t)
	s.hosts.Reserve(w.ID, job.CPUMillicores, job.MemoryBytes)
	moved, err := s.cfg.Store.Transition(ctx, job.ID, t)
	if err != nil {
		s.hosts.Unreserve(w.ID, job.CPUMillicores, job.MemoryBytes)
		var le *jobstore.LimitError
		switch {
		case errors.As(err, &le) && errors.Is(err, jobstore.ErrWorkerFull):
			s.hosts.SetHeld(w.ID, le.Held, time.Now())
			return full
		case errors.As(err, &le):
			s.deferTenant(ctx, s.conf.load(), job, lim, le)
			return gone
		}
		s.storeFailed("dispatch", job.ID, err) // refused: another replica moved it
		return gone
	}
	s.hosts.SetHeld(w.ID, moved.WorkerJobs, time.Now())
	job = after(job, moved, t) // its decision too, stored with this move or before
	s.dispatch(ctx, job, lim, t)
	if run := job.Labels[LabelRun]; run != "" {
		// A workflow step's job: its run logs where it went (TaskPlaced).
		p := workflow.Placement{JobID: job.ID, Worker: w.ID, Reasoning: t.ViaMessage}
		if job.Safety != nil {
			p.DecisionID = job.Safety.DecisionID
		}
		s.runner.taskPlaced(ctx, run, job.Labels[LabelTask], p)
	}
	return scheduled
}

// after is job as a Brief move t left it: what the move changed, from the
// brief job moved, over the rest of job, which the move did not touch.
func after(job, moved *jobstore.Job, t jobstore.Transition) *jobstore.Job {
	j := *job
	j.State, j.Pool, j.WorkerID, j.Attempt, j.UpdatedAt, j.WorkerJobs = moved.State, moved.Pool, moved.WorkerID, moved.Attempt, moved.UpdatedAt, moved.WorkerJobs
	j.FirstMove = moved.FirstMove
	j.Waiting = ""
	if t.MaxRetries != nil {
		j.MaxRetries = *t.MaxRetries
	}
	if !t.Deadline.IsZero() {
		j.Deadline = t.Deadline
	}
	if t.Safety != nil {
		j.Safety = t.Safety
	}
	return &j
}

// dispatch publishes the dispatch of a job the store moved to DISPATCHED
// with t: a ticket signed for its host.
func (s *Scheduler) dispatch(ctx context.Context, job *jobstore.Job, lim limits, t jobstore.Transition) {
	id, worker := job.ID, job.WorkerID
	cons := lim.constraints
	// The ticket carries the dispatch span's context (signed with it):
	// the host's run span is its child. Untraced here, the job's own.
	ctx, span := telemetry.Start(ctx, "ward.dispatch", trace.SpanKindProducer)
	defer span.End()
	traceparent := job.Traceparent
	if sc := span.SpanContext(); sc.IsValid() {
		traceparent = telemetry.Format(sc)
	}
	out := &wardv1.JobRequest{
		JobId: id, Topic: job.Topic, Priority: int32(job.Priority), TenantId: job.Tenant,
		ContextPtr: job.ContextPtr, Labels: job.Labels, Requires: job.Requires, Env: job.Env,
		Budget:  &wardv1.Budget{DeadlineMs: job.DeadlineMS, MaxRetries: int32(job.MaxRetries)},
		TraceId: job.TraceID, ParentJobId: job.ParentJobID, WorkflowId: job.WorkflowID,
		Constraints: cons, Pool: job.Pool, Attempt: int32(job.Attempt),
		// The context, when at hand, travels in the signed ticket; the
		// host reads ContextPtr otherwise.
		Payload:     lim.payload,
		Traceparent: traceparent,
	}
	if s.router != nil {
		// The host reports to the owner of the job's shard directly.
		out.ReportShard = strconv.Itoa(s.router.shards.ShardOf(job.Tenant))
	}
	// The size the policy judged: the host reads no more, and runs bytes
	// of that size only.
	out.ContextSize = proto.Int64(job.PayloadSize)
	if len(out.Payload) == 0 && job.PayloadSize > 0 && !bus.IsObjectPtr(job.ContextPtr) {
		// A context in the job store travels in the ticket, always: hosts
		// hold no job store credential. A dispatch made later than the
		// submission's admission (a queue, a retry) reads it here.
		blob, err := s.cfg.Store.Blob(ctx, job.ContextPtr)
		if err != nil {
			// The job stays DISPATCHED: the reconciler retries it after
			// its dispatch_timeout.
			s.storeFailed("context", id, err)
			return
		}
		out.Payload = blob
	}
	if job.CPUMillicores > 0 || job.MemoryBytes > 0 {
		out.Resources = &wardv1.Resources{CpuMillicores: job.CPUMillicores, MemoryBytes: job.MemoryBytes}
	}
	sf := job.Safety
	if sf == nil {
		sf = lim.safety
	}
	module, digest, boot := s.moduleOf(job.Pool, worker)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("ward.job_id", id), attribute.String("ward.worker_id", worker),
			attribute.Int("ward.attempt", job.Attempt), attribute.String("ward.module", module), attribute.String("ward.module_digest", digest))
	}
	d, err := s.ticket(out, worker, module, digest, boot, sf, time.Now())
	if err != nil {
		s.log.ErrorContext(ctx, "dispatch ticket failed", "job_id", id, "err", err)
		return
	}
	// Watchers hear of SCHEDULED and DISPATCHED before the host can
	// report RUNNING.
	s.ends.moved(job, t)
	if failpoint.Enabled { // a test build's kill -9 here (internal/failpoint); constant false in Ward's builds
		failpoint.Hit("dispatch-after-store", "job_id=", id, " attempt=", job.Attempt, " worker_id=", worker)
	}
	if err := s.cfg.Bus.Publish(bus.WorkerJobsSubject(worker), d); err != nil {
		s.log.ErrorContext(ctx, "dispatch publish failed", "job_id", id, "worker_id", worker, "err", err)
		ft := jobstore.Transition{To: jobstore.Failed, From: jobstore.Dispatched, Reason: string(reason.DispatchFailed), Message: err.Error()}
		if job, err := s.cfg.Store.Transition(ctx, id, ft); err == nil {
			s.ends.deadLettered(ctx, job, ft)
		}
		return
	}
	s.owners.set(id, owner{tenant: job.Tenant, worker: worker, attempt: job.Attempt})
	jobsDispatched.WithLabelValues(s.ends.topicLabel(job.Topic)).Inc()
}

// ticket is the signed order to run job on its worker, for the worker's
// boot as its last heartbeat announced it (none when it announced none: a
// host that checks boots refuses such a ticket).
func (s *Scheduler) ticket(out *wardv1.JobRequest, worker, module, digest string, boot []byte, sf *jobstore.Safety, now time.Time) (*wardv1.Dispatch, error) {
	t := &wardv1.DispatchTicket{HostId: worker, Job: out, Module: module, ModuleDigest: digest, SchedulerId: s.id, BootNonce: boot}
	if sf != nil {
		t.DecisionId, t.PolicyRevision = sf.DecisionID, sf.PolicyRevision
	}
	if s.cfg.Signer == nil {
		return auth.Unsigned(t, now)
	}
	return s.cfg.Signer.Sign(t, now)
}

// moduleOf names the module pool runs and the digest of the version the
// worker said it holds, and the worker's boot: the ticket binds them, and
// the host runs nothing else (a version swapped in since, or a restart,
// bounces the job, which is placed again).
func (s *Scheduler) moduleOf(pool, worker string) (module, digest string, boot []byte) {
	w, known := s.hosts.Get(worker)
	if known {
		boot = w.Boot
	}
	p, ok := s.conf.load().pools.Pools[pool]
	if !ok {
		return "", "", boot
	}
	module = p.Module
	if module == "" {
		module = pool
	}
	if known {
		digest = w.Modules[module]
	}
	return module, digest, boot
}
