// Package scheduler is Ward's control loop: it admits submitted jobs, asks
// the safety kernel, routes each to a pool, places it on a live host of the
// pool by the pool's strategy, dispatches it, follows its progress and
// results, retries what failed, and times out what went silent. Jobs that
// cannot be placed now wait in per-pool priority queues in the store. All
// state that matters lives in the job store; replicas share the work through
// the NATS queue group ward-scheduler, and the reconciler runs on the one
// replica holding its lease. See README.md for the pipeline.
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
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/encoding/protojson"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/scheduler/placement"
)

// SafetyChecker asks the safety kernel about a job. *safety.Client is one.
type SafetyChecker interface {
	Check(ctx context.Context, req *safetyv1.CheckRequest) (*safetyv1.CheckResponse, error)
}

// Config configures a Scheduler. Bus, Store, Safety and Pools are required.
type Config struct {
	// ID names this replica (lock and lease owner, logs); random when empty.
	ID string
	// Bus is the connection to NATS: submissions, results, heartbeats.
	Bus *bus.Conn
	// Store is the job store, where every state that matters lives.
	Store jobstore.Store
	// Safety is the safety kernel, asked about each job at admission.
	Safety SafetyChecker
	// Pools is the routing table (pools.yaml).
	Pools *config.Pools
	// Timeouts are the per-topic timeouts (timeouts.yaml); the defaults
	// when nil.
	Timeouts *config.Timeouts
	// Settings is scheduler.yaml; the defaults when nil.
	Settings *config.Scheduler
	// Files, where a path is set, are watched: when one changes, pools,
	// timeouts and settings are loaded again and take effect for the next
	// decision, without a restart. A file that does not parse is logged and
	// the configuration in force stays.
	Files config.Files
	// Logger logs the scheduler's events; slog.Default() when nil.
	Logger *slog.Logger
	// Modules, when set, is the module registry: the routes deployed
	// manifests declare join Pools, a job goes only to hosts that hold
	// its module's active version (waiting while it rolls out), and a
	// retired module's jobs go to the DLQ (modules.go).
	Modules *modreg.Registry
	// Concurrency bounds the submissions (and, separately, the results and
	// progress reports) handled at once. Default 64.
	Concurrency int
	// WorkerTTL is how long a silent worker stays eligible. Default 30 s.
	WorkerTTL time.Duration

	// Signer signs each dispatch for the one host it is for (signed
	// dispatch, auth/ticket.go). Nil sends unsigned dispatches: a system
	// run --insecure, whose hosts accept them.
	Signer *auth.Signer
	// HostTrust admits hosts by the credential their heartbeats carry. Nil
	// admits any heartbeat: --insecure.
	HostTrust *auth.HostTrust
	// AdminTrust identifies the admin credential that signed an admin
	// request (a mode change, a DLQ retry or drop, a cancel for every
	// tenant): one it cannot identify is refused (admin.go). Nil takes
	// every request on an admin subject as an admin's: --insecure.
	AdminTrust *auth.AdminTrust
	// Audit, when set, is the JetStream of the audit log (package audit):
	// the replica records there the admin actions it carries out, with
	// the admin credential AdminTrust identified, and the module
	// registry's changes with the actor their record claims.
	Audit jetstream.JetStream
	// Workflows are the workflow definitions (YAML) the replica runs by
	// name, by file (config.Workflows: the seed ones and a directory's).
	Workflows map[string][]byte
	// WorkflowDir, when set, is the directory Workflows were read from: it
	// is watched, and its definitions read again when it changes.
	WorkflowDir string
}

// settings is one consistent set of configuration, swapped whole on reload.
type settings struct {
	pools *config.Pools // base with the registry's routes
	base  *config.Pools // pools.yaml
	mods  *modules      // nil without a registry
	// versions holds the module version in force of each pool whose
	// module the registry holds (and did not retire).
	versions map[string]*placement.Module
	timeouts *config.Timeouts
	sched    *config.Scheduler
}

