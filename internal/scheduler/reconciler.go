package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/ward-run/ward/api/reason"
	"github.com/ward-run/ward/internal/jobstore"
)

// leaseName is the reconciler's lease in the store.
const leaseName = "reconciler"

// reconcileBatch bounds what one pass looks at per kind.
const reconcileBatch = 500

// reconciler ends or recovers the jobs that nothing else will move: on the
// one replica that holds its lease in the store, it ends jobs past their
// deadline every tick and, every scan_interval, completes jobs whose
// result is stored but whose move was lost, retries or times out jobs
// whose host went silent, admits again what a dead replica left half
// done, and fails what waited queue.max_wait in a queue. It holds only
// what it uses: the store, the clock, the configuration in force, the
// registry, the ends of jobs (end.go), and hooks into the other steps.
// The Scheduler starts it (run) with its loops and stops it with them.
type reconciler struct {
	id       string // this replica: the lease's owner
	store    jobstore.Store
	log      *slog.Logger
	now      func() time.Time // the clock
	settings func() *settings // the configuration in force
	hosts    *Hosts
	ends     *ends // every move's event, a job's end (end.go)

	// countFailure counts a failed attempt against its host and zone;
	// retryOrEnd retries an attempt the reconciler gave up, or ends its
	// job (reports, results.go).
	countFailure func(ctx context.Context, worker, zone string)
	retryOrEnd   func(ctx context.Context, job *jobstore.Job, to jobstore.State, cause, code, errMsg, msg string, ran ran) error
	// handOut admits a job again (pump.go); settleRunJob ends a job that
	// follows a workflow run as its run ended (jobruns.go); poke wakes the
	// pump.
	handOut      func(ctx context.Context, job *jobstore.Job)
	settleRunJob func(ctx context.Context, job *jobstore.Job)
	poke         func()

	leader atomic.Bool // this replica holds the lease
}

// leading reports whether this replica holds the reconciler lease now.
func (rc *reconciler) leading() bool { return rc.leader.Load() }

// run runs the reconciler on one replica at a time: the holder of a
// lease in the store, renewed every third of its ttl (at least every
// second). When the holder dies, the lease lapses and another replica takes
// over within lease_ttl. The holder ends jobs past their deadline every
// tick, and runs reconcile every scan_interval. When lctx ends it gives
// the lease up, so that another takes over at once, and returns. Store
// calls use lctx; the jobs it hands back to admission run under ctx.
func (rc *reconciler) run(lctx, ctx context.Context) {
	var (
		leader   bool
		lastScan time.Time
		t        = time.NewTimer(0)
	)
	defer t.Stop()
	for {
		select {
		case <-lctx.Done():
			if leader {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
				if err := rc.store.ReleaseLease(rctx, leaseName, rc.id); err != nil {
					logStoreFailure(rc.log, "lease", "", err)
				}
				cancel()
				reconcilerLeader.Set(0)
				rc.leader.Store(false)
			}
			return
		case <-t.C:
		}
		r := rc.settings().timeouts.Reconciler
		ok, err := rc.store.AcquireLease(lctx, leaseName, rc.id, r.LeaseTTL)
		if err != nil {
			if lctx.Err() == nil {
				logStoreFailure(rc.log, "lease", "", err)
			}
			ok = false
		}
		if ok != leader {
			leader = ok
			rc.leader.Store(ok)
			rc.log.Info("reconciler lease", "held", leader)
			if leader {
				reconcilerLeader.Set(1)
			} else {
				reconcilerLeader.Set(0)
			}
		}
		if leader {
			now := rc.now()
			rc.expire(lctx, now)
			if now.Sub(lastScan) >= r.ScanInterval {
				lastScan = now
				rc.reconcile(lctx, ctx, now)
				// Jobs past the store's retention leave its indexes.
				if n, err := rc.store.Sweep(lctx, now); err != nil {
					logStoreFailure(rc.log, "sweep", "", err)
				} else if n > 0 {
					jobsSwept.Add(float64(n))
				}
			}
		}
		t.Reset(min(r.LeaseTTL/3, time.Second))
	}
}

