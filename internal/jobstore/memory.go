package jobstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Memory is a Store held in process memory, for `ward dev` and tests. It
// keeps the same structures as the Redis store (state indexes scored by
// when the job entered the state, a recent list capped at 1000, tenant
// active sets, ...) so that both behave alike, down to the order of ties.
type Memory struct {
	mu     sync.Mutex                     // guards the fields below
	jobs   map[string]map[string]string   // id -> hash, encoded as in Redis
	events map[string][]Event             // id -> event log
	index  map[State]zset                 // state -> ids scored by entry time
	recent zset                           // ids scored by creation time
	idem   map[string]string              // idemKey(tenant, key) -> id
	active map[string]map[string]struct{} // tenant -> active ids
	locks  map[string]memLock             // id -> dispatch lock
	blobs  map[string][]byte              // ctx:<id>, res:<id>
	dlq    zset                           // job ids scored by dead-letter time
	dlqs   map[string]DLQEntry            // job id -> entry
}

type memLock struct {
	owner   string
	expires time.Time
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{
		jobs:   make(map[string]map[string]string),
		events: make(map[string][]Event),
		index:  make(map[State]zset),
		recent: make(zset),
		idem:   make(map[string]string),
		active: make(map[string]map[string]struct{}),
		locks:  make(map[string]memLock),
		blobs:  make(map[string][]byte),
		dlq:    make(zset),
		dlqs:   make(map[string]DLQEntry),
	}
}

// idemKey is the Redis key's tail, so that tenants and keys collide (or
// not) exactly as they do in Redis.
func idemKey(tenant, key string) string { return tenant + ":" + key }

