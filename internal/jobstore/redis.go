package jobstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the production Store. Every call is one round trip; every call
// that checks and writes (Submit, Transition, DueDeferred, the locks and
// leases, RecordFailure) is a Lua script, so its checks and writes are atomic.
//
// Keys:
//
//	job:<id>                    hash: the job's metadata (labels, requires, env, safety as JSON)
//	job:index:<STATE>           zset: ids, scored by the ms the job entered STATE (a waiting PENDING job is in none)
//	job:recent                  zset: every id, scored by creation ms (List's index; dropped by sweep.lua with the retention)
//	job:tenant:<tenant>:all     zset: the tenant's ids, scored by creation ms (likewise)
//	job:ended                   zset: jobs that ended with a retention, by the ms their keys expire, as '<created ms>:<tenant length>:<tenant><id>'
//	job:events:<id>             list: JSON events, oldest first
//	job:idem:<tenant>:<key>     string: '<request digest>:<id>' of the job that first used the key
//	job:lock:<id>               string: the dispatch lock's owner, with a ttl
//	job:tenant:<tenant>:active  set: the tenant's SCHEDULED, DISPATCHED and RUNNING ids
//	job:worker:<id>:jobs        set: the worker's SCHEDULED, DISPATCHED and RUNNING ids
//	job:queue:<pool>            zset: PENDING ids waiting for the pool, scored priority × aging + submission ms
//	job:deferred                zset: PENDING ids deferred (backoff), scored by the ms they are due
//	job:deadlines               zset: unfinished ids with a deadline, scored by it
//	job:rate:<tenant>           hash: the tenant's submission token bucket (tokens, ts)
//	job:lease:<name>            string: a lease's owner, with a ttl (the reconciler's)
//	job:mode                    string: the scheduler mode
//	job:wfail:<worker>          string: a worker's failures in the current window, with a ttl
//	job:quarantine              zset: quarantined workers, scored by the ms their quarantine ends
//	job:drained                 hash: the workers an operator drained -> the ms it did
//	ctx:<id>, res:<id>          string: context and result blobs
//	job:dlq                     zset: dead-lettered job ids, scored by ms
//	job:dlq:<id>                string: the JSON DLQ entry
//	job:tenant:<tenant>:dlq     zset: the tenant's dead-lettered ids, scored by ms
//	job:dlq:indexed             string: how far the entries from before the tenants' DLQ indexes were put in them, then 'done'
//
// The scripts derive index, tenant, worker, queue and per-job keys from what
// they read: on one server (with replicas, or Sentinel, if wanted) the
// namespace is empty and the keys are as above. Sharded runs one Redis of
// this kind per shard of a Redis Cluster, each with its hash tag as the
// namespace, so that every key a script derives is in its slot.
type Redis struct {
	c         redis.UniversalClient
	ns        ns       // "" on its own; a shard's hash tag in a Sharded store
	scripts   *batcher // runs the scripts, group-committed (batch.go)
	retention time.Duration

	dlqIndexed atomic.Bool // dlq_index.lua said it is done
}

var _ Store = (*Redis)(nil)

// NewRedis returns a store on client. Close closes client.
func NewRedis(client redis.UniversalClient) *Redis {
	return &Redis{c: client, scripts: newBatcher(client)}
}

// OpenRedis connects to a redis:// URL and checks that the server answers.
// Open takes the other forms (Sentinel, Cluster) too.
func OpenRedis(url string) (*Redis, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("jobstore: redis url: %w", err)
	}
	c := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		return nil, errors.Join(fmt.Errorf("jobstore: redis ping %s: %w", opt.Addr, err), c.Close())
	}
	return NewRedis(c), nil
}

// Create stores job in PENDING; see Store. On success it also sets job's
// State, CreatedAt and UpdatedAt to what was stored.
func (r *Redis) Create(ctx context.Context, job *Job, payload []byte) (string, bool, error) {
	res, err := r.Submit(ctx, job, payload, Guard{})
	return res.ID, res.Created, err
}

