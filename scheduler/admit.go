package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/ward-run/ward/api/reason"
	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/bus"
	"github.com/ward-run/ward/config"
	"github.com/ward-run/ward/jobstore"
	"github.com/ward-run/ward/scheduler/placement"
)

// dispatchLockTTL bounds how long a dead replica's dispatch lock blocks a job.
const dispatchLockTTL = 10 * time.Second

// deadlineAbsolute: budget deadlines at or above it are Unix milliseconds,
// below it durations from submission (10^12 ms is September 2001).
const deadlineAbsolute = 1_000_000_000_000

// refuse is the reply to a submission refused with code.
func refuse(code reason.Code, format string, args ...any) *wardv1.SubmitReply {
	submitsRefused.WithLabelValues(string(code)).Inc()
	return &wardv1.SubmitReply{Reason: string(code), Message: fmt.Sprintf(format, args...)}
}

// handleSubmit stores a submission, acknowledges it, then admits it.
func (s *Scheduler) handleSubmit(ctx context.Context, msg *nats.Msg, req *wardv1.JobRequest) {
	reply, job, queued := s.accept(ctx, req)
	if err := s.cfg.Bus.Reply(msg, reply); err != nil {
		s.log.Warn("submit reply failed", "job_id", reply.GetJobId(), "err", err)
	}
	if job == nil {
		return
	}
	s.admit(ctx, job, queued)
}

// accept checks a submission and stores it: one store round trip, which
// also takes a token of the tenant's rate bucket and checks the pool
// queues' cap. It returns the stored job (nil when refused or a duplicate)
// and the length of each eligible pool's queue.
func (s *Scheduler) accept(ctx context.Context, req *wardv1.JobRequest) (*wardv1.SubmitReply, *jobstore.Job, map[string]int) {
	switch {
	case req.GetTopic() == "":
		return refuse(reason.BadRequest, "topic is required"), nil, nil
	case req.GetPriority() < 0 || req.GetPriority() > 10:
		return refuse(reason.BadRequest, "priority %d is outside 0..10", req.GetPriority()), nil, nil
	case strings.ContainsAny(req.GetJobId(), " .*>\t\r\n"):
		return refuse(reason.BadRequest, "job id %q may not contain spaces, dots or wildcards", req.GetJobId()), nil, nil
	case req.GetResources().GetCpuMillicores() < 0 || req.GetResources().GetMemoryBytes() < 0:
		return refuse(reason.BadRequest, "resources may not be negative"), nil, nil
	case req.GetBudget().GetMaxRetries() < 0 || req.GetBudget().GetMaxRetries() > config.MaxRetriesLimit:
		return refuse(reason.BadRequest, "budget.max_retries %d is outside 0..%d", req.GetBudget().GetMaxRetries(), config.MaxRetriesLimit), nil, nil
	case req.GetBudget().GetDeadlineMs() < 0:
		return refuse(reason.BadRequest, "budget.deadline_ms may not be negative"), nil, nil
	}
	if code, msg := s.refuseMode(req.GetPriority()); code != "" {
		return refuse(code, "%s", msg), nil, nil
	}
	if req.JobId == "" {
		req.JobId = uuid.NewString()
	}
	c := s.conf.load()
	pools, _ := route(c.pools, req.Topic, req.Requires, req.Labels)
	limits := c.sched.Tenants.For(req.TenantId)
	now := time.Now()
	job := &jobstore.Job{
		ID:             req.JobId,
		Topic:          req.Topic,
		Tenant:         req.TenantId,
		Priority:       int(req.Priority),
		Labels:         req.Labels,
		Requires:       req.Requires,
		IdempotencyKey: req.IdempotencyKey,
		TraceID:        req.TraceId,
		DeadlineMS:     req.GetBudget().GetDeadlineMs(),
		MaxRetries:     int(req.GetBudget().GetMaxRetries()),
		Env:            req.Env,
		ParentJobID:    req.ParentJobId,
		WorkflowID:     req.WorkflowId,
		CPUMillicores:  req.GetResources().GetCpuMillicores(),
		MemoryBytes:    req.GetResources().GetMemoryBytes(),
		PayloadSize:    int64(len(req.Payload)),
		CreatedAt:      now,
	}
	job.Deadline = deadline(job, nil)
	if len(req.Payload) == 0 && strings.HasPrefix(req.ContextPtr, bus.ObjectScheme) {
		// A context too large for a message, which the client stored in
		// the object store (bus/README.md, "Context pointers").
		job.ContextPtr = req.ContextPtr
	}
	res, err := s.cfg.Store.Submit(ctx, job, req.Payload, jobstore.Guard{
		Rate: limits.Rate, Burst: limits.Burst, Queues: pools, QueueCap: c.sched.Queue.Cap,
	})
	switch {
	case errors.Is(err, jobstore.ErrExists):
		return refuse(reason.BadRequest, "job %s exists already", req.JobId), nil, nil
	case errors.Is(err, jobstore.ErrRateLimited):
		return refuse(reason.RateLimited, "tenant %q submits faster than its limit of %g jobs a second (burst %d); slow down and resubmit",
			req.TenantId, limits.Rate, limits.Burst), nil, nil
	case errors.Is(err, jobstore.ErrQueueFull):
		return refuse(reason.QueueFull, "every pool of topic %q has %d jobs waiting (queue.cap); resubmit later",
			req.Topic, c.sched.Queue.Cap), nil, nil
	case err != nil:
		storeErrors.WithLabelValues("create").Inc()
		s.log.Error("store create failed", "job_id", req.JobId, "err", err)
		return refuse(reason.StoreError, "job store unavailable"), nil, nil
	case !res.Created:
		return &wardv1.SubmitReply{JobId: res.ID, Accepted: true, Duplicate: true}, nil, nil
	}
	jobsReceived.WithLabelValues(s.topicLabel(req.Topic)).Inc()
	s.publishEvent(job, jobstore.Event{At: job.CreatedAt, State: jobstore.Pending})
	queued := make(map[string]int, len(pools))
	for i, p := range pools {
		queued[p] = res.Queued[i]
	}
	return &wardv1.SubmitReply{JobId: res.ID, Accepted: true}, job, queued
}

