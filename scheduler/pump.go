package scheduler

import (
	"context"
	"slices"
	"time"

	"github.com/ward-run/ward/jobstore"
	"github.com/ward-run/ward/scheduler/placement"
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
// replica is placing it already.
func (s *Scheduler) handOut(ctx context.Context, job *jobstore.Job) {
	if _, busy := s.placing.LoadOrStore(job.ID, struct{}{}); busy {
		return
	}
	s.submits.Go(func() {
		defer s.placing.Delete(job.ID)
		s.admit(ctx, job, nil)
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

// houseLoop keeps this replica's view current, every second: the mode (in
// case a notice was missed), the quarantined workers, the throttled zones,
// and the silent workers to forget.
func (s *Scheduler) houseLoop(lctx context.Context) {
	defer s.loops.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-lctx.Done():
			return
		case now := <-t.C:
			s.refreshMode(lctx)
			if q, err := s.cfg.Store.Quarantined(lctx, now); err != nil {
				s.storeFailed("quarantined", "", err)
			} else {
				s.hosts.SetQuarantined(q)
				quarantinedWorkers.Set(float64(len(q)))
			}
			hot := s.domains.throttled(now, &s.conf.load().sched.FailureDomains)
			s.hot.Store(&hot)
			if n := s.hosts.Evict(now); n > 0 {
				s.log.Info("evicted silent workers", "count", n)
			}
			liveWorkers.Set(float64(s.hosts.Len()))
		}
	}
}

// hotZones returns the zones whose dispatch is throttled now.
func (s *Scheduler) hotZones() map[string]bool {
	if p := s.hot.Load(); p != nil {
		return *p
	}
	return nil
}