// Submit stores job in PENDING behind g's checks, in one script; see Store.
func (r *Redis) Submit(ctx context.Context, job *Job, payload []byte, g Guard) (Submitted, error) {
	n, err := newJob(job)
	if err != nil {
		return Submitted{}, err
	}
	fields, err := jobFields(n)
	if err != nil {
		return Submitted{}, err
	}
	first := Event{At: n.CreatedAt, State: Pending}
	ev, err := json.Marshal(first)
	if err != nil {
		return Submitted{}, fmt.Errorf("jobstore: create %s: %w", n.ID, err)
	}
	c := &createCall{n: n, guard: g, event: ev, canon: Canonical(first), data: payload, fields: fields}
	if n.IdempotencyKey != "" {
		c.digest = idemDigest(n, payload)
	}
	res, err := eval(ctx, r, c).StringSlice()
	if err != nil {
		return Submitted{}, fmt.Errorf("jobstore: create %s: %w", n.ID, err)
	}
	switch {
	case res[0] == "created" && len(res) == 1+len(g.Queues):
		created(job, n)
		out := Submitted{ID: n.ID, Created: true, Queued: make([]int, len(g.Queues))}
		for i, v := range res[1:] {
			out.Queued[i], _ = strconv.Atoi(v)
		}
		return out, nil
	case res[0] == "duplicate" && len(res) == 2:
		return Submitted{ID: res[1]}, nil
	case res[0] == "conflict" && len(res) == 2:
		return Submitted{ID: res[1]}, fmt.Errorf("jobstore: create %s: %w (job %s)", n.ID, ErrIdempotencyConflict, res[1])
	case res[0] == "exists":
		return Submitted{}, fmt.Errorf("jobstore: create %s: %w", n.ID, ErrExists)
	case res[0] == "queue_full":
		return Submitted{}, fmt.Errorf("jobstore: create %s: %w: every queue of %v holds %d jobs", n.ID, ErrQueueFull, g.Queues, g.QueueCap)
	case res[0] == "rate_limited":
		return Submitted{}, fmt.Errorf("jobstore: create %s: %w (%g a second)", n.ID, ErrRateLimited, g.Rate)
	}
	return Submitted{}, fmt.Errorf("jobstore: create %s: unexpected reply %q", n.ID, res)
}

// burst is g's bucket size: Burst, or twice the rate (at least 1).
func burst(g Guard) float64 {
	if g.Burst > 0 {
		return float64(g.Burst)
	}
	return max(1, math.Ceil(2*g.Rate))
}

// Get returns a job's metadata.
func (r *Redis) Get(ctx context.Context, id string) (*Job, error) {
	h, err := r.c.HGetAll(ctx, r.ns.job(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("jobstore: get %s: %w", id, err)
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("jobstore: get %s: %w", id, ErrNotFound)
	}
	return decodeJob(h)
}

// Events returns a job's event log, oldest first.
func (r *Redis) Events(ctx context.Context, id string) ([]Event, error) {
	var exists *redis.IntCmd
	var list *redis.StringSliceCmd
	if _, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		exists = p.Exists(ctx, r.ns.job(id))
		list = p.LRange(ctx, r.ns.events(id), 0, -1)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("jobstore: events %s: %w", id, err)
	}
	if exists.Val() == 0 {
		return nil, fmt.Errorf("jobstore: events %s: %w", id, ErrNotFound)
	}
	out := make([]Event, len(list.Val()))
	for i, s := range list.Val() {
		if err := json.Unmarshal([]byte(s), &out[i]); err != nil {
			return nil, fmt.Errorf("jobstore: events %s: %w", id, err)
		}
	}
	return out, nil
}

// Transition moves a job atomically in one script; see Store.
func (r *Redis) Transition(ctx context.Context, id string, t Transition) (*Job, error) {
	j, _, err := r.transition(ctx, id, t)
	return j, err
}