// route returns the pools a job may run in, in the topic's order: those
// that offer every capability the job requires, narrowed to its
// preferred_pool when that is one of them. When there is none, it says why.
func route(p *config.Pools, topic string, requires []string, labels map[string]string) ([]string, string) {
	mapped := p.PoolsFor(topic)
	if len(mapped) == 0 {
		return nil, fmt.Sprintf("no pool serves topic %q", topic)
	}
	var out []string
	for _, name := range mapped {
		pool := p.Pools[name]
		if !slices.ContainsFunc(requires, func(r string) bool { return !pool.Offers(r) }) {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Sprintf("no pool of topic %q (%s) offers %v", topic, strings.Join(mapped, ", "), requires)
	}
	if pp := labels[placement.LabelPreferredPool]; pp != "" && slices.Contains(out, pp) {
		return []string{pp}, ""
	}
	return out, ""
}

// limits are what admission decided for a job.
type limits struct {
	safety      *jobstore.Safety // to store with the first move; nil when stored already
	constraints *wardv1.Constraints
	tenant      int // max concurrent jobs, 0: none
	maxRetries  int
	deadline    time.Time
}

// admit takes a PENDING job through safety, routing and placement, and
// dispatches it, parks it in a queue, defers it, or ends it. queued holds
// the queue lengths of its pools for a fresh submission (a job placed
// while others wait would jump the queue), nil otherwise.
func (s *Scheduler) admit(ctx context.Context, job *jobstore.Job, queued map[string]int) {
	c := s.conf.load()
	if c.mods != nil && len(c.pools.PoolsFor(job.Topic)) == 0 {
		// Perhaps a deploy this replica has not heard of yet declares it.
		c = s.caughtUp(ctx)
	}
	lim, ok := s.decide(ctx, c, job)
	if !ok {
		return
	}
	now := time.Now()
	if !lim.deadline.IsZero() && !now.Before(lim.deadline) {
		s.end(ctx, job, lim, jobstore.Transition{To: jobstore.Timeout, Reason: string(reason.DeadlineExceeded),
			Message: "its deadline passed before it could run"}, false)
		return
	}
	pools, why := route(c.pools, job.Topic, job.Requires, job.Labels)
	if len(pools) == 0 {
		s.end(ctx, job, lim, jobstore.Transition{To: jobstore.Failed, Reason: string(reason.NoPoolMapping), Message: why}, true)
		return
	}
	if pools, why = c.retired(pools); len(pools) == 0 {
		s.end(ctx, job, lim, jobstore.Transition{To: jobstore.Failed, Reason: string(reason.ModuleRetired), Message: why}, true)
		return
	}
	s.place(ctx, c, job, lim, pools, queued)
}

// decide asks the safety kernel about a job that has no stored decision,
// and works out its limits. It ends a denied job and reports false.
func (s *Scheduler) decide(ctx context.Context, c *settings, job *jobstore.Job) (limits, bool) {
	var lim limits
	if job.Safety == nil {
		poolName, module := "", &safetyv1.ModuleRequest{}
		if pools := c.pools.PoolsFor(job.Topic); len(pools) > 0 {
			poolName, module.Name = pools[0], c.pools.Pools[pools[0]].Module
			if a := c.mods.active(module.Name); a != nil {
				module.Digest, module.Signed = a.Digest, a.Signed
				if r := a.Requested; r != nil {
					module.Requested = &wardv1.Grants{HttpHosts: r.HTTPHosts, ReadOnlyDirs: r.ReadOnlyDirs, EnvKeys: r.EnvKeys,
						MemoryLimitBytes: r.MemoryLimitBytes, TimeLimitMs: r.TimeLimitMS}
				}
			}
		}
		decision, err := s.cfg.Safety.Check(ctx, &safetyv1.CheckRequest{
			JobId:       job.ID,
			Topic:       job.Topic,
			TenantId:    job.Tenant,
			Labels:      job.Labels,
			Requires:    job.Requires,
			Priority:    int32(job.Priority),
			PayloadSize: job.PayloadSize,
			Pool:        poolName,
			Module:      module,
		})
		if err != nil {
			s.log.Warn("safety kernel unavailable; failing closed", "job_id", job.ID, "err", err)
			safetyDenials.WithLabelValues(string(reason.SafetyUnavailable)).Inc()
			s.end(ctx, job, lim, jobstore.Transition{To: jobstore.Denied, Reason: string(reason.SafetyUnavailable),
				Message: "safety kernel unavailable: " + err.Error()}, true)
			return lim, false
		}
		lim.safety = safetyRecord(decision)
		if decision.GetDecision() == safetyv1.Decision_DECISION_DENY {
			safetyDenials.WithLabelValues(string(reason.SafetyDenied)).Inc()
			s.end(ctx, job, lim, jobstore.Transition{To: jobstore.Denied, Reason: string(reason.SafetyDenied),
				Message: strings.Join(decision.GetReasons(), "; ")}, true)
			return lim, false
		}
		lim.constraints = decision.GetConstraints()
	} else {
		lim.constraints = constraintsOf(job.Safety)
	}
	cons := lim.constraints
	lim.tenant = int(cons.GetMaxConcurrentJobs())
	if lim.tenant <= 0 {
		lim.tenant = c.sched.Tenants.For(job.Tenant).MaxConcurrentJobs
	}
	if job.Safety == nil {
		// First admission: the job's budget, else the topic's setting,
		// else the decision's; the decision's is also a cap.
		_, _, topicRetries := c.timeouts.For(job.Topic)
		n := job.MaxRetries
		if n == 0 {
			n = topicRetries
		}
		if n == 0 {
			n = int(cons.GetMaxRetries())
		}
		if m := int(cons.GetMaxRetries()); m > 0 {
			n = min(n, m)
		}
		lim.maxRetries = n
		lim.deadline = deadline(job, cons)
	} else {
		lim.maxRetries, lim.deadline = job.MaxRetries, job.Deadline
	}
	return lim, true
}

// deadline is when job must have ended: its budget's deadline_ms (a Unix
// time in ms, or a duration from submission below 10^12), and the safety
// decision's deadline_ms (a duration from submission), whichever is first.
func deadline(job *jobstore.Job, cons *wardv1.Constraints) time.Time {
	var d time.Time
	if v := job.DeadlineMS; v > 0 {
		if v >= deadlineAbsolute {
			d = time.UnixMilli(v)
		} else {
			d = job.CreatedAt.Add(time.Duration(v) * time.Millisecond)
		}
	}
	if v := cons.GetDeadlineMs(); v > 0 {
		if c := job.CreatedAt.Add(time.Duration(v) * time.Millisecond); d.IsZero() || c.Before(d) {
			d = c
		}
	}
	return d
}

// first sets, on a job's first move after admission, what admission decided.
func (lim *limits) first(t *jobstore.Transition) {
	if lim.safety != nil {
		t.Safety = lim.safety
		n := lim.maxRetries
		t.MaxRetries = &n
		t.Deadline = lim.deadline
	}
}

// place runs placement over the job's pools in order, and dispatches the
// job, parks it, or ends it.
func (s *Scheduler) place(ctx context.Context, c *settings, job *jobstore.Job, lim limits, pools []string, queued map[string]int) {
	snap := s.placer.snapshot()
	defer s.placer.release(snap)
	now := time.Now()
	hot := s.hotZones()
	var (
		d        placement.Decision
		busyPool string
		busyWhy  string
		noneWhy  []string
		fullPool string // a pool whose chosen worker turned out full
	)
	for tries := 0; tries < 3; tries++ {
		busyPool, busyWhy, noneWhy = "", "", noneWhy[:0]
		for _, pool := range pools {
			s.hosts.Snapshot(snap, pool, now)
			snap.Module, snap.Throttled = c.versions[pool], hot
			r := request(job, c.pools.Pools[pool], s.placer.lastPick(pool))
			p := s.policy(c.sched, pool)
			o := placement.Place(snap, &r, &p, &d)
			if d.Ranked {
				placements.WithLabelValues(p.Strategy.String(), outcomeLabel(o)).Inc()
			}
			switch o {
			case placement.Placed:
				if p.Strategy == placement.RoundRobin {
					s.placer.picked(pool, d.WorkerID)
				}
				w := &snap.Workers[d.Worker]
				if d.Throttled && !s.domains.take(w.Zone, now, &c.sched.FailureDomains) {
					if busyPool == "" {
						busyPool, busyWhy = pool, "zone "+w.Zone+" is throttled (failure rate over "+
							fmt.Sprint(c.sched.FailureDomains.Threshold)+"): "+d.Reasoning()
					}
					waits.WithLabelValues("zone_throttled").Inc()
					continue
				}
				if queued[pool] > 0 {
					// Others wait for this pool: take a place behind them,
					// the pump places in priority order.
					s.park(ctx, c, job, lim, pool, "jobs are waiting for pool "+pool+"; queued behind them")
					return
				}
				switch s.schedule(ctx, job, lim, pool, &p, &d, w) {
				case scheduled, gone:
					return
				case full:
					fullPool = pool
					continue // the store knew better: place again
				}
			case placement.Busy:
				if busyPool == "" {
					busyPool, busyWhy = pool, d.Why()
				}
			case placement.RollingOut:
				if busyPool == "" {
					busyPool, busyWhy = pool, d.Why()
				}
				waits.WithLabelValues("rollout").Inc()
			case placement.NoWorker:
				noneWhy = append(noneWhy, d.Why())
			}
		}
		if busyPool != "" || len(noneWhy) == len(pools) {
			break
		}
	}
	if busyPool == "" && fullPool != "" {
		busyPool, busyWhy = fullPool, "the workers of pool "+fullPool+" kept filling up"
	}
	if busyPool == "" && len(noneWhy) > 0 && s.warming() {
		busyPool, busyWhy = pools[0], "this replica started "+time.Since(s.started).Round(time.Millisecond).String()+
			" ago and knows no host that can run it yet: "+strings.Join(noneWhy, "; ")
	}
	switch {
	case busyPool != "":
		if job.Waiting == "queue:"+busyPool {
			return // it waits there already; the pump comes back to it
		}
		s.park(ctx, c, job, lim, busyPool, busyWhy)
	case len(noneWhy) > 0:
		s.end(ctx, job, lim, jobstore.Transition{To: jobstore.Failed, Reason: string(reason.NoWorkers), Message: strings.Join(noneWhy, "; ")}, true)
	}
}

// outcomeLabel is the placements metric's outcome label; a job waiting
// for a rollout was no_worker to the filters.
func outcomeLabel(o placement.Outcome) string {
	switch o {
	case placement.Placed:
		return "placed"
	case placement.Busy:
		return "busy"
	}
	return "no_worker"
}

// request is placement's view of a job bound for pool; after is the
// pool's last round-robin pick.
func request(job *jobstore.Job, pool config.Pool, after string) placement.Request {
	r := placement.Request{
		JobID:         job.ID,
		Requires:      job.Requires,
		PoolRequires:  pool.Requires,
		Prefers:       pool.Prefers,
		CPUMillicores: job.CPUMillicores,
		MemoryBytes:   job.MemoryBytes,
		After:         after,
	}
	r.SetLabels(job.Labels)
	return r
}

// policy is pool's placement policy: scheduler.yaml's settings, and the
// per-slot prefetch its prefetch window gives for the pool's jobs' usual
// running time.
func (s *Scheduler) policy(c *config.Scheduler, pool string) placement.Policy {
	st, _ := placement.ParseStrategy(string(c.StrategyFor(pool))) // config validated it
	p := placement.Policy{Strategy: st, CPUThreshold: c.Placement.CPUThreshold,
		GPUThreshold: c.Placement.GPUThreshold, Prefetch: c.PrefetchFor(pool)}
	if w := c.PrefetchWindowFor(pool); w > 0 {
		if run, ok := s.runs.get(pool); ok {
			p.PerSlot = int(min(maxPerSlot, w.Seconds()/max(run, minRunTime)))
		}
	}
	return p
}

// Bounds of the window's prefetch: a job reported to run in 0 ms counts as
// 0.1 ms, and a slot never holds more than 64 jobs waiting.
const (
	minRunTime = 0.0001 // seconds
	maxPerSlot = 64
)

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
	defer func() {
		if err := s.cfg.Store.UnlockDispatch(context.WithoutCancel(ctx), id, s.id); err != nil {
			storeErrors.WithLabelValues("unlock").Inc()
		}
	}()
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
	// Watchers hear of DISPATCHED before the host can report RUNNING.
	s.moved(job, t)
	if err := s.cfg.Bus.Publish(bus.WorkerJobsSubject(worker), out); err != nil {
		s.log.Error("dispatch publish failed", "job_id", id, "worker_id", worker, "err", err)
		ft := jobstore.Transition{To: jobstore.Failed, From: jobstore.Dispatched, Reason: string(reason.DispatchFailed), Message: err.Error()}
		if job, err := s.cfg.Store.Transition(ctx, id, ft); err == nil {
			s.deadLettered(ctx, job, ft)
		}
		return
	}
	jobsDispatched.WithLabelValues(s.topicLabel(job.Topic)).Inc()
}

