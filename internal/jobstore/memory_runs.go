package jobstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// memRuns is the memory store's runs: RunStore, as Redis keeps it.
type memRuns struct {
	mu     sync.Mutex
	runs   map[string]*memRun
	byTime []string // run ids by creation, oldest first
}

type memRun struct {
	run    Run
	events [][]byte
	ended  time.Time // when it ended; zero while it runs
}

func (m *Memory) runStore() *memRuns {
	m.runsOnce.Do(func() { m.runs = &memRuns{runs: map[string]*memRun{}} })
	return m.runs
}

// CreateRun stores r and its first events; see RunStore.
func (m *Memory) CreateRun(ctx context.Context, r *Run, events [][]byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r == nil || r.ID == "" {
		return fmt.Errorf("jobstore: create run: no id")
	}
	rs := m.runStore()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	m.expireRuns(rs, time.Now())
	if rs.runs[r.ID] != nil {
		return fmt.Errorf("jobstore: create run %s: %w", r.ID, ErrExists)
	}
	c := *r
	now := time.Now().Truncate(time.Millisecond)
	if c.State == "" {
		c.State = RunRunning
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = c.CreatedAt
	}
	c.Definition, c.Input = slices.Clone(r.Definition), slices.Clone(r.Input)
	c.Events = len(events)
	mr := &memRun{run: c, events: cloneAll(events)}
	if c.State != RunRunning {
		mr.ended = c.CreatedAt // a run stored ended ended when it was made
	}
	rs.runs[c.ID] = mr
	// byTime is in creation order, as Redis's run:index: by CreatedAt (to
	// the ms), then id; not in the order the runs were stored.
	at, _ := slices.BinarySearchFunc(rs.byTime, mr, func(id string, mr *memRun) int {
		o := rs.runs[id]
		if c := cmp.Compare(ms(o.run.CreatedAt), ms(mr.run.CreatedAt)); c != 0 {
			return c
		}
		return strings.Compare(id, mr.run.ID)
	})
	rs.byTime = slices.Insert(rs.byTime, at, c.ID)
	return nil
}

// AppendRun appends events and sets the run's state; see RunStore.
func (m *Memory) AppendRun(ctx context.Context, id, owner string, after int, events [][]byte, state, reason string) error {
	return m.appendRunAt(ctx, time.Now(), id, owner, after, events, state, reason)
}

// appendRunAt is AppendRun at now (a log's replay gives the time the
// owner appended at).
func (m *Memory) appendRunAt(ctx context.Context, now time.Time, id, owner string, after int, events [][]byte, state, reason string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rs := m.runStore()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	m.expireRuns(rs, now)
	mr := rs.runs[id]
	switch {
	case mr == nil:
		return fmt.Errorf("jobstore: append to run %s: %w", id, ErrNotFound)
	case mr.run.State != RunRunning:
		return fmt.Errorf("jobstore: append to run %s: %w (%s)", id, ErrRunEnded, mr.run.State)
	case mr.run.Owner != owner:
		return fmt.Errorf("jobstore: append to run %s: %w (%s)", id, ErrNotOwner, mr.run.Owner)
	case len(mr.events) != after:
		return fmt.Errorf("jobstore: append to run %s after %d events: %w (it holds %d)", id, after, ErrLogMoved, len(mr.events))
	}
	mr.events = append(mr.events, cloneAll(events)...)
	mr.run.Events = len(mr.events)
	if state != "" {
		mr.run.State = state
	}
	mr.run.Reason = reason
	mr.run.UpdatedAt = now.Truncate(time.Millisecond)
	if mr.run.State != RunRunning {
		mr.ended = now
	}
	return nil
}

// ClaimRun makes owner the run's driver until until; see RunStore.
func (m *Memory) ClaimRun(ctx context.Context, id, owner string, until time.Time) (bool, error) {
	return m.claimRunAt(ctx, time.Now(), id, owner, until)
}

// claimRunAt is ClaimRun at now.
func (m *Memory) claimRunAt(ctx context.Context, now time.Time, id, owner string, until time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	rs := m.runStore()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	m.expireRuns(rs, now)
	mr := rs.runs[id]
	switch {
	case mr == nil:
		return false, fmt.Errorf("jobstore: claim run %s: %w", id, ErrNotFound)
	case mr.run.State != RunRunning:
		return false, nil
	case mr.run.Owner != "" && mr.run.Owner != owner && now.Before(mr.run.OwnedUntil):
		return false, nil
	}
	mr.run.Owner, mr.run.OwnedUntil = owner, until.Truncate(time.Millisecond)
	return true, nil
}

// GetRun returns a run and its log; see RunStore.
func (m *Memory) GetRun(ctx context.Context, id string) (*Run, [][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	rs := m.runStore()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	m.expireRuns(rs, time.Now())
	mr := rs.runs[id]
	if mr == nil {
		return nil, nil, fmt.Errorf("jobstore: run %s: %w", id, ErrNotFound)
	}
	r := mr.run
	r.Definition, r.Input = slices.Clone(r.Definition), slices.Clone(r.Input)
	return &r, cloneAll(mr.events), nil
}

// ListRuns returns runs, newest first; see RunStore.
func (m *Memory) ListRuns(ctx context.Context, tenant string, limit int) ([]*Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rs := m.runStore()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	m.expireRuns(rs, time.Now())
	var out []*Run
	for i := len(rs.byTime) - 1; i >= 0 && len(out) < limit; i-- {
		mr := rs.runs[rs.byTime[i]]
		if mr == nil || (tenant != "" && mr.run.Tenant != tenant) {
			continue
		}
		r := mr.run
		r.Definition, r.Input = slices.Clone(r.Definition), slices.Clone(r.Input)
		out = append(out, &r)
	}
	return out, nil
}

// OrphanRuns returns the running runs nobody drives; see RunStore.
func (m *Memory) OrphanRuns(ctx context.Context, now time.Time, limit int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rs := m.runStore()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var orphans []*memRun
	for _, mr := range rs.runs {
		if mr.run.State == RunRunning && mr.run.OwnedUntil.Before(now) {
			orphans = append(orphans, mr)
		}
	}
	slices.SortFunc(orphans, func(a, b *memRun) int {
		if c := a.run.OwnedUntil.Compare(b.run.OwnedUntil); c != 0 {
			return c
		}
		return strings.Compare(a.run.ID, b.run.ID)
	})
	var out []string
	for _, mr := range orphans[:max(0, min(limit, len(orphans)))] {
		out = append(out, mr.run.ID)
	}
	return out, nil
}

// expireRuns drops the runs that ended longer ago than the retention;
// rs.mu is held.
func (m *Memory) expireRuns(rs *memRuns, now time.Time) {
	m.mu.Lock()
	retention := m.retention
	m.mu.Unlock()
	if retention <= 0 {
		return
	}
	kept := rs.byTime[:0]
	for _, id := range rs.byTime {
		mr := rs.runs[id]
		if mr != nil && !mr.ended.IsZero() && now.Sub(mr.ended) >= retention {
			delete(rs.runs, id)
			continue
		}
		if mr != nil {
			kept = append(kept, id)
		}
	}
	rs.byTime = kept
}

func cloneAll(b [][]byte) [][]byte {
	out := make([][]byte, len(b))
	for i, e := range b {
		out[i] = slices.Clone(e)
	}
	return out
}