// Scheduler is one scheduler replica. It keeps the lifecycle (New, Start,
// Shutdown, the loops and their WaitGroup, the subscriptions) and the
// steps of a job's admission (admit.go, place.go, dispatch.go, pump.go),
// and composes the parts that own their state and its lock, each holding
// only what it uses: ends (end.go: a job's end, every move's event),
// reports (results.go), cancels (cancel.go: the one path of a cancel),
// reconciler (reconciler.go: its lease, deadlines, lost results, silent
// hosts, what dead replicas left), queries (queries.go: the read
// side), runner (workflows.go: the workflow runs, told of a job's end by
// the hook it registers), objectStores (bigresults.go), fleet (house.go:
// heartbeats, drains, housekeeping), modes (modes.go), admins (admin.go),
// settingsHolder (settings.go: the configuration in force), queueBook
// (pump.go: the pools holding waiting jobs, the pools with no live host),
// runTimes and placer (place.go: the pools' running times; snapshot
// buffers and round-robin picks), Hosts (hosts.go) and domains
// (domains.go).
//
// Lock order: queueBook.mu before Hosts.mu and queueBook.emptyMu (the
// pump's tick, queueBook.recount). Every other lock, mu included, is taken
// alone.
type Scheduler struct {
	cfg     Config
	id      string
	log     *slog.Logger
	admin   *admins // identifies admin requests, audits admin actions (admin.go)
	hosts   *Hosts
	domains *domains

	conf *settingsHolder // the configuration in force

	owners  *owners  // who runs each dispatched job, for forwarding its progress
	ends    *ends    // a job's end, and the events of every move (end.go)
	reports *reports // hosts' results and progress (results.go)
	// cancels is the one path of a job's cancel: the bus's, an admin's,
	// the workflow runs' (cancel.go).
	cancels *cancels

	// objects are the tenants' object stores: the sizes of contexts
	// submitted by pointer, the result buckets, the contexts served to
	// hosts and the large results they send (bigresults.go).
	objects *objectStores

	modes *modes // the mode this replica follows (modes.go)
	// reconciler ends or recovers the jobs nothing else moves, on the
	// replica holding its lease (reconciler.go).
	reconciler *reconciler

	router  *router      // a store of shards with owners: what is another's goes to it (route.go)
	submits *bus.Workers // submissions, and the placements the pump hands out
	updates *bus.Workers // results, progress, cancels, queries
	beats   *bus.Workers // heartbeats

	started time.Time     // when Start ran: the registry fills within a heartbeat
	wake    chan struct{} // capacity freed or a job queued: pump now
	placing sync.Map      // job id -> struct{}: being placed by this replica
	placer  *placer       // snapshot buffers, round-robin picks
	queues  *queueBook    // pools holding waiting jobs, pools with no live host
	runs    *runTimes     // pool -> its jobs' average running time
	fleet   *fleet        // heartbeats, drains, housekeeping (house.go)
	runner  *runner       // the workflow runs this replica drives (workflows.go)
	queries *queries      // the read side: jobs, the DLQ, status, runs (queries.go)
	// modsSeen is the registry's active records as followModules last
	// saw them (admin.go): only its calls, one at a time, touch it.
	modsSeen map[string]*modreg.Active

	mu        sync.Mutex // guards the 5 following fields
	subs      []*bus.Subscription
	stop      context.CancelFunc // ends the handlers' context
	stopLoops context.CancelFunc // ends the loops
	watcher   *config.Watcher
	wfWatcher *config.Watcher
	stopped   bool

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
	if cfg.Settings == nil {
		cfg.Settings = config.DefaultScheduler()
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
	s := &Scheduler{
		cfg:     cfg,
		id:      cfg.ID,
		log:     cfg.Logger.With("component", "scheduler", "scheduler_id", cfg.ID),
		hosts:   NewHosts(cfg.WorkerTTL),
		domains: newDomains(),
		submits: bus.NewWorkers(cfg.Concurrency),
		updates: bus.NewWorkers(cfg.Concurrency),
		beats:   bus.NewWorkers(4),
		wake:    make(chan struct{}, 1),
		placer:  newPlacer(),
		queues:  newQueueBook(),
		runs:    newRunTimes(),
		owners:  &owners{},
	}
	if sh, ok := cfg.Store.(Shards); ok {
		s.router = newRouter(s, sh)
	}
	s.objects = &objectStores{bus: cfg.Bus, store: cfg.Store, log: s.log}
	s.admin = &admins{trust: cfg.AdminTrust, audit: cfg.Audit, log: s.log}
	s.conf = newSettingsHolder(&settings{pools: cfg.Pools, base: cfg.Pools, timeouts: cfg.Timeouts, sched: cfg.Settings}, s.log, s.poke)
	s.ends = &ends{store: cfg.Store, bus: cfg.Bus, log: s.log, owners: s.owners, settings: s.conf.load}
	s.reports = &reports{store: cfg.Store, bus: cfg.Bus, log: s.log, settings: s.conf.load, hosts: s.hosts, domains: s.domains,
		runs: s.runs, owners: s.owners, objects: s.objects, ends: s.ends, poke: s.poke, acks: newAcker(cfg.Bus, s.log)}
	s.cancels = &cancels{store: cfg.Store, bus: cfg.Bus, log: s.log, hosts: s.hosts, admin: s.admin, ends: s.ends, poke: s.poke}
	s.modes = newModes(cfg.Store, cfg.Bus, s.log, s.admin, s.conf.load, s.poke)
	s.fleet = &fleet{hosts: s.hosts, domains: s.domains, trust: cfg.HostTrust, store: cfg.Store, bus: cfg.Bus, log: s.log, admin: s.admin,
		settings: s.conf.load, poke: s.poke, refreshMode: s.modes.refresh}
	s.runner = newRunner(runHost{
		id: s.id, log: s.log, store: cfg.Store, bus: cfg.Bus, safety: cfg.Safety, admin: s.admin,
		settings:   s.conf.load,
		refuseMode: s.modes.refuse,
		submitJob:  s.submitStep,
		cancelJob: func(ctx context.Context, id, why string) error {
			_, err := s.cancels.cancel(ctx, id, "", why)
			return err
		},
		objects: func() (*bus.Objects, error) {
			err := s.objects.openObjects()
			return s.objects.objs, err
		},
		jobRunEnded: s.endJobOfRun,
	}, cfg.Workflows)
	s.ends.jobEnded = s.runner.jobEnded // the hook: a job's end goes back to its run
	s.reconciler = &reconciler{id: s.id, store: cfg.Store, log: s.log, now: time.Now, settings: s.conf.load, hosts: s.hosts, ends: s.ends,
		countFailure: s.reports.countFailure, retryOrEnd: s.reports.retryOrEnd,
		handOut: s.handOut, settleRunJob: s.settleRunJob, poke: s.poke}
	s.queries = &queries{
		id: s.id, log: s.log, store: cfg.Store, bus: cfg.Bus, hosts: s.hosts, admin: s.admin,
		settings:  s.conf.load,
		mode:      s.Mode,
		started:   func() time.Time { return s.started },
		leader:    s.reconciler.leading,
		workflows: s.runner.names,
	}
	return s, nil
}

// ID returns the replica's id.
func (s *Scheduler) ID() string { return s.id }

// Leader reports whether this replica holds the reconciler lease now.
func (s *Scheduler) Leader() bool { return s.reconciler.leading() }

// Hosts returns the scheduler's view of the live workers.
func (s *Scheduler) Hosts() *Hosts { return s.hosts }

// Reload swaps the configuration in force; the next decision uses it.
func (s *Scheduler) Reload(b *config.Bundle) {
	s.conf.reload(b)
	queueCap.Set(float64(b.Scheduler.Queue.Cap))
	configReloads.WithLabelValues("ok").Inc()
	for pool := range b.Scheduler.Pools {
		if _, ok := b.Pools.Pools[pool]; !ok {
			s.log.Warn("scheduler.yaml sets a pool pools.yaml does not declare", "pool", pool)
		}
	}
	s.log.Info("configuration reloaded", "topics", len(b.Pools.Topics), "pools", len(b.Pools.Pools))
}

// Start subscribes to the bus and starts the pump, the reconciler's lease
// loop and the housekeeping loop. It returns once every subscription is in
// place.
func (s *Scheduler) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	lctx, cancelLoops := context.WithCancel(ctx)
	s.mu.Lock()
	s.stop, s.stopLoops = cancel, cancelLoops
	s.mu.Unlock()

	s.started = time.Now()
	if m, err := s.cfg.Store.Mode(ctx); err != nil {
		s.log.Warn("could not read the scheduler mode; NORMAL until it can", "err", err)
	} else {
		s.modes.set(ParseMode(m))
	}
	queueCap.Set(float64(s.conf.load().sched.Queue.Cap))

	// The answers to results, from before the first result is taken.
	s.reports.acks.start()
	c, q := s.cfg.Bus, bus.SchedulerQueue
	var subs []*bus.Subscription
	add := func(sub *bus.Subscription, err error) error {
		if err == nil {
			subs = append(subs, sub)
		}
		return err
	}
	err := errors.Join(
		add(bus.Subscribe(ctx, c, bus.SubjectHeartbeats, "", s.beats, s.log, s.fleet.handleHeartbeat)),
		add(bus.Subscribe(ctx, c, bus.SubjectModeChanged, "", s.beats, s.log, s.modes.handleModeChanged)),
		// Every replica answers a status request.
		add(bus.Subscribe(ctx, c, bus.SubjectSchedulerStatus, "", s.updates, s.log, s.queries.handleStatus)),
		add(routeSub(ctx, s, bus.ResultSubject("*"), q, s.updates, byTenantField, nil, s.reports.handleResult)),
		add(routeSub(ctx, s, bus.ProgressSubject("*"), q, s.updates, byTenantField, nil, s.reports.handleProgress)),
		add(routeSub(ctx, s, bus.TenantSubject(bus.SubjectCancel, "*"), q, s.updates, bySubject, s.cancels.auditAbsent(firstFound(jobFound, jobAbsent, jobNone)), s.cancels.handle)),
		add(routeSub(ctx, s, bus.TenantSubject(bus.SubjectJobGet, "*"), q, s.updates, bySubject, firstFound(jobFound, jobAbsent, jobNone), s.queries.handleGet)),
		add(routeSub(ctx, s, bus.TenantSubject(bus.SubjectJobList, "*"), q, s.updates, listRouting, mergeList, s.queries.handleList)),
		add(bus.Subscribe(ctx, c, bus.TenantSubject(bus.SubjectBuckets, "*"), q, s.updates, s.log, s.objects.handleBuckets)),
		add(routeSub(ctx, s, bus.ContextSubject("*"), q, s.updates, byTenantField, nil, s.objects.handleContext)),
		add(routeSub(ctx, s, bus.ResultPartSubject("*"), q, s.updates, byTenantField, nil, s.objects.handleResultPart)),
		add(routeSub(ctx, s, bus.SubjectDLQList, q, s.updates, dlqRouting, mergeDLQ, s.queries.handleDLQList)),
		add(routeSub(ctx, s, bus.SubjectDLQRetry, q, s.submits, toAll, firstFound(retried, retryAbsent, retryNone), s.handleDLQRetry)),
		add(routeSub(ctx, s, bus.SubjectDLQDrop, q, s.updates, toAll, firstFound(dropped, notDropped, dropNone), s.queries.handleDLQDrop)),
		add(bus.Subscribe(ctx, c, bus.SubjectMode, q, s.updates, s.log, s.modes.handleMode)),
		add(routeSub(ctx, s, bus.SubjectStats, q, s.updates, toAll, mergeStats, s.queries.handleStats)),
		add(bus.Subscribe(ctx, c, bus.SubjectHostDrain, q, s.updates, s.log, s.fleet.handleDrain)),
		add(routeSub(ctx, s, bus.TenantSubject(bus.SubjectSubmit, "*"), q, s.submits, submitRouting, nil, s.handleSubmit)),
		add(routeSub(ctx, s, bus.TenantSubject(bus.SubjectWorkflowRun, "*"), q, s.submits, bySubject, nil, s.runner.handleWorkflowRun)),
		add(routeSub(ctx, s, bus.TenantSubject(bus.SubjectWorkflowGet, "*"), q, s.updates, bySubject, firstFound(runFound, runAbsent, runNone), s.queries.handleWorkflowGet)),
		add(routeSub(ctx, s, bus.TenantSubject(bus.SubjectWorkflowList, "*"), q, s.updates, bySubject, mergeRuns, s.queries.handleWorkflowList)),
		// Every replica hears a cancel; the one driving the run answers.
		add(bus.Subscribe(ctx, c, bus.TenantSubject(bus.SubjectWorkflowCancel, "*"), "", s.updates, s.log, s.runner.handleWorkflowCancel)),
	)
	s.mu.Lock()
	s.subs = subs
	s.mu.Unlock()
	if err != nil {
		_ = s.Shutdown(context.Background())
		return err
	}
	if s.router != nil {
		s.router.start(ctx) // the forwards of the shards owned, from now on
	}
	if err := c.Flush(); err != nil {
		_ = s.Shutdown(context.Background())
		return fmt.Errorf("scheduler: %w", err)
	}
	if f := s.cfg.Files; f.Pools != "" || f.Timeouts != "" || f.Scheduler != "" {
		w, err := config.Watch(f, 100*time.Millisecond, s.Reload, func(err error) {
			configReloads.WithLabelValues("error").Inc()
			s.log.Error("configuration not reloaded; the one in force stays", "err", err)
		})
		if err != nil {
			_ = s.Shutdown(context.Background())
			return err
		}
		s.mu.Lock()
		s.watcher = w
		s.mu.Unlock()
	}
	if s.cfg.WorkflowDir != "" {
		w, err := config.WatchWorkflows(s.cfg.WorkflowDir, 100*time.Millisecond, func(src map[string][]byte) {
			s.runner.load(src)
			s.log.Info("workflow definitions reloaded", "workflows", len(s.runner.names()))
		}, func(err error) {
			workflowReloads.WithLabelValues("error").Inc()
			s.log.Error("workflow definitions not reloaded; the ones in force stay", "err", err)
		})
		if err != nil {
			_ = s.Shutdown(context.Background())
			return err
		}
		s.mu.Lock()
		s.wfWatcher = w
		s.mu.Unlock()
	}
	if s.cfg.Modules != nil {
		done, err := s.cfg.Modules.Follow(lctx, s.followModules)
		if err != nil {
			_ = s.Shutdown(context.Background())
			return fmt.Errorf("scheduler: %w", err)
		}
		s.loops.Add(1)
		go func() { defer s.loops.Done(); <-done }()
	}
	s.loops.Add(5)
	go func() { defer s.loops.Done(); s.runner.runsLoop(lctx) }()
	go s.pumpLoop(lctx, ctx)
	go func() { defer s.loops.Done(); s.reconciler.run(lctx, ctx) }()
	go func() { defer s.loops.Done(); s.fleet.houseLoop(lctx) }()
	go func() { defer s.loops.Done(); s.objects.bucketLoop(lctx) }()
	s.log.Info("scheduler started", "mode", s.Mode())
	return nil
}

