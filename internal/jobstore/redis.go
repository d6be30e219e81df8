package jobstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the production Store. Every call is one round trip; Create and
// Transition are Lua scripts, so their checks and writes are atomic.
//
// Keys:
//
//	job:<id>                    hash: the job's metadata (labels, requires, safety as JSON)
//	job:index:<STATE>           zset: ids, scored by the ms the job entered STATE (every state)
//	job:recent                  zset: ids, scored by creation ms, newest 1000 kept
//	job:events:<id>             list: JSON events, oldest first
//	job:idem:<tenant>:<key>     string: the id that first used the key
//	job:lock:<id>               string: the dispatch lock's owner, with a ttl
//	job:tenant:<tenant>:active  set: the tenant's SCHEDULED, DISPATCHED and RUNNING ids
//	ctx:<id>, res:<id>          string: context and result blobs
//	job:dlq                     zset: dead-lettered job ids, scored by ms
//	job:dlq:<id>                string: the JSON DLQ entry
//
// The scripts derive index, tenant and per-job keys from what they read, so
// the store needs a single Redis (with replicas if wanted), not a cluster.
type Redis struct {
	c redis.UniversalClient
}

var _ Store = (*Redis)(nil)

// NewRedis returns a store on client. Close closes client.
func NewRedis(client redis.UniversalClient) *Redis { return &Redis{c: client} }

// OpenRedis connects to a redis:// URL and checks that the server answers.
func OpenRedis(url string) (*Redis, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("jobstore: redis url: %w", err)
	}
	c := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("jobstore: redis ping %s: %w", opt.Addr, err)
	}
	return NewRedis(c), nil
}

// Key names. The scripts spell some of them too: keep both in step.
const keyRecent, keyDLQ = "job:recent", "job:dlq"

func keyJob(id string) string           { return "job:" + id }
func keyIndex(s State) string           { return "job:index:" + string(s) }
func keyEvents(id string) string        { return "job:events:" + id }
func keyIdem(tenant, key string) string { return "job:idem:" + idemKey(tenant, key) }
func keyLock(id string) string          { return "job:lock:" + id }
func keyActive(tenant string) string    { return "job:tenant:" + tenant + ":active" }
func keyDLQEntry(id string) string      { return "job:dlq:" + id }
func keyCtx(id string) string           { return "ctx:" + id }
func keyRes(id string) string           { return "res:" + id }

// createLua creates a job unless its tenant used its idempotency key
// already (it returns the first id) or its id exists.
//
// KEYS: job hash, ctx blob, PENDING index, job:recent, event list,
// [idempotency key]. ARGV: id, created ms, payload, event JSON, recent cap,
// field/value pairs...
var createLua = redis.NewScript(`
if KEYS[6] then
  local first = redis.call('GET', KEYS[6])
  if first then return {'duplicate', first} end
end
if redis.call('EXISTS', KEYS[1]) == 1 then return {'exists'} end
redis.call('HSET', KEYS[1], unpack(ARGV, 6, #ARGV))
redis.call('SET', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -(tonumber(ARGV[5]) + 1))
redis.call('RPUSH', KEYS[5], ARGV[4])
if KEYS[6] then redis.call('SET', KEYS[6], ARGV[1]) end
return {'created'}
`)

// transitionLua moves a job. Its tables are generated from transitions,
// State.Active and State.Terminal, so Go stays the one source of truth.
//
// KEYS: job hash, event list. ARGV: id, to, required from (or empty), ms,
// event JSON, field/value pairs... It returns {'ok', hash pairs...},
// {'notfound'} or {'refused', current state}.
var transitionLua = redis.NewScript(strings.NewReplacer(
	"$ALLOWED", luaAllowed(),
	"$ACTIVE", luaSet(slices.DeleteFunc(slices.Clone(States), func(s State) bool { return !s.Active() })),
	"$TERMINAL", luaSet(slices.DeleteFunc(slices.Clone(States), func(s State) bool { return !s.Terminal() })),
).Replace(`
local allowed = $ALLOWED
local active = $ACTIVE
local terminal = $TERMINAL
local id, to, from, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local cur = redis.call('HGET', KEYS[1], 'state')
if not cur then return {'notfound'} end
if (from ~= '' and cur ~= from) or not (allowed[cur] and allowed[cur][to]) then
  return {'refused', cur}
end
redis.call('HSET', KEYS[1], 'state', to, 'updated_at', now, unpack(ARGV, 6, #ARGV))
redis.call('ZREM', 'job:index:' .. cur, id)
redis.call('ZADD', 'job:index:' .. to, now, id)
local tenant = redis.call('HGET', KEYS[1], 'tenant') or ''
if active[to] then
  redis.call('SADD', 'job:tenant:' .. tenant .. ':active', id)
elseif terminal[to] then
  redis.call('SREM', 'job:tenant:' .. tenant .. ':active', id)
end
redis.call('RPUSH', KEYS[2], ARGV[5])
local h = redis.call('HGETALL', KEYS[1])
table.insert(h, 1, 'ok')
return h
`))