// expire ends the jobs whose deadline passed TIMEOUT (deadline_exceeded),
// and tells their hosts to stop them.
func (rc *reconciler) expire(ctx context.Context, now time.Time) int {
	ids, err := rc.store.PastDeadline(ctx, now, reconcileBatch)
	if err != nil {
		logStoreFailure(rc.log, "deadlines", "", err)
		return 0
	}
	n := 0
	for _, id := range ids {
		t := jobstore.Transition{To: jobstore.Timeout, Reason: string(reason.DeadlineExceeded), Message: "its deadline passed"}
		job, err := rc.store.Transition(ctx, id, t)
		if err != nil {
			logStoreFailure(rc.log, "deadline", id, err)
			continue
		}
		n++
		timeouts.WithLabelValues(string(reason.DeadlineExceeded)).Inc()
		jobsCompleted.WithLabelValues(rc.ends.topicLabel(job.Topic), string(job.State)).Inc()
		rc.ends.moved(job, t)
		if job.WorkerID != "" {
			rc.hosts.SetHeld(job.WorkerID, job.WorkerJobs, now)
			// The host running it stops it at once.
			rc.ends.stopOnHosts(job, string(reason.DeadlineExceeded))
		}
		rc.poke()
	}
	return n
}

// reconcile runs one reconciler pass as of now and returns how many jobs it
// acted on. Store calls use lctx; the jobs it hands back to admission run
// under ctx. In order:
//
//   - a DISPATCHED or RUNNING job whose result is stored for longer than
//     result_grace lost its result message: it ends SUCCEEDED from the
//     store (recoverResults);
//   - a DISPATCHED job past its topic's dispatch_timeout, or a RUNNING one
//     past its running_timeout, lost its host: it is retried when its
//     max_retries allow, else it ends TIMEOUT (dispatch_timeout,
//     running_timeout); the worker's failure is counted (timeOutSilent);
//   - a SCHEDULED job older than pending_timeout lost its replica before it
//     was dispatched: it goes back to PENDING and is admitted again;
//   - a PENDING job that waits in no queue, older than pending_timeout,
//     lost its replica while being admitted: it is admitted again
//     (readmit, both);
//   - a queued job that waited queue.max_wait ends FAILED pool_overloaded
//     (no_workers when its pool has no live host) (failOverdue).
func (rc *reconciler) reconcile(lctx, ctx context.Context, now time.Time) int {
	c := rc.settings()
	n := rc.recoverResults(lctx, c, now)
	n += rc.timeOutSilent(lctx, c, now)
	n += rc.readmit(lctx, ctx, c, now)
	n += rc.failOverdue(lctx, c, now)
	return n
}

// recoverResults ends SUCCEEDED, from the store, the DISPATCHED and
// RUNNING jobs whose result was stored result_grace ago or more.
func (rc *reconciler) recoverResults(lctx context.Context, c *settings, now time.Time) int {
	n := 0
	for _, state := range []jobstore.State{jobstore.Dispatched, jobstore.Running} {
		ids, err := rc.store.WithResult(lctx, state, now.Add(-c.timeouts.Reconciler.ResultGrace), reconcileBatch)
		if err != nil {
			logStoreFailure(rc.log, "with result", "", err)
		}
		for _, id := range ids {
			t := jobstore.Transition{To: jobstore.Succeeded, From: state, ResultPtr: jobstore.ResultPtr(id),
				Message: "result recovered from the store: its host finished, the result message was lost"}
			job, err := rc.store.Transition(lctx, id, t)
			if err != nil {
				logStoreFailure(rc.log, "recover", id, err)
				continue
			}
			n++
			recovered.WithLabelValues("result").Inc()
			rc.hosts.SetHeld(job.WorkerID, job.WorkerJobs, now)
			jobsCompleted.WithLabelValues(rc.ends.topicLabel(job.Topic), string(job.State)).Inc()
			rc.ends.moved(job, t)
		}
	}
	return n
}

