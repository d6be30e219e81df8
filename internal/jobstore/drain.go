package jobstore

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"
)

// Drains are the hosts an operator drained (ward host drain): no job is
// placed on them until they are undrained, whatever their heartbeats say,
// while what runs there finishes. A drain outlives the host's restarts
// and the schedulers': it is in the store, which every replica reads.
type Drains interface {
	// SetDrained drains worker (on) from at, or undrains it, and reports
	// whether that changed anything.
	SetDrained(ctx context.Context, worker string, on bool, at time.Time) (bool, error)
	// Drained returns the drained workers, with when each was drained.
	Drained(ctx context.Context) (map[string]time.Time, error)
}

var (
	_ Drains = (*Redis)(nil)
	_ Drains = (*Memory)(nil)
	_ Drains = (*Sharded)(nil)
)

func (n ns) drained() string { return string(n) + "job:drained" }

// SetDrained sets or deletes the worker's field of job:drained (a hash of
// worker → ms drained). Draining a drained worker keeps its first time.
func (r *Redis) SetDrained(ctx context.Context, worker string, on bool, at time.Time) (bool, error) {
	var (
		n   int64
		err error
	)
	if on {
		var set bool
		set, err = r.c.HSetNX(ctx, r.ns.drained(), worker, strconv.FormatInt(ms(at), 10)).Result()
		if set {
			n = 1
		}
	} else {
		n, err = r.c.HDel(ctx, r.ns.drained(), worker).Result()
	}
	if err != nil {
		return false, fmt.Errorf("jobstore: drain %s: %w", worker, err)
	}
	return n > 0, nil
}

// Drained reads job:drained.
func (r *Redis) Drained(ctx context.Context) (map[string]time.Time, error) {
	h, err := r.c.HGetAll(ctx, r.ns.drained()).Result()
	if err != nil {
		return nil, fmt.Errorf("jobstore: drained: %w", err)
	}
	out := make(map[string]time.Time, len(h))
	for w, v := range h {
		at, _ := strconv.ParseInt(v, 10, 64)
		out[w] = fromMS(at)
	}
	return out, nil
}

// SetDrained drains or undrains worker in shard 0, beside the quarantines.
func (s *Sharded) SetDrained(ctx context.Context, worker string, on bool, at time.Time) (bool, error) {
	return s.home().SetDrained(ctx, worker, on, at)
}

// Drained reads shard 0's drains.
func (s *Sharded) Drained(ctx context.Context) (map[string]time.Time, error) {
	return s.home().Drained(ctx)
}

// SetDrained drains or undrains worker.
func (m *Memory) SetDrained(ctx context.Context, worker string, on bool, at time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, was := m.drained[worker]
	switch {
	case on && !was:
		if m.drained == nil {
			m.drained = make(map[string]time.Time)
		}
		m.drained[worker] = fromMS(ms(at))
	case !on && was:
		delete(m.drained, worker)
	default:
		return false, nil
	}
	return true, nil
}

// Drained returns a copy of the drains.
func (m *Memory) Drained(ctx context.Context) (map[string]time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := maps.Clone(m.drained)
	if out == nil {
		out = map[string]time.Time{}
	}
	return out, nil
}
