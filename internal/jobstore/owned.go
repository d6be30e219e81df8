package jobstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/redis/go-redis/v9"
)

// Owned is the logged store split into shards with owners (issue 32's
// second part): n logs, NAME.0 … NAME.<n-1>, each a Logged with its own
// lease, epoch, snapshots and replay, and every process that opens the
// store owns some of them. A tenant's jobs and runs live in one shard
// (FNV-1a of the tenant modulo n, as Sharded and NATS's partition
// mapping place them), so its rate bucket, its concurrency limit and its
// idempotency keys are exact; a process serves only the shards it owns,
// and the scheduler sends what is another's to its owner (bus
// sys.scheduler.shard.<i>.>, internal/scheduler/route.go).
//
// Ownership balances itself. Each process renews its membership
// (ward:log:{NAME}:members, a sorted set of names scored by when they
// lapse) every third of a lease and counts the live members m; its fair
// share is ⌈n/m⌉. Below it, the process takes shards nobody holds (a
// takeover: the epoch first, then the replay); above it, while another
// member holds fewer than its share, it gives one up (a snapshot at
// Close, then its lease), one a round. A shard left free for two rounds
// is taken by whoever sees it, whatever its share (its owner died and the
// members have not noticed yet). A shard whose log fences this process
// (another took it while this one was paused) is dropped, not fatal: the
// process goes on with the others.
//
// What is every process's: the mode, drained hosts, worker failures and
// quarantines live in Redis itself (the Redis store's keys under the hash
// tag {w0}), as few and rare as they are. The leases the scheduler takes
// (AcquireLease: the reconciler's) are each process's own: each owner
// reconciles its own shards.
//
// Reads across tenants (List without a tenant, DLQ, StateCounts, ...)
// merge the shards this process owns; OnlyShard narrows a call to one,
// so that a scheduler gathering an admin's listing from every owner
// (each asked once a shard) counts no job twice. Job and run ids are
// unique within a shard; across owners, two tenants' jobs of one id are
// two jobs (an admin's get by id answers the first found).
type Owned struct {
	c          redis.UniversalClient
	ownsClient bool // Close closes c (Open made it)
	name       string
	n          int
	opts       LoggedOptions // every shard's; Owner is this process's member name
	global     *Redis        // the mode, drains, worker failures, quarantines
	local      *Memory       // this process's leases
	members    string        // the members' sorted set
	group      *logGroup     // the owned shards' logs: they share appends

	wmu sync.Mutex // a worker's limit over the shards (Transition)

	mu       sync.RWMutex
	inUse    []sync.RWMutex                // a shard's: held (read) by Hold's callers, taken by drop
	shards   []*Logged                     // nil: not owned here
	freeFor  []int                         // rounds a shard was seen free
	holders  []string                      // each shard's lease holder as the last round read it ("": none)
	watchers []func(shard int, owned bool) // OnOwnership
	logs     func(shard int) string        // the shard's log name

	done    chan struct{}
	stopped chan struct{}
	round   chan struct{} // signalled after each balance round (tests)
}

// ErrShardElsewhere: the job's (or tenant's) shard is owned by another process,
// or by none at the moment; the caller sends the request to its owner or
// asks again.
var ErrShardElsewhere = errors.New("jobstore: another process owns this shard")

var (
	_ Store    = (*Owned)(nil)
	_ RunStore = (*Owned)(nil)

	shardsOwned = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "ward_jobstore_shards_owned",
		Help: "Shards of the logged store (log=NAME&shards=N) this process owns.",
	})
	shardMoves = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_jobstore_shard_moves_total",
		Help: "Shards this process took (taken), gave up to balance the members (released) or lost to a newer owner (lost).",
	}, []string{"how"})
)

