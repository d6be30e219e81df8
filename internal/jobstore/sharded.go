package jobstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sharded is the Redis store split into shards, for a Redis Cluster: each
// shard is a whole Redis store (the same scripts, indexes and guards)
// whose keys all start with one hash tag, so that every key a script
// touches is in one slot, and the shards' tags are spread evenly over the
// 16,384 slots, so that the masters share the load.
//
//   - A tenant's jobs and runs live in one shard (FNV-1a of the tenant,
//     modulo the shard count): its rate bucket, its active set and limit,
//     its idempotency keys and its creation index are exact, as on one
//     server.
//   - A job's or run's shard is found from its id in a directory:
//     ward:dir:{<id>} (ward:rundir:{<id>} for a run) holds the shard's
//     number, set with SET NX before the job is created, so that an id
//     is one job's in the whole store (another tenant's create of it is
//     ErrExists, as on one server). Each process caches what it learnt;
//     a miss costs one GET. Sweep deletes the entries of the jobs it
//     finds gone; a run's entry expires with the run.
//   - Reads across tenants (Stale, PastDeadline, WithResult, QueueHeads,
//     QueueLens, DueDeferred, List without a tenant, DLQ, OrphanRuns,
//     ListRuns without a tenant) ask every shard at once and merge in the
//     order one server gives.
//   - Leases, the mode, worker failures and quarantines are in shard 0.
//
// What differs from one server: a pool queue's cap (Guard.QueueCap,
// Wait.Cap) and a worker's limit (Transition.WorkerLimit) are checked in
// the job's shard, so a pool may hold up to the cap in each shard and a
// worker be handed up to its limit from each; the host runs at most
// max_parallel_jobs at once whatever it is handed (the rest wait there).
// DueDeferred hands out at most limit jobs, spread over the shards.
type Sharded struct {
	c       redis.UniversalClient
	shards  []*Redis
	ids     idCache // job id -> shard; run ids as "run:" + id
	workers nameSet // the workers this process listed in workersKey
}

var (
	_ Store    = (*Sharded)(nil)
	_ RunStore = (*Sharded)(nil)
)

// NewSharded returns a store of n shards on client. Close closes client.
func NewSharded(client redis.UniversalClient, n int) *Sharded {
	if n < 1 {
		n = 1
	}
	b := newBatcher(client)
	s := &Sharded{c: client, ids: newIDCache(1 << 16)}
	for _, tag := range shardTags(n) {
		s.shards = append(s.shards, &Redis{c: client, ns: ns("{" + tag + "}"), scripts: b})
	}
	return s
}

// Shards returns the shard count.
func (s *Sharded) Shards() int { return len(s.shards) }

// shardTags returns n hash tags whose slots are spread evenly: the i-th
// is the first "w<k>" whose slot is in the i-th n-th of the slots.
func shardTags(n int) []string {
	tags := make([]string, n)
	for i := range n {
		lo, hi := i*slots/n, (i+1)*slots/n
		for k := 0; ; k++ {
			tag := "w" + strconv.Itoa(k)
			if sl := int(keySlot(tag)); sl >= lo && sl < hi {
				tags[i] = tag
				break
			}
		}
	}
	return tags
}

// slots is the number of Redis Cluster slots.
const slots = 16384

// keySlot is Redis Cluster's slot of a key with no hash tag: CRC16
// (XMODEM) modulo 16384.
func keySlot(key string) uint16 {
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % slots
}

// tenantShard is the shard index of tenant's jobs and runs.
func (s *Sharded) tenantShard(tenant string) int {
	if len(s.shards) == 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(tenant))
	return int(h.Sum32() % uint32(len(s.shards)))
}

// The directory: which shard holds a job or a run.
func dirKey(id string) string    { return "ward:dir:{" + id + "}" }
func runDirKey(id string) string { return "ward:rundir:{" + id + "}" }

