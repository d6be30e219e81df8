package scheduler

import (
	"context"
	"time"
)

// houseLoop keeps this replica's view current, every second: the mode (in
// case a notice was missed), the quarantined and drained workers, the
// throttled zones, and the silent workers to forget.
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
			s.refreshDrained(lctx)
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
