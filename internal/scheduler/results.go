package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/telemetry"
)

// reports takes what hosts report of the jobs they run — results
// (handleResult), progress and streamed output (handleProgress): it moves
// the jobs they concern, counts failed attempts against their host and
// zone (countFailure), retries or ends them (retryOrEnd; the reconciler
// uses both), and hands each move to ends (end.go).
type reports struct {
	store    jobstore.Store
	bus      *bus.Conn
	log      *slog.Logger
	settings func() *settings // the configuration in force
	hosts    *Hosts
	domains  *domains
	runs     *runTimes     // a pool's jobs' running times, as results tell them
	owners   *owners       // who runs each dispatched job (progress forwarding)
	objects  *objectStores // large results: their pointers and parts (bigresults.go)
	ends     *ends         // every move's event, a job's end (end.go)
	poke     func()        // wakes the pump: a worker has room again
	acks     *acker        // answers results in batches (acks.go)
}

// startedMsg is the message of a RUNNING recorded with the job's result.
const startedMsg = "started (reported with the result)"

// handleResult records a host's result. Results may come before RUNNING,
// after the reconciler gave up, from a worker the job was taken from, or
// for an earlier attempt: the store decides which moves are valid
// (IfWorker and IfAttempt refuse the last two). The worker is the one the
// subject names — a host may publish only on its own — whatever the
// message says.
//
// A host sends its result with a reply subject and sends it again until a
// scheduler answers (hosts hold no job store credential, so a result
// lost on the way is lost unless sent again): the answer comes once the
// result is applied or refused for good, never when the store failed. A
// result sent again for a job already moved on is refused as late, and
// answered. A result whose reply subject is the host's numbered one
// (bus.ResultAckSubject) is answered by its number in a batch (acker);
// any other reply subject (a host of an earlier Ward, asking with a
// request) with an empty message of its own.
func (rp *reports) handleResult(ctx context.Context, msg *nats.Msg, r *wardv1.JobResult) {
	if !rp.applyResult(ctx, msg, r) || msg.Reply == "" {
		return
	}
	// The host the subject names (a host may publish only on its own),
	// whose inbox alone the answer may go to.
	worker := bus.WorkerOf(msg.Subject)
	if seq, ok := bus.ResultAckSeq(worker, msg.Reply); ok {
		rp.acks.add(worker, seq)
		return
	}
	if !hostReplyAllowed(rp.log, "result", worker, msg) {
		return
	}
	if err := rp.bus.NATS().Publish(msg.Reply, nil); err != nil {
		rp.log.Warn("result answer failed: the host sends it again", "job_id", r.GetJobId(), "err", err)
	}
}