// claim records that id's job (run, with runDirKey) is in shard i, unless
// another shard has it: then ErrExists. An entry naming a shard where
// the job (run) is gone (it expired, and Sweep has not come yet) is
// moved to i, by compare and set. It reports whether this call wrote the
// entry (to be taken back if the create is refused).
func (s *Sharded) claim(ctx context.Context, key, cacheKey string, i int, exists func(*Redis) string) (bool, error) {
	set, err := s.c.SetNX(ctx, key, i, 0).Result()
	if err != nil {
		return false, err
	}
	if !set {
		v, err := s.c.Get(ctx, key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return false, err
		}
		if v != strconv.Itoa(i) {
			other, err := strconv.Atoi(v)
			if err != nil || other < 0 || other >= len(s.shards) {
				return false, fmt.Errorf("directory %s holds %q, not a shard of %d", key, v, len(s.shards))
			}
			n, err := s.c.Exists(ctx, exists(s.shards[other])).Result()
			if err != nil {
				return false, err
			}
			if n > 0 {
				return false, ErrExists
			}
			moved, err := s.c.Eval(ctx, moveDirLua, []string{key}, v, i).Int()
			if err != nil {
				return false, err
			}
			if moved == 0 {
				return false, ErrExists // another create took it meanwhile
			}
			set = true
		}
	}
	s.ids.put(cacheKey, i)
	return set, nil
}

// unclaim takes back an entry claim wrote for a create that was refused.
func (s *Sharded) unclaim(key, cacheKey string) {
	s.ids.drop(cacheKey)
	// Not the caller's context: a refusal should not leave the entry
	// because the caller gave up.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.c.Del(ctx, key)
}

// locate returns the shard of the job or run whose directory entry is key:
// from the cache, else the directory. An id with no entry goes to the
// shard its own hash picks, where it is not found (or, for a lock, held).
func (s *Sharded) locate(ctx context.Context, key, cacheKey string) (*Redis, bool, error) {
	if i, ok := s.ids.get(cacheKey); ok {
		return s.shards[i], true, nil
	}
	v, err := s.c.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return s.shards[s.tenantShard(cacheKey)], false, nil
	}
	if err != nil {
		return nil, false, err
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 || i >= len(s.shards) {
		return nil, false, fmt.Errorf("jobstore: directory %s holds %q, not a shard of %d", key, v, len(s.shards))
	}
	s.ids.put(cacheKey, i)
	return s.shards[i], false, nil
}

// onJob runs f on job id's shard. When the shard came from the cache and
// f finds no job there (it expired, and the id was made again in another
// shard), it asks the directory and runs f again there.
func onJob[T any](ctx context.Context, s *Sharded, op, id string, f func(*Redis) (T, error)) (T, error) {
	return onShard(ctx, s, op, dirKey(id), id, f)
}

func onRun[T any](ctx context.Context, s *Sharded, op, id string, f func(*Redis) (T, error)) (T, error) {
	return onShard(ctx, s, op, runDirKey(id), "run:"+id, f)
}

func onShard[T any](ctx context.Context, s *Sharded, op, key, cacheKey string, f func(*Redis) (T, error)) (T, error) {
	r, cached, err := s.locate(ctx, key, cacheKey)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("jobstore: %s: directory: %w", op, err)
	}
	v, err := f(r)
	if cached && errors.Is(err, ErrNotFound) {
		s.ids.drop(cacheKey)
		again, _, lerr := s.locate(ctx, key, cacheKey)
		if lerr == nil && again != r {
			return f(again)
		}
	}
	return v, err
}

// Create stores job in PENDING; see Store.
func (s *Sharded) Create(ctx context.Context, job *Job, payload []byte) (string, bool, error) {
	res, err := s.Submit(ctx, job, payload, Guard{})
	return res.ID, res.Created, err
}

// Submit stores job in its tenant's shard behind g's checks; see Store.
// The id is claimed in the directory first (one SET NX).
func (s *Sharded) Submit(ctx context.Context, job *Job, payload []byte, g Guard) (Submitted, error) {
	if job == nil {
		return Submitted{}, fmt.Errorf("jobstore: create: no job")
	}
	if err := CheckID(job.ID); err != nil {
		return Submitted{}, fmt.Errorf("jobstore: create: %w", err)
	}
	i := s.tenantShard(job.Tenant)
	wrote, err := s.claim(ctx, dirKey(job.ID), job.ID, i, func(r *Redis) string { return r.ns.job(job.ID) })
	if err != nil {
		return Submitted{}, fmt.Errorf("jobstore: create %s: %w", job.ID, err)
	}
	res, err := s.shards[i].Submit(ctx, job, payload, g)
	if wrote && !res.Created && (err == nil || isRefusal(err)) {
		s.unclaim(dirKey(job.ID), job.ID)
	}
	return res, err
}