// timeOutSilent retries, or ends TIMEOUT, the DISPATCHED jobs past their
// topic's dispatch_timeout and the RUNNING ones past its running_timeout,
// and counts the failure against the worker; a job that follows a
// workflow run is settled as its run ended instead.
func (rc *reconciler) timeOutSilent(lctx context.Context, c *settings, now time.Time) int {
	n := 0
	dispatchMin, runningMin := c.timeouts.Shortest()
	for _, k := range []struct {
		state jobstore.State
		after time.Duration
		code  reason.Code
	}{
		{jobstore.Dispatched, dispatchMin, reason.DispatchTimeout},
		{jobstore.Running, runningMin, reason.RunningTimeout},
	} {
		ids, err := rc.store.Stale(lctx, k.state, now.Add(-k.after), reconcileBatch)
		if err != nil {
			logStoreFailure(rc.log, "stale", "", err)
			continue
		}
		for _, id := range ids {
			job, err := rc.store.Get(lctx, id)
			if err != nil || job.State != k.state {
				continue
			}
			if isRunJob(job) {
				// It follows its workflow run, not a host: it ends as
				// the run ends (the run's own timeout bounds it).
				rc.settleRunJob(lctx, job)
				continue
			}
			dispatch, running, _ := c.timeouts.For(job.Topic)
			limit := dispatch
			if k.state == jobstore.Running {
				limit = running
			}
			if now.Sub(job.UpdatedAt) < limit {
				continue
			}
			n++
			timeouts.WithLabelValues(string(k.code)).Inc()
			zone := ""
			if w, ok := rc.hosts.Get(job.WorkerID); ok {
				zone = w.Zone
			}
			rc.countFailure(lctx, job.WorkerID, zone)
			msg := fmt.Sprintf("no progress for %s in %s on worker %s", limit, k.state, job.WorkerID)
			rc.log.Info("job timed out", "job_id", id, "reason", string(k.code), "worker_id", job.WorkerID)
			// The attempt is over, whatever comes of the job: should its
			// host still run it (or still hold its dispatch), it stops
			// (refuses) that attempt and no other. Told before the retry
			// is placed, so that the cancel cannot reach the host after
			// the new attempt's dispatch.
			rc.ends.stopOnHosts(job, string(k.code))
			// An error is logged and counted there (late): another
			// replica or the host's report moved it first, or the store
			// failed and the next pass reads it again.
			_ = rc.retryOrEnd(lctx, job, jobstore.Timeout, string(k.code), "", "", msg, ran{})
		}
	}
	return n
}

// readmit admits again, under ctx, what a replica that died left half
// done: SCHEDULED jobs (moved back to PENDING) and PENDING jobs in no
// queue, both older than pending_timeout.
func (rc *reconciler) readmit(lctx, ctx context.Context, c *settings, now time.Time) int {
	n := 0
	pendingTimeout := c.timeouts.Reconciler.PendingTimeout
	ids, err := rc.store.Stale(lctx, jobstore.Scheduled, now.Add(-pendingTimeout), reconcileBatch)
	if err != nil {
		logStoreFailure(rc.log, "stale", "", err)
	}
	for _, id := range ids {
		t := jobstore.Transition{To: jobstore.Pending, From: jobstore.Scheduled, Reason: string(reason.Requeued),
			Message: "its scheduler replica stopped before dispatching it; admitted again"}
		job, err := rc.store.Transition(lctx, id, t)
		if err != nil {
			logStoreFailure(rc.log, "requeue", id, err)
			continue
		}
		n++
		recovered.WithLabelValues("scheduled").Inc()
		rc.ends.moved(job, t)
		rc.handOut(ctx, job)
	}

	ids, err = rc.store.Stale(lctx, jobstore.Pending, now.Add(-pendingTimeout), reconcileBatch)
	if err != nil {
		logStoreFailure(rc.log, "stale", "", err)
	}
	for _, id := range ids {
		job, err := rc.store.Get(lctx, id)
		if err != nil || job.State != jobstore.Pending || job.Waiting != "" {
			continue
		}
		n++
		recovered.WithLabelValues("orphan").Inc()
		rc.log.Info("admitting a job its replica left", "job_id", id)
		rc.handOut(ctx, job)
	}
	return n
}

// failOverdue ends FAILED the first attempts that waited queue.max_wait in
// a pool's queue: pool_overloaded, or no_workers when no live host serves
// the pool.
func (rc *reconciler) failOverdue(lctx context.Context, c *settings, now time.Time) int {
	n := 0
	for _, pool := range sortedPools(c) {
		heads, err := rc.store.QueueHeads(lctx, pool, 100)
		if err != nil {
			logStoreFailure(rc.log, "queue heads", "", err)
			continue
		}
		for _, job := range heads {
			if job.Attempt > 0 || now.Sub(job.CreatedAt) <= c.sched.Queue.MaxWait {
				continue
			}
			code, why := reason.PoolOverloaded, "every eligible worker stayed busy"
			if !rc.hosts.Serves(pool, now) {
				code, why = reason.NoWorkers, fmt.Sprintf("no live host serves pool %q", pool)
			}
			n++
			rc.ends.end(lctx, job, limits{}, jobstore.Transition{To: jobstore.Failed, From: jobstore.Pending, Reason: string(code),
				Message: fmt.Sprintf("waited %s in the queue of pool %s (queue.max_wait %s): %s",
					now.Sub(job.CreatedAt).Round(time.Second), pool, c.sched.Queue.MaxWait, why)}, true)
		}
	}
	return n
}