// Shutdown stops taking new messages, lets the ones received finish, gives
// the reconciler's lease up, and stops every loop. It returns ctx's error
// if that takes too long.
func (s *Scheduler) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	subs, stop, stopLoops, watcher, wfWatcher := s.subs, s.stop, s.stopLoops, s.watcher, s.wfWatcher
	s.mu.Unlock()

	var errs []error
	if watcher != nil {
		errs = append(errs, watcher.Close())
	}
	if wfWatcher != nil {
		errs = append(errs, wfWatcher.Close())
	}
	for _, sub := range subs {
		errs = append(errs, sub.Drain(ctx))
	}
	if s.router != nil {
		errs = append(errs, s.router.close(ctx))
	}
	// The loops stop before the handlers are waited for, so that the pump
	// hands out no more work; the handlers' context lives until they end.
	if stopLoops != nil {
		stopLoops()
	}
	s.loops.Wait()
	s.runner.close() // runs are not cancelled: their claims run out, and a replica carries them on
	for _, w := range []*bus.Workers{s.submits, s.updates, s.beats} {
		errs = append(errs, w.Wait(ctx))
	}
	s.reports.acks.close() // the handlers' answers, in a last batch
	if stop != nil {
		stop()
	}
	s.log.Info("scheduler stopped")
	return errors.Join(errs...)
}