// isRefusal reports whether err is a create's refusal (nothing written),
// not a failure to reach the server (which may have written it).
func isRefusal(err error) bool {
	for _, e := range []error{ErrExists, ErrIdempotencyConflict, ErrQueueFull, ErrRateLimited} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Get returns a job's metadata.
func (s *Sharded) Get(ctx context.Context, id string) (*Job, error) {
	return onJob(ctx, s, "get "+id, id, func(r *Redis) (*Job, error) { return r.Get(ctx, id) })
}

// Events returns a job's event log, oldest first.
func (s *Sharded) Events(ctx context.Context, id string) ([]Event, error) {
	return onJob(ctx, s, "events "+id, id, func(r *Redis) ([]Event, error) { return r.Events(ctx, id) })
}

// Transition moves a job atomically in its shard; see Store. A worker's
// jobs are counted in the worker's own set (workerKey), in another slot
// than the job's: a move onto a worker takes a place in it first
// (refused at WorkerLimit), a move that fails gives it back, and a move
// off a worker (to PENDING, an end, another worker) leaves it after. So
// a move onto or off a worker costs one call more than on one server;
// Sweep takes out places left by a process that died between the two.
func (s *Sharded) Transition(ctx context.Context, id string, t Transition) (*Job, error) {
	return onJob(ctx, s, "transition "+id, id, func(r *Redis) (*Job, error) {
		if err := checkTransition(id, t); err != nil {
			return nil, err
		}
		held, took := -1, false
		if t.WorkerID != "" && t.To.Active() {
			code, n, err := s.workerOp(ctx, "add", t.WorkerID, id, t.WorkerLimit)
			if err != nil {
				return nil, fmt.Errorf("jobstore: transition %s: worker %s: %w", id, t.WorkerID, err)
			}
			if code < 0 {
				return nil, limitErr(id, ErrWorkerFull, t, n)
			}
			held, took = n, code == 1
		}
		inner := t
		inner.WorkerLimit = 0 // checked above, across the shards
		j, oldw, err := r.transition(ctx, id, inner)
		if err != nil {
			if took {
				// The move failed: give the place back. Failing that, the
				// place stays taken (the worker counts one job more) until
				// Sweep takes it out, workerGrace after it was taken: say
				// so with the move's own error, which stays the one that
				// errors.Is finds.
				if _, _, rerr := s.workerOp(context.WithoutCancel(ctx), "rem", t.WorkerID, id, 0); rerr != nil {
					return nil, fmt.Errorf("%w (and worker %s's place was not given back, Sweep takes it out: %v)", err, t.WorkerID, rerr)
				}
			}
			return nil, err
		}
		if oldw != "" && (oldw != j.WorkerID || !j.State.Active()) {
			_, n, err := s.workerOp(context.WithoutCancel(ctx), "rem", oldw, id, 0)
			if err != nil {
				return nil, fmt.Errorf("jobstore: transition %s: worker %s: %w", id, oldw, err)
			}
			if oldw == j.WorkerID {
				held = n
			}
		}
		switch {
		case j.WorkerID == "":
			held = 0
		case held < 0:
			if _, held, err = s.workerOp(ctx, "count", j.WorkerID, id, 0); err != nil {
				return nil, fmt.Errorf("jobstore: transition %s: worker %s: %w", id, j.WorkerID, err)
			}
		}
		j.WorkerJobs = held
		return j, nil
	})
}

// workerKey is a worker's set of SCHEDULED, DISPATCHED and RUNNING jobs
// in a Sharded store (zset: ids by when they took their place), in the
// worker's own slot; workersKey lists the workers that have one.
func workerKey(worker string) string { return "ward:worker:{" + worker + "}" }

const workersKey = "ward:workers"

// workerScript adds a job to a worker's set (refused at a limit), removes
// it, or counts the set. Returns {code, count}: add gives 1 (added), 0
// (there already) or -1 (full); rem and count give 0.
var workerScript = redis.NewScript(`
local op, id, limit = ARGV[1], ARGV[2], tonumber(ARGV[3])
if op == 'add' then
  if redis.call('ZSCORE', KEYS[1], id) then return {0, redis.call('ZCARD', KEYS[1])} end
  local n = redis.call('ZCARD', KEYS[1])
  if limit > 0 and n >= limit then return {-1, n} end
  redis.call('ZADD', KEYS[1], ARGV[4], id)
  return {1, n + 1}
end
if op == 'rem' then redis.call('ZREM', KEYS[1], id) end
return {0, redis.call('ZCARD', KEYS[1])}`)

// workerOp runs workerScript on worker's set.
func (s *Sharded) workerOp(ctx context.Context, op, worker, id string, limit int) (int, int, error) {
	if op == "add" && !s.workers.seen(worker) {
		if err := s.c.SAdd(ctx, workersKey, worker).Err(); err != nil {
			return 0, 0, err
		}
		s.workers.add(worker)
	}
	res, err := s.shards[0].scripts.run(ctx, workerScript, []string{workerKey(worker)},
		[]any{op, id, limit, time.Now().UnixMilli()}).Int64Slice()
	if err != nil {
		return 0, 0, err
	}
	if len(res) != 2 {
		return 0, 0, fmt.Errorf("unexpected reply %v", res)
	}
	return int(res[0]), int(res[1]), nil
}

// workerGrace is how long a place in a worker's set is kept before Sweep
// may find its job not there: the move that follows the place (or the
// one that gives it back) comes within it.
const workerGrace = time.Minute

// sweepWorkers takes out of every worker's set the places taken more
// than workerGrace ago whose job is not active on that worker (a process
// died between the two calls of a move).
func (s *Sharded) sweepWorkers(ctx context.Context, now time.Time) error {
	workers, err := s.c.SMembers(ctx, workersKey).Result()
	if err != nil {
		return fmt.Errorf("jobstore: sweep: workers: %w", err)
	}
	for _, w := range workers {
		ids, err := s.c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: workerKey(w), Start: "-inf",
			Stop: "(" + strconv.FormatInt(ms(now.Add(-workerGrace)), 10), ByScore: true}).Result()
		if err != nil {
			return fmt.Errorf("jobstore: sweep: worker %s: %w", w, err)
		}
		for _, id := range ids {
			j, err := s.Get(ctx, id)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("jobstore: sweep: worker %s: %w", w, err)
			}
			if j != nil && j.State.Active() && j.WorkerID == w {
				continue
			}
			if err := s.c.ZRem(ctx, workerKey(w), id).Err(); err != nil {
				return fmt.Errorf("jobstore: sweep: worker %s: %w", w, err)
			}
		}
	}
	return nil
}

