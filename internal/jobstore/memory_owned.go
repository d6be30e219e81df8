package jobstore

import (
	"context"
	"time"
)

// What an Owned store reads of each shard's state to merge the shards
// (owned.go): the members of an index with their scores, which the
// Store methods leave out.

// Has reports whether the state holds job id.
func (m *Memory) Has(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.jobs[id]
	return ok
}

// workerHeld is how many active jobs the state holds on worker.
func (m *Memory) workerHeld(worker string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.workers[worker])
}

// workerOf is the worker job id was placed on ("" for none).
func (m *Memory) workerOf(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mj := m.jobs[id]; mj != nil {
		return mj.WorkerID
	}
	return ""
}

// HasRun reports whether the state holds run id.
func (m *Memory) HasRun(id string) bool {
	rs := m.runStore()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	_, ok := rs.runs[id]
	return ok
}

// scoredBelow is z.below with the scores. Lock held.
func scoredBelow(z zset, cut float64, inclusive bool, limit int) []scored {
	ids := z.below(cut, inclusive, limit)
	out := make([]scored, len(ids))
	for i, id := range ids {
		out[i] = scored{id, z[id]}
	}
	return out
}

// staleScored is Stale with the scores.
func (m *Memory) staleScored(state State, before time.Time, limit int) []scored {
	m.mu.Lock()
	defer m.mu.Unlock()
	return scoredBelow(m.index[state], float64(ms(before)), false, limit)
}

// deadlineScored is PastDeadline with the scores.
func (m *Memory) deadlineScored(now time.Time, limit int) []scored {
	m.mu.Lock()
	defer m.mu.Unlock()
	return scoredBelow(m.deadlines, float64(ms(now)), true, limit)
}

// dueScored returns the first limit deferred jobs due at now, with their
// scores, handing none out.
func (m *Memory) dueScored(now time.Time, limit int) []scored {
	m.mu.Lock()
	defer m.mu.Unlock()
	return scoredBelow(m.waits[plain.deferred()], float64(ms(now)), true, limit)
}

// queueHeads is QueueHeads with the jobs' queue scores.
func (m *Memory) queueHeads(ctx context.Context, pool string, limit int) ([]*Job, []float64, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.waits[plain.queue(pool)]
	ids := q.ascending()
	jobs, err := m.decode(ids[:min(limit, len(ids))])
	scores := make([]float64, len(jobs))
	for i, j := range jobs {
		scores[i] = q[j.ID]
	}
	return jobs, scores, err
}

// orphanScored is OrphanRuns with the ends of their claims (ms) as scores.
func (m *Memory) orphanScored(now time.Time, limit int) []scored {
	ids, _ := m.OrphanRuns(context.Background(), now, limit)
	rs := m.runStore()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]scored, 0, len(ids))
	for _, id := range ids {
		if mr, ok := rs.runs[id]; ok {
			out = append(out, scored{id, float64(ms(mr.run.OwnedUntil))})
		}
	}
	return out
}