// OpenOwned opens the n shards of the log named name, takes what its
// share of them is free, and balances them with the other members from
// then on (see Owned). It returns once the first round is done: a process
// may own no shard yet (every one held by live members), and takes some
// as they give them up.
func OpenOwned(ctx context.Context, c redis.UniversalClient, name string, n int, o LoggedOptions) (*Owned, error) {
	if n < 1 {
		return nil, fmt.Errorf("jobstore: log %s: %d shards", name, n)
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Owner == "" {
		o.Owner = newOwnerName()
	}
	if o.SnapshotEvery == 0 {
		o.SnapshotEvery = DefaultSnapshotEvery
	}
	s := &Owned{
		c: c, name: name, n: n, opts: o,
		global:  &Redis{c: c, ns: ns("{w0}"), scripts: newBatcher(c)},
		local:   NewMemory(),
		members: "ward:log:{" + name + "}:members",
		group:   &logGroup{},
		shards:  make([]*Logged, n),
		inUse:   make([]sync.RWMutex, n),
		freeFor: make([]int, n),
		holders: make([]string, n),
		logs:    func(i int) string { return name + "." + strconv.Itoa(i) },
		done:    make(chan struct{}), stopped: make(chan struct{}), round: make(chan struct{}, 1),
	}
	if err := s.balance(ctx); err != nil {
		s.global.scripts.close()
		return nil, fmt.Errorf("jobstore: log %s: %w", name, err)
	}
	go s.balancer()
	return s, nil
}

// ShardOf is the shard of tenant's jobs and runs: FNV-1a (32 bits) of
// the name, modulo the shard count.
func ShardOf(tenant string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(tenant))
	return int(h.Sum32() % uint32(n))
}

// Shards is the shard count.
func (s *Owned) Shards() int { return s.n }

// ShardOf is tenant's shard.
func (s *Owned) ShardOf(tenant string) int { return ShardOf(tenant, s.n) }

// Owns reports whether this process owns shard i now.
func (s *Owned) Owns(i int) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return i >= 0 && i < s.n && s.shards[i] != nil
}

// Owned returns the shards this process owns now, in order.
func (s *Owned) Owned() []int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []int
	for i, l := range s.shards {
		if l != nil {
			out = append(out, i)
		}
	}
	return out
}

// HasOwner reports whether shard i has an owner: this process, or the
// holder of its lease when the last balance round (a third of a lease
// ago at most) read it.
func (s *Owned) HasOwner(i int) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return i >= 0 && i < s.n && (s.shards[i] != nil || s.holders[i] != "")
}

// Holds reports whether a shard this process owns holds job id.
func (s *Owned) Holds(id string) bool { return s.holding(context.Background(), id) != nil }

// Member is this process's name among the members (its leases' holder).
func (s *Owned) Member() string { return s.opts.Owner }

// OnOwnership calls f(i, true) for each shard owned now, then again each
// time this process takes a shard (after its replay: it serves at once)
// or gives one up or loses it (f(i, false), before its log is closed, so
// that the caller stops sending it work first). f runs on the balancing
// goroutine: it must not block for long.
func (s *Owned) OnOwnership(f func(shard int, owned bool)) {
	s.mu.Lock()
	s.watchers = append(s.watchers, f)
	var owned []int
	for i, l := range s.shards {
		if l != nil {
			owned = append(owned, i)
		}
	}
	s.mu.Unlock()
	for _, i := range owned {
		f(i, true)
	}
}

func (s *Owned) notify(i int, owned bool) {
	s.mu.RLock()
	ws := slices.Clone(s.watchers)
	s.mu.RUnlock()
	for _, f := range ws {
		f(i, owned)
	}
}

// balancer runs a balance round every third of a lease until Close.
func (s *Owned) balancer() {
	defer close(s.stopped)
	t := time.NewTicker(s.opts.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*s.opts.LeaseTTL)
		if err := s.balance(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("jobstore: shard balance round failed", "log", s.name, "err", err)
		}
		cancel()
		select {
		case s.round <- struct{}{}:
		default:
		}
	}
}