// LockDispatch takes or extends a job's dispatch lock; see Store.
func (s *Sharded) LockDispatch(ctx context.Context, id, owner string, ttl time.Duration) (bool, error) {
	return onJob(ctx, s, "lock "+id, id, func(r *Redis) (bool, error) { return r.LockDispatch(ctx, id, owner, ttl) })
}

// UnlockDispatch releases a job's dispatch lock if owner holds it.
func (s *Sharded) UnlockDispatch(ctx context.Context, id, owner string) error {
	_, err := onJob(ctx, s, "unlock "+id, id, func(r *Redis) (struct{}, error) {
		return struct{}{}, r.UnlockDispatch(ctx, id, owner)
	})
	return err
}

// PutResult stores a job's result blob, in the job's shard.
func (s *Sharded) PutResult(ctx context.Context, id string, data []byte) (string, error) {
	if id == "" {
		return "", fmt.Errorf("jobstore: put result: no job id")
	}
	return onJob(ctx, s, "put result "+id, id, func(r *Redis) (string, error) { return r.PutResult(ctx, id, data) })
}

// Blob reads the blob ptr names, from its job's shard.
func (s *Sharded) Blob(ctx context.Context, ptr string) ([]byte, error) {
	key, err := blobKey(ptr)
	if err != nil {
		return nil, err
	}
	id := key[len("ctx:"):]
	return onJob(ctx, s, "blob "+ptr, id, func(r *Redis) ([]byte, error) { return r.Blob(ctx, ptr) })
}

// AddDLQ records a dead-lettered job, in its shard.
func (s *Sharded) AddDLQ(ctx context.Context, e DLQEntry) error {
	_, err := onJob(ctx, s, "dlq "+e.JobID, e.JobID, func(r *Redis) (struct{}, error) { return struct{}{}, r.AddDLQ(ctx, e) })
	return err
}

// RemoveDLQ removes a job's DLQ entry; see Redis.RemoveDLQ.
func (s *Sharded) RemoveDLQ(ctx context.Context, id string) (bool, error) {
	return onJob(ctx, s, "remove dlq "+id, id, func(r *Redis) (bool, error) { return r.RemoveDLQ(ctx, id) })
}

// ActiveCount returns how many of tenant's jobs are active.
func (s *Sharded) ActiveCount(ctx context.Context, tenant string) (int, error) {
	return s.shards[s.tenantShard(tenant)].ActiveCount(ctx, tenant)
}

