package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/ward-run/ward/api/reason"
	"github.com/ward-run/ward/internal/jobstore"
)

// leaseName is the reconciler's lease in the store.
const leaseName = "reconciler"

// reconcileBatch bounds what one pass looks at per kind.
const reconcileBatch = 500

// leaseLoop runs the reconciler on one replica at a time: the holder of a
// lease in the store, renewed every third of its ttl (at least every
// second). When the holder dies, the lease lapses and another replica takes
// over within lease_ttl. The holder ends jobs past their deadline every
// tick, and runs reconcile every scan_interval. On shutdown it gives the
// lease up, so that another takes over at once.
func (s *Scheduler) leaseLoop(lctx, ctx context.Context) {
	defer s.loops.Done()
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
				if err := s.cfg.Store.ReleaseLease(rctx, leaseName, s.id); err != nil {
					s.storeFailed("lease", "", err)
				}
				cancel()
				reconcilerLeader.Set(0)
				s.leader.Store(false)
			}
			return
		case <-t.C:
		}
		r := s.conf.load().timeouts.Reconciler
		ok, err := s.cfg.Store.AcquireLease(lctx, leaseName, s.id, r.LeaseTTL)
		if err != nil {
			if lctx.Err() == nil {
				s.storeFailed("lease", "", err)
			}
			ok = false
		}
		if ok != leader {
			leader = ok
			s.leader.Store(ok)
			s.log.Info("reconciler lease", "held", leader)
			if leader {
				reconcilerLeader.Set(1)
			} else {
				reconcilerLeader.Set(0)
			}
		}
		if leader {
			now := time.Now()
			s.expire(lctx, now)
			if now.Sub(lastScan) >= r.ScanInterval {
				lastScan = now
				s.reconcile(lctx, ctx, now)
				// Jobs past the store's retention leave its indexes.
				if n, err := s.cfg.Store.Sweep(lctx, now); err != nil {
					s.storeFailed("sweep", "", err)
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
func (s *Scheduler) expire(ctx context.Context, now time.Time) int {
	ids, err := s.cfg.Store.PastDeadline(ctx, now, reconcileBatch)
	if err != nil {
		s.storeFailed("deadlines", "", err)
		return 0
	}
	n := 0
	for _, id := range ids {
		t := jobstore.Transition{To: jobstore.Timeout, Reason: string(reason.DeadlineExceeded), Message: "its deadline passed"}
		job, err := s.cfg.Store.Transition(ctx, id, t)
		if err != nil {
			s.storeFailed("deadline", id, err)
			continue
		}
		n++
		timeouts.WithLabelValues(string(reason.DeadlineExceeded)).Inc()
		jobsCompleted.WithLabelValues(s.ends.topicLabel(job.Topic), string(job.State)).Inc()
		s.ends.moved(job, t)
		if job.WorkerID != "" {
			s.hosts.SetHeld(job.WorkerID, job.WorkerJobs, now)
			// The host running it stops it at once.
			s.ends.stopOnHosts(job, string(reason.DeadlineExceeded))
		}
		s.poke()
	}
	return n
}

// reconcile runs one reconciler pass as of now and returns how many jobs it
// acted on. Store calls use lctx; the jobs it hands back to admission run
// under ctx. In order:
//
//   - a DISPATCHED or RUNNING job whose result is stored for longer than
//     result_grace lost its result message: it ends SUCCEEDED from the store;
//   - a DISPATCHED job past its topic's dispatch_timeout, or a RUNNING one
//     past its running_timeout, lost its host: it is retried when its
//     max_retries allow, else it ends TIMEOUT (dispatch_timeout,
//     running_timeout); the worker's failure is counted;
//   - a SCHEDULED job older than pending_timeout lost its replica before it
//     was dispatched: it goes back to PENDING and is admitted again;
//   - a PENDING job that waits in no queue, older than pending_timeout,
//     lost its replica while being admitted: it is admitted again;
//   - a queued job that waited queue.max_wait ends FAILED pool_overloaded
//     (no_workers when its pool has no live host).
func (s *Scheduler) reconcile(lctx, ctx context.Context, now time.Time) int {
	c := s.conf.load()
	r := c.timeouts.Reconciler
	n := 0
	for _, state := range []jobstore.State{jobstore.Dispatched, jobstore.Running} {
		ids, err := s.cfg.Store.WithResult(lctx, state, now.Add(-r.ResultGrace), reconcileBatch)
		if err != nil {
			s.storeFailed("with result", "", err)
		}
		for _, id := range ids {
			t := jobstore.Transition{To: jobstore.Succeeded, From: state, ResultPtr: jobstore.ResultPtr(id),
				Message: "result recovered from the store: its host finished, the result message was lost"}
			job, err := s.cfg.Store.Transition(lctx, id, t)
			if err != nil {
				s.storeFailed("recover", id, err)
				continue
			}
			n++
			recovered.WithLabelValues("result").Inc()
			s.hosts.SetHeld(job.WorkerID, job.WorkerJobs, now)
			jobsCompleted.WithLabelValues(s.ends.topicLabel(job.Topic), string(job.State)).Inc()
			s.ends.moved(job, t)
		}
	}

	dispatchMin, runningMin := c.timeouts.Shortest()
	for _, k := range []struct {
		state jobstore.State
		after time.Duration
		code  reason.Code
	}{
		{jobstore.Dispatched, dispatchMin, reason.DispatchTimeout},
		{jobstore.Running, runningMin, reason.RunningTimeout},
	} {
		ids, err := s.cfg.Store.Stale(lctx, k.state, now.Add(-k.after), reconcileBatch)
		if err != nil {
			s.storeFailed("stale", "", err)
			continue
		}
		for _, id := range ids {
			job, err := s.cfg.Store.Get(lctx, id)
			if err != nil || job.State != k.state {
				continue
			}
			if isRunJob(job) {
				// It follows its workflow run, not a host: it ends as
				// the run ends (the run's own timeout bounds it).
				s.settleRunJob(lctx, job)
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
			if w, ok := s.hosts.Get(job.WorkerID); ok {
				zone = w.Zone
			}
			s.reports.countFailure(lctx, job.WorkerID, zone)
			msg := fmt.Sprintf("no progress for %s in %s on worker %s", limit, k.state, job.WorkerID)
			s.log.Info("job timed out", "job_id", id, "reason", string(k.code), "worker_id", job.WorkerID)
			// The attempt is over, whatever comes of the job: should its
			// host still run it (or still hold its dispatch), it stops
			// (refuses) that attempt and no other. Told before the retry
			// is placed, so that the cancel cannot reach the host after
			// the new attempt's dispatch.
			s.ends.stopOnHosts(job, string(k.code))
			if err := s.reports.retryOrEnd(lctx, job, jobstore.Timeout, string(k.code), "", "", msg, ran{}); err != nil {
				// Logged and counted there (late): another replica or the
				// host's report moved it first, or the store failed and
				// the next pass reads it again.
				continue
			}
		}
	}

	ids, err := s.cfg.Store.Stale(lctx, jobstore.Scheduled, now.Add(-r.PendingTimeout), reconcileBatch)
	if err != nil {
		s.storeFailed("stale", "", err)
	}
	for _, id := range ids {
		t := jobstore.Transition{To: jobstore.Pending, From: jobstore.Scheduled, Reason: string(reason.Requeued),
			Message: "its scheduler replica stopped before dispatching it; admitted again"}
		job, err := s.cfg.Store.Transition(lctx, id, t)
		if err != nil {
			s.storeFailed("requeue", id, err)
			continue
		}
		n++
		recovered.WithLabelValues("scheduled").Inc()
		s.ends.moved(job, t)
		s.handOut(ctx, job)
	}

	ids, err = s.cfg.Store.Stale(lctx, jobstore.Pending, now.Add(-r.PendingTimeout), reconcileBatch)
	if err != nil {
		s.storeFailed("stale", "", err)
	}
	for _, id := range ids {
		job, err := s.cfg.Store.Get(lctx, id)
		if err != nil || job.State != jobstore.Pending || job.Waiting != "" {
			continue
		}
		n++
		recovered.WithLabelValues("orphan").Inc()
		s.log.Info("admitting a job its replica left", "job_id", id)
		s.handOut(ctx, job)
	}

	for _, pool := range sortedPools(c) {
		heads, err := s.cfg.Store.QueueHeads(lctx, pool, 100)
		if err != nil {
			s.storeFailed("queue heads", "", err)
			continue
		}
		for _, job := range heads {
			if job.Attempt > 0 || now.Sub(job.CreatedAt) <= c.sched.Queue.MaxWait {
				continue
			}
			code, why := reason.PoolOverloaded, "every eligible worker stayed busy"
			if !s.hosts.Serves(pool, now) {
				code, why = reason.NoWorkers, fmt.Sprintf("no live host serves pool %q", pool)
			}
			n++
			s.ends.end(lctx, job, limits{}, jobstore.Transition{To: jobstore.Failed, From: jobstore.Pending, Reason: string(code),
				Message: fmt.Sprintf("waited %s in the queue of pool %s (queue.max_wait %s): %s",
					now.Sub(job.CreatedAt).Round(time.Second), pool, c.sched.Queue.MaxWait, why)}, true)
		}
	}
	return n
}
