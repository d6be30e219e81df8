// Package host is Ward's host agent. It announces itself with heartbeats
// (carrying its credential, by which schedulers admit it), takes jobs only
// as signed dispatches on its own subject, worker.<id>.jobs, refusing a
// ticket that is unsigned, forged or altered, for another host, expired,
// signed for an earlier boot of the host, or replayed (auth/ticket.go), runs each job in the wasm sandbox with the
// limits the safety decision granted, and reports progress and results on
// its own subjects, with the attempt it ran. It never runs more than
// MaxParallel jobs.
package host

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/telemetry"
	"github.com/ward-run/ward/internal/version"
)

var (
	jobsRun = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_host_jobs_total",
		Help: "Jobs run by this host, by module and status.",
	}, []string{"module", "status"})
	jobSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ward_host_job_seconds",
		Help:    "Wall time of one job in the sandbox, by module.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
	}, []string{"module"})
	dispatchesRefused = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_host_dispatches_refused_total",
		Help: "Dispatches this host refused to run, by reason code: unsigned, forged or altered, for another host, expired, for an earlier boot of the host, replayed.",
	}, []string{"reason"})
	activeJobs = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "ward_host_active_jobs",
		Help: "Jobs running now on this host.",
	})
	resultResends = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_host_result_resends_total",
		Help: "Results sent again because no scheduler answered the earlier try.",
	})
	resultsUnanswered = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_host_results_unanswered_total",
		Help: "Results no scheduler answered within the host's time for it (the job times out and is retried).",
	})
)

// Config configures an Agent. Bus, Runtime and Pools are required. A host
// holds no job store credential: a job's context comes in its ticket, or
// from its tenant's bucket in JetStream; its result goes to the schedulers
// in the result message, or, over bus.InlineResultMax, to the tenant's
// result bucket.
type Config struct {
	// ID is the worker id; a random one when empty.
	ID string
	// DispatchKey is this host's key of signed dispatch
	// (auth.HostKey(secret, ID)): a dispatch whose signature does not
	// verify under it is refused. Nil accepts unsigned dispatches: a system
	// run --insecure.
	DispatchKey []byte
	// Credential is the host's NATS user JWT (public: no seed), sent in
	// every heartbeat so that schedulers admit the host by it.
	Credential string
	// Bus is the host's NATS connection: jobs, results, heartbeats. The
	// caller closes it after Shutdown.
	Bus *bus.Conn
	// Runtime is the wasm sandbox the jobs run in; the caller closes it
	// after Shutdown.
	Runtime *sandbox.Runtime
	// Modules are the compiled modules this host holds at start, by module
	// name (a directory of modules, ward dev's built-ins). The registry's
	// versions replace them.
	Modules map[string]*sandbox.Module
	// Pools is the routing table: the host serves every pool whose module
	// it holds. Whether it meets a pool's requires is the scheduler's
	// call, against the capabilities of each heartbeat, since probes (GPU,
	// Ollama) change them while the host runs. The routes that deployed
	// modules declare are added to it.
	Pools *config.Pools
	// Registry, when set, is the module registry the host follows: it
	// loads the active versions before it announces itself and swaps
	// modules as they are deployed, rolled back and retired (modwatch.go).
	Registry *modreg.Registry
	// Trusted, when not empty, makes the host refuse a registry module
	// that is not signed by one of these keys.
	Trusted []ed25519.PublicKey
	// MaxParallel caps the jobs run at once. Default: the number of CPUs.
	MaxParallel int
	// HeartbeatInterval defaults to 2 s.
	HeartbeatInterval time.Duration
	// Capabilities are what the host offers pools' requires (ollama,
	// gpu, ...), reported in every heartbeat with what the probes add.
	Capabilities []string
	// Labels are reported in every heartbeat, for placement constraints.
	Labels map[string]string
	// Region and Zone say where the host runs, for placement.
	Region, Zone string
	// Type is the kind of host reported in heartbeats; default "cpu".
	Type string
	// Probes add what they observe (GPU, Ollama) to every heartbeat.
	Probes []Probe
	// Logger is slog.Default() when nil.
	Logger *slog.Logger

	// MountRoots are the host directories under which a job's granted
	// read-only directories may lie; with none, no directory is ever
	// mounted.
	MountRoots []string
	// Env holds the values this host gives a job's granted environment
	// keys (OLLAMA_URL, ...); the job's own env overrides them.
	Env map[string]string
	// Services are the named services of this host a policy may grant
	// (Grants.services), by name: base URLs, e.g. "ollama" →
	// "http://127.0.0.1:11434". A job granted one may reach its host:port,
	// and finds the URL in its environment (ServiceEnv).
	Services map[string]string
	// MaxContextBytes caps a job context read from the object store
	// (256 MiB if zero).
	MaxContextBytes int64
	// StartedDelay is how long a job runs before the host reports its
	// start (RUNNING): a job that ends sooner sends no STARTED report, and
	// its result says so (JobResult.started_reported), so that the
	// scheduler records RUNNING and the end in one step. DefaultStartedDelay
	// if zero; negative reports every start at once.
	StartedDelay time.Duration
}

