package jobstore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// Memory is a Store held in process memory, for `ward dev` and tests. It
// keeps the same structures as the Redis store (state indexes scored by
// when the job entered the state, creation indexes of every job and of
// each tenant's, tenant and worker active sets, pool queues, ...) so that both behave alike, down to the order of ties. One mutex makes every call atomic, as a script is.
//
// Unlike Redis, it keeps what it holds in the process's memory: with a
// Bound (SetBound, memory_bound.go) it keeps at most so many ended jobs,
// dropping the oldest-ended first before their retention passes.
type Memory struct {
	mu         sync.Mutex                     // guards the fields below
	jobs       map[string]*memJob             // id -> job (memory_job.go)
	events     map[string][]Event             // id -> event log
	index      map[State]zset                 // state -> ids scored by entry time
	created    ordIndex                       // job:recent: every id by creation ms
	tenantJobs map[string]*ordIndex           // job:tenant:<tenant>:all: the tenant's ids by creation ms
	idem       map[string]string              // idemKey(tenant, key) -> idemValue(digest, id)
	active     map[string]map[string]struct{} // tenant -> active ids
	workers    map[string]map[string]struct{} // worker -> active ids
	locks      map[string]memLock             // job:lock:<id>, job:lease:<name> -> owner
	blobs      map[string][]byte              // ctx:<id>, res:<id>
	dlq        zset                           // job ids scored by dead-letter time
	dlqs       map[string]DLQEntry            // job id -> entry
	retention  time.Duration                  // how long an ended job is kept; 0: for ever
	bound      Bound                          // how many ended jobs are kept at most (memory_bound.go)
	ended      endedSet                       // the ended jobs, oldest ended first, and their sizes
	evicted    int64                          // ended jobs dropped to stay within the bound
	waits      map[string]zset                // job:queue:<pool>, job:deferred -> ids
	deadlines  zset                           // ids scored by deadline
	rates      map[string]bucket              // tenant -> submission bucket
	mode       string                         // scheduler mode
	failures   map[string]failures            // worker -> failures in the window
	quarantine zset                           // worker -> end of quarantine
	drained    map[string]time.Time           // worker -> when an operator drained it
	live       map[string]*memLive            // job:live:<id>: a running job's notes (live.go)
	runs       *memRuns                       // workflow runs (memory_runs.go), made once
	runsOnce   sync.Once
	// touched holds the ids of the jobs changed (created, moved, dropped)
	// since takeTouched, while a log's view is written from this state
	// (logged_view.go); nil otherwise, and nothing is kept.
	touched map[string]struct{}
}

type memLock struct {
	owner   string
	expires time.Time
}

type bucket struct{ tokens, ts float64 }

type failures struct {
	n       int
	expires time.Time
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{
		jobs:       make(map[string]*memJob),
		events:     make(map[string][]Event),
		index:      make(map[State]zset),
		tenantJobs: make(map[string]*ordIndex),
		idem:       make(map[string]string),
		active:     make(map[string]map[string]struct{}),
		workers:    make(map[string]map[string]struct{}),
		locks:      make(map[string]memLock),
		blobs:      make(map[string][]byte),
		dlq:        make(zset),
		dlqs:       make(map[string]DLQEntry),
		waits:      make(map[string]zset),
		deadlines:  make(zset),
		rates:      make(map[string]bucket),
		failures:   make(map[string]failures),
		quarantine: make(zset),
	}
}

// idemKey is the Redis key's tail, so that tenants and keys collide (or
// not) exactly as they do in Redis.
func idemKey(tenant, key string) string { return tenant + ":" + key }

// Create stores job in PENDING; see Store. On success it also sets job's
// State, CreatedAt and UpdatedAt to what was stored.
func (m *Memory) Create(ctx context.Context, job *Job, payload []byte) (string, bool, error) {
	res, err := m.Submit(ctx, job, payload, Guard{})
	return res.ID, res.Created, err
}