// park puts a PENDING job in pool's queue, ordered by its aged priority,
// and wakes the pump. A full queue, or a job that waited queue.max_wait,
// ends FAILED pool_overloaded.
func (s *Scheduler) park(ctx context.Context, c *settings, job *jobstore.Job, lim limits, pool, why string) {
	q := c.sched.Queue
	// A retried job (Attempt > 0) is bounded by its retries, not by the
	// time since its submission.
	if job.Attempt == 0 && time.Since(job.CreatedAt) > q.MaxWait {
		s.end(ctx, job, lim, jobstore.Transition{To: jobstore.Failed, Reason: string(reason.PoolOverloaded),
			Message: fmt.Sprintf("waited %s (queue.max_wait %s): %s", time.Since(job.CreatedAt).Round(time.Second), q.MaxWait, why)}, true)
		return
	}
	t := jobstore.Transition{To: jobstore.Pending, From: jobstore.Pending, Reason: string(reason.PoolOverloaded), Message: why,
		Wait: &jobstore.Wait{Pool: pool, Score: jobstore.QueueScore(job.Priority, job.CreatedAt, q.AgingFactor), Cap: q.Cap}}
	lim.first(&t)
	moved, err := s.cfg.Store.Transition(ctx, job.ID, t)
	switch {
	case errors.Is(err, jobstore.ErrQueueFull):
		s.end(ctx, job, lim, jobstore.Transition{To: jobstore.Failed, Reason: string(reason.PoolOverloaded),
			Message: fmt.Sprintf("queue of pool %s is full (%d jobs): %s", pool, q.Cap, why)}, true)
		return
	case err != nil:
		s.storeFailed("queue", job.ID, err)
		return
	}
	waits.WithLabelValues(string(reason.PoolOverloaded)).Inc()
	s.moved(moved, t)
	s.queues.queued(pool)
	s.poke()
}