// applyResult applies a host's result, and reports whether it is settled:
// applied, or refused for good. It is not when the store failed.
func (rp *reports) applyResult(ctx context.Context, msg *nats.Msg, r *wardv1.JobResult) bool {
	// The result's span is the child of the host's run span.
	ctx, span := telemetry.StartFrom(ctx, r.GetTraceparent(), "ward.result", trace.SpanKindConsumer)
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(attribute.String("ward.job_id", r.GetJobId()), attribute.String("ward.worker_id", bus.WorkerOf(msg.Subject)),
			attribute.Int("ward.attempt", int(r.GetAttempt())), attribute.String("ward.status", strings.TrimPrefix(r.GetStatus().String(), "JOB_STATE_")))
		if c := r.GetErrorCode(); c != "" {
			span.SetAttributes(attribute.String("ward.error_code", c))
		}
	}
	to := stateOf(r.GetStatus())
	if !to.Terminal() || to == jobstore.Denied {
		rp.log.WarnContext(ctx, "result with a non-terminal status dropped", "job_id", r.GetJobId(), "status", r.GetStatus())
		lateUpdates.WithLabelValues("bad_status").Inc()
		return true
	}
	worker := bus.WorkerOf(msg.Subject)
	if !rp.fromItsHost("result", msg.Subject, r.GetJobId(), r.GetWorkerId(), r.GetAttempt()) {
		return true
	}
	defer rp.poke() // the worker has room again
	c := rp.settings()
	zone := ""
	if w, ok := rp.hosts.Get(worker); ok {
		zone = w.Zone
	}
	if to == jobstore.Succeeded {
		job, why := rp.objects.resultPtrProblem(ctx, r)
		if why == "" && bus.IsObjectPtr(r.GetResultPtr()) && r.GetResultParts() > 0 {
			var retry bool
			if why, retry = rp.objects.sealResult(ctx, r, worker, job); retry {
				return false
			}
		}
		if why != "" {
			// A result stored where this job's result does not go: the
			// host's fault, and the job has no result to show.
			rp.log.WarnContext(ctx, "host result refused", "job_id", r.GetJobId(), "worker_id", worker, "why", why)
			r = &wardv1.JobResult{JobId: r.GetJobId(), WorkerId: r.GetWorkerId(), Attempt: r.GetAttempt(),
				Status: wardv1.JobState_JOB_STATE_FAILED, ErrorCode: string(reason.ResultUnavailable), ErrorMessage: why,
				ExecutionMs: r.GetExecutionMs(), Module: r.GetModule(), ModuleDigest: r.GetModuleDigest(),
				Log: r.GetLog(), LogTruncated: r.GetLogTruncated()}
			to = jobstore.Failed
		}
	}
	if to != jobstore.Succeeded {
		return rp.failed(ctx, r, worker, zone)
	}
	ranMsg := "ran in " + strconv.FormatInt(r.GetExecutionMs(), 10) + " ms"
	if w := r.GetWarnings(); len(w) > 0 {
		// A fallback answer says so where the user looks: the last event.
		ranMsg += "; the module warned: " + strings.Join(w, "; ")
	}
	t := jobstore.Transition{To: to, From: jobstore.Running, IfWorker: worker, IfAttempt: int(r.GetAttempt()), ResultPtr: r.GetResultPtr(),
		WorkerID: worker, Module: r.GetModule(), ModuleDigest: r.GetModuleDigest(), Message: ranMsg, Brief: true,
		Log: r.GetLog(), LogTruncated: r.GetLogTruncated()} // the job keeps the log of the attempt that ended it
	if t.ResultPtr == "" {
		// The result itself: stored with the move, and only if the move is
		// made (a late attempt's overwrites nothing).
		t.Result, t.StoreResult = r.GetResult(), true
	} else if bus.IsObjectPtr(t.ResultPtr) {
		t.ResultDigest = r.GetResultDigest()
	}
	if !r.GetStartedReported() {
		// A job that ended before its host reported the start: the log
		// says it ran, then how it ended, in one step.
		t.From, t.Via, t.ViaMessage = jobstore.Dispatched, jobstore.Running, startedMsg
	}
	var (
		job *jobstore.Job
		err error
	)
	for range 3 {
		job, err = rp.store.Transition(ctx, r.GetJobId(), t)
		if err == nil {
			break
		}
		var te *jobstore.TransitionError
		if !errors.As(err, &te) || te.IfWorker != "" || te.IfAttempt != 0 {
			break
		}
		switch {
		case te.Current == jobstore.Dispatched && t.Via == "":
			// The result overtook the host's STARTED report (they travel
			// separately): RUNNING and the result in one step. The late
			// report is then refused.
			t.From, t.Via, t.ViaMessage = jobstore.Dispatched, jobstore.Running, startedMsg
			continue
		case te.Current == jobstore.Running && t.Via != "":
			// The start was recorded meanwhile, here or at another
			// replica: the result alone.
			t.From, t.Via, t.ViaMessage = jobstore.Running, "", ""
			continue
		}
		break
	}
	if err != nil {
		if span.IsRecording() {
			span.SetStatus(codes.Error, "not stored: "+err.Error())
		}
		rp.late("result", r.GetJobId(), err)
		return settled(err)
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.String("ward.state", string(job.State)))
	}
	rp.domains.record(zone, false, time.Now(), &c.sched.FailureDomains)
	rp.runs.observe(job.Pool, r.GetExecutionMs())
	rp.hosts.SetHeld(worker, job.WorkerJobs, time.Now())
	jobsCompleted.WithLabelValues(rp.ends.topicLabel(job.Topic), string(job.State)).Inc()
	rp.ends.movedStreamed(job, t, r.GetOutputChunks())
	return true
}

