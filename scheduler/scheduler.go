// Package scheduler is Ward's control loop: it admits submitted jobs, asks
// the safety kernel, places each job on the least-loaded live host of its
// pool, dispatches it, follows its progress and results, and times out what
// went silent. All state that matters lives in the job store; replicas share
// the work through the NATS queue group ward-scheduler.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/encoding/protojson"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/config"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
)

// SafetyChecker asks the safety kernel about a job. *safety.Client is one.
type SafetyChecker interface {
	Check(ctx context.Context, req *safetyv1.CheckRequest) (*safetyv1.CheckResponse, error)
}

// Config configures a Scheduler. Bus, Store, Safety and Pools are required.
type Config struct {
	// ID names this replica (lock owner, logs); a random id when empty.
	ID       string
	Bus      *bus.Conn
	Store    jobstore.Store
	Safety   SafetyChecker
	Pools    *config.Pools
	Timeouts *config.Timeouts // the defaults when nil
	Logger   *slog.Logger     // slog.Default() when nil
	// Concurrency bounds the submissions (and, separately, the results and
	// progress reports) handled at once. Default 64.
	Concurrency int
	// WorkerTTL is how long a silent worker stays eligible. Default 30 s.
	WorkerTTL time.Duration
}

// Scheduler is one scheduler replica.
type Scheduler struct {
	cfg      Config
	id       string
	log      *slog.Logger
	registry *Registry

	submits *bus.Workers // submissions
	updates *bus.Workers // results, progress, queries
	beats   *bus.Workers // heartbeats

	mu      sync.Mutex // guards the 3 following fields
	subs    []*bus.Subscription
	stop    context.CancelFunc
	stopped bool

	loops sync.WaitGroup
}

// New validates cfg and returns a Scheduler ready to Start.
func New(cfg Config) (*Scheduler, error) {
	switch {
	case cfg.Bus == nil:
		return nil, errors.New("scheduler: Config.Bus is required")
	case cfg.Store == nil:
		return nil, errors.New("scheduler: Config.Store is required")
	case cfg.Safety == nil:
		return nil, errors.New("scheduler: Config.Safety is required")
	case cfg.Pools == nil:
		return nil, errors.New("scheduler: Config.Pools is required")
	}
	if cfg.Timeouts == nil {
		t, err := config.ParseTimeouts("defaults", nil)
		if err != nil {
			return nil, err
		}
		cfg.Timeouts = t
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 64
	}
	if cfg.WorkerTTL <= 0 {
		cfg.WorkerTTL = 30 * time.Second
	}
	if cfg.ID == "" {
		cfg.ID = "scheduler-" + uuid.NewString()[:8]
	}
	return &Scheduler{
		cfg:      cfg,
		id:       cfg.ID,
		log:      cfg.Logger.With("component", "scheduler", "scheduler_id", cfg.ID),
		registry: NewRegistry(cfg.WorkerTTL),
		submits:  bus.NewWorkers(cfg.Concurrency),
		updates:  bus.NewWorkers(cfg.Concurrency),
		beats:    bus.NewWorkers(4),
	}, nil
}

// Registry returns the scheduler's view of the live workers.
func (s *Scheduler) Registry() *Registry { return s.registry }

// Start subscribes to the bus and starts the reconciler. It returns once
// every subscription is in place.
func (s *Scheduler) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.mu.Lock()
	s.stop = cancel
	s.mu.Unlock()

	c, q := s.cfg.Bus, bus.SchedulerQueue
	var subs []*bus.Subscription
	add := func(sub *bus.Subscription, err error) error {
		if err == nil {
			subs = append(subs, sub)
		}
		return err
	}
	err := errors.Join(
		add(bus.Subscribe(ctx, c, bus.SubjectHeartbeats, "", s.beats, s.log, s.handleHeartbeat)),
		add(bus.Subscribe(ctx, c, bus.SubjectResult, q, s.updates, s.log, s.handleResult)),
		add(bus.Subscribe(ctx, c, bus.SubjectProgress, q, s.updates, s.log, s.handleProgress)),
		add(bus.Subscribe(ctx, c, bus.SubjectJobGet, q, s.updates, s.log, s.handleGet)),
		add(bus.Subscribe(ctx, c, bus.SubjectJobList, q, s.updates, s.log, s.handleList)),
		add(bus.Subscribe(ctx, c, bus.SubjectSubmit, q, s.submits, s.log, s.handleSubmit)),
	)
	s.mu.Lock()
	s.subs = subs
	s.mu.Unlock()
	if err != nil {
		_ = s.Shutdown(context.Background())
		return err
	}
	if err := c.Flush(); err != nil {
		_ = s.Shutdown(context.Background())
		return fmt.Errorf("scheduler: %w", err)
	}
	s.loops.Add(2)
	go s.reconcileLoop(ctx)
	go s.evictLoop(ctx)
	s.log.Info("scheduler started")
	return nil
}