// deferTenant puts back a job whose tenant is at its limit, to try again
// after a backoff; past the tenant wait budget it ends FAILED tenant_limit.
func (s *Scheduler) deferTenant(ctx context.Context, c *settings, job *jobstore.Job, lim limits, le *jobstore.LimitError) {
	tc := c.sched.Tenants
	if waited := time.Since(job.CreatedAt); job.Attempt == 0 && waited > tc.WaitBudget {
		s.end(ctx, job, lim, jobstore.Transition{To: jobstore.Failed, Reason: string(reason.TenantLimit),
			Message: fmt.Sprintf("tenant %q stayed at its limit of %d concurrent jobs for %s (tenants.wait_budget %s)",
				job.Tenant, le.Limit, waited.Round(time.Second), tc.WaitBudget)}, true)
		return
	}
	delay := tc.Backoff.Delay(job.Waits+1, rand.Float64())
	t := jobstore.Transition{To: jobstore.Pending, From: jobstore.Pending, Reason: string(reason.TenantLimit), Waits: job.Waits + 1,
		Message: fmt.Sprintf("tenant %q holds %d of its %d concurrent jobs; retry in %s", job.Tenant, le.Held, le.Limit, delay.Round(time.Millisecond)),
		Wait:    &jobstore.Wait{Until: time.Now().Add(delay)}}
	lim.first(&t)
	moved, err := s.cfg.Store.Transition(ctx, job.ID, t)
	if err != nil {
		s.storeFailed("defer", job.ID, err)
		return
	}
	waits.WithLabelValues(string(reason.TenantLimit)).Inc()
	s.moved(moved, t)
}