// fromItsHost checks what a host's report says of itself against what the
// bus says: the worker in the message must be the subject's, and it must
// name the attempt it ran. A report that fails is refused, logged and
// counted (ward_scheduler_refused_reports_total), and changes nothing; the
// store then refuses one for another worker or attempt (IfWorker,
// IfAttempt).
func (rp *reports) fromItsHost(kind, subject, jobID, claimed string, attempt int32) bool {
	worker := bus.WorkerOf(subject)
	why := ""
	switch {
	case claimed != "" && claimed != worker:
		why = fmt.Sprintf("it says it is from %q, it came from %q", claimed, worker)
	case attempt <= 0:
		why = "it names no attempt"
	default:
		return true
	}
	reportsRefused.WithLabelValues(kind, string(reason.StaleResult)).Inc()
	rp.log.Warn("host report refused", "kind", kind, "job_id", jobID, "worker_id", worker, "code", reason.StaleResult, "why", why)
	return false
}

// late counts a refused progress report or result, and logs store failures.
func (rp *reports) late(kind, id string, err error) {
	var te *jobstore.TransitionError
	if errors.As(err, &te) && te.IfAttempt > 0 && te.Attempt != te.IfAttempt {
		// A result or report of an attempt the job is past.
		reportsRefused.WithLabelValues(kind, string(reason.StaleResult)).Inc()
		rp.log.Warn("host report refused", "kind", kind, "job_id", id, "code", reason.StaleResult, "err", err)
		return
	}
	if errors.Is(err, jobstore.ErrInvalidTransition) || errors.Is(err, jobstore.ErrNotFound) {
		lateUpdates.WithLabelValues(kind).Inc()
		// A progress report that lost a race is routine; a result is not.
		lvl := slog.LevelDebug
		if kind == "result" {
			lvl = slog.LevelInfo
		}
		rp.log.Log(context.Background(), lvl, "late update ignored", "kind", kind, "job_id", id, "err", err)
		return
	}
	logStoreFailure(rp.log, kind, id, err)
}

// failed handles a failed attempt: it counts it against the worker and its
// zone, then retries the job or ends it.
func (rp *reports) failed(ctx context.Context, r *wardv1.JobResult, worker, zone string) bool {
	code := r.GetErrorCode()
	if code == "" {
		code = string(stateOf(r.GetStatus()))
	}
	msg := code
	if r.GetErrorMessage() != "" {
		msg += ": " + r.GetErrorMessage()
	}
	counted := false
	// The decision reads the job, then moves it From the state it read: a
	// progress report handled at the same time (DISPATCHED → RUNNING)
	// makes the move fail, and the result is decided again.
	for range 5 {
		job, err := rp.store.Get(ctx, r.GetJobId())
		if err != nil {
			rp.late("result", r.GetJobId(), err)
			return settled(err)
		}
		if job.State.Terminal() || job.WorkerID != worker {
			lateUpdates.WithLabelValues("result").Inc()
			rp.log.Info("late result ignored: the job moved past it", "job_id", job.ID, "worker_id", worker, "attempt", r.GetAttempt(),
				"code", code, "state", string(job.State), "job_worker_id", job.WorkerID, "job_attempt", job.Attempt)
			return true
		}
		if job.Attempt != int(r.GetAttempt()) {
			reportsRefused.WithLabelValues("result", string(reason.StaleResult)).Inc()
			rp.log.Warn("host report refused", "kind", "result", "job_id", job.ID, "worker_id", worker, "code", reason.StaleResult,
				"why", fmt.Sprintf("it is for attempt %d, the job is at %d", r.GetAttempt(), job.Attempt))
			return true
		}
		if bounced(code) && job.Attempt <= job.MaxRetries+maxBounces {
			// The host never ran it: this replica's view of the host was
			// older than the host (a module swapped or retired, a probe
			// that changed). Place it again, on a fresher view; it is not
			// the host's failure, and it costs the job no retry.
			err := rp.requeue(ctx, job, msg)
			if !errors.Is(err, jobstore.ErrInvalidTransition) {
				return settled(err)
			}
			continue
		}
		if !counted {
			if hostAtFault(code) {
				rp.countFailure(ctx, worker, zone)
			} else {
				// The job's own input or module failed it: that is the
				// tenant's and the module's record, not the host's, so
				// one tenant's bad jobs cannot quarantine a host that
				// others need.
				jobFailures.WithLabelValues(tenantLabel(job.Tenant), r.GetModule(), code).Inc()
			}
			counted = true
		}
		ran := ran{module: r.GetModule(), digest: r.GetModuleDigest(), log: r.GetLog(), logTruncated: r.GetLogTruncated()}
		if err := rp.retryOrEnd(ctx, job, stateOf(r.GetStatus()), code, code, r.GetErrorMessage(), msg, ran); !errors.Is(err, jobstore.ErrInvalidTransition) {
			return settled(err)
		}
	}
	return true // moved on under it five times: another report is deciding
}