// Create stores job in PENDING; see Store. On success it also sets job's
// State, CreatedAt and UpdatedAt to what was stored.
func (m *Memory) Create(ctx context.Context, job *Job, payload []byte) (string, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	n, err := newJob(job)
	if err != nil {
		return "", false, err
	}
	fields, err := jobFields(n)
	if err != nil {
		return "", false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ik := idemKey(n.Tenant, n.IdempotencyKey)
	if n.IdempotencyKey != "" {
		if id, ok := m.idem[ik]; ok {
			return id, false, nil
		}
	}
	if _, ok := m.jobs[n.ID]; ok {
		return "", false, fmt.Errorf("jobstore: create %s: %w", n.ID, ErrExists)
	}
	h := make(map[string]string, len(fields)/2)
	setPairs(h, fields)
	m.jobs[n.ID] = h
	m.blobs[keyCtx(n.ID)] = slices.Clone(payload)
	m.zadd(Pending, n.ID, ms(n.CreatedAt))
	m.recent[n.ID] = ms(n.CreatedAt)
	for len(m.recent) > recentCap {
		delete(m.recent, m.recent.first())
	}
	m.events[n.ID] = []Event{{At: n.CreatedAt, State: Pending}}
	if n.IdempotencyKey != "" {
		m.idem[ik] = n.ID
	}
	created(job, n)
	return n.ID, true, nil
}

// Get returns a copy of a job's metadata.
func (m *Memory) Get(ctx context.Context, id string) (*Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.jobs[id]
	if !ok {
		return nil, fmt.Errorf("jobstore: get %s: %w", id, ErrNotFound)
	}
	return decodeJob(h)
}

// Events returns a copy of a job's event log.
func (m *Memory) Events(ctx context.Context, id string) ([]Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.jobs[id]; !ok {
		return nil, fmt.Errorf("jobstore: events %s: %w", id, ErrNotFound)
	}
	return slices.Clone(m.events[id]), nil
}

// Transition moves a job atomically; see Store.
func (m *Memory) Transition(ctx context.Context, id string, t Transition) (*Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fields, err := transitionFields(t)
	if err != nil {
		return nil, err
	}
	when := at(t.At)
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.jobs[id]
	if !ok {
		return nil, fmt.Errorf("jobstore: transition %s: %w", id, ErrNotFound)
	}
	cur := State(h[fState])
	if !allowed(cur, t) {
		return nil, refused(id, cur, t)
	}
	setPairs(h, fields)
	h[fState] = string(t.To)
	h[fUpdatedAt] = strconv.FormatInt(ms(when), 10)
	delete(m.index[cur], id)
	m.zadd(t.To, id, ms(when))
	tenant := h[fTenant]
	switch {
	case t.To.Active():
		if m.active[tenant] == nil {
			m.active[tenant] = make(map[string]struct{})
		}
		m.active[tenant][id] = struct{}{}
	case t.To.Terminal():
		delete(m.active[tenant], id)
	}
	m.events[id] = append(m.events[id], Event{
		At: when, State: t.To, Reason: t.Reason, Message: t.Message, WorkerID: t.WorkerID,
	})
	return decodeJob(h)
}

// Stale returns up to limit ids of jobs that entered state before the
// given time, oldest first.
func (m *Memory) Stale(ctx context.Context, state State, before time.Time, limit int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cut := ms(before)
	var ids []string
	for _, id := range m.index[state].ascending() {
		if m.index[state][id] >= cut || len(ids) == limit {
			break
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Recent returns up to limit jobs, newest first.
func (m *Memory) Recent(ctx context.Context, limit int) ([]*Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := m.recent.ascending()
	slices.Reverse(ids)
	var jobs []*Job
	for _, id := range ids[:min(limit, len(ids))] {
		j, err := decodeJob(m.jobs[id])
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// ActiveCount returns how many of tenant's jobs are active.
func (m *Memory) ActiveCount(ctx context.Context, tenant string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.active[tenant]), nil
}

// LockDispatch takes the dispatch lock for owner, or extends it when owner
// holds it already. It reports false when another owner holds it.
func (m *Memory) LockDispatch(ctx context.Context, id, owner string, ttl time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if ttl < time.Millisecond {
		return false, fmt.Errorf("jobstore: lock %s: ttl %v under 1ms", id, ttl)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if l, ok := m.locks[id]; ok && now.Before(l.expires) && l.owner != owner {
		return false, nil
	}
	m.locks[id] = memLock{owner: owner, expires: now.Add(ttl.Truncate(time.Millisecond))}
	return true, nil
}

// UnlockDispatch releases the lock if owner holds it.
func (m *Memory) UnlockDispatch(ctx context.Context, id, owner string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.locks[id]; ok && l.owner == owner && time.Now().Before(l.expires) {
		delete(m.locks, id)
	}
	return nil
}

// PutResult stores a job's result blob.
func (m *Memory) PutResult(ctx context.Context, id string, data []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if id == "" {
		return "", fmt.Errorf("jobstore: put result: no job id")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.blobs[keyRes(id)] = slices.Clone(data)
	return ResultPtr(id), nil
}

// Blob returns a copy of the blob ptr names.
func (m *Memory) Blob(ctx context.Context, ptr string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key, err := blobKey(ptr)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.blobs[key]
	if !ok {
		return nil, fmt.Errorf("jobstore: blob %s: %w", ptr, ErrNotFound)
	}
	return append([]byte{}, b...), nil
}

// AddDLQ records a dead-lettered job, replacing an earlier entry for it.
func (m *Memory) AddDLQ(ctx context.Context, e DLQEntry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.At = at(e.At)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dlq[e.JobID] = ms(e.At)
	m.dlqs[e.JobID] = e
	return nil
}

// DLQ returns up to limit entries, newest first.
func (m *Memory) DLQ(ctx context.Context, limit int) ([]DLQEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := m.dlq.ascending()
	slices.Reverse(ids)
	var out []DLQEntry
	for _, id := range ids[:min(limit, len(ids))] {
		out = append(out, m.dlqs[id])
	}
	return out, nil
}

// Close does nothing: a memory store holds no connections.
func (m *Memory) Close() error { return nil }

// zadd adds id to state's index. Lock should be held.
func (m *Memory) zadd(state State, id string, score int64) {
	z := m.index[state]
	if z == nil {
		z = make(zset)
		m.index[state] = z
	}
	z[id] = score
}

func setPairs(h map[string]string, p []string) {
	for i := 0; i+1 < len(p); i += 2 {
		h[p[i]] = p[i+1]
	}
}

// zset is a sorted set as Redis orders one: by score, then by member.
type zset map[string]int64

func (z zset) less(a, b string) int {
	if z[a] != z[b] {
		if z[a] < z[b] {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// ascending returns the members lowest first.
func (z zset) ascending() []string {
	ids := make([]string, 0, len(z))
	for id := range z {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, z.less)
	return ids
}

// first returns the lowest member of a non-empty set.
func (z zset) first() string {
	var lo string
	ok := false
	for id := range z {
		if !ok || z.less(id, lo) < 0 {
			lo, ok = id, true
		}
	}
	return lo
}