// Shutdown stops taking new messages, lets the ones received finish, and
// stops the reconciler. It returns ctx's error if that takes too long.
func (s *Scheduler) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	subs, stop := s.subs, s.stop
	s.mu.Unlock()

	var errs []error
	for _, sub := range subs {
		errs = append(errs, sub.Drain(ctx))
	}
	for _, w := range []*bus.Workers{s.submits, s.updates, s.beats} {
		errs = append(errs, w.Wait(ctx))
	}
	if stop != nil {
		stop()
	}
	s.loops.Wait()
	s.log.Info("scheduler stopped")
	return errors.Join(errs...)
}

func (s *Scheduler) handleHeartbeat(_ context.Context, _ *nats.Msg, hb *wardv1.Heartbeat) {
	if hb.GetWorkerId() == "" {
		return
	}
	s.registry.Observe(hb, time.Now())
}

func (s *Scheduler) evictLoop(ctx context.Context) {
	defer s.loops.Done()
	t := time.NewTicker(min(s.cfg.WorkerTTL/4, 5*time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if n := s.registry.Evict(now); n > 0 {
				s.log.Info("evicted silent workers", "count", n)
			}
			liveWorkers.Set(float64(s.registry.Len()))
		}
	}
}

// topicLabel keeps metric cardinality bounded: only mapped topics are labels.
func (s *Scheduler) topicLabel(topic string) string {
	if len(s.cfg.Pools.PoolsFor(topic)) == 0 {
		return "unmapped"
	}
	return topic
}