// DefaultStartedDelay is Config.StartedDelay's default: short beside any
// timeout, long beside the run of a small job.
const DefaultStartedDelay = 50 * time.Millisecond

// Probe observes something about the machine for heartbeats.
type Probe interface {
	// Refresh looks once, within ctx. The host refreshes every probe
	// before its first heartbeat, so that it is never announced without
	// what its probes find: a GPU host whose first heartbeat lacked
	// `ollama`, and the next had it, would fail the LLM jobs placed in
	// between no_workers.
	Refresh(ctx context.Context)
	// Run refreshes the probe until ctx ends, from one interval after
	// Refresh; it may return at once.
	Run(ctx context.Context)
	// Observe adds capabilities, labels and figures to hb.
	Observe(ctx context.Context, hb *wardv1.Heartbeat)
}

// Agent is a running host agent.
type Agent struct {
	cfg    Config
	log    *slog.Logger
	table  *table // the modules held and the pools served
	work   *bus.Workers
	active atomic.Int32
	caps   atomic.Pointer[[]string] // capabilities of the last heartbeat
	last   atomic.Pointer[wardv1.Heartbeat]
	cpu    cpuSampler

	jobCtx    context.Context // cancelled when Shutdown gives up waiting
	cancelJob context.CancelFunc
	// announceCtx is cancelled when Shutdown gives up waiting for the
	// results still being sent (sendResult).
	announceCtx  context.Context
	stopAnnounce context.CancelFunc

	jobs       jobTable       // the jobs running, to cancel one
	acks       acks           // the results sent and not answered yet (acks.go)
	announcing sync.WaitGroup // results being stored and published (announce)
	cancels    cancels        // sys.host.cancel (cancel.go)
	boot       []byte         // this boot's nonce, in every heartbeat; tickets must carry it
	tickets    *auth.Verifier // of this boot

	mu        sync.Mutex // guards the 8 following fields
	watchStop context.CancelFunc
	watchDone chan struct{}
	direct    *bus.Subscription // worker.<id>.jobs, set once Start subscribed
	ping      *nats.Subscription
	stopBeat  context.CancelFunc
	starting  bool // Start was called
	started   bool // Start succeeded: heartbeats are on
	stopped   bool // Shutdown was called, or Start failed

	beatMu  sync.Mutex // one heartbeat at a time
	beating sync.WaitGroup
}

// errStarted is returned by a second Start.
var errStarted = errors.New("host: Start called twice, or after Shutdown")

// New validates cfg and returns an Agent ready to Start.
func New(cfg Config) (*Agent, error) {
	switch {
	case cfg.Bus == nil:
		return nil, errors.New("host: Config.Bus is required")
	case cfg.Runtime == nil:
		return nil, errors.New("host: Config.Runtime is required")
	case cfg.Pools == nil:
		return nil, errors.New("host: Config.Pools is required")
	}
	if cfg.ID == "" {
		cfg.ID = "host-" + uuid.NewString()[:8]
	}
	if cfg.MaxParallel <= 0 {
		cfg.MaxParallel = goruntime.NumCPU()
	}
	if cfg.StartedDelay == 0 {
		cfg.StartedDelay = DefaultStartedDelay
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 2 * time.Second
	}
	if cfg.Type == "" {
		cfg.Type = "cpu"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxContextBytes <= 0 {
		cfg.MaxContextBytes = 256 << 20
	}
	// A new boot: the tickets signed for an earlier run of this host id
	// are void here (the attempts that run took are not remembered).
	boot, err := auth.NewBootNonce()
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	a := &Agent{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "host", "worker_id", cfg.ID),
		table:   newTable(cfg.Pools, cfg.Modules),
		boot:    boot,
		tickets: auth.NewBootVerifier(cfg.ID, cfg.DispatchKey, boot),
		work:    bus.NewWorkers(cfg.MaxParallel),
		cpu:     cpuSampler{path: "/proc/stat"},
	}
	a.jobCtx, a.cancelJob = context.WithCancel(context.Background())
	a.announceCtx, a.stopAnnounce = context.WithCancel(context.Background())
	return a, nil
}

func hasAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// ID returns the worker id.
func (a *Agent) ID() string { return a.cfg.ID }

// Boot returns this agent's boot nonce, which its heartbeats announce and
// the tickets it runs must carry (auth.NewBootVerifier).
func (a *Agent) Boot() []byte { return slices.Clone(a.boot) }

// Pools returns the pools this host serves.
func (a *Agent) Pools() []string { return slices.Clone(a.table.load().pools) }

// Modules returns the digest of every module the host holds, by name.
func (a *Agent) Modules() map[string]string { return maps.Clone(a.table.load().digests) }

// Start loads the registry's active modules (when it has a registry),
// subscribes to the host's dispatch subject (worker.<id>.jobs), worker
// pings (sys.worker.ping) and cancels (sys.host.cancel), and sends the
// first heartbeat before it returns. It fails when ctx ends before the
// NATS server confirmed the subscriptions. A Start that fails undoes what
// it started (the module watcher, the subscriptions, the jobs they took)
// and leaves the Agent stopped: a later Shutdown returns nil. An Agent
// starts once.
func (a *Agent) Start(ctx context.Context) (err error) {
	a.mu.Lock()
	if a.starting || a.stopped {
		a.mu.Unlock()
		return errStarted
	}
	a.starting = true
	a.mu.Unlock()
	defer func() {
		if err != nil {
			a.abort()
		}
	}()

	c := a.cfg.Bus
	if a.cfg.Registry != nil {
		if err := a.watchModules(ctx); err != nil {
			return err
		}
	}
	// The answers to results, before any job is taken.
	if err := a.acks.start(a); err != nil {
		return fmt.Errorf("host: %w", err)
	}
	sub, err := bus.Subscribe(a.jobCtx, c, bus.WorkerJobsSubject(a.cfg.ID), "", a.work, a.log, a.handleDispatch)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.direct = sub
	a.mu.Unlock()
	// `ward workers` asks every host at once; each answers with the
	// heartbeat it last sent.
	ping, err := c.NATS().Subscribe(bus.SubjectWorkerPing, func(m *nats.Msg) {
		if hb := a.last.Load(); hb != nil && m.Reply != "" {
			_ = c.Publish(m.Reply, hb)
		}
	})
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	a.mu.Lock()
	a.ping = ping
	a.mu.Unlock()
	if err := a.cancels.start(a); err != nil {
		return fmt.Errorf("host: %w", err)
	}
	if err := flush(ctx, c.NATS()); err != nil {
		return fmt.Errorf("host: start: %w", err)
	}

	// Under a.mu: a Shutdown meanwhile either came first, and Start fails,
	// or waits for the first heartbeat and the loops it stops.
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return errors.New("host: shut down while starting")
	}
	beatCtx, stop := context.WithCancel(context.Background())
	a.stopBeat, a.started = stop, true
	refreshProbes(beatCtx, a.cfg.Probes)
	for _, p := range a.cfg.Probes {
		a.beating.Go(func() { p.Run(beatCtx) })
	}
	a.heartbeat("ready")
	a.beating.Go(func() { a.beatLoop(beatCtx) })
	a.log.Info("host started", "pools", a.table.load().pools, "max_parallel_jobs", a.cfg.MaxParallel)
	return nil
}

// flush waits until the server has processed what the connection sent (the
// subscriptions), or ctx ends; 10 s at most when ctx has no deadline.
func flush(ctx context.Context, nc *nats.Conn) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	return nc.FlushWithContext(ctx)
}

// abort undoes a Start that failed. It waits for the jobs the dispatch
// subscription took meanwhile (a scheduler that still counts an earlier run
// of this host id as live may dispatch to it before it announced itself)
// for a while, then cancels them.
func (a *Agent) abort() {
	a.mu.Lock()
	a.stopped = true
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.teardown(ctx); err != nil {
		a.log.Warn("host start undone, not cleanly", "err", err)
	}
}

// Shutdown drains the host: it tells schedulers it is draining, takes no
// new jobs, and waits for the running ones. When ctx ends first, the
// running jobs are cancelled (they fail with code cancelled).
func (a *Agent) Shutdown(ctx context.Context) error {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return nil
	}
	a.stopped = true
	a.mu.Unlock()

	// No module changes from here on: the watcher would subscribe again.
	a.stopWatch()
	a.stopBeats()
	a.heartbeat("draining")
	err := a.teardown(ctx)
	a.log.Info("host stopped")
	return err
}