// balance is one round: drop the shards lost, renew the membership, take
// free shards up to the share, give one up above it.
func (s *Owned) balance(ctx context.Context) error {
	for i, l := range s.snapshotShards() {
		if l != nil && l.Err() != nil {
			slog.Warn("jobstore: shard lost", "log", s.logs(i), "err", l.Err())
			s.drop(i, l, "lost")
		}
	}
	now := time.Now()
	pipe := s.c.Pipeline()
	pipe.ZAdd(ctx, s.members, redis.Z{Score: float64(now.Add(s.opts.LeaseTTL).UnixMilli()), Member: s.opts.Owner})
	pipe.ZRemRangeByScore(ctx, s.members, "-inf", strconv.FormatInt(now.UnixMilli(), 10))
	mem := pipe.ZRange(ctx, s.members, 0, -1)
	holders := make([]*redis.StringCmd, s.n)
	for i := range s.n {
		holders[i] = pipe.Get(ctx, newLoggedKeys(s.logs(i)).lease)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("members: %w", err)
	}
	members := mem.Val()
	if !slices.Contains(members, s.opts.Owner) {
		members = append(members, s.opts.Owner)
	}
	share := (s.n + len(members) - 1) / len(members)
	held := map[string]int{}
	for _, m := range members {
		held[m] = 0
	}
	free := make([]bool, s.n)
	s.mu.Lock()
	for i, h := range holders {
		if v := h.Val(); v != "" {
			held[v]++
			s.holders[i] = v
		} else {
			free[i] = true
			s.holders[i] = ""
		}
	}
	s.mu.Unlock()
	mine := len(s.Owned())
	for i := range s.n {
		if !free[i] || s.Owns(i) {
			s.freeFor[i] = 0
			continue
		}
		s.freeFor[i]++
		if mine >= share && s.freeFor[i] < 3 {
			continue
		}
		if err := s.take(ctx, i); err != nil {
			if !errors.Is(err, errLeaseHeld) {
				slog.Warn("jobstore: could not take a shard", "log", s.logs(i), "err", err)
			}
			continue
		}
		s.freeFor[i] = 0
		mine++
	}
	if mine > share {
		for _, m := range members {
			if m != s.opts.Owner && held[m] < share {
				// one a round, the last: the member below its share takes it
				owned := s.Owned()
				i := owned[len(owned)-1]
				slog.Info("jobstore: giving a shard up to balance the members", "log", s.logs(i), "share", share, "members", len(members))
				s.drop(i, s.shard(i), "released")
				break
			}
		}
	}
	return nil
}

// errLeaseHeld: another process holds the shard's lease (LoggedOptions.NoWait).
var errLeaseHeld = errors.New("the lease is held")

// take takes shard i over (a replay), and tells the watchers.
func (s *Owned) take(ctx context.Context, i int) error {
	o := s.opts
	o.NoWait = true
	o.group = s.group
	start := time.Now()
	l, err := OpenLogged(ctx, s.c, s.logs(i), o)
	if err != nil {
		return err
	}
	s.group.add(l)
	s.mu.Lock()
	s.shards[i] = l
	s.mu.Unlock()
	shardsOwned.Inc()
	shardMoves.WithLabelValues("taken").Inc()
	slog.Info("jobstore: shard taken", "log", s.logs(i), "epoch", l.Epoch(), "took", time.Since(start).Round(time.Millisecond))
	s.notify(i, true)
	return nil
}

// drop gives shard i up: the watchers first (no new work is sent it),
// then the work in hand (Hold) ends, then its log is closed (a snapshot
// and the lease given up, unless it was lost).
func (s *Owned) drop(i int, l *Logged, how string) {
	if l == nil {
		return
	}
	s.notify(i, false)
	s.inUse[i].Lock()
	s.mu.Lock()
	if s.shards[i] == l {
		s.shards[i] = nil
	}
	s.mu.Unlock()
	s.inUse[i].Unlock()
	shardsOwned.Dec()
	shardMoves.WithLabelValues(how).Inc()
	if err := l.Close(); err != nil {
		slog.Warn("jobstore: closing a shard's log", "log", s.logs(i), "err", err)
	}
	s.group.remove(l)
}

func (s *Owned) snapshotShards() []*Logged {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.shards)
}

// Hold keeps shard i owned here until release is called (a handler's
// work on it: giving it up waits for that), and reports whether it is
// owned now; when it is not, there is nothing to release.
func (s *Owned) Hold(i int) (release func(), owned bool) {
	if i < 0 || i >= s.n {
		return nil, false
	}
	s.inUse[i].RLock()
	if s.shard(i) == nil {
		s.inUse[i].RUnlock()
		return nil, false
	}
	return s.inUse[i].RUnlock, true
}

// shard is shard i's log when owned here, else nil.
func (s *Owned) shard(i int) *Logged {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.shards[i]
}

// onlyShard is the context key of OnlyShard.
type onlyShard struct{}

// OnlyShard narrows the calls made with the returned context to shard i of
// an Owned store: its reads across tenants read that shard alone (an
// owner answering a gather for it), and a job of another shard is not
// found. Other stores ignore it.
func OnlyShard(ctx context.Context, i int) context.Context {
	return context.WithValue(ctx, onlyShard{}, i)
}

// owned returns the shards a call may use, with their numbers: those
// owned, or the one OnlyShard names when owned.
func (s *Owned) owned(ctx context.Context) ([]int, []*Logged) {
	only, narrowed := ctx.Value(onlyShard{}).(int)
	s.mu.RLock()
	defer s.mu.RUnlock()
	var is []int
	var ls []*Logged
	for i, l := range s.shards {
		if l != nil && (!narrowed || i == only) {
			is = append(is, i)
			ls = append(ls, l)
		}
	}
	return is, ls
}

