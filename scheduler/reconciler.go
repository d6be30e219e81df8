package scheduler

import (
	"context"
	"time"

	"github.com/ward-run/ward/internal/jobstore"
)

// reconcileLoop marks jobs TIMEOUT that stayed DISPATCHED or RUNNING past
// their thresholds: their host died, or never answered. Every replica runs
// it; the store's From guard makes a second replica's attempt a no-op.
func (s *Scheduler) reconcileLoop(ctx context.Context) {
	defer s.loops.Done()
	t := time.NewTicker(s.cfg.Timeouts.Reconciler.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.Reconcile(ctx, now)
		}
	}
}

// Reconcile runs one reconciler pass as of now and returns how many jobs
// it timed out.
func (s *Scheduler) Reconcile(ctx context.Context, now time.Time) int {
	r := s.cfg.Timeouts.Reconciler
	n := 0
	for _, c := range []struct {
		state  jobstore.State
		after  time.Duration
		reason string
	}{
		{jobstore.Dispatched, r.DispatchTimeout, ReasonDispatchTimeout},
		{jobstore.Running, r.RunningTimeout, ReasonRunningTimeout},
	} {
		ids, err := s.cfg.Store.Stale(ctx, c.state, now.Add(-c.after), 500)
		if err != nil {
			s.storeFailed("stale", "", err)
			continue
		}
		for _, id := range ids {
			msg := "no progress for " + c.after.String() + " in " + string(c.state)
			job, err := s.cfg.Store.Transition(ctx, id, jobstore.Transition{To: jobstore.Timeout, From: c.state, Reason: c.reason, Message: msg})
			if err != nil {
				s.storeFailed("timeout", id, err)
				continue
			}
			n++
			timeouts.WithLabelValues(c.reason).Inc()
			jobsCompleted.WithLabelValues(s.topicLabel(job.Topic), string(jobstore.Timeout)).Inc()
			s.log.Info("job timed out", "job_id", id, "reason", c.reason)
			s.publishEvent(job, jobstore.Event{At: job.UpdatedAt, State: jobstore.Timeout, Reason: c.reason, Message: msg})
		}
	}
	return n
}
