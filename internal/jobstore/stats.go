package jobstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Counts are how many jobs the store holds in each state, read from its
// indexes: exact, whatever the number of jobs. An ended state counts the
// jobs that ended within the retention. PENDING counts every job not yet
// placed: those in the pools' queues, those deferred (a retry's backoff,
// run_at) and those between the two.
type Counts map[State]int64

// Throughput is how many jobs were created, and how many entered each
// ended state, in each of a series of equal steps, oldest first: step i
// covers [Until - (len-i)·Step, Until - (len-i-1)·Step).
type Throughput struct {
	Until   time.Time
	Step    time.Duration
	Created []int64
	Ended   map[State][]int64
}

// MaxThroughputSteps bounds the steps of one Throughput call.
const MaxThroughputSteps = 1440

// StatsReader is what the overview reads. Every store implements it: the
// counts and the steps come from the indexes the store keeps anyway, so a
// job's move does no bookkeeping for them.
type StatsReader interface {
	// StateCounts counts the jobs of each state; pools names the queues
	// whose PENDING jobs count (every pool the schedulers route to).
	StateCounts(ctx context.Context, pools []string) (Counts, error)
	// Throughput counts the jobs created and ended in n steps of step,
	// the last ending at until. It refuses n outside [1,
	// MaxThroughputSteps] and a step under a millisecond.
	Throughput(ctx context.Context, until time.Time, step time.Duration, n int) (*Throughput, error)
}

var (
	_ StatsReader = (*Redis)(nil)
	_ StatsReader = (*Memory)(nil)
	_ StatsReader = (*Sharded)(nil)
)

// checkSteps checks Throughput's arguments and returns the steps' bounds
// in ms: bounds[i] starts step i, bounds[n] is until.
func checkSteps(until time.Time, step time.Duration, n int) ([]int64, error) {
	if n < 1 || n > MaxThroughputSteps {
		return nil, fmt.Errorf("jobstore: throughput: %d steps: want 1 to %d", n, MaxThroughputSteps)
	}
	if step < time.Millisecond {
		return nil, fmt.Errorf("jobstore: throughput: a step of %v: want a millisecond or more", step)
	}
	bounds := make([]int64, n+1)
	end, w := ms(until), step.Milliseconds()
	for i := range bounds {
		bounds[i] = end - int64(n-i)*w
	}
	return bounds, nil
}

func newThroughput(until time.Time, step time.Duration, n int) *Throughput {
	t := &Throughput{Until: until, Step: step, Created: make([]int64, n), Ended: make(map[State][]int64)}
	for _, s := range terminalStates() {
		t.Ended[s] = make([]int64, n)
	}
	return t
}

// add adds o's counts to t's, step by step (a sharded store's merge).
func (t *Throughput) add(o *Throughput) {
	for i, v := range o.Created {
		t.Created[i] += v
	}
	for s, vs := range o.Ended {
		for i, v := range vs {
			t.Ended[s][i] += v
		}
	}
}

// StateCounts counts with one pipeline of ZCARDs: each state's index, the
// deferred set and each pool's queue.
func (r *Redis) StateCounts(ctx context.Context, pools []string) (Counts, error) {
	states := States()
	byState := make([]*redis.IntCmd, len(states))
	queued := make([]*redis.IntCmd, 0, len(pools)+1)
	if _, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, s := range states {
			byState[i] = p.ZCard(ctx, r.ns.index(s))
		}
		queued = append(queued, p.ZCard(ctx, r.ns.deferred()))
		for _, pool := range pools {
			queued = append(queued, p.ZCard(ctx, r.ns.queue(pool)))
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("jobstore: state counts: %w", err)
	}
	c := make(Counts, len(states))
	for i, s := range states {
		c[s] = byState[i].Val()
	}
	for _, q := range queued {
		c[Pending] += q.Val()
	}
	return c, nil
}

// Throughput counts with one pipeline of ZCOUNTs over the creation index
// and the ended states' indexes, which are scored by the ms a job was
// created or ended.
func (r *Redis) Throughput(ctx context.Context, until time.Time, step time.Duration, n int) (*Throughput, error) {
	bounds, err := checkSteps(until, step, n)
	if err != nil {
		return nil, err
	}
	keys := []string{r.ns.recent()}
	for _, s := range terminalStates() {
		keys = append(keys, r.ns.index(s))
	}
	cmds := make([][]*redis.IntCmd, len(keys))
	if _, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, key := range keys {
			cmds[k] = make([]*redis.IntCmd, n)
			for i := range n {
				cmds[k][i] = p.ZCount(ctx, key, strconv.FormatInt(bounds[i], 10), "("+strconv.FormatInt(bounds[i+1], 10))
			}
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("jobstore: throughput: %w", err)
	}
	t := newThroughput(until, step, n)
	for i := range n {
		t.Created[i] = cmds[0][i].Val()
		for k, s := range terminalStates() {
			t.Ended[s][i] = cmds[k+1][i].Val()
		}
	}
	return t, nil
}

// StateCounts counts from the indexes, as the Redis store does.
func (m *Memory) StateCounts(ctx context.Context, pools []string) (Counts, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := make(Counts)
	for _, s := range States() {
		c[s] = int64(len(m.index[s]))
	}
	c[Pending] += int64(len(m.waits[plain.deferred()]))
	for _, pool := range pools {
		c[Pending] += int64(len(m.waits[plain.queue(pool)]))
	}
	return c, nil
}

// Throughput counts from the indexes, as the Redis store does: the
// creation index by binary search, each ended state's in one pass.
func (m *Memory) Throughput(ctx context.Context, until time.Time, step time.Duration, n int) (*Throughput, error) {
	bounds, err := checkSteps(until, step, n)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := newThroughput(until, step, n)
	stepOf := func(score int64) int {
		if score < bounds[0] || score >= bounds[n] {
			return -1
		}
		return int((score - bounds[0]) / (bounds[1] - bounds[0]))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range n {
		lo := m.created.below(listPos{score: bounds[i]})
		hi := m.created.below(listPos{score: bounds[i+1]})
		t.Created[i] = int64(hi - lo)
	}
	for _, s := range terminalStates() {
		for _, score := range m.index[s] {
			if i := stepOf(int64(score)); i >= 0 {
				t.Ended[s][i]++
			}
		}
	}
	return t, nil
}

// StateCounts sums the shards' counts.
func (s *Sharded) StateCounts(ctx context.Context, pools []string) (Counts, error) {
	parts, err := each(s, func(_ int, r *Redis) (Counts, error) { return r.StateCounts(ctx, pools) })
	if err != nil {
		return nil, err
	}
	return sumCounts(parts), nil
}

// Throughput sums the shards' steps.
func (s *Sharded) Throughput(ctx context.Context, until time.Time, step time.Duration, n int) (*Throughput, error) {
	if _, err := checkSteps(until, step, n); err != nil {
		return nil, err
	}
	parts, err := each(s, func(_ int, r *Redis) (*Throughput, error) { return r.Throughput(ctx, until, step, n) })
	if err != nil {
		return nil, err
	}
	return sumThroughput(until, step, n, parts), nil
}