// stopBeats stops the heartbeat loop and the probes, and waits for them.
func (a *Agent) stopBeats() {
	a.mu.Lock()
	stop := a.stopBeat
	a.stopBeat = nil
	a.mu.Unlock()
	if stop != nil {
		stop()
		a.beating.Wait()
	}
}

// teardown stops whatever Start started: the module watcher, heartbeats and
// probes, the subscriptions (draining the job ones), and waits for the jobs
// taken; when ctx ends first, it cancels them. a.stopped is set.
func (a *Agent) teardown(ctx context.Context) error {
	a.stopWatch()
	a.stopBeats()
	a.mu.Lock()
	var subs []*bus.Subscription
	if a.direct != nil {
		subs = append(subs, a.direct)
	}
	ping := a.ping
	a.direct, a.ping = nil, nil
	a.mu.Unlock()

	if ping != nil {
		_ = ping.Unsubscribe()
	}
	a.cancels.stop()
	var errs []error
	for _, s := range subs {
		errs = append(errs, s.Drain(ctx))
	}
	if err := a.work.Wait(ctx); err != nil {
		a.cancelJob()
		errs = append(errs, a.work.Wait(context.Background()))
	}
	// The results still being sent, until a scheduler answers each; past
	// ctx, they are given up (their jobs time out and are retried).
	sent := make(chan struct{})
	go func() { a.announcing.Wait(); close(sent) }()
	select {
	case <-sent:
	case <-ctx.Done():
		a.stopAnnounce()
		<-sent
	}
	a.stopAnnounce()
	a.acks.stop()
	a.cancelJob()
	_ = a.cfg.Bus.Flush()
	return errors.Join(errs...)
}

// firstRefresh bounds the probes' first look, before the first heartbeat:
// a probe that has not answered by then reports what it has, and its next
// refresh the rest.
const firstRefresh = 3 * time.Second

// refreshProbes refreshes probes at once, each on its own goroutine, and
// returns when all are done or firstRefresh has passed.
func refreshProbes(ctx context.Context, probes []Probe) {
	if len(probes) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, firstRefresh)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range probes {
		wg.Go(func() { p.Refresh(ctx) })
	}
	wg.Wait()
}

func (a *Agent) beatLoop(ctx context.Context) {
	t := time.NewTicker(a.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.heartbeat("ready")
		}
	}
}

func (a *Agent) heartbeat(status string) {
	a.beatMu.Lock()
	defer a.beatMu.Unlock()
	total, avail := readMemInfo("/proc/meminfo")
	served := a.table.load()
	hb := &wardv1.Heartbeat{
		WorkerId:        a.cfg.ID,
		Region:          a.cfg.Region,
		Zone:            a.cfg.Zone,
		Type:            a.cfg.Type,
		CpuLoad:         a.cpu.sample(),
		Memory:          &wardv1.Memory{TotalBytes: total, AvailableBytes: avail},
		ActiveJobs:      a.active.Load(),
		MaxParallelJobs: int32(a.cfg.MaxParallel),
		Capabilities:    slices.Clone(a.cfg.Capabilities),
		Pools:           served.pools,
		Labels:          maps.Clone(a.cfg.Labels),
		Modules:         served.digests,
		Status:          status,
		SentAtUnixMs:    time.Now().UnixMilli(),
		Credential:      a.cfg.Credential,
		Version:         version.Version(),
		BootNonce:       a.boot,
	}
	if len(served.pools) > 0 {
		hb.Pool = served.pools[0]
	}
	reportResources(hb)
	for _, p := range a.cfg.Probes {
		p.Observe(context.Background(), hb)
	}
	a.caps.Store(&hb.Capabilities)
	a.last.Store(hb)
	if err := a.cfg.Bus.Publish(bus.HeartbeatSubject(a.cfg.ID), hb); err != nil {
		a.log.Warn("heartbeat failed", "err", err)
	}
}

