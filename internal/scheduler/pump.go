package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/ward-run/ward/api/reason"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/scheduler/placement"
)

// pumpHeads is how many jobs of a pool queue the pump looks at in one go.
const pumpHeads = 32

// pumpLoop places waiting jobs: deferred jobs that are due, and queued
// jobs as capacity frees. It runs when poked (a result freed a worker, a
// heartbeat showed room, a job was queued, the mode changed) and every
// queue.pump_interval, for what other replicas queued.
func (s *Scheduler) pumpLoop(lctx, ctx context.Context) {
	defer s.loops.Done()
	interval := s.conf.load().sched.Queue.PumpInterval
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		tick := false
		select {
		case <-lctx.Done():
			return
		case <-s.wake:
		case <-t.C:
			tick = true
		}
		if iv := s.conf.load().sched.Queue.PumpInterval; iv != interval {
			interval = iv
			t.Reset(interval)
		}
		s.pump(lctx, ctx, tick)
	}
}

// pump hands out what may be placed now. Placements run on the submission
// workers; the store decides which replica places each job. On a tick it
// takes the deferred jobs that are due and reads every queue's length (two
// round trips); poked, it looks only at the queues it knows hold jobs, so
// that a result in a system where nothing waits costs no round trip.
func (s *Scheduler) pump(lctx, ctx context.Context, tick bool) {
	if s.Mode() == ModeDraining {
		return
	}
	now := time.Now()
	c := s.conf.load()
	var pools []string
	if tick {
		due, err := s.cfg.Store.DueDeferred(ctx, now, pumpHeads)
		if err != nil {
			s.storeFailed("deferred", "", err)
		}
		for _, job := range due {
			if lctx.Err() != nil {
				return
			}
			s.handOut(ctx, job)
		}
		all := sortedPools(c)
		lens, err := s.cfg.Store.QueueLens(ctx, all)
		if err != nil {
			s.storeFailed("queues", "", err)
			return
		}
		for i, pool := range all {
			queueDepth.WithLabelValues(pool).Set(float64(lens[i]))
		}
		pools = s.queues.recount(all, lens, func(pool string) bool { return s.hosts.Serves(pool, now) })
	} else {
		pools = s.queues.known()
	}
	snap := s.placer.snapshot()
	defer s.placer.release(snap)
	for _, pool := range pools {
		if lctx.Err() != nil {
			return
		}
		s.hosts.Snapshot(snap, pool, now)
		snap.Module = c.versions[pool]
		p := s.policy(c.sched, pool)
		room := placement.RoomIn(snap, &p, pumpHeads)
		if room.RollingOut {
			continue // a host will hold the version in force soon; its heartbeat pokes
		}
		if room.Current == 0 && s.deserted(pool, now) {
			// No live host for a while: admission ends them no_workers,
			// as it does fresh submissions.
			room.Slots = pumpHeads
		}
		if room.Slots == 0 {
			continue
		}
		heads, err := s.cfg.Store.QueueHeads(ctx, pool, room.Slots)
		if err != nil {
			s.storeFailed("queue heads", "", err)
			continue
		}
		if len(heads) == 0 {
			s.queues.drained(pool)
		}
		for _, job := range heads {
			if lctx.Err() != nil {
				return
			}
			s.handOut(ctx, job)
		}
	}
}

// deserted reports whether pool has had no live host for the warm-up
// time, this replica past its own: a host that restarts quickly does not
// fail the jobs that wait for it.
func (s *Scheduler) deserted(pool string, now time.Time) bool {
	since, ok := s.queues.emptySince(pool, now)
	if !ok {
		return false
	}
	return !s.warming() && now.Sub(since) >= min(warmup, s.cfg.WorkerTTL)
}

// handOut admits a waiting job on a submission worker, unless this
// replica is placing it already, or went DRAINING since the pump round
// began (the round's store reads may span the switch, and the slot a job
// frees meanwhile: a job that waits is not started once DRAINING is in
// force).
func (s *Scheduler) handOut(ctx context.Context, job *jobstore.Job) {
	if _, busy := s.placing.LoadOrStore(job.ID, struct{}{}); busy {
		return
	}
	s.submits.Go(func() {
		defer s.placing.Delete(job.ID)
		if s.Mode() == ModeDraining {
			return
		}
		s.admit(ctx, job, nil, nil)
	})
}

func sortedPools(c *settings) []string {
	pools := make([]string, 0, len(c.pools.Pools))
	for p := range c.pools.Pools {
		pools = append(pools, p)
	}
	slices.Sort(pools)
	return pools
}