// transition is Transition, also returning the job's worker before the
// move ("" for none).
func (r *Redis) transition(ctx context.Context, id string, t Transition) (*Job, string, error) {
	if err := checkTransition(id, t); err != nil {
		return nil, "", err
	}
	if t.StoreResult {
		t.ResultPtr = ResultPtr(id)
	}
	fields, err := transitionFields(t)
	if err != nil {
		return nil, "", err
	}
	when := at(t.At)
	moved := Event{At: when, State: t.To, Reason: t.Reason, Message: t.Message, WorkerID: t.WorkerID}
	ev, err := json.Marshal(moved)
	if err != nil {
		return nil, "", fmt.Errorf("jobstore: transition %s: %w", id, err)
	}
	var via []byte
	viaCanon := ""
	if t.Via != "" {
		passed := Event{At: when, State: t.Via, Message: t.ViaMessage, WorkerID: t.WorkerID}
		if via, err = json.Marshal(passed); err != nil {
			return nil, "", fmt.Errorf("jobstore: transition %s: %w", id, err)
		}
		viaCanon = Canonical(passed)
	}
	res, err := eval(ctx, r, &transitionCall{id: id, t: t, when: when, event: ev, via: via, canon: Canonical(moved), viaCanon: viaCanon,
		fields: fields, retention: r.retention}).StringSlice()
	if err != nil {
		return nil, "", fmt.Errorf("jobstore: transition %s: %w", id, err)
	}
	held := 0
	if res[0] != "ok" && (len(res) == 2 || len(res) == 3) {
		held, _ = strconv.Atoi(res[1])
	}
	switch {
	case res[0] == "ok" && len(res) >= 4:
		decode := decodeJob
		if t.Brief {
			decode = decodeBrief
		}
		j, err := decode(hashOf(res[4:]))
		if err != nil {
			return nil, "", err
		}
		j.WorkerJobs, _ = strconv.Atoi(res[1])
		j.FirstMove = res[3] == "1"
		return j, res[2], nil
	case res[0] == "notfound":
		return nil, "", fmt.Errorf("jobstore: transition %s: %w", id, ErrNotFound)
	case res[0] == "refused" && len(res) == 2:
		return nil, "", refused(id, State(res[1]), t)
	case res[0] == "worker" && len(res) == 2:
		return nil, "", &TransitionError{ID: id, Wanted: t.To, Required: t.From, IfWorker: t.IfWorker, Worker: res[1]}
	case res[0] == "attempt" && len(res) == 3:
		attempt, _ := strconv.Atoi(res[1])
		return nil, "", attemptErr(id, State(res[2]), t, attempt)
	case res[0] == "locked" && len(res) == 2:
		return nil, "", fmt.Errorf("jobstore: transition %s: %w (%s)", id, ErrLocked, res[1])
	case res[0] == "tenant" && len(res) == 3:
		e := limitErr(id, ErrTenantLimit, t, held)
		e.Key = res[2]
		return nil, "", e
	case res[0] == "worker_full":
		return nil, "", limitErr(id, ErrWorkerFull, t, held)
	case res[0] == "queue_full":
		return nil, "", fmt.Errorf("jobstore: transition %s: %w: queue %s holds %d jobs", id, ErrQueueFull, t.Wait.Pool, held)
	}
	return nil, "", fmt.Errorf("jobstore: transition %s: unexpected reply %q", id, res)
}

// limitErr is the *LimitError for a refused limit.
func limitErr(id string, which error, t Transition, held int) *LimitError {
	e := &LimitError{ID: id, Err: which, Held: held}
	if which == ErrWorkerFull {
		e.Key, e.Limit = t.WorkerID, t.WorkerLimit
	} else {
		e.Limit = t.TenantLimit
	}
	return e
}

// hashOf turns HGETALL's flat reply into a map.
func hashOf(p []string) map[string]string {
	h := make(map[string]string, len(p)/2)
	setPairs(h, p)
	return h
}