// Submit stores job in PENDING behind g's checks; see Store.
func (m *Memory) Submit(ctx context.Context, job *Job, payload []byte, g Guard) (Submitted, error) {
	if err := ctx.Err(); err != nil {
		return Submitted{}, err
	}
	// The stored job, made once: the copy of job is the store's.
	mj := new(memJob)
	if err := newJobInto(&mj.Job, job); err != nil {
		return Submitted{}, err
	}
	n := &mj.Job
	m.mu.Lock()
	defer m.mu.Unlock()
	ik := idemKey(n.Tenant, n.IdempotencyKey)
	var digest string
	if n.IdempotencyKey != "" {
		digest = idemDigest(n, payload)
		if v, ok := m.idem[ik]; ok {
			d, id := parseIdem(v)
			if d != "" && d != digest {
				return Submitted{ID: id}, fmt.Errorf("jobstore: create %s: %w (job %s)", n.ID, ErrIdempotencyConflict, id)
			}
			return Submitted{ID: id}, nil
		}
	}
	if _, ok := m.jobs[n.ID]; ok {
		return Submitted{}, fmt.Errorf("jobstore: create %s: %w", n.ID, ErrExists)
	}
	lens := make([]int, len(g.Queues))
	full := len(g.Queues) > 0 && g.QueueCap > 0
	for i, pool := range g.Queues {
		lens[i] = len(m.waits[plain.queue(pool)])
		if lens[i] < g.QueueCap {
			full = false
		}
	}
	if full {
		return Submitted{}, fmt.Errorf("jobstore: create %s: %w: every queue of %v holds %d jobs", n.ID, ErrQueueFull, g.Queues, g.QueueCap)
	}
	if g.Rate > 0 {
		size, now := burst(g), float64(ms(n.CreatedAt))
		b, ok := m.rates[n.Tenant]
		if !ok {
			b = bucket{tokens: size, ts: now}
		}
		if now > b.ts {
			b.tokens = math.Min(size, b.tokens+(now-b.ts)*g.Rate/1000)
		} else {
			now = b.ts
		}
		if b.tokens < 1 {
			return Submitted{}, fmt.Errorf("jobstore: create %s: %w (%g a second)", n.ID, ErrRateLimited, g.Rate)
		}
		m.rates[n.Tenant] = bucket{tokens: b.tokens - 1, ts: now}
	}
	mj.own()
	m.jobs[n.ID] = mj
	m.touch(n.ID)
	m.blobs[ctxKeyOf(n)] = slices.Clone(payload)
	m.zadd(Pending, n.ID, float64(ms(n.CreatedAt)))
	m.created.add(ms(n.CreatedAt), n.ID)
	if n.Tenant != "" {
		x := m.tenantJobs[n.Tenant]
		if x == nil {
			x = new(ordIndex)
			m.tenantJobs[n.Tenant] = x
		}
		x.add(ms(n.CreatedAt), n.ID)
	}
	// Room for a common life's events (PENDING, SCHEDULED, DISPATCHED,
	// RUNNING, an end), so that its moves append without growing it.
	events := make([]Event, 1, 5)
	events[0] = Event{At: n.CreatedAt, State: Pending}
	events[0].Chain = ChainOf("", events[0])
	mj.Chain = events[0].Chain
	m.events[n.ID] = events
	if n.IdempotencyKey != "" {
		m.idem[ik] = idemValue(digest, n.ID)
	}
	if !n.Deadline.IsZero() {
		m.deadlines[n.ID] = float64(ms(n.Deadline))
	}
	created(job, n)
	return Submitted{ID: n.ID, Created: true, Queued: lens}, nil
}