func refuse(reason, format string, args ...any) *wardv1.SubmitReply {
	submitsRefused.WithLabelValues(reason).Inc()
	return &wardv1.SubmitReply{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// handleSubmit stores a submission, acknowledges it, then admits it.
func (s *Scheduler) handleSubmit(ctx context.Context, msg *nats.Msg, req *wardv1.JobRequest) {
	reply := s.accept(ctx, req)
	if err := s.cfg.Bus.Reply(msg, reply); err != nil {
		s.log.Warn("submit reply failed", "job_id", reply.GetJobId(), "err", err)
	}
	if !reply.GetAccepted() || reply.GetDuplicate() {
		return
	}
	s.admit(ctx, req)
}

func (s *Scheduler) accept(ctx context.Context, req *wardv1.JobRequest) *wardv1.SubmitReply {
	switch {
	case req.GetTopic() == "":
		return refuse(ReasonBadRequest, "topic is required")
	case req.GetPriority() < 0 || req.GetPriority() > 10:
		return refuse(ReasonBadRequest, "priority %d is outside 0..10", req.GetPriority())
	case strings.ContainsAny(req.GetJobId(), " .*>\t\r\n"):
		return refuse(ReasonBadRequest, "job id %q may not contain spaces, dots or wildcards", req.GetJobId())
	}
	if req.JobId == "" {
		req.JobId = uuid.NewString()
	}
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
	}
	id, created, err := s.cfg.Store.Create(ctx, job, req.Payload)
	switch {
	case errors.Is(err, jobstore.ErrExists):
		return refuse(ReasonBadRequest, "job %s exists already", req.JobId)
	case err != nil:
		storeErrors.WithLabelValues("create").Inc()
		s.log.Error("store create failed", "job_id", req.JobId, "err", err)
		return refuse(ReasonStoreError, "job store unavailable")
	case !created:
		return &wardv1.SubmitReply{JobId: id, Accepted: true, Duplicate: true}
	}
	req.ContextPtr = job.ContextPtr
	jobsReceived.WithLabelValues(s.topicLabel(req.Topic)).Inc()
	s.publishEvent(&jobstore.Job{ID: id, State: jobstore.Pending}, jobstore.Event{At: job.CreatedAt, State: jobstore.Pending})
	return &wardv1.SubmitReply{JobId: id, Accepted: true}
}

// admit runs a stored PENDING job through safety, routing and placement,
// and dispatches it.
func (s *Scheduler) admit(ctx context.Context, req *wardv1.JobRequest) {
	id := req.JobId
	poolName := ""
	var pool config.Pool
	if pools := s.cfg.Pools.PoolsFor(req.Topic); len(pools) > 0 {
		poolName = pools[0]
		pool = s.cfg.Pools.Pools[poolName]
	}

	decision, err := s.cfg.Safety.Check(ctx, &safetyv1.CheckRequest{
		JobId:       id,
		Topic:       req.Topic,
		TenantId:    req.TenantId,
		Labels:      req.Labels,
		Requires:    req.Requires,
		Priority:    req.Priority,
		PayloadSize: int64(len(req.Payload)),
		Pool:        poolName,
		Module:      &safetyv1.ModuleRequest{Name: pool.Module},
	})
	if err != nil {
		s.log.Warn("safety kernel unavailable; failing closed", "job_id", id, "err", err)
		safetyDenials.WithLabelValues(ReasonSafetyUnavailable).Inc()
		s.deadLetter(ctx, req, jobstore.Transition{To: jobstore.Denied, Reason: ReasonSafetyUnavailable,
			Message: "safety kernel unavailable: " + err.Error()})
		return
	}
	safety := safetyRecord(decision)
	if decision.GetDecision() == safetyv1.Decision_DECISION_DENY {
		safetyDenials.WithLabelValues(ReasonSafetyDenied).Inc()
		s.deadLetter(ctx, req, jobstore.Transition{To: jobstore.Denied, Reason: ReasonSafetyDenied, Safety: safety,
			Message: strings.Join(decision.GetReasons(), "; ")})
		return
	}
	if poolName == "" {
		s.deadLetter(ctx, req, jobstore.Transition{To: jobstore.Failed, Reason: ReasonNoPoolMapping, Safety: safety,
			Message: fmt.Sprintf("no pool serves topic %q", req.Topic)})
		return
	}

	requires := append(append([]string(nil), pool.Requires...), req.Requires...)
	workers := s.registry.Snapshot(nil, poolName, time.Now())
	placed, ok := PlaceLeastLoaded(workers, requires)
	if !ok {
		msg := fmt.Sprintf("no live host serves pool %q", poolName)
		if len(workers) > 0 {
			msg = fmt.Sprintf("no live host of pool %q has %v", poolName, requires)
		}
		s.deadLetter(ctx, req, jobstore.Transition{To: jobstore.Failed, Reason: ReasonNoWorkers, Safety: safety, Message: msg})
		return
	}

	job, err := s.cfg.Store.Transition(ctx, id, jobstore.Transition{
		To: jobstore.Scheduled, Pool: poolName, WorkerID: placed.WorkerID, Safety: safety,
		Message: placed.Reasoning,
	})
	if err != nil {
		s.storeFailed("schedule", id, err)
		return
	}
	s.publishEvent(job, jobstore.Event{At: job.UpdatedAt, State: jobstore.Scheduled, Message: placed.Reasoning, WorkerID: placed.WorkerID})
	s.dispatch(ctx, req, job, decision.GetConstraints())
}

// dispatch writes DISPATCHED, under the job's dispatch lock, before it
// publishes: a fast host's result may otherwise arrive first.
func (s *Scheduler) dispatch(ctx context.Context, req *wardv1.JobRequest, job *jobstore.Job, cons *wardv1.Constraints) {
	id, worker := job.ID, job.WorkerID
	ok, err := s.cfg.Store.LockDispatch(ctx, id, s.id, 30*time.Second)
	if err != nil || !ok {
		if err == nil {
			err = errors.New("dispatch lock held by another scheduler")
		}
		s.storeFailed("lock", id, err)
		return
	}
	defer func() {
		if err := s.cfg.Store.UnlockDispatch(context.WithoutCancel(ctx), id, s.id); err != nil {
			storeErrors.WithLabelValues("unlock").Inc()
		}
	}()
	job, err = s.cfg.Store.Transition(ctx, id, jobstore.Transition{To: jobstore.Dispatched, From: jobstore.Scheduled, Attempt: 1})
	if err != nil {
		s.storeFailed("dispatch", id, err)
		return
	}
	out := &wardv1.JobRequest{
		JobId: id, Topic: req.Topic, Priority: req.Priority, TenantId: req.TenantId,
		ContextPtr: job.ContextPtr, Labels: req.Labels, Requires: req.Requires, Env: req.Env,
		Budget: req.Budget, TraceId: req.TraceId, ParentJobId: req.ParentJobId, WorkflowId: req.WorkflowId,
		Constraints: cons, Pool: job.Pool, Attempt: 1,
	}
	if err := s.cfg.Bus.Publish(bus.WorkerJobsSubject(worker), out); err != nil {
		s.log.Error("dispatch publish failed", "job_id", id, "worker_id", worker, "err", err)
		job, terr := s.cfg.Store.Transition(ctx, id, jobstore.Transition{To: jobstore.Failed, From: jobstore.Dispatched,
			Reason: ReasonDispatchFailed, Message: err.Error()})
		if terr == nil {
			s.publishEvent(job, jobstore.Event{At: job.UpdatedAt, State: jobstore.Failed, Reason: ReasonDispatchFailed, Message: err.Error()})
		}
		return
	}
	s.registry.Dispatched(worker)
	jobsDispatched.WithLabelValues(s.topicLabel(req.Topic)).Inc()
	s.publishEvent(job, jobstore.Event{At: job.UpdatedAt, State: jobstore.Dispatched, WorkerID: worker})
}

// deadLetter ends a PENDING job with t and records it in the DLQ.
func (s *Scheduler) deadLetter(ctx context.Context, req *wardv1.JobRequest, t jobstore.Transition) {
	job, err := s.cfg.Store.Transition(ctx, req.JobId, t)
	if err != nil {
		s.storeFailed("dead-letter", req.JobId, err)
		return
	}
	e := jobstore.DLQEntry{JobID: job.ID, Topic: job.Topic, Tenant: job.Tenant, Reason: t.Reason, Message: t.Message, At: job.UpdatedAt}
	if err := s.cfg.Store.AddDLQ(ctx, e); err != nil {
		storeErrors.WithLabelValues("dlq").Inc()
		s.log.Error("dlq write failed", "job_id", job.ID, "err", err)
	}
	dlqTotal.WithLabelValues(t.Reason).Inc()
	jobsCompleted.WithLabelValues(s.topicLabel(job.Topic), string(job.State)).Inc()
	s.log.Info("job dead-lettered", "job_id", job.ID, "topic", job.Topic, "state", job.State, "reason", t.Reason, "message", t.Message)
	_ = s.cfg.Bus.Publish(bus.SubjectDLQ, &wardv1.DLQEntry{JobId: e.JobID, Topic: e.Topic, TenantId: e.Tenant,
		Reason: e.Reason, Message: e.Message, AtUnixMs: e.At.UnixMilli()})
	s.publishEvent(job, jobstore.Event{At: job.UpdatedAt, State: job.State, Reason: t.Reason, Message: t.Message})
}

func (s *Scheduler) storeFailed(op, id string, err error) {
	if errors.Is(err, jobstore.ErrInvalidTransition) {
		// Another replica, a result or the reconciler got there first.
		s.log.Debug("transition refused", "op", op, "job_id", id, "err", err)
		return
	}
	storeErrors.WithLabelValues(op).Inc()
	s.log.Error("job store failed", "op", op, "job_id", id, "err", err)
}

// handleResult records a host's result. Results may arrive before RUNNING,
// or after the reconciler gave up: the store decides which moves are valid.
func (s *Scheduler) handleResult(ctx context.Context, _ *nats.Msg, r *wardv1.JobResult) {
	to := stateOf(r.GetStatus())
	if !to.Terminal() || to == jobstore.Denied {
		s.log.Warn("result with a non-terminal status dropped", "job_id", r.GetJobId(), "status", r.GetStatus())
		lateUpdates.WithLabelValues("bad_status").Inc()
		return
	}
	t := jobstore.Transition{To: to, ResultPtr: r.GetResultPtr(), WorkerID: r.GetWorkerId(),
		ErrorCode: r.GetErrorCode(), ErrorMessage: r.GetErrorMessage(), Reason: r.GetErrorCode(),
		Message: fmt.Sprintf("ran in %d ms", r.GetExecutionMs())}
	if r.GetErrorMessage() != "" {
		t.Message = r.GetErrorCode() + ": " + r.GetErrorMessage()
	}
	job, err := s.cfg.Store.Transition(ctx, r.GetJobId(), t)
	if err != nil {
		if errors.Is(err, jobstore.ErrInvalidTransition) || errors.Is(err, jobstore.ErrNotFound) {
			lateUpdates.WithLabelValues("result").Inc()
			s.log.Info("late result ignored", "job_id", r.GetJobId(), "err", err)
			return
		}
		s.storeFailed("result", r.GetJobId(), err)
		return
	}
	jobsCompleted.WithLabelValues(s.topicLabel(job.Topic), string(job.State)).Inc()
	s.publishEvent(job, jobstore.Event{At: job.UpdatedAt, State: job.State, Reason: t.Reason, Message: t.Message, WorkerID: r.GetWorkerId()})
}

// handleProgress moves a job to RUNNING when its host reports the start.
func (s *Scheduler) handleProgress(ctx context.Context, _ *nats.Msg, p *wardv1.JobProgress) {
	if p.GetKind() != wardv1.JobProgress_KIND_STARTED {
		return
	}
	job, err := s.cfg.Store.Transition(ctx, p.GetJobId(), jobstore.Transition{To: jobstore.Running, WorkerID: p.GetWorkerId()})
	if err != nil {
		if errors.Is(err, jobstore.ErrInvalidTransition) || errors.Is(err, jobstore.ErrNotFound) {
			lateUpdates.WithLabelValues("progress").Inc()
			return
		}
		s.storeFailed("running", p.GetJobId(), err)
		return
	}
	s.publishEvent(job, jobstore.Event{At: job.UpdatedAt, State: jobstore.Running, WorkerID: p.GetWorkerId()})
}

// publishEvent tells watchers (ward submit --wait, the gateway) of a state change.
func (s *Scheduler) publishEvent(job *jobstore.Job, e jobstore.Event) {
	ev := &wardv1.JobEvent{JobId: job.ID, State: stateEnum(e.State), AtUnixMs: e.At.UnixMilli(),
		Reason: e.Reason, Message: e.Message, WorkerId: e.WorkerID}
	if err := s.cfg.Bus.Publish(bus.EventSubject(job.ID), ev); err != nil {
		s.log.Debug("event publish failed", "job_id", job.ID, "err", err)
	}
}

func safetyRecord(d *safetyv1.CheckResponse) *jobstore.Safety {
	rec := &jobstore.Safety{
		Decision:        strings.TrimPrefix(d.GetDecision().String(), "DECISION_"),
		Reasons:         d.GetReasons(),
		PolicyRevision:  d.GetPolicyRevision(),
		DecisionID:      d.GetDecisionId(),
		InputDigest:     d.GetInputDigest(),
		EvalNS:          d.GetEvalNs(),
		Cached:          d.GetCached(),
		DecidedAtUnixMS: time.Now().UnixMilli(),
	}
	if d.GetConstraints() != nil {
		rec.Constraints, _ = protojson.Marshal(d.GetConstraints())
	}
	return rec
}

func stateOf(s wardv1.JobState) jobstore.State {
	return jobstore.State(strings.TrimPrefix(s.String(), "JOB_STATE_"))
}

func stateEnum(s jobstore.State) wardv1.JobState {
	return wardv1.JobState(wardv1.JobState_value["JOB_STATE_"+string(s)])
}