// each runs f on every shard at once and returns the results in shard order.
func each[T any](s *Sharded, f func(i int, r *Redis) (T, error)) ([]T, error) {
	out := make([]T, len(s.shards))
	errs := make([]error, len(s.shards))
	var wg sync.WaitGroup
	for i, r := range s.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = f(i, r)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// scored is an id and its score in an index, for merging shards' ranges.
type scored struct {
	id    string
	score float64
}

// rangeByScore reads up to limit members of each shard's key (key(r)) with
// a score under stop ("(" for exclusive), lowest first, and merges them.
func (s *Sharded) rangeByScore(ctx context.Context, op string, key func(*Redis) string, stop string, limit int) ([]string, error) {
	parts, err := each(s, func(_ int, r *Redis) ([]redis.Z, error) {
		return r.c.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: key(r), Start: "-inf", Stop: stop, ByScore: true, Count: int64(limit)}).Result()
	})
	if err != nil {
		return nil, fmt.Errorf("jobstore: %s: %w", op, err)
	}
	var all []scored
	for _, p := range parts {
		for _, z := range p {
			id, _ := z.Member.(string)
			all = append(all, scored{id, z.Score})
		}
	}
	slices.SortFunc(all, func(a, b scored) int {
		return cmp.Or(cmp.Compare(a.score, b.score), strings.Compare(a.id, b.id))
	})
	ids := make([]string, 0, min(limit, len(all)))
	for _, e := range all[:min(limit, len(all))] {
		ids = append(ids, e.id)
	}
	return ids, nil
}

// Stale returns up to limit ids of jobs that entered state before the
// given time, oldest first, from every shard.
func (s *Sharded) Stale(ctx context.Context, state State, before time.Time, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	return s.rangeByScore(ctx, "stale "+string(state), func(r *Redis) string { return r.ns.index(state) },
		"("+strconv.FormatInt(ms(before), 10), limit)
}

// PastDeadline returns unfinished jobs whose deadline passed, from every shard.
func (s *Sharded) PastDeadline(ctx context.Context, now time.Time, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	return s.rangeByScore(ctx, "past deadline", func(r *Redis) string { return r.ns.deadlines() }, strconv.FormatInt(ms(now), 10), limit)
}

// WithResult returns stale jobs whose result is stored, from every shard.
func (s *Sharded) WithResult(ctx context.Context, state State, before time.Time, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	parts, err := each(s, func(_ int, r *Redis) ([]string, error) { return r.WithResult(ctx, state, before, limit) })
	if err != nil {
		return nil, err
	}
	all := slices.Concat(parts...)
	return all[:min(limit, len(all))], nil
}

// QueueHeads returns the first jobs of pool's queue across the shards,
// lowest score first.
func (s *Sharded) QueueHeads(ctx context.Context, pool string, limit int) ([]*Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	parts, err := each(s, func(_ int, r *Redis) ([]head, error) {
		jobs, scores, err := r.queueHeads(ctx, pool, limit)
		return headsOf(jobs, scores), err
	})
	if err != nil {
		return nil, err
	}
	return topHeads(parts, limit), nil
}

// QueueLens returns each pool's queue length, summed over the shards.
func (s *Sharded) QueueLens(ctx context.Context, pools []string) ([]int, error) {
	if len(pools) == 0 {
		return nil, nil
	}
	parts, err := each(s, func(_ int, r *Redis) ([]int, error) { return r.QueueLens(ctx, pools) })
	if err != nil {
		return nil, err
	}
	return sumLens(parts, len(pools)), nil
}

// DueDeferred hands out due deferred jobs, at most limit in all, the
// earliest due first: it reads the first limit due entries of every
// shard, keeps the limit earliest, and has each shard hand out its part
// (due_deferred.lua, which hands a job out once however many callers
// race for it).
func (s *Sharded) DueDeferred(ctx context.Context, now time.Time, limit int) ([]*Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	stop := strconv.FormatInt(ms(now), 10)
	parts, err := each(s, func(_ int, r *Redis) ([]redis.Z, error) {
		return r.c.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: r.ns.deferred(), Start: "-inf", Stop: stop, ByScore: true, Count: int64(limit)}).Result()
	})
	if err != nil {
		return nil, fmt.Errorf("jobstore: due deferred: %w", err)
	}
	type due struct {
		shard int
		z     redis.Z
	}
	var all []due
	for i, p := range parts {
		for _, z := range p {
			all = append(all, due{i, z})
		}
	}
	slices.SortFunc(all, func(a, b due) int { return cmp.Compare(a.z.Score, b.z.Score) })
	all = all[:min(limit, len(all))]
	share := make([]int, len(s.shards))
	rank := make(map[string]int, len(all))
	for i, d := range all {
		share[d.shard]++
		id, _ := d.z.Member.(string)
		rank[id] = i
	}
	out, err := each(s, func(i int, r *Redis) ([]*Job, error) {
		if share[i] == 0 {
			return nil, nil
		}
		return r.DueDeferred(ctx, now, share[i])
	})
	jobs := slices.Concat(out...)
	byRank(jobs, rank)
	return jobs, err
}