// Stale returns up to limit ids of jobs that entered state before the
// given time, oldest first.
func (r *Redis) Stale(ctx context.Context, state State, before time.Time, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	ids, err := r.c.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key:     r.ns.index(state),
		Start:   "-inf",
		Stop:    "(" + strconv.FormatInt(ms(before), 10),
		ByScore: true,
		Count:   int64(limit),
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("jobstore: stale %s: %w", state, err)
	}
	return ids, nil
}

// Recent returns up to limit jobs (MaxListLimit at most), newest first.
func (r *Redis) Recent(ctx context.Context, limit int) ([]*Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	p, err := r.List(ctx, ListQuery{Limit: min(limit, MaxListLimit)})
	return p.Jobs, err
}

// List returns a page of jobs, in one script; see Store.
func (r *Redis) List(ctx context.Context, q ListQuery) (ListPage, error) {
	p, err := planList(q)
	if err != nil {
		return ListPage{}, err
	}
	res, err := eval(ctx, r, listCall{p: p}).Slice()
	if err != nil {
		return ListPage{}, fmt.Errorf("jobstore: list: %w", err)
	}
	if len(res) < 2 || (len(res)-2)%3 != 0 {
		return ListPage{}, fmt.Errorf("jobstore: list: unexpected reply of %d values", len(res))
	}
	pos := func(score, id any) (listPos, error) {
		s, _ := score.(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return listPos{}, fmt.Errorf("jobstore: list: score %q: %w", s, err)
		}
		idv, _ := id.(string)
		return listPos{score: int64(v), id: idv}, nil
	}
	var page ListPage
	if s, _ := res[0].(string); s != "" {
		next, err := pos(res[0], res[1])
		if err != nil {
			return ListPage{}, err
		}
		page.Next = cursor(p.mode, next)
	}
	for i := 2; i+2 < len(res); i += 3 {
		at, err := pos(res[i], res[i+1])
		if err != nil {
			return ListPage{}, err
		}
		h, err := hashReply("list", res[i+2])
		if err != nil {
			return ListPage{}, err
		}
		j, err := decodeListed(h)
		if err != nil {
			return ListPage{}, err
		}
		page.Jobs = append(page.Jobs, j)
		page.after = append(page.after, cursor(p.mode, at))
	}
	return page, nil
}

// decodeHashes decodes a script's list of HGETALL replies.
func decodeHashes(op string, res []any) ([]*Job, error) {
	var jobs []*Job
	for _, v := range res {
		h, err := hashReply(op, v)
		if err != nil {
			return nil, err
		}
		j, err := decodeJob(h)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// hashReply decodes one HGETALL reply inside a script's reply.
func hashReply(op string, v any) (map[string]string, error) {
	flat, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("jobstore: %s: unexpected reply %T", op, v)
	}
	h := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		k, _ := flat[i].(string)
		h[k], _ = flat[i+1].(string)
	}
	return h, nil
}

// ActiveCount returns how many of tenant's jobs are active.
func (r *Redis) ActiveCount(ctx context.Context, tenant string) (int, error) {
	n, err := r.c.SCard(ctx, r.ns.active(tenant)).Result()
	if err != nil {
		return 0, fmt.Errorf("jobstore: active count %s: %w", tenant, err)
	}
	return int(n), nil
}

// LockDispatch takes the dispatch lock for owner, or extends it when owner
// holds it already. It reports false when another owner holds it.
func (r *Redis) LockDispatch(ctx context.Context, id, owner string, ttl time.Duration) (bool, error) {
	return r.lock(ctx, "lock "+id, r.ns.lock(id), owner, ttl)
}

func (r *Redis) lock(ctx context.Context, op, key, owner string, ttl time.Duration) (bool, error) {
	if ttl < time.Millisecond {
		return false, fmt.Errorf("jobstore: %s: ttl %v under 1ms", op, ttl)
	}
	n, err := eval(ctx, r, lockCall{key: key, owner: owner, ttl: ttl}).Int()
	if err != nil {
		return false, fmt.Errorf("jobstore: %s: %w", op, err)
	}
	return n == 1, nil
}

