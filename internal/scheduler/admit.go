package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/ward-run/ward/api/reason"
	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/scheduler/placement"
	"github.com/ward-run/ward/internal/telemetry"
)

// Job and decision ids are random UUIDs, one or more a job: they come from
// uuid's pool of random bytes, read from the system's generator in
// batches, not a getrandom call (and an allocation) each. Set before any
// id is made, as uuid asks.
func init() { uuid.EnableRandPool() }

// deadlineAbsolute: budget deadlines at or above it are Unix milliseconds,
// below it durations from submission (10^12 ms is September 2001).
const deadlineAbsolute = 1_000_000_000_000

// refuse is the reply to a submission refused with code.
func refuse(code reason.Code, format string, args ...any) *wardv1.SubmitReply {
	submitsRefused.WithLabelValues(string(code)).Inc()
	return &wardv1.SubmitReply{Reason: string(code), Message: fmt.Sprintf(format, args...)}
}

// handleSubmit stores a submission, acknowledges it, then admits it. The
// job's tenant is the one the subject names — the credential's, since a
// tenant may publish on its own subject only — and a payload that names
// another is refused.
//
// On a store that answers before it is durable (jobstore.EarlySubmitter:
// the logged stores), the admission starts at once and the reply goes
// once the submission's record is appended (submitAck): the job's first
// move is then usually appended in the same batch as its creation, and
// the ticket, sent after that move is appended, never comes before the
// reply.
func (s *Scheduler) handleSubmit(ctx context.Context, msg *nats.Msg, req *wardv1.JobRequest) {
	var (
		reply  *wardv1.SubmitReply
		job    *jobstore.Job
		queued map[string]int
		ack    = &submitAck{s: s, msg: msg}
		stored bool // acceptFor was asked, and calls ack.durable
	)
	ack.left.Store(2)
	switch tenant := bus.TenantOf(msg.Subject); {
	case tenant == bus.AllTenants:
		reply = refuse(reason.BadRequest, "a job is submitted for a tenant: submit on %s", bus.TenantSubject(bus.SubjectSubmit, "<tenant>"))
	case req.GetTenantId() != "" && req.GetTenantId() != tenant:
		reply = refuse(reason.TenantMismatch, "the submission names tenant %q, its credential is tenant %q's", req.GetTenantId(), tenant)
	case hasSystemLabel(req.GetLabels()):
		reply = refuse(reason.BadRequest, "labels under %q are Ward's own (a workflow step's run and task): a client may not set them", placement.SystemLabelPrefix)
	default:
		req.TenantId = tenant
		reply, job, queued = s.acceptFor(ctx, req, false, ack.durable)
		stored = true
	}
	if !stored {
		ack.durable(nil)
	}
	if s.router != nil {
		if t := bus.TenantOf(msg.Subject); t != bus.AllTenants {
			// Where the tenant's next submissions go: its shard's owner.
			reply.Shard = strconv.Itoa(s.router.shards.ShardOf(t))
		}
	}
	ack.answered(reply)
	if job == nil {
		return
	}
	s.admit(ctx, job, queued, req.Payload)
}

// submitAck sends a submission's reply once the reply is made and the
// store has made it durable, whichever comes last (handleSubmit).
type submitAck struct {
	s     *Scheduler
	msg   *nats.Msg
	reply *wardv1.SubmitReply
	err   error        // why the store could not make the answer durable
	left  atomic.Int32 // of answered and durable, those not yet called
}

// durable is the store's word that the answer is durable (nil), or that
// it failed behind it.
func (a *submitAck) durable(err error) {
	a.err = err
	a.done()
}

// answered hands over the reply.
func (a *submitAck) answered(reply *wardv1.SubmitReply) {
	a.reply = reply
	a.done()
}

// done sends the reply once both have been called. A store that failed
// behind its answer turns it into store_error, as a failed Submit does.
func (a *submitAck) done() {
	if a.left.Add(-1) != 0 {
		return
	}
	reply := a.reply
	if a.err != nil {
		shard := reply.GetShard()
		reply = a.s.createFailed(context.Background(), reply.GetJobId(), a.err)
		reply.Shard = shard
	}
	if err := a.s.cfg.Bus.Reply(a.msg, reply); err != nil {
		a.s.log.Warn("submit reply failed", "job_id", reply.GetJobId(), "err", err)
	}
}