// List returns a page of jobs; see Store. A tenant's listing is its
// shard's; any other merges the shards' pages (listMerge).
func (s *Sharded) List(ctx context.Context, q ListQuery) (ListPage, error) {
	if q.Tenant != "" {
		return s.shards[s.tenantShard(q.Tenant)].List(ctx, q)
	}
	p, err := planList(q)
	if err != nil {
		return ListPage{}, err
	}
	pages, err := each(s, func(_ int, r *Redis) (ListPage, error) { return r.List(ctx, q) })
	if err != nil {
		return ListPage{}, err
	}
	return listMerge(pages, p.mode, p.limit)
}

// listMerge merges shards' pages of one listing into one page of at most
// limit jobs, newest first (mergeCursors).
func listMerge(pages []ListPage, mode string, limit int) (ListPage, error) {
	cursors, nexts := make([][]string, len(pages)), make([]string, len(pages))
	for i, pg := range pages {
		cursors[i], nexts[i] = pg.after, pg.Next
	}
	keep, next, err := mergeCursors(cursors, nexts, mode, limit)
	if err != nil {
		return ListPage{}, err
	}
	out := ListPage{Next: next}
	for _, k := range keep {
		out.Jobs = append(out.Jobs, pages[k[0]].Jobs[k[1]])
		out.after = append(out.after, pages[k[0]].after[k[1]])
	}
	return out, nil
}

// MergePages merges the pages of one listing that several stores (the
// owners of a logged store's shards) answered, each given as its jobs'
// cursors (ListPage.Cursors) and its Next, into one page of at most limit
// jobs: the (page, index) of those it keeps, newest first, and its Next.
func MergePages(cursors [][]string, nexts []string, limit int) (keep [][2]int, next string, err error) {
	mode := ""
	for i := 0; i < len(cursors) && mode == ""; i++ {
		for _, c := range append(slices.Clone(cursors[i]), nexts[i]) {
			if m, ok := cursorMode(c); ok {
				mode = m
				break
			}
		}
	}
	if mode == "" {
		return nil, "", nil // no jobs, no more
	}
	return mergeCursors(cursors, nexts, mode, limit)
}

// mergeCursors merges pages of one listing given by their jobs' cursors
// and their Next. A page that stopped short (its budget spent) stopped at
// its Next: nothing older than the newest such stop may be returned,
// since that page's store has not looked there; the cursor is then that
// stop, from which every store goes on.
func mergeCursors(cursors [][]string, nexts []string, mode string, limit int) ([][2]int, string, error) {
	type entry struct {
		at  [2]int
		pos listPos
	}
	var all []entry
	var stop *listPos
	for p, cs := range cursors {
		for i, c := range cs {
			pos, err := decodeCursor(c, mode)
			if err != nil {
				return nil, "", err
			}
			all = append(all, entry{[2]int{p, i}, *pos})
		}
		if nexts[p] != "" {
			pos, err := decodeCursor(nexts[p], mode)
			if err != nil {
				return nil, "", err
			}
			if stop == nil || newer(*pos, *stop) {
				stop = pos
			}
		}
	}
	slices.SortFunc(all, func(a, b entry) int {
		switch {
		case newer(a.pos, b.pos):
			return -1
		case newer(b.pos, a.pos):
			return 1
		}
		return 0
	})
	var keep [][2]int
	var last listPos
	for _, e := range all {
		if stop != nil && newer(*stop, e.pos) {
			break
		}
		if len(keep) == limit {
			break
		}
		keep = append(keep, e.at)
		last = e.pos
	}
	next := ""
	switch {
	case len(keep) == limit && len(keep) < len(all):
		next = cursor(mode, last)
	case stop != nil:
		if len(keep) == limit {
			next = cursor(mode, last)
		} else {
			next = cursor(mode, *stop)
		}
	}
	return keep, next, nil
}