// handleDispatch opens a dispatch and runs its job. A dispatch whose
// ticket the host refuses (unsigned, forged or altered, for another host,
// expired, for an earlier boot, replayed) is logged and counted in
// ward_host_dispatches_refused_total, and nothing runs: it carries no
// authority, so nothing is reported for its job either, but for a ticket
// of an earlier boot (staleBoot).
func (a *Agent) handleDispatch(ctx context.Context, _ *nats.Msg, d *wardv1.Dispatch) {
	t, err := a.tickets.Open(d, time.Now())
	if err != nil {
		var te *auth.TicketError
		code := reason.TicketForged
		if errors.As(err, &te) {
			code = te.Code
		}
		dispatchesRefused.WithLabelValues(string(code)).Inc()
		a.log.Warn("dispatch refused", "code", code, "err", err)
		if code == reason.TicketStaleBoot {
			a.staleBoot(te)
		}
		return
	}
	a.handleJob(ctx, t)
}

// staleBoot reports a ticket refused for its boot as its attempt's
// result: FAILED ticket_stale_boot, which schedulers take as a bounce (the
// host did not start the job) and place the job again. Such a ticket is a
// scheduler's (its signature verified): one signed before this host
// restarted, by a replica that had not heard the new boot yet, whose job
// would otherwise wait for its dispatch timeout. The report is harmless
// when the ticket is a replay: the attempt is over, or not at this host,
// and schedulers refuse it (IfWorker, IfAttempt); and no boot of this host
// ran that attempt since no ticket of this boot names it (each attempt is
// signed once), so the job is not taken from a run.
func (a *Agent) staleBoot(te *auth.TicketError) {
	if te.JobID == "" || te.Attempt <= 0 {
		return
	}
	res := &wardv1.JobResult{JobId: te.JobID, TenantId: te.Tenant, WorkerId: a.cfg.ID, Attempt: te.Attempt, Status: wardv1.JobState_JOB_STATE_FAILED,
		ErrorCode: string(reason.TicketStaleBoot), ErrorMessage: te.Detail}
	// Sent as every result is, again until a scheduler answers.
	a.announcing.Go(func() { a.sendResult(a.announceCtx, res, "") }) // no ticket to say where: any scheduler
}

// refuseCancelled reports a dispatch refused because its attempt was
// cancelled before it came to run: logged, counted
// (ward_host_dispatches_refused_total{code="cancelled"}) and sent as the
// attempt's result, FAILED cancelled, so that nothing a host receives
// vanishes without a trace. Schedulers refuse the result when the job has
// moved past the attempt (it ended, or a later attempt is placed), which
// is the usual case; should the attempt still be current (the cancel was
// sent and its store write failed), the job goes on from there at once.
func (a *Agent) refuseCancelled(req *wardv1.JobRequest) {
	dispatchesRefused.WithLabelValues(string(reason.Cancelled)).Inc()
	a.log.Info("dispatch refused: its attempt was cancelled", "job_id", req.GetJobId(), "attempt", req.GetAttempt())
	res := &wardv1.JobResult{JobId: req.GetJobId(), TenantId: req.GetTenantId(), WorkerId: a.cfg.ID, Attempt: req.GetAttempt(), Status: wardv1.JobState_JOB_STATE_FAILED,
		ErrorCode: string(reason.Cancelled), ErrorMessage: fmt.Sprintf("attempt %d was cancelled before it came to run", req.GetAttempt())}
	a.announcing.Go(func() { a.sendResult(a.announceCtx, res, req.GetReportShard()) })
}

// handleJob runs one job and publishes its result. Every failure is a
// FAILED result with a code; nothing here stops the host.
func (a *Agent) handleJob(ctx context.Context, t *wardv1.DispatchTicket) {
	req := t.GetJob()
	if a.jobs.cancelled(req.GetJobId(), req.GetAttempt()) {
		// Its attempt was cancelled while the dispatch was on its way or
		// waited here: it does not run, and the attempt's result says so.
		a.refuseCancelled(req)
		return
	}
	if a.log.Enabled(ctx, slog.LevelDebug) { // its arguments cost allocations a job even when off
		a.log.DebugContext(ctx, "job accepted", "job_id", req.GetJobId(), "attempt", req.GetAttempt(), "module", t.GetModule())
	}
	a.active.Add(1)
	activeJobs.Inc()
	defer func() { a.active.Add(-1); activeJobs.Dec() }()

	// The run's span is the child of the scheduler's dispatch span (the
	// ticket's, signed with it); the result carries the run's context.
	ctx, span := telemetry.StartFrom(ctx, req.GetTraceparent(), "ward.run", trace.SpanKindConsumer)
	start := time.Now()
	res := &wardv1.JobResult{JobId: req.GetJobId(), TenantId: req.GetTenantId(), WorkerId: a.cfg.ID, Attempt: req.GetAttempt(), Traceparent: req.GetTraceparent()}
	if sc := span.SpanContext(); sc.IsValid() {
		res.Traceparent = telemetry.Format(sc)
	}
	started := func() {
		_ = a.cfg.Bus.Publish(bus.ReportSubject(bus.ProgressSubject(a.cfg.ID), req.GetReportShard()), &wardv1.JobProgress{JobId: req.GetJobId(), TenantId: req.GetTenantId(), WorkerId: a.cfg.ID,
			Kind: wardv1.JobProgress_KIND_STARTED, SentAtUnixMs: start.UnixMilli(), Attempt: req.GetAttempt()})
	}
	var report *time.Timer
	if a.cfg.StartedDelay < 0 {
		started()
		res.StartedReported = true
	} else {
		report = time.AfterFunc(a.cfg.StartedDelay, started)
	}

	moduleName, data, err := a.run(ctx, t, res)
	// The run is over: a job that ended before its start was reported
	// reports none, and says so in its result.
	if report != nil && !report.Stop() {
		res.StartedReported = true // it fired, or is firing
	}
	res.ExecutionMs = time.Since(start).Milliseconds()
	jobSeconds.WithLabelValues(moduleName).Observe(time.Since(start).Seconds())
	// The slot is for running: the result is stored and announced after
	// it is freed, so that the next job need not wait for the store.
	a.announcing.Go(func() { a.announce(ctx, span, req, res, moduleName, data, err) })
}