// Get returns a copy of a job's metadata.
func (m *Memory) Get(ctx context.Context, id string) (*Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	mj, ok := m.jobs[id]
	if !ok {
		return nil, fmt.Errorf("jobstore: get %s: %w", id, ErrNotFound)
	}
	return mj.job(), nil
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

// Transition moves a job atomically; see Store. It does what the Redis
// store's script does, in the same order.
func (m *Memory) Transition(ctx context.Context, id string, t Transition) (*Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkTransition(id, t); err != nil {
		return nil, err
	}
	if t.StoreResult {
		t.ResultPtr = ResultPtr(id)
	}
	when := at(t.At)
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	mj, ok := m.jobs[id]
	if !ok || (t.IfTenant != "" && mj.Tenant != t.IfTenant) {
		return nil, fmt.Errorf("jobstore: transition %s: %w", id, ErrNotFound)
	}
	cur := mj.State
	if !allowed(cur, t) {
		return nil, refused(id, cur, t)
	}
	oldw := mj.WorkerID
	if t.IfWorker != "" && oldw != t.IfWorker {
		return nil, &TransitionError{ID: id, Wanted: t.To, Required: t.From, IfWorker: t.IfWorker, Worker: oldw}
	}
	if t.IfAttempt > 0 {
		if mj.Attempt != t.IfAttempt {
			return nil, attemptErr(id, cur, t, mj.Attempt)
		}
	}
	// A job a move never locked has no lock to check or drop: no key to
	// build (the job's "locked" field, as in Redis).
	var lockKey string
	locked := mj.locked
	if t.Lock != nil || locked {
		lockKey = plain.lock(id)
	}
	if t.Lock != nil {
		if l, ok := m.locks[lockKey]; ok && now.Before(l.expires) && l.owner != t.Lock.Owner {
			return nil, fmt.Errorf("jobstore: transition %s: %w (%s)", id, ErrLocked, l.owner)
		}
	}
	tenant := mj.Tenant
	wasActive := cur.Active()
	neww := t.WorkerID
	if neww == "" {
		neww = oldw
	}
	if t.To == Pending {
		neww = ""
	}
	if t.To.Active() && !wasActive && t.TenantLimit > 0 {
		if n := len(m.active[tenant]); n >= t.TenantLimit {
			e := limitErr(id, ErrTenantLimit, t, n)
			e.Key = tenant
			return nil, e
		}
	}
	if t.To.Active() && neww != "" && t.WorkerLimit > 0 && !(wasActive && neww == oldw) {
		if n := len(m.workers[neww]) + t.heldElsewhere; n >= t.WorkerLimit {
			return nil, limitErr(id, ErrWorkerFull, t, n)
		}
	}
	waitKey := ""
	if w := t.Wait; w != nil {
		if !w.Until.IsZero() {
			waitKey = "deferred"
		} else {
			waitKey = "queue:" + w.Pool
			q := m.waits[waitingKey(waitKey)]
			if _, in := q[id]; w.Cap > 0 && !in && len(q) >= w.Cap {
				return nil, fmt.Errorf("jobstore: transition %s: %w: queue %s holds %d jobs", id, ErrQueueFull, w.Pool, len(q))
			}
		}
	}

	mj.apply(&t)
	m.touch(id)
	if t.StoreResult {
		m.blobs[plain.res(id)] = slices.Clone(t.Result)
	}
	mj.State = t.To
	mj.UpdatedAt = when
	if w := mj.Waiting; w != "" {
		delete(m.waits[waitingKey(w)], id)
		mj.Waiting = ""
	}
	delete(m.index[cur], id)
	if waitKey != "" {
		z := m.waits[waitingKey(waitKey)]
		if z == nil {
			z = make(zset)
			m.waits[waitingKey(waitKey)] = z
		}
		if t.Wait.Until.IsZero() {
			z[id] = t.Wait.Score
		} else {
			z[id] = float64(ms(t.Wait.Until))
		}
		mj.Waiting = waitKey
	} else {
		m.zadd(t.To, id, float64(ms(when)))
	}
	if t.To.Active() {
		add(m.active, tenant, id)
	} else {
		delete(m.active[tenant], id)
	}
	if t.To == Pending {
		mj.WorkerID = ""
	}
	if oldw != "" && oldw != neww {
		delete(m.workers[oldw], id)
	}
	held := 0
	if neww != "" {
		if t.To.Active() {
			add(m.workers, neww, id)
		} else {
			delete(m.workers[neww], id)
		}
		held = len(m.workers[neww]) + t.heldElsewhere
	}
	if !t.Deadline.IsZero() {
		m.deadlines[id] = float64(ms(t.Deadline))
	}
	if t.To.Terminal() {
		delete(m.deadlines, id)
		delete(m.live, id)
	}
	if t.Lock != nil {
		m.locks[lockKey] = memLock{owner: t.Lock.Owner, expires: now.Add(t.Lock.TTL.Truncate(time.Millisecond))}
		mj.locked = true
	} else if locked && releasesLock(t.To) {
		delete(m.locks, lockKey)
		mj.locked = false
	}
	first := len(m.events[id]) == 1
	if t.Via != "" {
		e := Event{At: when, State: t.Via, Message: t.ViaMessage, WorkerID: t.WorkerID}
		e.Chain = ChainOf(mj.Chain, e)
		mj.Chain = e.Chain
		m.events[id] = append(m.events[id], e)
	}
	e := Event{At: when, State: t.To, Reason: t.Reason, Message: t.Message, WorkerID: t.WorkerID}
	e.Chain = ChainOf(mj.Chain, e)
	mj.Chain = e.Chain
	m.events[id] = append(m.events[id], e)
	var j *Job
	if t.Brief {
		j = mj.brief()
	} else {
		j = mj.job()
	}
	j.WorkerJobs, j.FirstMove = held, first
	if t.To.Terminal() {
		// It counts against the bound from now on; the oldest ended go
		// when it is passed (this one too, should it be the oldest).
		m.ended.add(id, ms(when), m.jobBytes(id, mj))
		m.evict()
	}
	return j, nil
}

// add adds id to sets[key].
func add(sets map[string]map[string]struct{}, key, id string) {
	if sets[key] == nil {
		sets[key] = make(map[string]struct{})
	}
	sets[key][id] = struct{}{}
}

// Stale returns up to limit ids of jobs that entered state before the
// given time, oldest first.
func (m *Memory) Stale(ctx context.Context, state State, before time.Time, limit int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.index[state].below(float64(ms(before)), false, limit), nil
}

// Recent returns up to limit jobs (MaxListLimit at most), newest first.
func (m *Memory) Recent(ctx context.Context, limit int) ([]*Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	p, err := m.List(ctx, ListQuery{Limit: min(limit, MaxListLimit)})
	return p.Jobs, err
}

// List returns a page of jobs; see Store. It reads the same indexes, in
// the same order, as the Redis store. A state's index is a map here: a
// page of it sorts the entries under the cursor (ward dev's store).
func (m *Memory) List(ctx context.Context, q ListQuery) (ListPage, error) {
	if err := ctx.Err(); err != nil {
		return ListPage{}, err
	}
	p, err := planList(q)
	if err != nil {
		return ListPage{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// entries, descending from the start: end-1, end-2, ..., 0.
	var entries []listPos
	var end int
	if p.mode == "c" {
		x := &m.created
		if p.tenant != "" {
			x = m.tenantJobs[p.tenant]
			if x == nil {
				x = new(ordIndex)
			}
		}
		entries, end = x.e, len(x.e)
		switch {
		case p.cur != nil:
			end = x.below(*p.cur)
		case p.untilStarts:
			end = x.below(listPos{score: p.until})
		}
	} else {
		for id, score := range m.index[State(p.mode[2:])] {
			e := listPos{int64(score), id}
			if p.cur == nil || posLess(e, *p.cur) < 0 {
				entries = append(entries, e)
			}
		}
		slices.SortFunc(entries, posLess)
		end = len(entries)
	}
	var page ListPage
	examined := 0
	var last listPos
	for i := end - 1; i >= 0; i-- {
		e := entries[i]
		if p.sinceStops && e.score < p.since {
			break
		}
		if len(page.Jobs) == p.limit || examined == ListScanBudget {
			page.Next = cursor(p.mode, last)
			break
		}
		examined++
		last = e
		mj, ok := m.jobs[e.id]
		if !ok || (p.filtered() && !p.matches(&mj.Job)) {
			continue
		}
		page.Jobs = append(page.Jobs, mj.listed())
		page.after = append(page.after, cursor(p.mode, e))
	}
	return page, nil
}

// decode decodes the jobs ids names, skipping missing ones. Lock should be held.
func (m *Memory) decode(ids []string) ([]*Job, error) {
	var jobs []*Job
	for _, id := range ids {
		if mj, ok := m.jobs[id]; ok {
			jobs = append(jobs, mj.job())
		}
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

// Held counts the jobs each tenant has active and each worker holds, as
// the Redis store's job:tenant:<t>:active and job:worker:<w>:jobs sets
// hold them (tenants and workers with none left out): for checks that a
// run left nothing held.
func (m *Memory) Held() (tenants, workers map[string]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tenants, workers = map[string]int{}, map[string]int{}
	for t, ids := range m.active {
		if len(ids) > 0 {
			tenants[t] = len(ids)
		}
	}
	for w, ids := range m.workers {
		if len(ids) > 0 {
			workers[w] = len(ids)
		}
	}
	return tenants, workers
}

// LockDispatch takes the dispatch lock for owner, or extends it when owner
// holds it already. It reports false when another owner holds it.
func (m *Memory) LockDispatch(ctx context.Context, id, owner string, ttl time.Duration) (bool, error) {
	return m.lock(ctx, "lock "+id, plain.lock(id), owner, ttl)
}

func (m *Memory) lock(ctx context.Context, op, key, owner string, ttl time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if ttl < time.Millisecond {
		return false, fmt.Errorf("jobstore: %s: ttl %v under 1ms", op, ttl)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if l, ok := m.locks[key]; ok && now.Before(l.expires) && l.owner != owner {
		return false, nil
	}
	m.locks[key] = memLock{owner: owner, expires: now.Add(ttl.Truncate(time.Millisecond))}
	return true, nil
}

// UnlockDispatch releases the lock if owner holds it.
func (m *Memory) UnlockDispatch(ctx context.Context, id, owner string) error {
	return m.unlock(ctx, plain.lock(id), owner)
}

func (m *Memory) unlock(ctx context.Context, key, owner string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.locks[key]; ok && l.owner == owner && time.Now().Before(l.expires) {
		delete(m.locks, key)
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
	ptr := ResultPtr(id)
	m.blobs[ptr[len(ptrScheme):]] = slices.Clone(data) // plain.res(id), without building it again
	return ptr, nil
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

// QueueHeads returns the first jobs of pool's queue; see Store.
func (m *Memory) QueueHeads(ctx context.Context, pool string, limit int) ([]*Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := m.waits[plain.queue(pool)].ascending()
	return m.decode(ids[:min(limit, len(ids))])
}

// QueueLens returns each pool's queue length.
func (m *Memory) QueueLens(ctx context.Context, pools []string) ([]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(pools) == 0 {
		return nil, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]int, len(pools))
	for i, pool := range pools {
		out[i] = len(m.waits[plain.queue(pool)])
	}
	return out, nil
}

// DueDeferred hands out deferred jobs that are due; see Store.
func (m *Memory) DueDeferred(ctx context.Context, now time.Time, limit int) ([]*Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	deferred := m.waits[plain.deferred()]
	var ids []string
	for _, id := range deferred.below(float64(ms(now)), true, limit) {
		delete(deferred, id)
		mj, ok := m.jobs[id]
		if !ok || mj.Waiting != "deferred" {
			continue
		}
		mj.Waiting = ""
		m.zadd(Pending, id, float64(ms(now)))
		m.touch(id)
		ids = append(ids, id)
	}
	return m.decode(ids)
}

// PastDeadline returns unfinished jobs whose deadline passed; see Store.
func (m *Memory) PastDeadline(ctx context.Context, now time.Time, limit int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deadlines.below(float64(ms(now)), true, limit), nil
}

// WithResult returns stale jobs whose result is stored; see Store.
func (m *Memory) WithResult(ctx context.Context, state State, before time.Time, limit int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, id := range m.index[state].below(float64(ms(before)), false, limit) {
		if _, ok := m.blobs[plain.res(id)]; ok {
			out = append(out, id)
		}
	}
	return out, nil
}

// AddDLQ records a dead-lettered job, replacing an earlier entry for it.
func (m *Memory) AddDLQ(ctx context.Context, e DLQEntry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.At = at(e.At)
	e.Job = nil
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dlq[e.JobID] = float64(ms(e.At))
	m.dlqs[e.JobID] = e
	return nil
}

// DLQ returns up to limit entries, newest first, with their jobs: every
// tenant's, or tenant's.
func (m *Memory) DLQ(ctx context.Context, tenant string, limit int) ([]DLQEntry, error) {
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
	for _, id := range ids {
		if len(out) == limit {
			break
		}
		e := m.dlqs[id]
		if tenant != "" && e.Tenant != tenant {
			continue
		}
		if mj, ok := m.jobs[id]; ok {
			e.Job = mj.listed()
		}
		out = append(out, e)
	}
	return out, nil
}

// RemoveDLQ removes a job's DLQ entry.
func (m *Memory) RemoveDLQ(ctx context.Context, id string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.dlqs[id]
	delete(m.dlqs, id)
	delete(m.dlq, id)
	return ok, nil
}

// AcquireLease takes or renews the named lease; see Store.
func (m *Memory) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	return m.lock(ctx, "lease "+name, plain.lease(name), owner, ttl)
}

// ReleaseLease gives the lease up if owner holds it.
func (m *Memory) ReleaseLease(ctx context.Context, name, owner string) error {
	return m.unlock(ctx, plain.lease(name), owner)
}

// SetMode stores the scheduler mode.
func (m *Memory) SetMode(ctx context.Context, mode string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mode = mode
	return nil
}

// Mode returns the stored scheduler mode.
func (m *Memory) Mode(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mode, nil
}

// RecordFailure counts a worker failure; see Store.
func (m *Memory) RecordFailure(ctx context.Context, worker string, now time.Time, window time.Duration, threshold int, cooldown time.Duration) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	if worker == "" || threshold <= 0 || window < time.Millisecond {
		return time.Time{}, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.failures[worker]
	if !time.Now().Before(f.expires) {
		f = failures{expires: time.Now().Add(window.Truncate(time.Millisecond))}
	}
	f.n++
	if f.n < threshold {
		m.failures[worker] = f
		return time.Time{}, nil
	}
	delete(m.failures, worker)
	till := fromMS(ms(now) + cooldown.Milliseconds())
	m.quarantine[worker] = float64(ms(till))
	return till, nil
}

// Quarantined returns the workers quarantined beyond now, and forgets the
// quarantines that ended.
func (m *Memory) Quarantined(ctx context.Context, now time.Time) (map[string]time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cut := float64(ms(now))
	out := make(map[string]time.Time)
	for w, till := range m.quarantine {
		if till <= cut {
			delete(m.quarantine, w)
			continue
		}
		out[w] = fromMS(int64(till))
	}
	return out, nil
}

// Close does nothing: a memory store holds no connections.
func (m *Memory) Close() error { return nil }

// touch notes that job id changed, when changes are tracked. Lock held.
func (m *Memory) touch(id string) {
	if m.touched != nil {
		m.touched[id] = struct{}{}
	}
}

// trackTouched starts tracking the jobs changed (takeTouched).
func (m *Memory) trackTouched() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.touched == nil {
		m.touched = make(map[string]struct{})
	}
}

// takeTouched returns the ids of the jobs changed since its last call,
// and tracks afresh.
func (m *Memory) takeTouched() map[string]struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.touched
	m.touched = make(map[string]struct{}, len(t))
	return t
}

// zadd adds id to state's index. Lock should be held.
func (m *Memory) zadd(state State, id string, score float64) {
	z := m.index[state]
	if z == nil {
		z = make(zset)
		m.index[state] = z
	}
	z[id] = score
}

// zset is a sorted set as Redis orders one: by score, then by member.
type zset map[string]float64

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

// below returns up to limit members scored under cut (or at it, when
// inclusive), lowest first.
func (z zset) below(cut float64, inclusive bool, limit int) []string {
	if limit <= 0 {
		return nil
	}
	var ids []string
	for _, id := range z.ascending() {
		if z[id] > cut || (z[id] == cut && !inclusive) || len(ids) == limit {
			break
		}
		ids = append(ids, id)
	}
	return ids
}

// SetRetention makes jobs that ended go after d (0: never), at the next
// Sweep after that; see Store.Sweep. Call it before the store is used.
func (m *Memory) SetRetention(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.retention = d
}

// Sweep drops the jobs that ended before now less the retention, unless
// they are dead-lettered: their hash, events, blobs, idempotency key,
// dispatch lock and index entries.
func (m *Memory) Sweep(ctx context.Context, now time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.retention <= 0 {
		return 0, nil
	}
	cutoff := float64(ms(now.Add(-m.retention)))
	gone := make(map[string]bool)
	tenants := make(map[string]int)
	for _, s := range terminalStates() {
		idx := m.index[s]
		for _, id := range idx.below(cutoff, false, len(idx)) {
			if _, held := m.dlqs[id]; held {
				continue // kept while its DLQ entry is
			}
			delete(idx, id)
			m.drop(id, gone, tenants)
		}
	}
	m.dropIndexed(gone, tenants)
	m.ended.gauge()
	return len(gone), nil
}

// ctxKeyOf is plain.ctx(n.ID), cut from the context pointer newJob gave n
// (ptrScheme + keyCtx) when it is the job's own.
func ctxKeyOf(n *Job) string {
	if key, ok := strings.CutPrefix(n.ContextPtr, ptrScheme); ok && strings.HasPrefix(key, "ctx:") && key[4:] == n.ID {
		return key
	}
	return plain.ctx(n.ID)
}