// UnlockDispatch releases the lock if owner holds it.
func (r *Redis) UnlockDispatch(ctx context.Context, id, owner string) error {
	if err := eval(ctx, r, unlockCall{key: r.ns.lock(id), owner: owner}).Err(); err != nil {
		return fmt.Errorf("jobstore: unlock %s: %w", id, err)
	}
	return nil
}

// PutResult stores a job's result blob.
func (r *Redis) PutResult(ctx context.Context, id string, data []byte) (string, error) {
	if id == "" {
		return "", fmt.Errorf("jobstore: put result: no job id")
	}
	// Through the batcher: a host's results share the scripts' pipelines.
	if err := r.scripts.do(ctx, "set", r.ns.res(id), data).Err(); err != nil {
		return "", fmt.Errorf("jobstore: put result %s: %w", id, err)
	}
	return ResultPtr(id), nil
}

// Blob reads the blob ptr names.
func (r *Redis) Blob(ctx context.Context, ptr string) ([]byte, error) {
	key, err := blobKey(ptr)
	if err != nil {
		return nil, err
	}
	b, err := r.c.Get(ctx, string(r.ns)+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("jobstore: blob %s: %w", ptr, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("jobstore: blob %s: %w", ptr, err)
	}
	return b, nil
}

// QueueHeads returns the first jobs of pool's queue; see Store.
func (r *Redis) QueueHeads(ctx context.Context, pool string, limit int) ([]*Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	jobs, _, err := r.queueHeads(ctx, pool, limit)
	return jobs, err
}

// queueHeads is QueueHeads with each job's score in the queue.
func (r *Redis) queueHeads(ctx context.Context, pool string, limit int) ([]*Job, []float64, error) {
	res, err := eval(ctx, r, queueHeadsCall{pool: pool, limit: limit}).Slice()
	if err != nil {
		return nil, nil, fmt.Errorf("jobstore: queue heads %s: %w", pool, err)
	}
	jobs := make([]*Job, 0, len(res)/2)
	scores := make([]float64, 0, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		s, _ := res[i].(string)
		score, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("jobstore: queue heads %s: score %q: %w", pool, s, err)
		}
		h, err := hashReply("queue heads", res[i+1])
		if err != nil {
			return nil, nil, err
		}
		j, err := decodeJob(h)
		if err != nil {
			return nil, nil, err
		}
		jobs, scores = append(jobs, j), append(scores, score)
	}
	return jobs, scores, nil
}

// QueueLens returns each pool's queue length, in one round trip.
func (r *Redis) QueueLens(ctx context.Context, pools []string) ([]int, error) {
	if len(pools) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.IntCmd, len(pools))
	if _, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, pool := range pools {
			cmds[i] = p.ZCard(ctx, r.ns.queue(pool))
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("jobstore: queue lengths: %w", err)
	}
	out := make([]int, len(pools))
	for i, c := range cmds {
		out[i] = int(c.Val())
	}
	return out, nil
}

// DueDeferred hands out deferred jobs that are due; see Store.
func (r *Redis) DueDeferred(ctx context.Context, now time.Time, limit int) ([]*Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	res, err := eval(ctx, r, dueDeferredCall{now: now, limit: limit}).Slice()
	if err != nil {
		return nil, fmt.Errorf("jobstore: due deferred: %w", err)
	}
	return decodeHashes("due deferred", res)
}

// PastDeadline returns unfinished jobs whose deadline passed; see Store.
func (r *Redis) PastDeadline(ctx context.Context, now time.Time, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	ids, err := r.c.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key: r.ns.deadlines(), Start: "-inf", Stop: strconv.FormatInt(ms(now), 10), ByScore: true, Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("jobstore: past deadline: %w", err)
	}
	return ids, nil
}

// WithResult returns stale jobs whose result is stored; see Store.
func (r *Redis) WithResult(ctx context.Context, state State, before time.Time, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	ids, err := eval(ctx, r, withResultCall{state: state, before: before, limit: limit}).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("jobstore: with result %s: %w", state, err)
	}
	return ids, nil
}

