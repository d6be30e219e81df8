package jobstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/redis/go-redis/v9"
)

// A log's view: the keys the Redis store keeps for its jobs (job:<id>,
// job:events:<id>, job:index:<STATE>, job:recent, job:tenant:<t>:all, as
// docs/ARCHITECTURE.md's "Job store keys" lists them), kept under the
// log's hash tag ({NAME}job:<id>, ...) from the owner's state, a moment
// behind it, for
// whoever reads Redis rather than asking a scheduler: redis-cli, a
// dashboard's Redis source, a script of the Redis store's layout. Nobody
// reads it to decide anything: the owner's memory and the log are the
// store; the view is built behind them (LoggedOptions.View, view=1 in the
// URL).
//
// The owner writes it every viewEvery, in a goroutine of its own: the
// jobs its state changed since the last write (Memory.takeTouched), a
// chunk at a time, each read under the state's lock and written in one
// transaction that holds only while the log's epoch is the owner's (WATCH),
// so that a fenced former owner cannot write over its successor's view.
// A new owner first reads what the view holds (its indexes), then writes
// every job that differs. What it does not keep: workflow runs, the DLQ,
// queues and rate buckets; a job's result stays in the log (its
// result_ptr names it; `ward jobs get` reads it).

// viewEvery is how often the owner writes its log's view.
const viewEvery = 500 * time.Millisecond

// viewChunk is the most jobs read under one hold of the state's lock, and
// written in one transaction.
const viewChunk = 64

var (
	viewJobs = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_jobstore_log_view_jobs_total",
		Help: "Jobs written to (or dropped from) a log's view (view=1): each change the owner's state made since the last write, a job once however many moves it made.",
	})
	viewErrors = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_jobstore_log_view_errors_total",
		Help: "Writes of a log's view that failed (Redis unavailable, or the owner fenced); the jobs are written at the next.",
	})
	viewLag = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "ward_jobstore_log_view_lag_seconds",
		Help: "How far behind the owner's state a log's view was at most after its last write: the time between two writes and the write's own.",
	})
)

// logView writes a log's view (Logged.viewLoop).
type logView struct {
	l    *Logged
	keys ns // {NAME}

	mu    sync.Mutex        // one write at a time; guards known
	known map[string]viewed // what the view holds; nil until read
}

// viewed is what the view holds of a job: the index it is in ("" for
// none: a PENDING job waiting in a queue), its tenant, its creation ms and
// how many of its events.
type viewed struct {
	state   State
	tenant  string
	created float64
	events  int
}

// viewKeys is the namespace of log name's view: the log's hash tag, as a
// shard of the Sharded store has its own ({w0}job:<id>): its keys are in
// the log's slot, and the Redis store's scripts, which read the namespace
// off their first key, read them as they read a shard's.
func viewKeys(name string) ns { return ns("{" + name + "}") }

// viewLoop writes the view every viewEvery until the store is closed or
// lost; its last write is made at Close.
func (l *Logged) viewLoop() {
	defer close(l.viewDone)
	v := l.view
	tick := time.NewTicker(viewEvery)
	defer tick.Stop()
	for {
		select {
		case <-l.lost:
			return
		case <-l.done:
			// Once the writer appended what was queued before Close.
			<-l.stopped
			ctx, cancel := context.WithTimeout(context.Background(), l.ttl)
			v.writeLogged(ctx)
			cancel()
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl)
		v.writeLogged(ctx)
		cancel()
	}
}

// writeLogged writes, and counts and logs what failed.
func (v *logView) writeLogged(ctx context.Context) {
	if err := v.write(ctx); err != nil {
		viewErrors.Inc()
		slog.Warn("jobstore: the log's view was not written; its jobs are written at the next turn", "view", string(v.keys), "err", err)
	}
}

// write brings the view up to the state: the jobs changed since the last
// write; every job, the first time (after reading what the view holds).
// Jobs it could not write are written at the next.
func (v *logView) write(ctx context.Context) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	m := v.l.Memory
	start := time.Now()
	var ids []string
	if v.known == nil {
		m.takeTouched() // every job is written below
		known, err := v.read(ctx)
		if err != nil {
			return err
		}
		v.known = known
		m.mu.Lock()
		ids = make([]string, 0, len(m.jobs)+len(known))
		for id := range m.jobs {
			ids = append(ids, id)
		}
		for id := range known {
			if _, ok := m.jobs[id]; !ok {
				ids = append(ids, id)
			}
		}
		m.mu.Unlock()
	} else {
		for id := range m.takeTouched() {
			ids = append(ids, id)
		}
	}
	for len(ids) > 0 {
		n := min(len(ids), viewChunk)
		if err := v.writeChunk(ctx, ids[:n]); err != nil {
			m.mu.Lock()
			for _, id := range ids {
				m.touch(id)
			}
			m.mu.Unlock()
			return err
		}
		viewJobs.Add(float64(n))
		ids = ids[n:]
	}
	viewLag.Set(time.Since(start).Seconds() + viewEvery.Seconds())
	return nil
}

// viewChange is a job's change to write: its hash and new events, or its
// removal (gone).
type viewChange struct {
	id     string
	held   bool // the view holds a job of this id
	gone   bool
	fresh  bool // not the job the view holds: made anew since (its events, its indexes' scores, written anew)
	was    viewed
	now    viewed
	score  float64  // in now.state's index
	fields []string // the hash's fields and values
	evs    []Event  // those the view lacks (a view of the state's: read only)
	events []string // evs, as JSON
}