// forTenant is the log of tenant's shard, or ErrShardElsewhere.
func (s *Owned) forTenant(ctx context.Context, tenant string) (*Logged, error) {
	i := s.ShardOf(tenant)
	if only, ok := ctx.Value(onlyShard{}).(int); ok && only != i {
		return nil, fmt.Errorf("%w: tenant %q is in shard %d, not %d", ErrShardElsewhere, tenant, i, only)
	}
	if l := s.shard(i); l != nil {
		return l, nil
	}
	return nil, fmt.Errorf("%w: shard %d of log %s (tenant %q)", ErrShardElsewhere, i, s.name, tenant)
}

// forJob is the log of the owned shard that holds job id; for an id none
// holds, the first shard a call may use, whose own answer (not found,
// mostly) is the store's, or ErrNotFound when it may use none.
func (s *Owned) forJob(ctx context.Context, id string) (*Logged, error) {
	_, ls := s.owned(ctx)
	for _, l := range ls {
		if l.Has(id) {
			return l, nil
		}
	}
	if len(ls) > 0 {
		return ls[0], nil
	}
	return nil, fmt.Errorf("jobstore: job %s: %w", id, ErrNotFound)
}

// holding is the log of the owned shard that holds job id, or nil.
func (s *Owned) holding(ctx context.Context, id string) *Logged {
	_, ls := s.owned(ctx)
	for _, l := range ls {
		if l.Has(id) {
			return l
		}
	}
	return nil
}

// forRun is the log of the owned shard that holds run id; for an id none
// holds, the first shard a call may use (its answer is the store's).
func (s *Owned) forRun(ctx context.Context, id string) (*Logged, error) {
	_, ls := s.owned(ctx)
	for _, l := range ls {
		if l.HasRun(id) {
			return l, nil
		}
	}
	if len(ls) > 0 {
		return ls[0], nil
	}
	return nil, fmt.Errorf("jobstore: run %s: %w", id, ErrNotFound)
}

// onOwnedJob runs f on the log holding job id.
func onOwnedJob[T any](ctx context.Context, s *Owned, id string, f func(*Logged) (T, error)) (T, error) {
	l, err := s.forJob(ctx, id)
	if err != nil {
		var zero T
		return zero, err
	}
	return f(l)
}

