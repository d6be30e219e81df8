package placement

// Room is what a pool can take now, as the pump sees it.
type Room struct {
	// Slots is how many more jobs the pool's workers can take now, at
	// most the limit asked.
	Slots int
	// Current counts the workers that hold the module version in force
	// (every worker when no version is required).
	Current int
	// RollingOut: none does, and the version is within its rollout grace;
	// a host's heartbeat will say when one does.
	RollingOut bool
}

// RoomIn estimates how many more jobs the snapshot's workers can take now
// under p, at most limit: the limit as soon as a worker has no
// max_parallel_jobs; none on a stale or quarantined worker.
func RoomIn(s *Snapshot, p *Policy, limit int) Room {
	var r Room
	unbounded := false
	for i := range s.Workers {
		w := &s.Workers[i]
		if s.Module != nil && !s.Module.holds(w) {
			continue
		}
		r.Current++
		switch {
		case unbounded, s.quarantined(w.ID):
		case w.MaxParallel <= 0:
			unbounded = true
		default:
			r.Slots += max(0, p.Capacity(w)-int(w.Inflight))
		}
	}
	if unbounded {
		r.Slots = limit
	}
	r.Slots = min(r.Slots, limit)
	r.RollingOut = r.Current == 0 && s.Module != nil && s.Module.new(s.Now)
	return r
}