// end moves a job to a terminal state with t (storing admission's decision
// with it), and records it in the DLQ when dlq is set.
func (s *Scheduler) end(ctx context.Context, job *jobstore.Job, lim limits, t jobstore.Transition, dlq bool) {
	lim.first(&t)
	moved, err := s.cfg.Store.Transition(ctx, job.ID, t)
	if err != nil {
		s.storeFailed("end", job.ID, err)
		return
	}
	if !dlq {
		jobsCompleted.WithLabelValues(s.topicLabel(moved.Topic), string(moved.State)).Inc()
		s.moved(moved, t)
		return
	}
	s.deadLettered(ctx, moved, t)
}

// deadLettered records an ended job in the DLQ and tells everyone.
func (s *Scheduler) deadLettered(ctx context.Context, job *jobstore.Job, t jobstore.Transition) {
	e := jobstore.DLQEntry{JobID: job.ID, Topic: job.Topic, Tenant: job.Tenant, Reason: t.Reason, Message: t.Message, At: job.UpdatedAt}
	if err := s.cfg.Store.AddDLQ(ctx, e); err != nil {
		storeErrors.WithLabelValues("dlq").Inc()
		s.log.Error("dlq write failed", "job_id", job.ID, "err", err)
	}
	dlqTotal.WithLabelValues(t.Reason).Inc()
	jobsCompleted.WithLabelValues(s.topicLabel(job.Topic), string(job.State)).Inc()
	s.log.Info("job dead-lettered", "job_id", job.ID, "topic", job.Topic, "state", job.State, "reason", t.Reason, "message", t.Message)
	_ = s.cfg.Bus.Publish(bus.SubjectDLQ, &wardv1.DLQEntry{JobId: e.JobID, Topic: e.Topic, TenantId: e.Tenant,
		Reason: e.Reason, Message: e.Message, AtUnixMs: e.At.UnixMilli(), Job: Record(job)})
	s.moved(job, t)
}