// createFailed counts and logs a submission the store failed to take,
// and is its reply.
func (s *Scheduler) createFailed(ctx context.Context, id string, err error) *wardv1.SubmitReply {
	storeErrors.WithLabelValues("create").Inc()
	s.log.ErrorContext(ctx, "store create failed", "job_id", id, "err", err)
	return refuse(reason.StoreError, "job store unavailable")
}

// hasSystemLabel reports whether labels holds one of Ward's own.
func hasSystemLabel(labels map[string]string) bool {
	for k := range labels {
		if strings.HasPrefix(k, placement.SystemLabelPrefix) {
			return true
		}
	}
	return false
}

// accept checks a submission and stores it: one store round trip, which
// also takes a token of the tenant's rate bucket and checks the pool
// queues' cap. It returns the stored job (nil when refused or a duplicate)
// and the length of each eligible pool's queue.
func (s *Scheduler) accept(ctx context.Context, req *wardv1.JobRequest) (*wardv1.SubmitReply, *jobstore.Job, map[string]int) {
	return s.acceptFor(ctx, req, false, nil)
}

// acceptFor is accept; a step of a workflow run (step) takes no token of
// its tenant's rate bucket: the bucket paces clients' submissions, and the
// run was admitted as a whole (its steps are paced by max_parallel).
//
// With then set, the store may answer before the job is durable
// (jobstore.SubmitThen): then is called once, when the reply may be sent,
// and the job may be admitted at once.
func (s *Scheduler) acceptFor(ctx context.Context, req *wardv1.JobRequest, step bool, then func(error)) (*wardv1.SubmitReply, *jobstore.Job, map[string]int) {
	defer func() {
		if then != nil { // refused before the store was asked
			then(nil)
		}
	}()
	if req.Traceparent == "" && telemetry.Enabled() {
		// A client that does not trace, a workflow's step: the job's
		// trace starts here, and its admissions are this span's children.
		var span trace.Span
		ctx, span = telemetry.Start(ctx, "ward.submit", trace.SpanKindServer)
		defer span.End()
		req.Traceparent = telemetry.Traceparent(ctx)
	}
	switch {
	case req.GetTopic() == "":
		return refuse(reason.BadRequest, "topic is required"), nil, nil
	case req.GetPriority() < 0 || req.GetPriority() > 10:
		return refuse(reason.BadRequest, "priority %d is outside 0..10", req.GetPriority()), nil, nil
	case strings.ContainsAny(req.GetJobId(), " .*>\t\r\n"):
		return refuse(reason.BadRequest, "job id %q may not contain spaces, dots or wildcards", req.GetJobId()), nil, nil
	case req.GetJobId() != "" && jobstore.CheckID(req.GetJobId()) != nil:
		return refuse(reason.BadRequest, "%v", jobstore.CheckID(req.GetJobId())), nil, nil
	case req.GetResources().GetCpuMillicores() < 0 || req.GetResources().GetMemoryBytes() < 0:
		return refuse(reason.BadRequest, "resources may not be negative"), nil, nil
	case req.GetBudget().GetMaxRetries() < 0 || req.GetBudget().GetMaxRetries() > config.MaxRetriesLimit:
		return refuse(reason.BadRequest, "budget.max_retries %d is outside 0..%d", req.GetBudget().GetMaxRetries(), config.MaxRetriesLimit), nil, nil
	case req.GetBudget().GetDeadlineMs() < 0:
		return refuse(reason.BadRequest, "budget.deadline_ms may not be negative"), nil, nil
	}
	if code, msg := s.modes.refuse(req.GetPriority()); code != "" {
		return refuse(code, "%s", msg), nil, nil
	}
	if req.JobId == "" {
		req.JobId = uuid.NewString()
	}
	c := s.conf.load()
	pools, _ := route(c.pools, req.Topic, req.Requires, req.Labels)
	limits := c.sched.Tenants.For(req.TenantId)
	now := time.Now()
	// The job's trace: the submission's traceparent, when it is one (its
	// canonical 55 characters: it travels in every ticket), and its id.
	traceID, traceparent := telemetry.TraceID(req.Traceparent), ""
	if traceID != "" {
		traceparent = req.Traceparent[:55]
	} else {
		traceID = req.TraceId
	}
	job := &jobstore.Job{
		ID:             req.JobId,
		Topic:          req.Topic,
		Tenant:         req.TenantId,
		Priority:       int(req.Priority),
		Labels:         req.Labels,
		Requires:       req.Requires,
		IdempotencyKey: req.IdempotencyKey,
		TraceID:        traceID,
		Traceparent:    traceparent,
		DeadlineMS:     req.GetBudget().GetDeadlineMs(),
		MaxRetries:     int(req.GetBudget().GetMaxRetries()),
		Env:            req.Env,
		ParentJobID:    req.ParentJobId,
		WorkflowID:     req.WorkflowId,
		CPUMillicores:  req.GetResources().GetCpuMillicores(),
		MemoryBytes:    req.GetResources().GetMemoryBytes(),
		PayloadSize:    int64(len(req.Payload)),
		PayloadDigest:  bus.ContentDigest(req.Payload),
		CreatedAt:      now,
	}
	job.Deadline = deadline(job, nil)
	if len(req.Payload) == 0 && strings.HasPrefix(req.ContextPtr, bus.ObjectScheme) {
		// A context too large for a message, which the client stored in
		// the object store (bus/README.md, "Context pointers"). The policy
		// judges its true size, not the empty payload's.
		size, why := s.contextSize(ctx, req.ContextPtr, req.TenantId)
		if why != "" {
			return refuse(reason.BadRequest, "%s", why), nil, nil
		}
		digest, err := bus.ContextDigest(req.ContextPtr)
		if err != nil {
			return refuse(reason.BadRequest, "%v", err), nil, nil
		}
		job.ContextPtr, job.PayloadSize, job.PayloadDigest = req.ContextPtr, size, digest
	}
	guard := jobstore.Guard{Rate: limits.Rate, Burst: limits.Burst, Queues: pools, QueueCap: c.sched.Queue.Cap}
	if step {
		guard.Rate, guard.Burst = 0, 0
	}
	var (
		res jobstore.Submitted
		err error
	)
	if then != nil {
		res, err = jobstore.SubmitThen(ctx, s.cfg.Store, job, req.Payload, guard, then)
		then = nil // the store calls it
	} else {
		res, err = s.cfg.Store.Submit(ctx, job, req.Payload, guard)
	}
	switch {
	case errors.Is(err, jobstore.ErrExists) && s.sameRequest(ctx, job):
		// The same request sent again (a client's retry after a reply it
		// did not get, across a restart or a takeover): a duplicate of the
		// job it made, as an idempotency key's would be.
		return &wardv1.SubmitReply{JobId: req.JobId, Accepted: true, Duplicate: true}, nil, nil
	case errors.Is(err, jobstore.ErrExists):
		return refuse(reason.BadRequest, "job %s exists already", req.JobId), nil, nil
	case errors.Is(err, jobstore.ErrRateLimited):
		return refuse(reason.RateLimited, "tenant %q submits faster than its limit of %g jobs a second (burst %d); slow down and resubmit",
			req.TenantId, limits.Rate, limits.Burst), nil, nil
	case errors.Is(err, jobstore.ErrIdempotencyConflict) && step:
		// A step's key is its job's id: the job exists, made by an earlier
		// drive of the run; its end comes as any job's (as a duplicate).
		return &wardv1.SubmitReply{JobId: res.ID, Accepted: true, Duplicate: true}, nil, nil
	case errors.Is(err, jobstore.ErrIdempotencyConflict):
		return refuse(reason.IdempotencyConflict, "idempotency key %q was used for another request (another topic or payload) by job %s; use a new key for a new request",
			req.IdempotencyKey, res.ID), nil, nil
	case errors.Is(err, jobstore.ErrQueueFull):
		return refuse(reason.QueueFull, "every pool of topic %q has %d jobs waiting (queue.cap); resubmit later",
			req.Topic, c.sched.Queue.Cap), nil, nil
	case err != nil:
		return s.createFailed(ctx, req.JobId, err), nil, nil
	case !res.Created:
		return &wardv1.SubmitReply{JobId: res.ID, Accepted: true, Duplicate: true}, nil, nil
	}
	jobsReceived.WithLabelValues(s.ends.topicLabel(req.Topic)).Inc()
	// Its creation (PENDING) is told with its first move's event
	// (jobstore.Job.FirstMove, publishVia): one message for both.
	var queued map[string]int // nil while every queue is empty, the common case
	for i, p := range pools {
		if res.Queued[i] > 0 {
			if queued == nil {
				queued = make(map[string]int, len(pools))
			}
			queued[p] = res.Queued[i]
		}
	}
	return &wardv1.SubmitReply{JobId: res.ID, Accepted: true}, job, queued
}