// settled reports whether err leaves a host's report decided: applied
// (nil), or refused for good because the job moved past it. A store
// failure does not: the host sends the result again.
func settled(err error) bool {
	var te *jobstore.TransitionError
	return err == nil || errors.As(err, &te) || errors.Is(err, jobstore.ErrInvalidTransition) || errors.Is(err, jobstore.ErrNotFound)
}

// hostAtFault reports whether a failed attempt's error code blames its
// host (it could not read the input, store the result, mount a granted
// directory, or failed on its own) rather than the job: a module that
// returned an error, exited, trapped, ran out of time or memory, wrote too
// much, or reached for what it was not granted failed on its input or its
// code, and would fail on any host.
func hostAtFault(code string) bool {
	switch reason.Code(code) {
	case reason.ModuleError, reason.InputRefused, reason.Exit, reason.Trap, reason.Timeout, reason.MemoryLimit,
		reason.OutputTooLarge, reason.NotGranted, reason.InputTooLarge, reason.Cancelled, reason.InputUnavailable:
		return false
	}
	return true
}

// maxBounces is how many times a job the host refused to start (bounced)
// is placed again beyond its retries.
const maxBounces = 2

// bounced reports whether a host's error code says it did not start the
// job because it no longer serves its pool or meets its requires, or
// because the ticket was signed for an earlier boot of the host (it
// restarted before this replica heard its new boot).
func bounced(code string) bool {
	switch reason.Code(code) {
	case reason.ModuleUnavailable, reason.CapabilityMissing, reason.TicketStaleBoot:
		return true
	}
	return false
}

// requeue puts a bounced job back to PENDING, to be placed again once the
// heartbeats that prompted the bounce have arrived.
func (rp *reports) requeue(ctx context.Context, job *jobstore.Job, msg string) error {
	t := jobstore.Transition{To: jobstore.Pending, From: job.State, IfWorker: job.WorkerID, Reason: string(reason.Requeued),
		Message: "host " + job.WorkerID + " did not start it (" + msg + "); placing it again",
		Wait:    &jobstore.Wait{Until: time.Now().Add(bounceDelay)}}
	moved, err := rp.store.Transition(ctx, job.ID, t)
	if err != nil {
		rp.late("requeue", job.ID, err)
		return err
	}
	retries.WithLabelValues("bounced").Inc()
	rp.hosts.SetHeld(job.WorkerID, moved.WorkerJobs, time.Now())
	rp.ends.moved(moved, t)
	return nil
}

// bounceDelay lets the bouncing host's next heartbeat arrive (hosts send
// one at once when their modules change) before the job is placed again.
const bounceDelay = 250 * time.Millisecond

// countFailure counts a failure against a worker (quarantining it after
// failure_domains.quarantine_failures) and its zone.
func (rp *reports) countFailure(ctx context.Context, worker, zone string) {
	c := rp.settings().sched.FailureDomains
	now := time.Now()
	rp.domains.record(zone, true, now, &c)
	till, err := rp.store.RecordFailure(ctx, worker, now, c.QuarantineWindow, c.QuarantineFailures, c.QuarantineCooldown)
	if err != nil {
		logStoreFailure(rp.log, "failure", "", err)
		return
	}
	if !till.IsZero() {
		rp.log.Warn("worker quarantined", "worker_id", worker, "until", till)
		if q, err := rp.store.Quarantined(ctx, now); err == nil {
			rp.hosts.SetQuarantined(q)
			quarantinedWorkers.Set(float64(len(q)))
		}
	}
}