// warmup is how long after Start a replica that knows no worker of a pool
// lets the job wait rather than fail no_workers: a replica that just
// started (a rolling restart) has not heard every host's heartbeat yet.
const warmup = 5 * time.Second

// warming reports whether the registry may still be filling.
func (s *Scheduler) warming() bool { return time.Since(s.started) < min(warmup, s.cfg.WorkerTTL) }

// poke wakes the pump: capacity freed, or a job was queued.
func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Scheduler) storeFailed(op, id string, err error) { logStoreFailure(s.log, op, id, err) }

// logStoreFailure logs a failed store operation op on job id, and counts
// it: a refused transition (another replica, a result or the reconciler
// got there first) is logged at debug level only.
func logStoreFailure(log *slog.Logger, op, id string, err error) {
	if errors.Is(err, jobstore.ErrInvalidTransition) {
		// Another replica, a result or the reconciler got there first.
		log.Debug("transition refused", "op", op, "job_id", id, "err", err)
		return
	}
	storeErrors.WithLabelValues(op).Inc()
	log.Error("job store failed", "op", op, "job_id", id, "err", err)
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

// constraintsOf decodes a stored decision's constraints (nil when none).
func constraintsOf(sf *jobstore.Safety) *wardv1.Constraints {
	if sf == nil || len(sf.Constraints) == 0 {
		return nil
	}
	c := &wardv1.Constraints{}
	if protojson.Unmarshal(sf.Constraints, c) != nil {
		return nil
	}
	return c
}

func stateOf(s wardv1.JobState) jobstore.State {
	return jobstore.State(strings.TrimPrefix(s.String(), "JOB_STATE_"))
}

func stateEnum(s jobstore.State) wardv1.JobState {
	return wardv1.JobState(wardv1.JobState_value["JOB_STATE_"+string(s)])
}