// luaAllowed renders transitions as a Lua table: allowed[from][to] == true.
func luaAllowed() string {
	var b strings.Builder
	b.WriteString("{")
	for _, from := range slices.Sorted(maps.Keys(transitions)) {
		fmt.Fprintf(&b, "[%q]=%s,", from, luaSet(transitions[from]))
	}
	b.WriteString("}")
	return b.String()
}

// luaSet renders states as a Lua table mapping each to true.
func luaSet(states []State) string {
	var b strings.Builder
	b.WriteString("{")
	for _, s := range states {
		fmt.Fprintf(&b, "[%q]=true,", s)
	}
	b.WriteString("}")
	return b.String()
}

// recentLua returns the hashes of the newest ARGV[1] jobs.
var recentLua = redis.NewScript(`
local out = {}
for _, id in ipairs(redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)) do
  local h = redis.call('HGETALL', 'job:' .. id)
  if #h > 0 then table.insert(out, h) end
end
return out
`)

// dlqLua returns the newest ARGV[1] DLQ entries' JSON.
var dlqLua = redis.NewScript(`
local out = {}
for _, id in ipairs(redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)) do
  local e = redis.call('GET', 'job:dlq:' .. id)
  if e then table.insert(out, e) end
end
return out
`)

// lockLua takes or extends the lock KEYS[1] for owner ARGV[1], ttl ARGV[2] ms.
var lockLua = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// unlockLua deletes the lock KEYS[1] if owner ARGV[1] holds it.
var unlockLua = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// Create stores job in PENDING; see Store. On success it also sets job's
// State, CreatedAt and UpdatedAt to what was stored.
func (r *Redis) Create(ctx context.Context, job *Job, payload []byte) (string, bool, error) {
	n, err := newJob(job)
	if err != nil {
		return "", false, err
	}
	fields, err := jobFields(n)
	if err != nil {
		return "", false, err
	}
	ev, err := json.Marshal(Event{At: n.CreatedAt, State: Pending})
	if err != nil {
		return "", false, fmt.Errorf("jobstore: create %s: %w", n.ID, err)
	}
	keys := []string{keyJob(n.ID), keyCtx(n.ID), keyIndex(Pending), keyRecent, keyEvents(n.ID)}
	if n.IdempotencyKey != "" {
		keys = append(keys, keyIdem(n.Tenant, n.IdempotencyKey))
	}
	args := make([]any, 0, 5+len(fields))
	args = append(args, n.ID, ms(n.CreatedAt), payload, ev, recentCap)
	for _, f := range fields {
		args = append(args, f)
	}
	res, err := createLua.Run(ctx, r.c, keys, args...).StringSlice()
	if err != nil {
		return "", false, fmt.Errorf("jobstore: create %s: %w", n.ID, err)
	}
	switch {
	case res[0] == "created":
		created(job, n)
		return n.ID, true, nil
	case res[0] == "duplicate" && len(res) == 2:
		return res[1], false, nil
	case res[0] == "exists":
		return "", false, fmt.Errorf("jobstore: create %s: %w", n.ID, ErrExists)
	}
	return "", false, fmt.Errorf("jobstore: create %s: unexpected reply %q", n.ID, res)
}