// retryOrEnd requeues a job whose attempt failed when its max_retries
// allow another attempt, its deadline is not past and its module did not
// refuse its input (input_refused: no attempt can run it), after an
// exponential backoff with jitter; else it ends the job in to with reason
// cause (and the attempt's error code and message, if any) — or, when it
// had retries left to spend or spent, with reason max_retries_exceeded and
// a DLQ entry (a refused input ends with its own reason, in no DLQ). msg describes the
// failure for the event log.
//
// It returns the store's error, having logged or counted it.
// ran names the module version of the attempt, as its host reported it,
// and carries the module's log of the attempt: the job keeps it when the
// attempt ends it (a retried attempt's goes nowhere).
type ran struct {
	module, digest string
	log            []byte
	logTruncated   bool
}

func (rp *reports) retryOrEnd(ctx context.Context, job *jobstore.Job, to jobstore.State, cause, code, errMsg, msg string, ran ran) error {
	c := rp.settings()
	from, worker := job.State, job.WorkerID
	final := reason.Code(code) == reason.InputRefused // no attempt can run it
	if !final && job.Attempt <= job.MaxRetries && (job.Deadline.IsZero() || time.Now().Before(job.Deadline)) {
		delay := c.sched.Retries.Delay(job.Attempt, rand.Float64())
		t := jobstore.Transition{To: jobstore.Pending, From: from, IfWorker: worker, IfAttempt: job.Attempt, Reason: string(reason.Retry),
			Message: fmt.Sprintf("attempt %d of %d failed (%s); retry in %s", job.Attempt, job.MaxRetries+1, msg, delay.Round(time.Millisecond)),
			Wait:    &jobstore.Wait{Until: time.Now().Add(delay)}}
		moved, err := rp.store.Transition(ctx, job.ID, t)
		if err != nil {
			rp.late("retry", job.ID, err)
			return err
		}
		retries.WithLabelValues(cause).Inc()
		waits.WithLabelValues(string(reason.Retry)).Inc()
		rp.hosts.SetHeld(worker, moved.WorkerJobs, time.Now())
		rp.ends.moved(moved, t)
		return nil
	}
	t := jobstore.Transition{To: to, From: from, IfWorker: worker, IfAttempt: job.Attempt, Reason: cause, ErrorCode: code, ErrorMessage: errMsg, Message: msg,
		Module: ran.module, ModuleDigest: ran.digest, Log: ran.log, LogTruncated: ran.logTruncated}
	if from == jobstore.Dispatched && ran.module != "" {
		// The module ran and failed before its host reported the start:
		// the log says it ran, then how it ended, in one step.
		t.Via, t.ViaMessage = jobstore.Running, startedMsg
	}
	dlq := job.MaxRetries > 0 && !final
	if dlq {
		t.Reason = string(reason.MaxRetriesExceeded)
		t.Message = fmt.Sprintf("failed %d attempts, the last: %s", job.Attempt, msg)
	}
	moved, err := rp.store.Transition(ctx, job.ID, t)
	if err != nil {
		rp.late("result", job.ID, err)
		return err
	}
	rp.hosts.SetHeld(worker, moved.WorkerJobs, time.Now())
	if dlq {
		rp.ends.deadLettered(ctx, moved, t)
		return nil
	}
	jobsCompleted.WithLabelValues(rp.ends.topicLabel(moved.Topic), string(moved.State)).Inc()
	rp.ends.moved(moved, t)
	return nil
}

