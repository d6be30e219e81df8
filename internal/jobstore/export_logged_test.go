package jobstore

import (
	"fmt"
	"reflect"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// SameState reports where two Logged stores' states differ: every part
// of the state the log keeps (not locks, leases, rate buckets, failure
// counts or live notes, which it does not). For the tests of
// jobstore_test: an owner's state and the state a replay of its log makes.
func SameState(a, b *Logged) error {
	am, bm := a.Memory, b.Memory
	// The runs past their retention, which a read drops (unlogged), are
	// gone from both.
	for _, m := range []*Memory{am, bm} {
		rs := m.runStore()
		rs.mu.Lock()
		m.expireRuns(rs, time.Now())
		rs.mu.Unlock()
	}
	am.mu.Lock()
	defer am.mu.Unlock()
	bm.mu.Lock()
	defer bm.mu.Unlock()
	parts := []struct {
		name string
		a, b any
	}{
		{"jobs", unlocked(am.jobs), unlocked(bm.jobs)},
		{"events", am.events, bm.events},
		{"state indexes", nonEmpty(am.index), nonEmpty(bm.index)},
		{"creation index", am.created, bm.created},
		{"tenant indexes", am.tenantJobs, bm.tenantJobs},
		{"idempotency keys", am.idem, bm.idem},
		{"tenant active sets", nonEmpty(am.active), nonEmpty(bm.active)},
		{"worker active sets", nonEmpty(am.workers), nonEmpty(bm.workers)},
		{"blobs", am.blobs, bm.blobs},
		{"DLQ", am.dlq, bm.dlq},
		{"DLQ entries", am.dlqs, bm.dlqs},
		{"queues", nonEmpty(am.waits), nonEmpty(bm.waits)},
		{"deadlines", am.deadlines, bm.deadlines},
		{"ended jobs", am.ended.jobs, bm.ended.jobs},
		{"mode", am.mode, bm.mode},
		{"drained", am.drained, bm.drained},
		{"runs", runsOf(am), runsOf(bm)},
	}
	for _, p := range parts {
		// Empty and absent are the same state (a snapshot keeps no empty
		// set), and so are two readings of one instant.
		if d := cmp.Diff(p.a, p.b, cmp.Exporter(func(reflect.Type) bool { return true }), cmpopts.EquateEmpty()); d != "" {
			return fmt.Errorf("%s differ (-owner +replay):\n%s", p.name, d)
		}
	}
	return nil
}

// unlocked is the jobs without the mark of a lock a move took: locks are
// not logged (a new owner has none to honour).
func unlocked(jobs map[string]*memJob) map[string]Job {
	out := make(map[string]Job, len(jobs))
	for id, mj := range jobs {
		out[id] = mj.Job
	}
	return out
}

// nonEmpty drops a map's empty sets: a set emptied and one never made are
// the same state.
func nonEmpty[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		if reflect.ValueOf(v).Len() > 0 {
			out[k] = v
		}
	}
	return out
}

// RetentionOf is the retention the store's state is kept under.
func RetentionOf(l *Logged) time.Duration {
	l.Memory.mu.Lock()
	defer l.Memory.mu.Unlock()
	return l.Memory.retention
}

// runsOf is m's runs, their times as instants (no monotonic reading, no
// location: a replay reads them from JSON).
func runsOf(m *Memory) map[string]memRun {
	rs := m.runStore()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make(map[string]memRun, len(rs.runs))
	for id, r := range rs.runs {
		c := *r
		for _, t := range []*time.Time{&c.run.OwnedUntil, &c.run.Deadline, &c.run.CreatedAt, &c.run.UpdatedAt, &c.ended} {
			*t = t.UTC().Round(0)
		}
		out[id] = c
	}
	return out
}

// ShardLogs returns an Owned store's logs, nil where not owned (for the
// tests of jobstore_test: each compared with its replay).
func ShardLogs(o *Owned) []*Logged { return o.snapshotShards() }

// WaitRound waits for the Owned store's next balance round.
func WaitRound(o *Owned) { <-o.round }