// writeChunk writes ids' jobs as the state holds them now, in one
// transaction, while the log's epoch is the owner's.
func (v *logView) writeChunk(ctx context.Context, ids []string) error {
	m := v.l.Memory
	changes := make([]viewChange, 0, len(ids))
	m.mu.Lock()
	for _, id := range ids {
		c := viewChange{id: id}
		c.was, c.held = v.known[id]
		mj, ok := m.jobs[id]
		if !ok {
			if c.held {
				c.gone = true
				changes = append(changes, c)
			}
			continue // or made and dropped between two writes
		}
		c.now = viewed{tenant: mj.Tenant, created: float64(ms(mj.CreatedAt))}
		if score, in := m.index[mj.State][id]; in {
			c.now.state, c.score = mj.State, score
		}
		fields, err := mj.pairs(nil)
		if err != nil {
			m.mu.Unlock()
			return fmt.Errorf("job %s: %w", id, err)
		}
		if mj.locked {
			fields = append(fields, fLocked, "1")
		}
		c.fields = fields
		// A job's events are only ever appended to: the ones up to its
		// length now stay as they are once the lock is let go.
		evs := m.events[id]
		c.now.events = len(evs)
		c.fresh = c.held && (c.was.created != c.now.created || c.was.tenant != c.now.tenant || c.was.events > len(evs))
		from := c.was.events
		if !c.held || c.fresh {
			from = 0
		}
		c.evs = evs[from:len(evs):len(evs)]
		changes = append(changes, c)
	}
	m.mu.Unlock()
	if len(changes) == 0 {
		return nil
	}
	// What was read is written once it is in the log: the view is never
	// ahead of what a new owner would replay.
	if err := v.l.appendedUpTo(ctx); err != nil {
		return err
	}
	for i := range changes {
		c := &changes[i]
		for _, e := range c.evs {
			b, err := json.Marshal(e)
			if err != nil {
				return fmt.Errorf("job %s: event: %w", c.id, err)
			}
			c.events = append(c.events, string(b))
		}
	}
	k, l := v.keys, v.l
	err := l.c.Watch(ctx, func(tx *redis.Tx) error {
		epoch, err := tx.Get(ctx, l.keys.epoch).Int64()
		if err != nil {
			return err
		}
		if epoch != l.epoch {
			return fmt.Errorf("%w: the log's epoch is %d, this owner's %d", ErrFenced, epoch, l.epoch)
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for i := range changes {
				c := &changes[i]
				if c.held && c.was.state != "" && (c.gone || c.fresh || c.was.state != c.now.state) {
					p.ZRem(ctx, k.index(c.was.state), c.id)
				}
				if c.held && c.was.tenant != "" && (c.gone || c.fresh) {
					p.ZRem(ctx, k.tenantJobs(c.was.tenant), c.id)
				}
				if c.gone {
					p.Del(ctx, k.job(c.id), k.events(c.id))
					p.ZRem(ctx, k.recent(), c.id)
					continue
				}
				if c.held {
					p.Del(ctx, k.job(c.id)) // a field emptied since goes too
				}
				p.HSet(ctx, k.job(c.id), c.fields)
				if c.fresh {
					p.Del(ctx, k.events(c.id))
				}
				if len(c.events) > 0 {
					p.RPush(ctx, k.events(c.id), c.events)
				}
				if c.now.state != "" {
					p.ZAdd(ctx, k.index(c.now.state), redis.Z{Score: c.score, Member: c.id})
				}
				if !c.held || c.fresh {
					p.ZAdd(ctx, k.recent(), redis.Z{Score: c.now.created, Member: c.id})
					if c.now.tenant != "" {
						p.ZAdd(ctx, k.tenantJobs(c.now.tenant), redis.Z{Score: c.now.created, Member: c.id})
					}
				}
			}
			return nil
		})
		return err
	}, l.keys.epoch)
	if err != nil {
		return err
	}
	for _, c := range changes {
		if c.gone {
			delete(v.known, c.id)
		} else {
			v.known[c.id] = c.now
		}
	}
	return nil
}

// read reads what the view holds: every job in its creation index, the
// state index each is in, its tenant and how many events it has.
func (v *logView) read(ctx context.Context) (map[string]viewed, error) {
	c, k := v.l.c, v.keys
	recent, err := c.ZRangeWithScores(ctx, k.recent(), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("view: %w", err)
	}
	known := make(map[string]viewed, len(recent))
	ids := make([]string, len(recent))
	for i, z := range recent {
		id, _ := z.Member.(string)
		ids[i] = id
		known[id] = viewed{created: z.Score}
	}
	for _, s := range States() {
		members, err := c.ZRange(ctx, k.index(s), 0, -1).Result()
		if err != nil {
			return nil, fmt.Errorf("view: %w", err)
		}
		for _, id := range members {
			e, ok := known[id]
			if !ok {
				// In an index, not in the creation index: a write cut
				// short. Held, so that it is taken out.
				ids = append(ids, id)
			}
			e.state = s
			known[id] = e
		}
	}
	for len(ids) > 0 {
		n := min(len(ids), 1000)
		cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, id := range ids[:n] {
				p.HGet(ctx, k.job(id), fTenant)
				p.LLen(ctx, k.events(id))
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("view: %w", err)
		}
		for i, id := range ids[:n] {
			e := known[id]
			e.tenant = cmds[2*i].(*redis.StringCmd).Val()
			e.events = int(cmds[2*i+1].(*redis.IntCmd).Val())
			known[id] = e
		}
		ids = ids[n:]
	}
	return known, nil
}