// announce sends a job's result to the schedulers (sendResult): the
// output of a job that succeeded in the message itself, or, over
// bus.InlineResultMax, sent in parts first (putResult), which the
// schedulers store in the tenant's result bucket, and pointed at. A result
// that cannot be stored fails the job (result_unavailable). It ends the
// run's span.
func (a *Agent) announce(ctx context.Context, span trace.Span, req *wardv1.JobRequest, res *wardv1.JobResult, moduleName string, data []byte, err error) {
	defer span.End()
	// The result is sent past the run's context (a job cancelled as it
	// ended still reports), until Shutdown gives up (announceCtx); with
	// the run's span, for the logs.
	sctx := trace.ContextWithSpan(a.announceCtx, span)
	if err == nil {
		if len(data) <= bus.InlineResultMax {
			res.Result = data
		} else {
			parts, perr := a.putResult(sctx, req, data)
			if perr != nil {
				res.ErrorCode, res.ErrorMessage, err = string(reason.ResultUnavailable), perr.Error(), perr
			} else {
				// The digest binds the object to this attempt: the
				// scheduler records it, and readers check the bytes
				// against it.
				res.ResultPtr, res.ResultDigest = bus.ResultObjectPtr(req.GetTenantId(), req.GetJobId(), int(req.GetAttempt())), bus.ContentDigest(data)
				res.ResultSize, res.ResultParts = int64(len(data)), uint32(parts)
			}
		}
	}
	if err != nil {
		res.Status = wardv1.JobState_JOB_STATE_FAILED
		var re *sandbox.RunError
		if errors.As(err, &re) {
			res.ErrorCode, res.ErrorMessage = string(re.Code), re.Message
		} else if res.ErrorCode == "" {
			res.ErrorCode, res.ErrorMessage = string(reason.Internal), err.Error()
		}
		a.log.InfoContext(ctx, "job failed", "job_id", req.GetJobId(), "module", moduleName, "code", res.ErrorCode, "err", res.ErrorMessage)
	} else {
		res.Status = wardv1.JobState_JOB_STATE_SUCCEEDED
	}
	if span.IsRecording() {
		ran(span, req, res, err)
	}
	jobsRun.WithLabelValues(moduleName, strings.TrimPrefix(res.Status.String(), "JOB_STATE_")).Inc()
	a.sendResult(sctx, res, req.GetReportShard())
}

// resultTry bounds one try at sending a result (a variable: tests
// shorten it), resultFor all of them, and resultWaitMax the wait between
// two.
var resultTry = 5 * time.Second

const (
	resultFor     = 2 * time.Minute
	resultWaitMax = 5 * time.Second
)

// errUnanswered: no scheduler answered a result within resultTry.
var errUnanswered = errors.New("no scheduler answered in time")