// AddDLQ records a dead-lettered job, replacing an earlier entry for it
// (add_dlq.lua).
func (r *Redis) AddDLQ(ctx context.Context, e DLQEntry) error {
	e.At = at(e.At)
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("jobstore: dlq %s: %w", e.JobID, err)
	}
	if err := eval(ctx, r, addDLQCall{e: e, entry: b}).Err(); err != nil {
		return fmt.Errorf("jobstore: dlq %s: %w", e.JobID, err)
	}
	return nil
}

// dlqIndexBatch is how many DLQ entries a dlq_index.lua call indexes.
const dlqIndexBatch = 1000

// DLQ returns up to limit entries, newest first, with their jobs: every
// tenant's, or tenant's alone. The first call for a tenant puts the entries
// made before the tenants' DLQ indexes existed in them (dlq_index.lua),
// once for the store.
func (r *Redis) DLQ(ctx context.Context, tenant string, limit int) ([]DLQEntry, error) {
	if limit <= 0 {
		return nil, nil
	}
	if tenant != "" && !r.dlqIndexed.Load() {
		for {
			done, err := eval(ctx, r, dlqIndexCall{batch: dlqIndexBatch}).Int()
			if err != nil {
				return nil, fmt.Errorf("jobstore: dlq: indexing the entries by tenant: %w", err)
			}
			if done == 1 {
				r.dlqIndexed.Store(true)
				break
			}
		}
	}
	res, err := eval(ctx, r, dlqCall{tenant: tenant, limit: limit}).Slice()
	if err != nil {
		return nil, fmt.Errorf("jobstore: dlq: %w", err)
	}
	var out []DLQEntry
	for i := 0; i+1 < len(res); i += 2 {
		s, _ := res[i].(string)
		var e DLQEntry
		if err := json.Unmarshal([]byte(s), &e); err != nil {
			return nil, fmt.Errorf("jobstore: dlq: %w", err)
		}
		h, err := hashReply("dlq", res[i+1])
		if err != nil {
			return nil, err
		}
		if len(h) > 0 {
			if e.Job, err = decodeListed(h); err != nil {
				return nil, err
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// RemoveDLQ removes a job's DLQ entry; the job is then kept for the
// retention, as any ended job.
func (r *Redis) RemoveDLQ(ctx context.Context, id string) (bool, error) {
	n, err := eval(ctx, r, removeDLQCall{id: id, retention: r.retention}).Int()
	if err != nil {
		return false, fmt.Errorf("jobstore: remove dlq %s: %w", id, err)
	}
	return n == 1, nil
}

// sweepBatch is how many jobs one run of sweep.lua takes at most: the
// server is not held long.
const sweepBatch = 1000

// SetRetention makes jobs that ended expire after d (0: never); see
// Store.Sweep. Call it before the store is used.
func (r *Redis) SetRetention(d time.Duration) { r.retention = d }

// Sweep trims from the ended states' indexes the jobs that ended before
// now less the retention: their keys have expired, or will with their TTL.
// Then it drops from the creation indexes the jobs whose keys expired
// (sweep.lua, by Redis's clock), sweepBatch at a time.
func (r *Redis) Sweep(ctx context.Context, now time.Time) (int, error) {
	return r.sweep(ctx, now, nil)
}

// sweep is Sweep, handing each batch's ids whose job is gone to gone
// (when not nil).
func (r *Redis) sweep(ctx context.Context, now time.Time, gone func([]string) error) (int, error) {
	if r.retention <= 0 {
		return 0, nil
	}
	n, err := r.sweepIndexes(ctx, now)
	if err != nil {
		return n, err
	}
	for {
		took, ids, err := r.sweepBatch(ctx)
		if err == nil && gone != nil && len(ids) > 0 {
			err = gone(ids)
		}
		if err != nil || took < sweepBatch {
			return n, err
		}
	}
}

// sweepIndexes trims the ended states' indexes: how many it took.
func (r *Redis) sweepIndexes(ctx context.Context, now time.Time) (int, error) {
	cutoff := strconv.FormatInt(ms(now.Add(-r.retention)), 10)
	var cmds []*redis.IntCmd
	if _, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, s := range terminalStates() {
			cmds = append(cmds, p.ZRemRangeByScore(ctx, r.ns.index(s), "-inf", "("+cutoff))
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("jobstore: sweep: %w", err)
	}
	n := 0
	for _, c := range cmds {
		n += int(c.Val())
	}
	return n, nil
}

// sweepBatch runs sweep.lua once: how many entries of job:ended it took,
// and the ids whose job is gone.
func (r *Redis) sweepBatch(ctx context.Context) (int, []string, error) {
	res, err := eval(ctx, r, sweepCall{limit: sweepBatch}).Slice()
	if err != nil {
		return 0, nil, fmt.Errorf("jobstore: sweep: %w", err)
	}
	if len(res) == 0 {
		return 0, nil, fmt.Errorf("jobstore: sweep: empty reply")
	}
	took, _ := res[0].(int64)
	gone := make([]string, 0, len(res)-1)
	for _, v := range res[1:] {
		id, _ := v.(string)
		gone = append(gone, id)
	}
	return int(took), gone, nil
}

// AcquireLease takes or renews the named lease; see Store.
func (r *Redis) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	return r.lock(ctx, "lease "+name, r.ns.lease(name), owner, ttl)
}

// ReleaseLease gives the lease up if owner holds it.
func (r *Redis) ReleaseLease(ctx context.Context, name, owner string) error {
	if err := eval(ctx, r, unlockCall{key: r.ns.lease(name), owner: owner}).Err(); err != nil {
		return fmt.Errorf("jobstore: release lease %s: %w", name, err)
	}
	return nil
}

// SetMode stores the scheduler mode.
func (r *Redis) SetMode(ctx context.Context, mode string) error {
	if err := r.c.Set(ctx, r.ns.mode(), mode, 0).Err(); err != nil {
		return fmt.Errorf("jobstore: set mode: %w", err)
	}
	return nil
}

// Mode returns the stored scheduler mode.
func (r *Redis) Mode(ctx context.Context) (string, error) {
	m, err := r.c.Get(ctx, r.ns.mode()).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("jobstore: mode: %w", err)
	}
	return m, nil
}

// RecordFailure counts a worker failure; see Store.
func (r *Redis) RecordFailure(ctx context.Context, worker string, now time.Time, window time.Duration, threshold int, cooldown time.Duration) (time.Time, error) {
	if worker == "" || threshold <= 0 || window < time.Millisecond {
		return time.Time{}, nil
	}
	till, err := eval(ctx, r, failureCall{worker: worker, now: now, window: window, threshold: threshold, cooldown: cooldown}).Int64()
	if err != nil {
		return time.Time{}, fmt.Errorf("jobstore: record failure %s: %w", worker, err)
	}
	if till == 0 {
		return time.Time{}, nil
	}
	return fromMS(till), nil
}

// Quarantined returns the workers quarantined beyond now, and forgets the
// quarantines that ended.
func (r *Redis) Quarantined(ctx context.Context, now time.Time) (map[string]time.Time, error) {
	var list *redis.ZSliceCmd
	cut := strconv.FormatInt(ms(now), 10)
	if _, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRemRangeByScore(ctx, r.ns.quarantine(), "-inf", cut)
		list = p.ZRangeByScoreWithScores(ctx, r.ns.quarantine(), &redis.ZRangeBy{Min: "(" + cut, Max: "+inf"})
		return nil
	}); err != nil {
		return nil, fmt.Errorf("jobstore: quarantined: %w", err)
	}
	out := make(map[string]time.Time, len(list.Val()))
	for _, z := range list.Val() {
		id, _ := z.Member.(string)
		out[id] = fromMS(int64(z.Score))
	}
	return out, nil
}

// Close closes the client.
func (r *Redis) Close() error {
	r.scripts.close()
	return r.c.Close()
}