// sameRequest reports whether the stored job of job's id was made by the
// same request: the same tenant, topic and payload (its digest).
func (s *Scheduler) sameRequest(ctx context.Context, job *jobstore.Job) bool {
	stored, err := s.cfg.Store.Get(ctx, job.ID)
	return err == nil && stored.Tenant == job.Tenant && stored.Topic == job.Topic && stored.PayloadDigest == job.PayloadDigest
}

// submitStep accepts the job of a workflow run's step (acceptFor, step):
// it returns the reply and, when it stored a new job, the job's
// admission, which the run makes next.
func (s *Scheduler) submitStep(ctx context.Context, req *wardv1.JobRequest) (*wardv1.SubmitReply, func()) {
	reply, job, queued := s.acceptFor(ctx, req, true, nil)
	if job == nil {
		return reply, nil
	}
	return reply, func() { s.admit(ctx, job, queued, req.Payload) }
}

// route returns the pools a job may run in, in the topic's order: those
// that offer every capability the job requires, narrowed to its
// preferred_pool when that is one of them. When there is none, it says why.
// The slice may be the configuration's own: callers only read it.
func route(p *config.Pools, topic string, requires []string, labels map[string]string) ([]string, string) {
	mapped := p.PoolsFor(topic)
	if len(mapped) == 0 {
		return nil, fmt.Sprintf("no pool serves topic %q", topic)
	}
	if len(requires) == 0 && labels[placement.LabelPreferredPool] == "" {
		return mapped, "" // every pool of the topic, as configured
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
	// payload is the job's context when admission has it at hand (a fresh
	// submission that carried it): the dispatch carries it, signed, and
	// the host need not read it from the store. Nil otherwise.
	payload []byte
}

// admit takes a PENDING job through safety, routing and placement, and
// dispatches it, parks it in a queue, defers it, or ends it. queued holds
// the queue lengths of its pools for a fresh submission (a job placed
// while others wait would jump the queue), nil otherwise; payload is its
// context when the submission carried it, nil otherwise.
func (s *Scheduler) admit(ctx context.Context, job *jobstore.Job, queued map[string]int, payload []byte) {
	// Each admission (a fresh submission's, a queued job's, a retry's) is
	// a span of the job's trace.
	ctx, span := telemetry.StartFrom(ctx, job.Traceparent, "ward.admit", trace.SpanKindConsumer)
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(attribute.String("ward.job_id", job.ID), attribute.String("ward.topic", job.Topic),
			attribute.String("ward.tenant", job.Tenant), attribute.Int("ward.attempt", job.Attempt))
	}
	// Before any of the tenant's jobs runs, its host may need the bucket
	// of large results (bigresults.go): once per tenant.
	s.objects.ensureResultBucket(ctx, job.Tenant)
	c := s.conf.load()
	if c.mods != nil && len(c.pools.PoolsFor(job.Topic)) == 0 {
		// Perhaps a deploy this replica has not heard of yet declares it.
		c = s.caughtUp(ctx)
	}
	lim, ok := s.decide(ctx, c, job)
	if !ok {
		return
	}
	lim.payload = payload
	now := time.Now()
	if !lim.deadline.IsZero() && !now.Before(lim.deadline) {
		s.ends.end(ctx, job, lim, jobstore.Transition{To: jobstore.Timeout, Reason: string(reason.DeadlineExceeded),
			Message: "its deadline passed before it could run"}, false)
		return
	}
	if name, ok := s.runner.workflowOf(job.Topic); ok {
		s.startRunOf(ctx, job, lim, name)
		return
	}
	pools, why := route(c.pools, job.Topic, job.Requires, job.Labels)
	if len(pools) == 0 {
		s.ends.end(ctx, job, lim, jobstore.Transition{To: jobstore.Failed, Reason: string(reason.NoPoolMapping), Message: why}, true)
		return
	}
	if pools, why = c.retired(pools); len(pools) == 0 {
		s.ends.end(ctx, job, lim, jobstore.Transition{To: jobstore.Failed, Reason: string(reason.ModuleRetired), Message: why}, true)
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
					module.Requested = &wardv1.Grants{HttpHosts: r.HTTPHosts, ReadOnlyDirs: r.ReadOnlyDirs, EnvKeys: r.EnvKeys, Services: r.Services,
						MemoryLimitBytes: r.MemoryLimitBytes, TimeLimitMs: r.TimeLimitMS}
				}
			}
		}
		cctx, span := telemetry.Start(ctx, "ward.safety.check", trace.SpanKindClient)
		decision, err := s.cfg.Safety.Check(cctx, &safetyv1.CheckRequest{
			JobId:         job.ID,
			Topic:         job.Topic,
			TenantId:      job.Tenant,
			Labels:        job.Labels,
			Requires:      job.Requires,
			Priority:      int32(job.Priority),
			PayloadSize:   job.PayloadSize,
			PayloadDigest: job.PayloadDigest,
			Pool:          poolName,
			Module:        module,
		})
		if span.IsRecording() {
			checked(span, decision, err)
		}
		span.End()
		if err != nil {
			s.log.WarnContext(ctx, "safety kernel unavailable; failing closed", "job_id", job.ID, "err", err)
			safetyDenials.WithLabelValues(string(reason.SafetyUnavailable)).Inc()
			s.ends.end(ctx, job, lim, jobstore.Transition{To: jobstore.Denied, Reason: string(reason.SafetyUnavailable),
				Message: "safety kernel unavailable: " + err.Error()}, true)
			return lim, false
		}
		lim.safety = safetyRecord(decision)
		if decision.GetDecision() == safetyv1.Decision_DECISION_DENY {
			safetyDenials.WithLabelValues(string(reason.SafetyDenied)).Inc()
			s.ends.end(ctx, job, lim, jobstore.Transition{To: jobstore.Denied, Reason: string(reason.SafetyDenied),
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

// checked sets a safety check's span's attributes: the decision, whether
// the kernel's cache answered, the policy revision, the reasons.
func checked(span trace.Span, d *safetyv1.CheckResponse, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "safety kernel unavailable")
		return
	}
	span.SetAttributes(attribute.String("ward.safety.decision", strings.TrimPrefix(d.GetDecision().String(), "DECISION_")),
		attribute.Bool("ward.safety.cached", d.GetCached()), attribute.String("ward.safety.policy_revision", d.GetPolicyRevision()),
		attribute.String("ward.safety.decision_id", d.GetDecisionId()), attribute.StringSlice("ward.safety.reasons", d.GetReasons()))
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

// contextSize returns the size of the context ptr points to, or why the
// submission is refused: a pointer that is not a context of tenant's, or
// names no object.
func (s *Scheduler) contextSize(ctx context.Context, ptr, tenant string) (int64, string) {
	owner, err := bus.ContextOwner(ptr)
	if err != nil {
		return 0, err.Error()
	}
	if owner != tenant && !(owner == "_" && tenant == "") {
		return 0, fmt.Sprintf("context %s belongs to another tenant", ptr)
	}
	if err := s.objects.openObjects(); err != nil {
		return 0, err.Error()
	}
	size, err := s.objects.objs.Size(ctx, ptr)
	if err != nil {
		return 0, fmt.Sprintf("context %s: %v", ptr, err)
	}
	return size, ""
}