// newer reports whether a comes before b in a listing (newest first:
// the greater score, then the greater id, as ZREVRANGE orders them).
func newer(a, b listPos) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.id > b.id
}

// Recent returns up to limit jobs (MaxListLimit at most), newest first.
func (s *Sharded) Recent(ctx context.Context, limit int) ([]*Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	p, err := s.List(ctx, ListQuery{Limit: min(limit, MaxListLimit)})
	return p.Jobs, err
}

// DLQ returns up to limit entries, newest first, from every shard: every
// tenant's, or tenant's.
func (s *Sharded) DLQ(ctx context.Context, tenant string, limit int) ([]DLQEntry, error) {
	if limit <= 0 {
		return nil, nil
	}
	parts, err := each(s, func(_ int, r *Redis) ([]DLQEntry, error) { return r.DLQ(ctx, tenant, limit) })
	if err != nil {
		return nil, err
	}
	return newestDLQ(parts, limit), nil
}

// SetRetention makes jobs and runs that ended expire after d (0: never).
func (s *Sharded) SetRetention(d time.Duration) {
	for _, r := range s.shards {
		r.SetRetention(d)
	}
}

// Sweep sweeps every shard, drops the directory entries of the jobs it
// found gone (an entry another shard's job took since is kept), and
// takes out of the workers' sets the places left behind (sweepWorkers).
func (s *Sharded) Sweep(ctx context.Context, now time.Time) (int, error) {
	if err := s.sweepWorkers(ctx, now); err != nil {
		return 0, err
	}
	counts, err := each(s, func(i int, r *Redis) (int, error) {
		return r.sweep(ctx, now, func(gone []string) error { return s.dropDir(ctx, i, gone) })
	})
	total := 0
	for _, n := range counts {
		total += n
	}
	return total, err
}

// dropDirLua deletes a directory entry if it still names the shard
// (EVAL: it runs seldom, in a pipeline).
const dropDirLua = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