// sendResult sends a job's result to the schedulers, and again until one
// answers (acks): a scheduler answers once the result is applied or
// refused for good (scheduler.handleResult), in a batch with the other
// results it applied meanwhile. A host holds no job store
// credential, so a result lost on the way (no scheduler listening, a cut
// connection, a scheduler killed while storing it) is sent again, not
// recovered from the store. It gives up after resultFor, or when ctx ends
// (Shutdown gave up waiting), logs it and counts it
// (ward_host_results_unanswered_total): the job then times out at the
// scheduler and is retried.
func (a *Agent) sendResult(ctx context.Context, res *wardv1.JobResult, shard string) {
	subject := bus.ReportSubject(bus.ResultSubject(a.cfg.ID), shard)
	seq, answered := a.acks.add()
	defer a.acks.done(seq)
	reply := bus.ResultAckSubject(a.cfg.ID, seq)
	// One timer for every try (a context a try would cost a handful of
	// allocations a result).
	timer := time.NewTimer(resultTry)
	defer timer.Stop()
	tries, err := untilAnswered(ctx, func() (bool, error) {
		if err := a.cfg.Bus.PublishRequest(subject, reply, res); err != nil {
			return false, err
		}
		timer.Reset(resultTry)
		select {
		case err := <-answered:
			return false, err
		case <-timer.C:
			return false, errUnanswered
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}, func(err error) {
		a.log.Warn("result not answered yet: sending it again", "job_id", res.GetJobId(), "attempt", res.GetAttempt(), "err", err)
	})
	if err != nil {
		resultsUnanswered.Inc()
		a.log.Error("result not answered by any scheduler: the job times out there and is retried", "job_id", res.GetJobId(),
			"attempt", res.GetAttempt(), "tries", tries, "err", err)
		return
	}
	lvl := slog.LevelDebug
	if tries > 1 {
		lvl = slog.LevelInfo
	}
	if !a.log.Enabled(ctx, lvl) {
		return
	}
	a.log.Log(ctx, lvl, "result answered", "job_id", res.GetJobId(), "attempt", res.GetAttempt(),
		"status", strings.TrimPrefix(res.GetStatus().String(), "JOB_STATE_"), "code", res.GetErrorCode(), "tries", tries)
}

// untilAnswered calls try, which bounds each call by resultTry, until it
// succeeds, or says its failure is final, or ctx ends, or resultFor has
// passed: again after 100 ms, doubling to resultWaitMax. again is called
// at the first failure that will be tried again. It returns how many
// tries it made and the last error; the tries past the first that
// succeeded are counted in ward_host_result_resends_total.
func untilAnswered(ctx context.Context, try func() (final bool, err error), again func(error)) (int, error) {
	deadline := time.Now().Add(resultFor)
	wait := 100 * time.Millisecond
	for n := 1; ; n++ {
		final, err := try()
		if err == nil {
			if n > 1 {
				resultResends.Add(float64(n - 1))
			}
			return n, nil
		}
		if final || ctx.Err() != nil || time.Now().Add(wait).After(deadline) {
			return n, err
		}
		if n == 1 {
			again(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, resultWaitMax)
	}
}

// ran sets a run's span's attributes: the job, the module and digest that
// ran it, how it ended (the status, the error code, the guest's exit
// code), how long it ran.
func ran(span trace.Span, req *wardv1.JobRequest, res *wardv1.JobResult, err error) {
	span.SetAttributes(attribute.String("ward.job_id", req.GetJobId()), attribute.String("ward.worker_id", res.GetWorkerId()),
		attribute.Int("ward.attempt", int(req.GetAttempt())), attribute.String("ward.module", res.GetModule()),
		attribute.String("ward.module_digest", res.GetModuleDigest()), attribute.Int64("ward.execution_ms", res.GetExecutionMs()),
		attribute.String("ward.status", strings.TrimPrefix(res.GetStatus().String(), "JOB_STATE_")))
	if err == nil {
		return
	}
	span.SetAttributes(attribute.String("ward.error_code", res.GetErrorCode()))
	var re *sandbox.RunError
	if errors.As(err, &re) {
		span.SetAttributes(attribute.Int64("ward.exit_code", int64(re.ExitCode)))
	}
	span.SetStatus(codes.Error, res.GetErrorCode()+": "+res.GetErrorMessage())
}

// run runs the job of t, fills res, and returns the module's name and,
// when it succeeded, its output.
func (a *Agent) run(ctx context.Context, t *wardv1.DispatchTicket, res *wardv1.JobResult) (string, []byte, error) {
	req := t.GetJob()
	served := a.table.load()
	pool := req.GetPool()
	if pool == "" {
		if pools := served.routes.PoolsFor(req.GetTopic()); len(pools) > 0 {
			pool = pools[0]
		}
	}
	p, ok := served.routes.Pools[pool]
	mod := served.modules[p.Module]
	if !ok || mod == nil {
		res.ErrorCode, res.ErrorMessage = string(reason.ModuleUnavailable), fmt.Sprintf("host %s does not serve pool %q", a.cfg.ID, pool)
		return p.Module, nil, errors.New(res.ErrorMessage)
	}
	if t.GetModule() != "" && t.GetModule() != p.Module {
		res.ErrorCode, res.ErrorMessage = string(reason.ModuleUnavailable), fmt.Sprintf("the ticket is for module %s; pool %q runs %s here", t.GetModule(), pool, p.Module)
		return p.Module, nil, errors.New(res.ErrorMessage)
	}
	if d := t.GetModuleDigest(); d != "" && d != mod.Digest() {
		// A version swapped in since the scheduler placed it: the job goes
		// back to be placed again (a bounce costs it no retry).
		res.ErrorCode, res.ErrorMessage = string(reason.ModuleUnavailable), fmt.Sprintf("the ticket is for %s %s; host %s holds %s", p.Module, d, a.cfg.ID, mod.Digest())
		return p.Module, nil, errors.New(res.ErrorMessage)
	}
	if caps := a.caps.Load(); caps != nil && !hasAll(*caps, p.Requires) {
		res.ErrorCode, res.ErrorMessage = string(reason.CapabilityMissing), fmt.Sprintf("host %s lacks %v, which pool %q requires", a.cfg.ID, p.Requires, pool)
		return p.Module, nil, errors.New(res.ErrorMessage)
	}
	payload, err := a.readContext(ctx, req)
	if err != nil {
		code := reason.ContextUnavailable
		if ie := (*inputError)(nil); errors.As(err, &ie) {
			code = reason.InputUnavailable
		}
		res.ErrorCode, res.ErrorMessage = string(code), err.Error()
		return p.Module, nil, err
	}
	in := a.input(req, payload)
	// The result says how many chunks were streamed, so that watchers
	// wait for any still on their way.
	var streamed atomic.Int64
	if stream := in.Stream; stream != nil {
		in.Stream = func(seq int, chunk []byte) {
			stream(seq, chunk)
			for cur := streamed.Load(); int64(seq) > cur && !streamed.CompareAndSwap(cur, int64(seq)); cur = streamed.Load() {
			}
		}
	}
	defer func() { res.OutputChunks = streamed.Load() }()
	ctx, done, ok := a.jobs.add(ctx, req.GetJobId(), req.GetAttempt())
	if !ok {
		// A cancel of this attempt came while its input was fetched.
		dispatchesRefused.WithLabelValues(string(reason.Cancelled)).Inc()
		res.ErrorCode, res.ErrorMessage = string(reason.Cancelled), fmt.Sprintf("attempt %d was cancelled before it started", req.GetAttempt())
		return p.Module, nil, errors.New(res.ErrorMessage)
	}
	defer done()
	out, err := a.cfg.Runtime.Run(ctx, mod, in)
	if errors.Is(err, sandbox.ErrModuleClosed) {
		// A new version replaced mod between the lookup and the start:
		// the job has not run, so it runs on the version in force.
		if mod = a.table.load().modules[p.Module]; mod == nil {
			res.ErrorCode, res.ErrorMessage = string(reason.ModuleUnavailable), fmt.Sprintf("module %s was retired on host %s", p.Module, a.cfg.ID)
			return p.Module, nil, errors.New(res.ErrorMessage)
		}
		out, err = a.cfg.Runtime.Run(ctx, mod, in)
	}
	res.Module, res.ModuleDigest = p.Module, mod.Digest()
	if out != nil {
		res.Warnings = warnings(out.Log)
		res.Log, res.LogTruncated = resultLog(out.Log, out.LogTruncated)
		instanceRuns.WithLabelValues(p.Module, instanceKind(mod, out)).Inc()
	}
	if err != nil {
		return p.Module, nil, err
	}
	return p.Module, out.Data, nil
}

// maxResultLog bounds the log a result carries, whatever the sandbox's
// MaxLogBytes: the result message must stay well under the bus's max
// payload. The sandbox's own cap (64 KiB by default) is below it.
const maxResultLog = 256 << 10

// resultLog is the run's log as its result carries it (JobResult.log): the
// module's stderr and ward.log lines, set whatever the outcome, and
// whether a cap cut it. An empty log is nil: it costs nothing downstream.
func resultLog(log []byte, truncated bool) ([]byte, bool) {
	if len(log) == 0 {
		return nil, truncated
	}
	if len(log) > maxResultLog {
		return log[:maxResultLog], true
	}
	return log, truncated
}