// park puts a PENDING job in pool's queue, ordered by its aged priority,
// and wakes the pump. A full queue, or a job that waited queue.max_wait,
// ends FAILED pool_overloaded.
func (s *Scheduler) park(ctx context.Context, c *settings, job *jobstore.Job, lim limits, pool, why string) {
	q := c.sched.Queue
	// A retried job (Attempt > 0) is bounded by its retries, not by the
	// time since its submission.
	if job.Attempt == 0 && time.Since(job.CreatedAt) > q.MaxWait {
		s.ends.end(ctx, job, lim, jobstore.Transition{To: jobstore.Failed, Reason: string(reason.PoolOverloaded),
			Message: fmt.Sprintf("waited %s (queue.max_wait %s): %s", time.Since(job.CreatedAt).Round(time.Second), q.MaxWait, why)}, true)
		return
	}
	t := jobstore.Transition{To: jobstore.Pending, From: jobstore.Pending, Reason: string(reason.PoolOverloaded), Message: why,
		Wait: &jobstore.Wait{Pool: pool, Score: jobstore.QueueScore(job.Priority, job.CreatedAt, q.AgingFactor), Cap: q.Cap}}
	lim.first(&t)
	moved, err := s.cfg.Store.Transition(ctx, job.ID, t)
	switch {
	case errors.Is(err, jobstore.ErrQueueFull):
		s.ends.end(ctx, job, lim, jobstore.Transition{To: jobstore.Failed, Reason: string(reason.PoolOverloaded),
			Message: fmt.Sprintf("queue of pool %s is full (%d jobs): %s", pool, q.Cap, why)}, true)
		return
	case err != nil:
		s.storeFailed("queue", job.ID, err)
		return
	}
	waits.WithLabelValues(string(reason.PoolOverloaded)).Inc()
	s.ends.moved(moved, t)
	s.queues.queued(pool)
	s.poke()
}

// deferTenant puts back a job whose tenant is at its limit, to try again
// after a backoff; past the tenant wait budget it ends FAILED tenant_limit.
func (s *Scheduler) deferTenant(ctx context.Context, c *settings, job *jobstore.Job, lim limits, le *jobstore.LimitError) {
	tc := c.sched.Tenants
	if waited := time.Since(job.CreatedAt); job.Attempt == 0 && waited > tc.WaitBudget {
		s.ends.end(ctx, job, lim, jobstore.Transition{To: jobstore.Failed, Reason: string(reason.TenantLimit),
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
	s.ends.moved(moved, t)
}

// queueBook is the pump's bookkeeping of the pool queues: the pools known
// to hold waiting jobs (so that a poke reads only those), and since when a
// pool has had no live host (as the pump saw).
type queueBook struct {
	mu      sync.Mutex      // guards waiting; taken before Hosts.mu and emptyMu
	waiting map[string]bool // pools known to hold waiting jobs

	emptyMu sync.Mutex           // guards empty
	empty   map[string]time.Time // pool -> since when it has no live host
}

func newQueueBook() *queueBook {
	return &queueBook{waiting: make(map[string]bool), empty: make(map[string]time.Time)}
}

// queued notes that pool holds waiting jobs.
func (q *queueBook) queued(pool string) {
	q.mu.Lock()
	q.waiting[pool] = true
	q.mu.Unlock()
}

// drained notes that pool's queue was found empty.
func (q *queueBook) drained(pool string) {
	q.mu.Lock()
	delete(q.waiting, pool)
	q.mu.Unlock()
}

// known returns the pools known to hold waiting jobs, sorted.
func (q *queueBook) known() []string {
	var pools []string
	q.mu.Lock()
	for pool := range q.waiting {
		pools = append(pools, pool)
	}
	q.mu.Unlock()
	slices.Sort(pools)
	return pools
}

// recount starts the book again from every pool's queue length (lens[i]
// is all[i]'s): it returns the pools that hold waiting jobs, in all's
// order, and forgets when the pools that serves says have a live host
// became empty. serves is called with q.mu held (it takes Hosts.mu).
func (q *queueBook) recount(all []string, lens []int, serves func(pool string) bool) []string {
	var pools []string
	q.mu.Lock()
	defer q.mu.Unlock()
	clear(q.waiting)
	for i, pool := range all {
		if serves(pool) {
			q.emptyMu.Lock()
			delete(q.empty, pool)
			q.emptyMu.Unlock()
		}
		if lens[i] > 0 {
			q.waiting[pool] = true
			pools = append(pools, pool)
		}
	}
	return pools
}

// emptySince returns since when pool has had no live host; the first
// call for a pool records now and returns ok false.
func (q *queueBook) emptySince(pool string, now time.Time) (since time.Time, ok bool) {
	q.emptyMu.Lock()
	defer q.emptyMu.Unlock()
	since, ok = q.empty[pool]
	if !ok {
		q.empty[pool] = now
	}
	return since, ok
}