// moveDirLua points a directory entry at another shard if it still names
// the old one (ARGV[1]): a compare and set.
const moveDirLua = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end return 0`

// dropDir deletes the directory entries of shard i's gone jobs.
func (s *Sharded) dropDir(ctx context.Context, i int, ids []string) error {
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			p.Eval(ctx, dropDirLua, []string{dirKey(id)}, i)
			s.ids.drop(id)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("jobstore: sweep: directory: %w", err)
	}
	return nil
}

// home is the shard of what is not a tenant's: leases, the mode, worker
// failures and quarantines.
func (s *Sharded) home() *Redis { return s.shards[0] }

// AcquireLease takes or renews the named lease; see Store.
func (s *Sharded) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	return s.home().AcquireLease(ctx, name, owner, ttl)
}

// ReleaseLease gives the lease up if owner holds it.
func (s *Sharded) ReleaseLease(ctx context.Context, name, owner string) error {
	return s.home().ReleaseLease(ctx, name, owner)
}

// SetMode stores the scheduler mode.
func (s *Sharded) SetMode(ctx context.Context, mode string) error { return s.home().SetMode(ctx, mode) }

// Mode returns the stored scheduler mode.
func (s *Sharded) Mode(ctx context.Context) (string, error) { return s.home().Mode(ctx) }

// RecordFailure counts a worker failure; see Store.
func (s *Sharded) RecordFailure(ctx context.Context, worker string, now time.Time, window time.Duration, threshold int, cooldown time.Duration) (time.Time, error) {
	return s.home().RecordFailure(ctx, worker, now, window, threshold, cooldown)
}

// Quarantined returns the workers quarantined beyond now.
func (s *Sharded) Quarantined(ctx context.Context, now time.Time) (map[string]time.Time, error) {
	return s.home().Quarantined(ctx, now)
}

// CreateRun stores a new run in its tenant's shard; see RunStore.
func (s *Sharded) CreateRun(ctx context.Context, run *Run, events [][]byte) error {
	if run == nil || run.ID == "" {
		return fmt.Errorf("jobstore: create run: no id")
	}
	i := s.tenantShard(run.Tenant)
	wrote, err := s.claim(ctx, runDirKey(run.ID), "run:"+run.ID, i, func(r *Redis) string { return r.ns.run(run.ID) })
	if err != nil {
		return fmt.Errorf("jobstore: create run %s: %w", run.ID, err)
	}
	err = s.shards[i].CreateRun(ctx, run, events)
	if wrote && errors.Is(err, ErrExists) {
		s.unclaim(runDirKey(run.ID), "run:"+run.ID)
	}
	if err == nil && run.State != "" && run.State != RunRunning {
		s.expireRunDir(ctx, i, run.ID)
	}
	return err
}

// expireRunDir gives an ended run's directory entry the run's retention,
// with a margin, so that it goes after the run.
func (s *Sharded) expireRunDir(ctx context.Context, i int, id string) {
	if d := s.shards[i].retention; d > 0 {
		s.c.PExpire(ctx, runDirKey(id), d+time.Minute)
	}
}

// AppendRun appends to a run's log; see RunStore.
func (s *Sharded) AppendRun(ctx context.Context, id, owner string, after int, events [][]byte, state, reason string) error {
	_, err := onRun(ctx, s, "append run "+id, id, func(r *Redis) (struct{}, error) {
		err := r.AppendRun(ctx, id, owner, after, events, state, reason)
		if err == nil && state != "" && state != RunRunning {
			s.expireRunDir(ctx, slices.Index(s.shards, r), id)
		}
		return struct{}{}, err
	})
	return err
}

// ClaimRun claims a run for owner until until; see RunStore.
func (s *Sharded) ClaimRun(ctx context.Context, id, owner string, until time.Time) (bool, error) {
	return onRun(ctx, s, "claim run "+id, id, func(r *Redis) (bool, error) { return r.ClaimRun(ctx, id, owner, until) })
}

// GetRun returns a run and its log; see RunStore.
func (s *Sharded) GetRun(ctx context.Context, id string) (*Run, [][]byte, error) {
	type got struct {
		run    *Run
		events [][]byte
	}
	g, err := onRun(ctx, s, "run "+id, id, func(r *Redis) (got, error) {
		run, events, err := r.GetRun(ctx, id)
		return got{run, events}, err
	})
	return g.run, g.events, err
}

// ListRuns returns up to limit runs, newest first; a tenant's from its
// shard, every tenant's merged from all.
func (s *Sharded) ListRuns(ctx context.Context, tenant string, limit int) ([]*Run, error) {
	if tenant != "" {
		return s.shards[s.tenantShard(tenant)].ListRuns(ctx, tenant, limit)
	}
	if limit <= 0 {
		return nil, nil
	}
	parts, err := each(s, func(_ int, r *Redis) ([]*Run, error) { return r.ListRuns(ctx, "", limit) })
	if err != nil {
		return nil, err
	}
	return newestRuns(parts, limit), nil
}

// OrphanRuns returns the RUNNING runs whose claim ran out before now,
// from every shard, the longest orphaned first (ties by id).
func (s *Sharded) OrphanRuns(ctx context.Context, now time.Time, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	return s.rangeByScore(ctx, "orphan runs", func(r *Redis) string { return r.ns.runActive() },
		"("+strconv.FormatInt(orphanCut(now), 10), limit)
}

// Close stops the senders and closes the client.
func (s *Sharded) Close() error {
	s.shards[0].scripts.close()
	return s.c.Close()
}

// idCache remembers which shard holds an id, in two generations: when
// the newer holds max entries it becomes the older, and the older is
// dropped, so the cache stays bounded and keeps what was used lately.
type idCache struct {
	mu       sync.Mutex
	cur, old map[string]int
	max      int
}

func newIDCache(max int) idCache {
	return idCache{cur: make(map[string]int), old: make(map[string]int), max: max}
}

func (c *idCache) get(id string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i, ok := c.cur[id]; ok {
		return i, true
	}
	i, ok := c.old[id]
	if ok {
		c.putLocked(id, i)
	}
	return i, ok
}

func (c *idCache) put(id string, i int) {
	c.mu.Lock()
	c.putLocked(id, i)
	c.mu.Unlock()
}

func (c *idCache) putLocked(id string, i int) {
	if len(c.cur) >= c.max {
		c.old, c.cur = c.cur, make(map[string]int, c.max)
	}
	c.cur[id] = i
}

func (c *idCache) drop(id string) {
	c.mu.Lock()
	delete(c.cur, id)
	delete(c.old, id)
	c.mu.Unlock()
}

// nameSet is a set of names, safe for concurrent use.
type nameSet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (n *nameSet) seen(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.m[name]
}

func (n *nameSet) add(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = make(map[string]bool)
	}
	n.m[name] = true
}