// gather runs f on every shard a call may use, at once, and returns the
// results in shard order.
func gather[T any](ctx context.Context, s *Owned, f func(l *Logged) (T, error)) ([]T, error) {
	_, ls := s.owned(ctx)
	out := make([]T, len(ls))
	errs := make([]error, len(ls))
	if len(ls) == 1 {
		out[0], errs[0] = f(ls[0])
		return out, errs[0]
	}
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Go(func() { out[i], errs[i] = f(l) })
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// ------------------------------------------------------------ the jobs

// Create stores job in its tenant's shard; see Store.
func (s *Owned) Create(ctx context.Context, job *Job, payload []byte) (string, bool, error) {
	res, err := s.Submit(ctx, job, payload, Guard{})
	return res.ID, res.Created, err
}

// Submit stores job in its tenant's shard behind g's checks; see Store.
// An id another owned shard holds is ErrExists, as on one store.
func (s *Owned) Submit(ctx context.Context, job *Job, payload []byte, g Guard) (Submitted, error) {
	return s.SubmitThen(ctx, job, payload, g, nil)
}

// SubmitThen is Submit answered before the shard's record is appended;
// see EarlySubmitter. With then nil, it is Submit.
func (s *Owned) SubmitThen(ctx context.Context, job *Job, payload []byte, g Guard, then func(error)) (Submitted, error) {
	l, err := s.forTenant(ctx, job.Tenant)
	if err == nil && job.ID != "" {
		if o := s.holding(ctx, job.ID); o != nil && o != l {
			err = fmt.Errorf("jobstore: create %s: %w", job.ID, ErrExists)
		}
	}
	if err != nil {
		return Submitted{}, settled(err, then)
	}
	return l.SubmitThen(ctx, job, payload, g, then)
}

// Get returns a job; see Store.
func (s *Owned) Get(ctx context.Context, id string) (*Job, error) {
	return onOwnedJob(ctx, s, id, func(l *Logged) (*Job, error) { return l.Get(ctx, id) })
}

// Events returns a job's events; see Store.
func (s *Owned) Events(ctx context.Context, id string) ([]Event, error) {
	return onOwnedJob(ctx, s, id, func(l *Logged) ([]Event, error) { return l.Events(ctx, id) })
}

// Transition moves a job; see Store. A worker's limit holds over the
// shards this process owns: the places its other shards hold count with
// the job's shard's own, read and taken under one lock (wmu, held from
// just before the count to just after the move is applied, not while it
// is appended), so that two shards' moves do not both take the last
// place. Across owners, each holds a worker to its limit (the host runs
// max_parallel_jobs at once whatever it is handed: the rest wait there).
func (s *Owned) Transition(ctx context.Context, id string, t Transition) (*Job, error) {
	l, err := s.forJob(ctx, id)
	if err != nil {
		return nil, err
	}
	worker := t.WorkerID
	if worker == "" {
		worker = l.workerOf(id)
	}
	if worker == "" || s.n == 1 {
		return l.Transition(ctx, id, t)
	}
	unlock := func() {}
	if t.WorkerLimit > 0 && t.To.Active() {
		var once sync.Once
		s.wmu.Lock()
		unlock = func() { once.Do(s.wmu.Unlock) }
		defer unlock()
	}
	return l.transition(ctx, id, t, func() int {
		n := 0
		for _, o := range s.snapshotShards() {
			if o != nil && o != l {
				n += o.workerHeld(worker)
			}
		}
		return n
	}, unlock)
}

// LockDispatch takes a job's dispatch lock; see Store.
func (s *Owned) LockDispatch(ctx context.Context, id, owner string, ttl time.Duration) (bool, error) {
	l, err := s.forJob(ctx, id)
	if err != nil {
		return false, err
	}
	return l.LockDispatch(ctx, id, owner, ttl)
}

// UnlockDispatch gives a dispatch lock up; see Store.
func (s *Owned) UnlockDispatch(ctx context.Context, id, owner string) error {
	l, err := s.forJob(ctx, id)
	if err != nil {
		return err
	}
	return l.UnlockDispatch(ctx, id, owner)
}

// PutResult stores a job's result; see Store.
func (s *Owned) PutResult(ctx context.Context, id string, data []byte) (string, error) {
	return onOwnedJob(ctx, s, id, func(l *Logged) (string, error) { return l.PutResult(ctx, id, data) })
}

// Blob reads a context or result; see Store.
func (s *Owned) Blob(ctx context.Context, ptr string) ([]byte, error) {
	key, ok := strings.CutPrefix(ptr, ptrScheme)
	if !ok || !(strings.HasPrefix(key, "ctx:") || strings.HasPrefix(key, "res:")) || len(key) <= 4 {
		return s.local.Blob(ctx, ptr) // its error: a bad pointer
	}
	return onOwnedJob(ctx, s, key[4:], func(l *Logged) ([]byte, error) { return l.Blob(ctx, ptr) })
}

// AddOutput keeps a chunk of a running job's output; see LiveNotes.
func (s *Owned) AddOutput(ctx context.Context, id string, attempt int, seq int64, chunk []byte) (bool, error) {
	l, err := s.forJob(ctx, id)
	if err != nil {
		return false, err
	}
	return l.AddOutput(ctx, id, attempt, seq, chunk)
}

// AddProgress keeps a running job's progress report; see LiveNotes.
func (s *Owned) AddProgress(ctx context.Context, id string, attempt int, p Progress) (bool, error) {
	l, err := s.forJob(ctx, id)
	if err != nil {
		return false, err
	}
	return l.AddProgress(ctx, id, attempt, p)
}

// Live returns a job's live notes; see LiveNotes.
func (s *Owned) Live(ctx context.Context, id string) (*Live, error) {
	l, err := s.forJob(ctx, id)
	if err != nil {
		return nil, err
	}
	return l.Live(ctx, id)
}

// ActiveCount counts tenant's active jobs, in its shard.
func (s *Owned) ActiveCount(ctx context.Context, tenant string) (int, error) {
	l, err := s.forTenant(ctx, tenant)
	if err != nil {
		return 0, err
	}
	return l.ActiveCount(ctx, tenant)
}

// Held returns the tenants' and workers' active jobs, over the owned shards.
func (s *Owned) Held() (tenants, workers map[string]int) {
	tenants, workers = map[string]int{}, map[string]int{}
	_, ls := s.owned(context.Background())
	for _, l := range ls {
		t, w := l.Held()
		for k, v := range t {
			tenants[k] += v
		}
		for k, v := range w {
			workers[k] += v
		}
	}
	return tenants, workers
}

// AddDLQ dead-letters a job, in its shard; see Store.
func (s *Owned) AddDLQ(ctx context.Context, e DLQEntry) error {
	l := s.holding(ctx, e.JobID)
	if l == nil {
		var err error
		if l, err = s.forTenant(ctx, e.Tenant); err != nil {
			return err
		}
	}
	return l.AddDLQ(ctx, e)
}

// RemoveDLQ removes a job's DLQ entry; see Store.
func (s *Owned) RemoveDLQ(ctx context.Context, id string) (bool, error) {
	_, ls := s.owned(ctx)
	for _, l := range ls {
		if ok, err := l.RemoveDLQ(ctx, id); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// ---------------------------------------------- reads across the shards

// Stale returns up to limit ids of jobs that entered state before the
// time, oldest first, over the owned shards.
func (s *Owned) Stale(ctx context.Context, state State, before time.Time, limit int) ([]string, error) {
	return s.mergeScored(ctx, limit, func(l *Logged) []scored { return l.staleScored(state, before, limit) })
}

// PastDeadline returns unfinished jobs whose deadline passed, over the
// owned shards.
func (s *Owned) PastDeadline(ctx context.Context, now time.Time, limit int) ([]string, error) {
	return s.mergeScored(ctx, limit, func(l *Logged) []scored { return l.deadlineScored(now, limit) })
}

// mergeScored merges the shards' (score, id) lists, lowest first, and
// keeps limit.
func (s *Owned) mergeScored(ctx context.Context, limit int, f func(*Logged) []scored) ([]string, error) {
	if limit <= 0 {
		return nil, ctx.Err()
	}
	parts, err := gather(ctx, s, func(l *Logged) ([]scored, error) { return f(l), ctx.Err() })
	if err != nil {
		return nil, err
	}
	all := slices.Concat(parts...)
	slices.SortFunc(all, func(a, b scored) int { return cmp.Or(cmp.Compare(a.score, b.score), strings.Compare(a.id, b.id)) })
	ids := make([]string, 0, min(limit, len(all)))
	for _, e := range all[:min(limit, len(all))] {
		ids = append(ids, e.id)
	}
	return ids, nil
}

// WithResult returns stale jobs whose result is stored, over the owned shards.
func (s *Owned) WithResult(ctx context.Context, state State, before time.Time, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	parts, err := gather(ctx, s, func(l *Logged) ([]string, error) { return l.WithResult(ctx, state, before, limit) })
	all := slices.Concat(parts...)
	return all[:min(limit, len(all))], err
}

// QueueHeads returns the first jobs of pool's queue over the owned
// shards, lowest queue score first.
func (s *Owned) QueueHeads(ctx context.Context, pool string, limit int) ([]*Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	parts, err := gather(ctx, s, func(l *Logged) ([]head, error) {
		jobs, scores, err := l.queueHeads(ctx, pool, limit)
		return headsOf(jobs, scores), err
	})
	if err != nil {
		return nil, err
	}
	return topHeads(parts, limit), nil
}

// QueueLens returns each pool's queue length, summed over the owned shards.
func (s *Owned) QueueLens(ctx context.Context, pools []string) ([]int, error) {
	if len(pools) == 0 {
		return nil, nil
	}
	parts, err := gather(ctx, s, func(l *Logged) ([]int, error) { return l.QueueLens(ctx, pools) })
	return sumLens(parts, len(pools)), err
}

// DueDeferred hands out due deferred jobs, at most limit in all, the
// earliest due first, over the owned shards: it reads the first limit due
// of each, keeps the limit earliest, and has each shard hand out its part.
func (s *Owned) DueDeferred(ctx context.Context, now time.Time, limit int) ([]*Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	_, ls := s.owned(ctx)
	type due struct {
		shard int
		e     scored
	}
	var all []due
	for k, l := range ls {
		for _, e := range l.dueScored(now, limit) {
			all = append(all, due{k, e})
		}
	}
	slices.SortFunc(all, func(a, b due) int { return cmp.Or(cmp.Compare(a.e.score, b.e.score), strings.Compare(a.e.id, b.e.id)) })
	all = all[:min(limit, len(all))]
	share := make([]int, len(ls))
	rank := make(map[string]int, len(all))
	for i, d := range all {
		share[d.shard]++
		rank[d.e.id] = i
	}
	var jobs []*Job
	var errs []error
	for k, l := range ls {
		if share[k] == 0 {
			continue
		}
		js, err := l.DueDeferred(ctx, now, share[k])
		jobs = append(jobs, js...)
		errs = append(errs, err)
	}
	byRank(jobs, rank)
	return jobs, errors.Join(errs...)
}

// List returns a page of jobs; see Store. A tenant's listing is its
// shard's; any other merges the owned shards' pages (listMerge).
func (s *Owned) List(ctx context.Context, q ListQuery) (ListPage, error) {
	if q.Tenant != "" {
		l, err := s.forTenant(ctx, q.Tenant)
		if err != nil {
			return ListPage{}, err
		}
		return l.List(ctx, q)
	}
	p, err := planList(q)
	if err != nil {
		return ListPage{}, err
	}
	pages, err := gather(ctx, s, func(l *Logged) (ListPage, error) { return l.List(ctx, q) })
	if err != nil {
		return ListPage{}, err
	}
	return listMerge(pages, p.mode, p.limit)
}

// Recent returns up to limit jobs (MaxListLimit at most), newest first.
func (s *Owned) Recent(ctx context.Context, limit int) ([]*Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	p, err := s.List(ctx, ListQuery{Limit: min(limit, MaxListLimit)})
	return p.Jobs, err
}

// DLQ returns up to limit entries, newest first, over the owned shards (a
// tenant's from its shard).
func (s *Owned) DLQ(ctx context.Context, tenant string, limit int) ([]DLQEntry, error) {
	if limit <= 0 {
		return nil, nil
	}
	if tenant != "" {
		l, err := s.forTenant(ctx, tenant)
		if err != nil {
			return nil, err
		}
		return l.DLQ(ctx, tenant, limit)
	}
	parts, err := gather(ctx, s, func(l *Logged) ([]DLQEntry, error) { return l.DLQ(ctx, "", limit) })
	if err != nil {
		return nil, err
	}
	return newestDLQ(parts, limit), nil
}

// StateCounts sums the owned shards' counts.
func (s *Owned) StateCounts(ctx context.Context, pools []string) (Counts, error) {
	parts, err := gather(ctx, s, func(l *Logged) (Counts, error) { return l.StateCounts(ctx, pools) })
	if err != nil {
		return nil, err
	}
	return sumCounts(parts), nil
}

// Throughput sums the owned shards' steps.
func (s *Owned) Throughput(ctx context.Context, until time.Time, step time.Duration, n int) (*Throughput, error) {
	if _, err := checkSteps(until, step, n); err != nil {
		return nil, err
	}
	parts, err := gather(ctx, s, func(l *Logged) (*Throughput, error) { return l.Throughput(ctx, until, step, n) })
	if err != nil {
		return nil, err
	}
	return sumThroughput(until, step, n, parts), nil
}

// SetRetention makes jobs and runs that ended expire after d (0: never),
// in every shard, those taken later too.
func (s *Owned) SetRetention(d time.Duration) {
	s.mu.Lock()
	s.opts.Retention = d
	ls := slices.Clone(s.shards)
	s.mu.Unlock()
	for _, l := range ls {
		if l != nil {
			l.SetRetention(d)
		}
	}
}

// SetBound bounds the ended jobs each shard holds in memory
// (Memory.SetBound), those taken later too.
func (s *Owned) SetBound(b Bound) {
	s.mu.Lock()
	s.opts.Bound = b
	ls := slices.Clone(s.shards)
	s.mu.Unlock()
	for _, l := range ls {
		if l != nil {
			l.Memory.SetBound(b)
		}
	}
}

// Bound is each shard's bound.
func (s *Owned) Bound() Bound {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.opts.Bound
}

// Sweep sweeps every owned shard.
func (s *Owned) Sweep(ctx context.Context, now time.Time) (int, error) {
	counts, err := gather(ctx, s, func(l *Logged) (int, error) { return l.Sweep(ctx, now) })
	total := 0
	for _, n := range counts {
		total += n
	}
	return total, err
}

// --------------------------------------------- what every process shares

// AcquireLease takes or renews a lease of this process's own: each owner
// runs over its own shards what a lease keeps to one replica elsewhere.
func (s *Owned) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	return s.local.AcquireLease(ctx, name, owner, ttl)
}

// ReleaseLease gives a lease of this process's up.
func (s *Owned) ReleaseLease(ctx context.Context, name, owner string) error {
	return s.local.ReleaseLease(ctx, name, owner)
}

// SetMode stores the scheduler mode, for every process.
func (s *Owned) SetMode(ctx context.Context, mode string) error { return s.global.SetMode(ctx, mode) }

// Mode returns the stored scheduler mode.
func (s *Owned) Mode(ctx context.Context) (string, error) { return s.global.Mode(ctx) }

// RecordFailure counts a worker failure, for every process; see Store.
func (s *Owned) RecordFailure(ctx context.Context, worker string, now time.Time, window time.Duration, threshold int, cooldown time.Duration) (time.Time, error) {
	return s.global.RecordFailure(ctx, worker, now, window, threshold, cooldown)
}

// Quarantined returns the workers quarantined beyond now.
func (s *Owned) Quarantined(ctx context.Context, now time.Time) (map[string]time.Time, error) {
	return s.global.Quarantined(ctx, now)
}

// SetDrained drains or undrains a worker, for every process; see Drains.
func (s *Owned) SetDrained(ctx context.Context, worker string, on bool, at time.Time) (bool, error) {
	return s.global.SetDrained(ctx, worker, on, at)
}

// Drained returns the drained workers.
func (s *Owned) Drained(ctx context.Context) (map[string]time.Time, error) {
	return s.global.Drained(ctx)
}

// ------------------------------------------------------------ the runs

// CreateRun stores a new run in its tenant's shard; see RunStore.
func (s *Owned) CreateRun(ctx context.Context, run *Run, events [][]byte) error {
	if run == nil || run.ID == "" {
		return fmt.Errorf("jobstore: create run: no id")
	}
	l, err := s.forTenant(ctx, run.Tenant)
	if err != nil {
		return err
	}
	_, ls := s.owned(ctx)
	for _, o := range ls {
		if o != l && o.HasRun(run.ID) {
			return fmt.Errorf("jobstore: create run %s: %w", run.ID, ErrExists)
		}
	}
	return l.CreateRun(ctx, run, events)
}

// AppendRun appends to a run's log; see RunStore.
func (s *Owned) AppendRun(ctx context.Context, id, owner string, after int, events [][]byte, state, reason string) error {
	l, err := s.forRun(ctx, id)
	if err != nil {
		return err
	}
	return l.AppendRun(ctx, id, owner, after, events, state, reason)
}

// ClaimRun claims a run for owner until until; see RunStore.
func (s *Owned) ClaimRun(ctx context.Context, id, owner string, until time.Time) (bool, error) {
	l, err := s.forRun(ctx, id)
	if err != nil {
		return false, err
	}
	return l.ClaimRun(ctx, id, owner, until)
}

// GetRun returns a run and its log; see RunStore.
func (s *Owned) GetRun(ctx context.Context, id string) (*Run, [][]byte, error) {
	l, err := s.forRun(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return l.GetRun(ctx, id)
}

// ListRuns returns up to limit runs, newest first: a tenant's from its
// shard, every tenant's merged over the owned shards.
func (s *Owned) ListRuns(ctx context.Context, tenant string, limit int) ([]*Run, error) {
	if tenant != "" {
		l, err := s.forTenant(ctx, tenant)
		if err != nil {
			return nil, err
		}
		return l.ListRuns(ctx, tenant, limit)
	}
	if limit <= 0 {
		return nil, nil
	}
	parts, err := gather(ctx, s, func(l *Logged) ([]*Run, error) { return l.ListRuns(ctx, "", limit) })
	if err != nil {
		return nil, err
	}
	return newestRuns(parts, limit), nil
}

// OrphanRuns returns the RUNNING runs whose claim ran out before now,
// over the owned shards, the longest orphaned first (ties by id).
func (s *Owned) OrphanRuns(ctx context.Context, now time.Time, limit int) ([]string, error) {
	return s.mergeScored(ctx, limit, func(l *Logged) []scored { return l.orphanScored(now, limit) })
}

// Close gives every owned shard up (a snapshot each, and its lease) and
// leaves the members; the client is closed when Open made it.
func (s *Owned) Close() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	close(s.done)
	<-s.stopped
	for i, l := range s.snapshotShards() {
		s.drop(i, l, "released")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = s.c.ZRem(ctx, s.members, s.opts.Owner).Err() // it lapses anyway
	s.global.scripts.close()
	if s.ownsClient {
		return s.c.Close()
	}
	return nil
}