// Get returns a job's metadata.
func (r *Redis) Get(ctx context.Context, id string) (*Job, error) {
	h, err := r.c.HGetAll(ctx, keyJob(id)).Result()
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
		exists = p.Exists(ctx, keyJob(id))
		list = p.LRange(ctx, keyEvents(id), 0, -1)
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
	fields, err := transitionFields(t)
	if err != nil {
		return nil, err
	}
	when := at(t.At)
	ev, err := json.Marshal(Event{At: when, State: t.To, Reason: t.Reason, Message: t.Message, WorkerID: t.WorkerID})
	if err != nil {
		return nil, fmt.Errorf("jobstore: transition %s: %w", id, err)
	}
	args := make([]any, 0, 5+len(fields))
	args = append(args, id, string(t.To), string(t.From), ms(when), ev)
	for _, f := range fields {
		args = append(args, f)
	}
	res, err := transitionLua.Run(ctx, r.c, []string{keyJob(id), keyEvents(id)}, args...).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("jobstore: transition %s: %w", id, err)
	}
	switch {
	case res[0] == "ok":
		return decodeJob(hashOf(res[1:]))
	case res[0] == "notfound":
		return nil, fmt.Errorf("jobstore: transition %s: %w", id, ErrNotFound)
	case res[0] == "refused" && len(res) == 2:
		return nil, refused(id, State(res[1]), t)
	}
	return nil, fmt.Errorf("jobstore: transition %s: unexpected reply %q", id, res)
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
		Key:     keyIndex(state),
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

// Recent returns up to limit jobs, newest first.
func (r *Redis) Recent(ctx context.Context, limit int) ([]*Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	res, err := recentLua.Run(ctx, r.c, []string{keyRecent}, limit).Slice()
	if err != nil {
		return nil, fmt.Errorf("jobstore: recent: %w", err)
	}
	var jobs []*Job
	for _, v := range res {
		flat, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("jobstore: recent: unexpected reply %T", v)
		}
		h := make(map[string]string, len(flat)/2)
		for i := 0; i+1 < len(flat); i += 2 {
			k, _ := flat[i].(string)
			h[k], _ = flat[i+1].(string)
		}
		j, err := decodeJob(h)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// ActiveCount returns how many of tenant's jobs are active.
func (r *Redis) ActiveCount(ctx context.Context, tenant string) (int, error) {
	n, err := r.c.SCard(ctx, keyActive(tenant)).Result()
	if err != nil {
		return 0, fmt.Errorf("jobstore: active count %s: %w", tenant, err)
	}
	return int(n), nil
}

// LockDispatch takes the dispatch lock for owner, or extends it when owner
// holds it already. It reports false when another owner holds it.
func (r *Redis) LockDispatch(ctx context.Context, id, owner string, ttl time.Duration) (bool, error) {
	if ttl < time.Millisecond {
		return false, fmt.Errorf("jobstore: lock %s: ttl %v under 1ms", id, ttl)
	}
	n, err := lockLua.Run(ctx, r.c, []string{keyLock(id)}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("jobstore: lock %s: %w", id, err)
	}
	return n == 1, nil
}

// UnlockDispatch releases the lock if owner holds it.
func (r *Redis) UnlockDispatch(ctx context.Context, id, owner string) error {
	if err := unlockLua.Run(ctx, r.c, []string{keyLock(id)}, owner).Err(); err != nil {
		return fmt.Errorf("jobstore: unlock %s: %w", id, err)
	}
	return nil
}

// PutResult stores a job's result blob.
func (r *Redis) PutResult(ctx context.Context, id string, data []byte) (string, error) {
	if id == "" {
		return "", fmt.Errorf("jobstore: put result: no job id")
	}
	if err := r.c.Set(ctx, keyRes(id), data, 0).Err(); err != nil {
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
	b, err := r.c.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("jobstore: blob %s: %w", ptr, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("jobstore: blob %s: %w", ptr, err)
	}
	return b, nil
}

// AddDLQ records a dead-lettered job, replacing an earlier entry for it.
func (r *Redis) AddDLQ(ctx context.Context, e DLQEntry) error {
	e.At = at(e.At)
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("jobstore: dlq %s: %w", e.JobID, err)
	}
	if _, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, keyDLQEntry(e.JobID), b, 0)
		p.ZAdd(ctx, keyDLQ, redis.Z{Score: float64(ms(e.At)), Member: e.JobID})
		return nil
	}); err != nil {
		return fmt.Errorf("jobstore: dlq %s: %w", e.JobID, err)
	}
	return nil
}

// DLQ returns up to limit entries, newest first.
func (r *Redis) DLQ(ctx context.Context, limit int) ([]DLQEntry, error) {
	if limit <= 0 {
		return nil, nil
	}
	res, err := dlqLua.Run(ctx, r.c, []string{keyDLQ}, limit).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("jobstore: dlq: %w", err)
	}
	var out []DLQEntry
	for _, s := range res {
		var e DLQEntry
		if err := json.Unmarshal([]byte(s), &e); err != nil {
			return nil, fmt.Errorf("jobstore: dlq: %w", err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Close closes the client.
func (r *Redis) Close() error { return r.c.Close() }