// handleProgress moves a job to RUNNING when its host reports the start,
// and forwards its other reports — percent progress, streamed output — to
// the job's watchers on sys.job.event.<tenant>.<job_id>. It keeps them
// first among the job's live notes (jobstore.LiveNotes, bounded, dropped
// when the job ends: its result holds the whole output), so that a
// watcher attaching late reads what came before it subscribed and misses
// nothing: kept before forwarded, a report is in the notes it reads or
// among the events it receives. Reports are handled concurrently, here
// and across replicas, so forwarded chunks may overtake each other: their
// seq puts them back in order (client.Wait does).
func (rp *reports) handleProgress(ctx context.Context, msg *nats.Msg, p *wardv1.JobProgress) {
	if !rp.fromItsHost("progress", msg.Subject, p.GetJobId(), p.GetWorkerId(), p.GetAttempt()) {
		return
	}
	worker := bus.WorkerOf(msg.Subject)
	switch p.GetKind() {
	case wardv1.JobProgress_KIND_PROGRESS, wardv1.JobProgress_KIND_OUTPUT:
		// Forwarded to the job's tenant only, and only from the host and
		// attempt the job is at: this replica knows the jobs it
		// dispatched; another's it reads once from the store.
		o, ok := rp.owners.get(p.GetJobId())
		if !ok {
			job, err := rp.store.Get(ctx, p.GetJobId())
			if err != nil {
				rp.late("progress", p.GetJobId(), err)
				return
			}
			o = owner{tenant: job.Tenant, worker: job.WorkerID, attempt: job.Attempt}
			if !job.State.Terminal() {
				rp.owners.set(job.ID, o)
			}
		}
		if o.worker != worker || o.attempt != int(p.GetAttempt()) {
			reportsRefused.WithLabelValues("progress", string(reason.StaleResult)).Inc()
			rp.log.Debug("progress of another host or attempt dropped", "job_id", p.GetJobId(), "worker_id", worker, "attempt", p.GetAttempt())
			return
		}
		p.WorkerId = worker
		rp.keepLive(ctx, p)
		ev := &wardv1.JobEvent{JobId: p.GetJobId(), AtUnixMs: p.GetSentAtUnixMs(), WorkerId: worker, Progress: p}
		if err := rp.bus.Publish(bus.EventSubject(o.tenant, p.GetJobId()), ev); err != nil {
			rp.log.Debug("progress forward failed", "job_id", p.GetJobId(), "err", err)
		}
		return
	case wardv1.JobProgress_KIND_STARTED:
	default:
		return
	}
	t := jobstore.Transition{To: jobstore.Running, IfWorker: worker, IfAttempt: int(p.GetAttempt()), WorkerID: worker}
	job, err := rp.store.Transition(ctx, p.GetJobId(), t)
	if err != nil {
		rp.late("progress", p.GetJobId(), err)
		return
	}
	rp.ends.moved(job, t)
}

// keepLive keeps a progress report or a chunk of streamed output among the
// job's live notes. A failure loses the note for late watchers only: the
// report is forwarded all the same.
func (rp *reports) keepLive(ctx context.Context, p *wardv1.JobProgress) {
	var err error
	if p.GetKind() == wardv1.JobProgress_KIND_OUTPUT {
		_, err = rp.store.AddOutput(ctx, p.GetJobId(), int(p.GetAttempt()), p.GetSeq(), p.GetOutput())
	} else {
		// When the host sent it, as the forwarded event says (a watcher
		// that reads it here and receives it too knows it by that), unless
		// the host's clock is off by more than a minute: then when it came.
		at, now := time.UnixMilli(p.GetSentAtUnixMs()), time.Now()
		if d := now.Sub(at); d > time.Minute || d < -time.Minute {
			at = now
		}
		_, err = rp.store.AddProgress(ctx, p.GetJobId(), int(p.GetAttempt()), jobstore.Progress{At: at, Percent: int(p.GetPercent()), Message: p.GetMessage()})
	}
	if err != nil {
		logStoreFailure(rp.log, "live", p.GetJobId(), err)
	}
}

// tenantOf is the tenant a client's subject names (sys.job.<verb>.<tenant>):
// the credential's, since a tenant may publish only on its own. An admin's
// AllTenants is "": no tenant guard.
func tenantOf(msg *nats.Msg) string {
	t := bus.TenantOf(msg.Subject)
	if t == bus.AllTenants {
		return ""
	}
	return t
}

// tenantLabel is a tenant as a metric label.
func tenantLabel(tenant string) string {
	if tenant == "" {
		return "_"
	}
	return tenant
}
