package jobstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/redis/go-redis/v9"
)

// Logged is a Store whose state lives in the owner's memory and whose
// every change is a record in a log in Redis (the durable path of issue
// 32, its first part: one log, one owner). A change is applied to the
// in-memory state (a Memory, so every guard, index and limit behaves as
// the conformance suite says) and its record queued, under one lock, so
// the log's order is the order the changes were made in; the call returns
// only once the record's batch is appended. Concurrent callers' records go
// in one batch, one script call: the store pays Redis per batch, not per
// job.
//
// Ownership is fenced. OpenLogged takes the log over: it increments the
// log's epoch, then replays every batch into a fresh state. Every append
// checks the epoch it was opened with, in the script that appends; a
// former owner (paused, cut off, or just slower to die) has every later
// append refused with ErrFenced, and from then on refuses every change
// itself: its memory may hold changes no log has.
//
// What is not logged is what the Redis store keeps only for a while, or
// per replica: dispatch locks and leases (a single owner needs neither
// across a failover), live notes, submission rate buckets (a new owner
// starts them full) and worker failure counts.
//
// Snapshots keep the log short. Once snapshotRatio records for each job
// the state holds (and at least LoggedOptions.SnapshotEvery) were logged
// since the last one, and at Close, the owner writes its state as a snapshot, in
// the log's order (the snapshot holds every record queued before it and
// none after), and the same script trims the log's batches it covers: a
// new owner reads the snapshot, then replays the batches after it. A
// standby (an OpenLogged waiting for the lease) follows the log and
// writes the snapshots itself, so that the owner need not pause for them
// (it then takes one only at Close, or when four times as many records
// wait). With LoggedOptions.View, the owner keeps the Redis store's keys
// of its jobs too, a moment behind its state, for readers of Redis
// (logged_view.go). Owned splits a store into such logs with owners.
type Logged struct {
	*Memory // the state; its read methods are the store's

	c          redis.UniversalClient
	ownsClient bool // Close closes c (Open made it)
	keys       loggedKeys
	epoch      int64
	owner      string        // the lease's holder: this store
	ttl        time.Duration // the lease's
	lost       chan struct{} // closed once broken is set
	snapEvery  int           // LoggedOptions.SnapshotEvery; < 0: never
	clock      time.Time     // a monotonic reading at open: leaseUntil counts from it
	leaseUntil atomic.Int64  // ns after clock until which the lease is known to hold (logged_reads.go)
	opts       LoggedOptions
	// writing is held by the writer that appends this log's batch (its
	// own, or another's of its group: logGroup), so that its batches are
	// taken and appended in order.
	writing sync.Mutex
	loaded  bool // the state read the log's snapshot (or found none)

	snapMu  sync.Mutex
	snapBuf []byte // the last snapshot's buffer, for the next (reuseSnapshot)

	mu      sync.Mutex // orders a change and its record; guards the fields below
	pending []pendingRecord
	// pbuf is the next batch as the stream will hold it: batchBinary,
	// then each pending record, framed (empty while none is pending);
	// take cuts a batch off its front. spare is an appended batch's
	// buffer, for the next pbuf; scratch encodes one record; rec, move
	// and job are a change's record, built under mu (hot path, no
	// allocation).
	pbuf     []byte
	spare    []byte
	scratch  []byte
	rec      record
	move     transitionRecord
	job      Job
	inflight int    // records (and barriers) taken from pending, not yet appended
	seq      int64  // the last batch sequence number taken
	lastID   string // the stream entry of the last batch appended (the writer's)
	since    int    // records queued since the last snapshot
	nextSnap int    // records after which the next snapshot is taken
	snapJob  int    // the last snapshot's bytes a job (its size's estimate for the next)
	snapSeq  int64  // the newest snapshot's batch, as the renewal last read it
	followed bool   // a standby follows the log (and snapshots it)
	broken   error  // set once an append failed for good: changes are refused
	wake     chan struct{}
	done     chan struct{}
	stopped  chan struct{}
	view     *logView      // LoggedOptions.View; nil without
	viewDone chan struct{} // closed once the view's writer ended
}

var _ Store = (*Logged)(nil)

var (
	logBatches = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_jobstore_log_batches_total",
		Help: "Batches the logged job store's owner appended to its log (one script call each).",
	})
	logRecords = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_jobstore_log_records_total",
		Help: "Records (changes) the logged job store's owner appended to its log; over ward_jobstore_log_batches_total, the records a batch.",
	})
	logShared = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_jobstore_log_shared_appends_total",
		Help: "Batches a process's shards appended in one pipeline with another shard's batch, beyond the first of each pipeline: round trips to Redis saved (logs with shards=N).",
	})
	logRecoveries = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_jobstore_log_recoveries_total",
		Help: "Times the logged job store's log had lost batches its owner appended (Redis restarted from an older append-only file, or failed over to a replica behind), and the owner stored its whole state as a snapshot.",
	})
	snapshots = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_jobstore_log_snapshots_total",
		Help: "Snapshots the logged job store's owner stored (each trims the log it holds).",
	})
	snapshotErrors = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_jobstore_log_snapshot_errors_total",
		Help: "Snapshots the logged job store could not make or store (the log keeps growing until one is stored).",
	})
	snapshotBytes = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "ward_jobstore_log_snapshot_bytes",
		Help: "The size of the last snapshot the logged job store stored.",
	})
	snapshotPause = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "ward_jobstore_log_snapshot_pause_seconds",
		Help:    "How long taking a snapshot held the logged job store's changes.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 8),
	})
)

// ErrFenced: another owner took the log over; this one may change nothing.
var ErrFenced = errors.New("jobstore: the log has a newer owner (fenced)")

// ErrLogClosed: the store was closed (its log given up); it makes no more
// changes.
var ErrLogClosed = errors.New("jobstore: the log is closed")

// maxBatch bounds the records one append carries.
const maxBatch = 512

type loggedKeys struct{ stream, epoch, seq, lease, snap, standby string }

func newLoggedKeys(name string) loggedKeys {
	p := "ward:log:{" + name + "}:" // one hash slot: the scripts touch them together
	return loggedKeys{stream: p + "stream", epoch: p + "epoch", seq: p + "seq", lease: p + "owner", snap: p + "snapshot", standby: p + "standby"}
}

// pendingRecord is a record waiting for its batch's append (its bytes,
// framed, are size bytes of the log's pbuf); with size 0, a barrier: it
// waits for the records queued before it; with snap, a snapshot of the
// state once the records queued before it are appended (nobody waits for
// it: done is nil).
type pendingRecord struct {
	size int
	snap []byte
	done chan error
	// then, when set, is called with the outcome instead of a send on
	// done (Logged.SubmitThen): nobody waits.
	then func(error)
}

// finish tells p's outcome to whoever learns it (a queued snapshot:
// nobody).
func (p *pendingRecord) finish(err error) {
	switch {
	case p.then != nil:
		p.then(err)
	case p.done != nil:
		p.done <- err
	}
}

// appendBatch appends a batch if the caller's epoch is the log's and its
// sequence number is past the last appended (a retried append of a batch
// that made it is a no-op, and answers ""). It answers the entry's id.
var appendBatch = redis.NewScript(`
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
	return redis.error_reply('FENCED')
end
local last = tonumber(redis.call('GET', KEYS[3]) or '0')
if tonumber(ARGV[2]) <= last then
	return ''
end
if tonumber(ARGV[2]) ~= last + 1 then
	return redis.error_reply('LOST the log ends at batch ' .. last)
end
local id = redis.call('XADD', KEYS[1], '*', 's', ARGV[2], 'b', ARGV[3])
redis.call('SET', KEYS[3], ARGV[2])
return id
`)

// recoverLog stores the owner's whole state as the snapshot of batch
// ARGV[2] and empties the log (its batches are all in the snapshot), when
// the log lost batches the owner appended: see Logged.recover.
var recoverLog = redis.NewScript(`
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
	return redis.error_reply('FENCED')
end
redis.call('HSET', KEYS[3], 's', ARGV[2], 'b', ARGV[3])
redis.call('SET', KEYS[4], ARGV[2])
redis.call('XTRIM', KEYS[1], 'MAXLEN', 0)
return 1
`)

// errLogLost: the log ends before the batch the owner appended last
// (Redis lost writes it had acknowledged).
var errLogLost = errors.New("the log lost batches")

// writeSnapshot stores a snapshot of the state as of batch ARGV[2], if
// the log holds none as new, and trims the log's entries before ARGV[4]
// (those the snapshot holds; none when it is ""), in one step: a replay
// finds either the old snapshot and every batch after it, or the new one
// and every batch after that. An owner's snapshot (ARGV[1], its epoch)
// is refused once another owner took over; a standby's (ARGV[1] "") is
// the state of a prefix of the log, which no owner can change.
var writeSnapshot = redis.NewScript(`
if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[1] then
	return redis.error_reply('FENCED')
end
if tonumber(ARGV[2]) <= tonumber(redis.call('HGET', KEYS[3], 's') or '-1') then
	return 0
end
redis.call('HSET', KEYS[3], 's', ARGV[2], 'b', ARGV[3])
if ARGV[4] ~= '' then
	redis.call('XTRIM', KEYS[1], 'MINID', ARGV[4])
end
return 1
`)

// LoggedOptions are what the state is kept under. Every owner of a log
// must be given the same: a replay drops what retention let go and evicts
// what the bound left out as the first owner did.
type LoggedOptions struct {
	// Retention is how long an ended job is kept (Store.Sweep); 0: for ever.
	Retention time.Duration
	// Bound limits the ended jobs held in memory (Memory.SetBound).
	Bound Bound

	// LeaseTTL is how long the owner's lease lasts unrenewed
	// (DefaultLeaseTTL when 0): a standby takes the log over that long
	// after its owner stopped renewing. The owner renews it every third of
	// it, and fences itself when it could not for a whole TTL.
	LeaseTTL time.Duration
	// Owner names the lease's holder (a random name when empty).
	Owner string
	// Steal takes the log from a live owner at once, without waiting for
	// its lease: for an operator who knows it is gone, and for tests. The
	// epoch fences the former owner either way.
	Steal bool
	// NoWait returns errLeaseHeld at once while another holds the lease,
	// rather than waiting as a standby (Owned takes free shards only).
	NoWait bool

	// SnapshotEvery is the fewest records logged between two snapshots
	// (DefaultSnapshotEvery when 0; a snapshot waits, besides, for eight
	// records a job the state holds, so that writing them costs a small
	// share of their records). Below 0: no snapshots, not even at Close (for
	// tests of the replay of a whole log).
	SnapshotEvery int

	// View keeps the log's view (logged_view.go): the Redis store's keys
	// of its jobs, under the log's hash tag ({NAME}job:<id>, ...), written by the owner from
	// its state, a moment behind, for readers of Redis (view=1 in the
	// URL).
	View bool

	// group, when set, is the logs whose writers append each other's
	// batches with their own (Owned's shards: logGroup).
	group *logGroup
}

// DefaultSnapshotEvery is LoggedOptions.SnapshotEvery's default: a small
// state is snapshotted no more often than this (its replay reads at most
// so many records, a fraction of a second), as an owner without a standby
// holds its changes while it writes one.
const DefaultSnapshotEvery = 100000

// DefaultLeaseTTL is a log owner's lease when LoggedOptions does not say.
const DefaultLeaseTTL = 5 * time.Second

// OpenLogged takes over the log named name in c, replays it, and returns
// the store, which owns the log until another OpenLogged of it.
//
// It waits, while another owner holds the log's lease, until the lease
// lapses (a standby: it returns once the owner is gone), or ctx ends. A
// standby follows the log as it waits: it applies the owner's batches a
// third of a lease after they are appended, so that taking over replays
// only the last few, and it writes the snapshots (the owner then need not
// pause its changes for one, but at Close).
func OpenLogged(ctx context.Context, c redis.UniversalClient, name string, o LoggedOptions) (*Logged, error) {
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Owner == "" {
		o.Owner = newOwnerName()
	}
	if o.SnapshotEvery == 0 {
		o.SnapshotEvery = DefaultSnapshotEvery
	}
	l := &Logged{c: c, keys: newLoggedKeys(name), opts: o, owner: o.Owner, ttl: o.LeaseTTL, snapEvery: o.SnapshotEvery, clock: time.Now(),
		lost: make(chan struct{}), wake: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	l.reset()
	// Read the log before the lease is taken, so that the replay after it
	// (whose time the lease counts) reads only what came since.
	if _, err := l.catchUp(ctx); err != nil {
		return nil, fmt.Errorf("jobstore: log %s: replay: %w", name, err)
	}
	if err := l.takeLease(ctx); err != nil {
		return nil, fmt.Errorf("jobstore: log %s: %w", name, err)
	}
	epoch, err := c.Incr(ctx, l.keys.epoch).Result()
	if err != nil {
		l.releaseLease()
		return nil, fmt.Errorf("jobstore: log %s: take over: %w", name, err)
	}
	l.epoch = epoch
	if _, err := l.catchUp(ctx); err != nil {
		l.releaseLease()
		return nil, fmt.Errorf("jobstore: log %s: replay: %w", name, err)
	}
	// since: the records the replay applied past the snapshot (the next
	// snapshot comes sooner after a long replay)
	l.nextSnap = l.snapAfter()
	go l.writer()
	go l.renew()
	if o.View {
		l.Memory.trackTouched()
		l.view, l.viewDone = &logView{l: l, keys: viewKeys(name)}, make(chan struct{})
		go l.viewLoop()
	}
	return l, nil
}

// ReadLogged replays the log named name into a state of its own, without
// taking the log over: what the log holds now (its owner's changes not
// yet appended aside), for a check or a look. The owner goes on serving;
// nothing is written. o's Bound and Retention should be the owner's.
func ReadLogged(ctx context.Context, c redis.UniversalClient, name string, o LoggedOptions) (*Memory, error) {
	l := &Logged{c: c, keys: newLoggedKeys(name), opts: o}
	l.reset()
	if _, err := l.catchUp(ctx); err != nil {
		return nil, fmt.Errorf("jobstore: log %s: %w", name, err)
	}
	return l.Memory, nil
}

// reset empties the state: a replay starts from the snapshot again.
func (l *Logged) reset() {
	l.Memory = NewMemory()
	l.Memory.SetBound(l.opts.Bound)
	l.Memory.SetRetention(l.opts.Retention)
	l.seq, l.lastID, l.loaded, l.snapSeq = 0, "", false, 0
}

// takeLease takes the log's lease: at once with Steal, else when nobody
// holds it, trying every third of a TTL and following the log in between
// (a standby).
func (l *Logged) takeLease(ctx context.Context) error {
	o := l.opts
	for {
		var ok bool
		var err error
		start := time.Now()
		if o.Steal {
			err = l.c.Set(ctx, l.keys.lease, o.Owner, o.LeaseTTL).Err()
			ok = err == nil
		} else {
			// lock.lua, as the Redis store's leases: take it when free
			ok, err = lockScript.Run(ctx, l.c, []string{l.keys.lease}, o.Owner, o.LeaseTTL.Milliseconds()).Bool()
		}
		if err != nil {
			return fmt.Errorf("lease: %w", err)
		}
		if ok {
			l.confirmLease(start)
			return nil
		}
		if o.NoWait {
			return errLeaseHeld
		}
		if err := l.follow(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// Not fatal to a standby: it catches up once it owns the log.
			slog.Warn("jobstore: a standby could not follow the log", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(o.LeaseTTL / 3):
		}
	}
}

// follow is a standby's turn: it says it is there (the owner snapshots
// less often then), applies the batches appended since its last turn, and
// writes a snapshot once the state calls for one.
func (l *Logged) follow(ctx context.Context) error {
	if err := l.c.Set(ctx, l.keys.standby, l.owner, 3*l.ttl).Err(); err != nil {
		return err
	}
	n, err := l.catchUp(ctx)
	if err != nil {
		return err
	}
	if l.since += n; l.snapEvery < 0 || l.since < l.snapAfter() {
		return nil
	}
	start := time.Now()
	snap, err := l.snapshot()
	if err != nil {
		return err
	}
	ok, err := l.storeSnapshotOnce(ctx, "", l.seq, l.lastID, snap)
	if err != nil {
		return err
	}
	if ok {
		snapshots.Inc()
		snapshotBytes.Set(float64(len(snap)))
		slog.Info("jobstore: log snapshot stored by a standby", "batch", l.seq, "bytes", len(snap), "took", time.Since(start).Round(time.Microsecond))
	}
	l.reuseSnapshot(snap)
	l.since = 0
	return nil
}

// newOwnerName is a lease holder's name: random, as no two processes
// share one.
func newOwnerName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "owner-" + hex.EncodeToString(b[:])
}

// renew renews the lease every third of its TTL until Close; when it
// could not for a whole TTL (another took it, or Redis did not answer),
// the store fences itself: a standby may own the log by now.
func (l *Logged) renew() {
	tick := time.NewTicker(l.ttl / 3)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-l.done:
			return
		case <-l.lost:
			return
		case <-tick.C:
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl/3)
		// lock.lua extends it while it is ours (or takes it back if it
		// lapsed and nobody took it: the epoch is still ours then).
		// The epoch with it: an owner that took the log over while this
		// one was paused, and gave it up since, left the lease free but
		// the epoch past ours.
		// The newest snapshot and a standby's mark in the same trip
		// (watchSnapshots).
		pipe := l.c.Pipeline()
		lock := lockScript.Eval(ctx, pipe, []string{l.keys.lease}, l.owner, l.ttl.Milliseconds())
		epoch := pipe.Get(ctx, l.keys.epoch)
		snapSeq := pipe.HGet(ctx, l.keys.snap, "s")
		standby := pipe.Exists(ctx, l.keys.standby)
		_, err := pipe.Exec(ctx)
		cancel()
		if errors.Is(err, redis.Nil) {
			err = nil // no snapshot yet
		}
		n, _ := lock.Int()
		if e, eerr := epoch.Int64(); err == nil && eerr == nil && e != l.epoch {
			l.fail(fmt.Errorf("%w: the log's epoch is %d, this owner's %d", ErrFenced, e, l.epoch))
			return
		}
		switch {
		case err == nil && n == 1:
			last = time.Now()
			l.confirmLease(start)
			l.watchSnapshots(snapSeq, standby)
		case err == nil:
			l.fail(fmt.Errorf("%w: the lease is another's", ErrFenced))
			return
		case time.Since(last) >= l.ttl:
			l.fail(fmt.Errorf("%w: the lease was not renewed for %v: %v", ErrFenced, l.ttl, err))
			return
		}
	}
}

// watchSnapshots takes in the newest snapshot's batch and whether a
// standby follows the log, as a renewal read them. A standby's snapshot is as good as the owner's own:
// the records after it are what a replay reads. And while a standby
// follows, the owner leaves the snapshots to it (it takes one itself only
// once four times as many records wait), so its changes need not pause.
func (l *Logged) watchSnapshots(seqCmd *redis.StringCmd, standby *redis.IntCmd) {
	seq, _ := seqCmd.Int64() // 0 with no snapshot
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq > l.snapSeq {
		if l.seq > l.snapSeq {
			// the records since, by the share of batches after it
			l.since = int(float64(l.since) * float64(max(l.seq-seq, 0)) / float64(l.seq-l.snapSeq))
		}
		l.snapSeq = seq
	}
	l.followed = standby.Val() == 1
}

// fail breaks the store: every later change is refused with err.
func (l *Logged) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failLocked(err)
}

func (l *Logged) failLocked(err error) {
	if l.broken == nil {
		l.broken = err
		close(l.lost)
	}
}

// Lost is closed once the store refuses changes for good: it was fenced
// (another owner, or its lease lapsed) or could not append. Its owner
// should stop: its memory may hold changes no log has. Err says why.
func (l *Logged) Lost() <-chan struct{} { return l.lost }

// Err is why the store refuses changes; nil while it does not.
func (l *Logged) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.broken
}

// releaseLease gives the lease up, so that a standby need not wait for it
// to lapse.
func (l *Logged) releaseLease() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = unlockScript.Run(ctx, l.c, []string{l.keys.lease}, l.owner).Err()
}

// errLogGap: the log lacks a batch between the state's last and the next
// it holds: another process's snapshot trimmed it past this state.
var errLogGap = errors.New("the log skips a batch")

// catchUp brings the state up to the log's end and answers how many
// records it applied: the snapshot first, when the state has read none
// yet, then every batch after the last it applied, in order. Where the
// log was trimmed past the state (a standby's snapshot, stored between
// two reads), it starts over from the newer snapshot.
func (l *Logged) catchUp(ctx context.Context) (int, error) {
	for try := 0; ; try++ {
		n, err := l.readLog(ctx)
		if !errors.Is(err, errLogGap) || try == 3 {
			return n, err
		}
		l.reset()
	}
}

func (l *Logged) readLog(ctx context.Context) (int, error) {
	if !l.loaded {
		snap, err := l.c.HMGet(ctx, l.keys.snap, "s", "b").Result()
		if err != nil {
			return 0, err
		}
		if s, ok := snap[0].(string); ok {
			seq, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("snapshot: bad sequence %q", s)
			}
			b, _ := snap[1].(string)
			if err := l.Memory.readSnapshot([]byte(b)); err != nil {
				return 0, fmt.Errorf("snapshot of batch %d: %w", seq, err)
			}
			l.seq, l.snapSeq = seq, seq
		}
		l.loaded = true
	}
	records := 0
	for {
		start := "-"
		if l.lastID != "" {
			start = "(" + l.lastID
		}
		msgs, err := l.c.XRangeN(ctx, l.keys.stream, start, "+", 1000).Result()
		if err != nil {
			return records, err
		}
		for _, m := range msgs {
			s, _ := m.Values["s"].(string)
			seq, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return records, fmt.Errorf("entry %s: bad sequence %q", m.ID, s)
			}
			switch {
			case seq <= l.seq:
				// in the snapshot (a trim left it)
			case seq != l.seq+1:
				return records, fmt.Errorf("%w: entry %s is batch %d, after batch %d", errLogGap, m.ID, seq, l.seq)
			default:
				b, _ := m.Values["b"].(string)
				n, err := l.applyBatch([]byte(b))
				if err != nil {
					return records, fmt.Errorf("entry %s (batch %d): %w", m.ID, seq, err)
				}
				records += n
				l.seq = seq
			}
			l.lastID = m.ID
		}
		if len(msgs) < 1000 {
			break
		}
	}
	// Nothing past the state: a snapshot stored since may have trimmed
	// the batches between.
	if records == 0 {
		s, err := l.c.HGet(ctx, l.keys.snap, "s").Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, err
		}
		if s > l.seq {
			return 0, fmt.Errorf("%w: the snapshot holds batch %d, the state %d, the log none between", errLogGap, s, l.seq)
		}
	}
	return records, nil
}

// applyBatch applies a batch's records and answers how many it held:
// binary records (logged_record.go), or a JSON array of records, as an
// earlier Ward wrote them.
func (l *Logged) applyBatch(b []byte) (int, error) {
	if len(b) > 0 && b[0] == batchBinary {
		return readBatch(b[1:], func(r *record) error { return r.apply(context.Background(), l.Memory) })
	}
	var recs []json.RawMessage
	if err := json.Unmarshal(b, &recs); err != nil {
		return 0, err
	}
	for i, raw := range recs {
		var r record
		if err := json.Unmarshal(raw, &r); err != nil {
			return i, fmt.Errorf("record %d: %w", i, err)
		}
		if err := r.apply(context.Background(), l.Memory); err != nil {
			return i, fmt.Errorf("record %d (%s): %w", i, r.Op, err)
		}
	}
	return len(recs), nil
}

// change applies a change with fn under the lock and, when fn reports
// that it changed the state, queues rec (made after fn: it may need what
// fn returned) and waits for its append.
func (l *Logged) change(ctx context.Context, fn func() (changed bool, rec *record, err error)) error {
	return l.changeThen(ctx, fn, nil)
}

// changeThen is change; with then set, it does not wait for the append:
// it returns what fn answered at once, and then learns when that answer
// is durable (see EarlySubmitter). Every path calls then once.
func (l *Logged) changeThen(ctx context.Context, fn func() (changed bool, rec *record, err error), then func(error)) error {
	l.mu.Lock()
	if l.broken != nil {
		l.mu.Unlock()
		return settled(l.broken, then)
	}
	select {
	case <-l.done:
		// Closed (given up): no writer would append the record.
		l.mu.Unlock()
		return settled(ErrLogClosed, then)
	default:
	}
	changed, rec, err := fn()
	if err != nil || !changed {
		// What fn answered may rest on changes not appended yet (a
		// duplicate of a job whose creation is still in flight, a move
		// refused because of a move in flight): it is told only once they
		// are, like the changes themselves.
		if len(l.pending) == 0 && l.inflight == 0 {
			l.mu.Unlock()
			return settled(err, then)
		}
		p := newPending(0, then) // a barrier: no record
		l.pending = append(l.pending, p)
		l.mu.Unlock()
		if werr := l.await(ctx, p); werr != nil {
			return werr
		}
		return err
	}
	raw, err := appendRecord(l.scratch[:0], rec)
	if err != nil {
		// The state changed and can't be logged: nothing may follow it.
		l.failLocked(fmt.Errorf("jobstore: log record %s: %w", rec.Op, err))
		l.mu.Unlock()
		return settled(l.broken, then)
	}
	if cap(raw) <= 64<<10 { // a large record's buffer is not kept
		l.scratch = raw[:0]
	}
	if len(l.pbuf) == 0 {
		l.pbuf = append(l.pbuf, batchBinary)
	}
	framed := len(l.pbuf)
	l.pbuf = append(binary.AppendUvarint(l.pbuf, uint64(len(raw))), raw...)
	p := newPending(len(l.pbuf)-framed, then)
	l.pending = append(l.pending, p)
	if l.since++; l.snapEvery >= 0 && l.since >= l.nextSnap && (!l.followed || l.since >= 4*l.nextSnap) {
		l.queueSnapshotLocked()
	}
	l.mu.Unlock()
	return l.await(ctx, p)
}

// appendedUpTo waits until every record queued before it is appended
// (after Close: until the writer appended what was queued), and says
// why not when the log failed.
func (l *Logged) appendedUpTo(ctx context.Context) error {
	err := l.change(ctx, func() (bool, *record, error) { return false, nil, nil })
	if errors.Is(err, ErrLogClosed) {
		select {
		case <-l.stopped:
		case <-ctx.Done():
			return ctx.Err()
		}
		return l.Err()
	}
	return err
}

// newPending is a queued record of size framed bytes (a barrier when 0)
// whose outcome goes to then, or, without it, to a waiter (done: a
// channel of doneChans, which await gives back once it received).
func newPending(size int, then func(error)) pendingRecord {
	p := pendingRecord{size: size, then: then}
	if then == nil {
		p.done = doneChans.Get().(chan error)
	}
	return p
}

// doneChans are waiters' channels: each is sent to once (finish), and
// given back here only by the waiter that received it.
var doneChans = sync.Pool{New: func() any { return make(chan error, 1) }}

// settled answers err for a change that waits for nothing: then, when
// set, learns at once that the answer stands.
func settled(err error, then func(error)) error {
	if then != nil {
		then(nil)
	}
	return err
}

// snapAfter is how many records the next snapshot waits for:
// snapshotRatio for each job the state holds, and SnapshotEvery at least.
func (l *Logged) snapAfter() int {
	l.Memory.mu.Lock()
	n := len(l.Memory.jobs)
	l.Memory.mu.Unlock()
	return max(snapshotRatio*n, l.snapEvery)
}

// snapshotRatio is how many records a snapshot waits for per job it will
// hold. Writing a job into a snapshot costs about what appending one or
// two records does, and a job's life is four records or more: at 8, a
// snapshot costs each job's life a few percent more, and a replay reads
// no more than 8 records a job past the snapshot.
const snapshotRatio = 8

// snapshot encodes the state, into a buffer sized by the last snapshot's
// bytes a job (growing one of tens of megabytes copies it several times):
// the last snapshot's, once stored (reuseSnapshot), when it is large
// enough and not many times too large. A fresh buffer of that size costs
// its pages' first touch while the changes wait: 100,000 jobs' snapshot
// took 278 ms into a fresh one and 171 ms into the last one's
// (BenchmarkSnapshot, write and rewrite).
func (l *Logged) snapshot() ([]byte, error) {
	l.Memory.mu.Lock()
	jobs := len(l.Memory.jobs)
	l.Memory.mu.Unlock()
	perJob := l.snapJob
	if perJob == 0 {
		perJob = 2048
	}
	need := 4096 + jobs*perJob*9/8
	l.snapMu.Lock()
	buf := l.snapBuf
	l.snapBuf = nil
	l.snapMu.Unlock()
	if cap(buf) < need || cap(buf) > 4*need {
		buf = make([]byte, 0, need)
	}
	snap, err := l.Memory.appendSnapshot(buf[:0])
	if err == nil && jobs > 0 {
		l.snapJob = len(snap)/jobs + 1
	}
	return snap, err
}

// reuseSnapshot keeps snap, stored (or given up), for the next snapshot
// to be written into. The owner holds one snapshot's size of memory
// between two snapshots for it, no more than it takes while writing one.
func (l *Logged) reuseSnapshot(snap []byte) {
	l.snapMu.Lock()
	if cap(snap) > cap(l.snapBuf) {
		l.snapBuf = snap[:0]
	}
	l.snapMu.Unlock()
}

// queueSnapshotLocked queues a snapshot of the state after the records
// queued so far. l.mu is held: no change comes between the records and
// the snapshot. A snapshot that can't be made is logged and skipped: the
// log still holds everything.
func (l *Logged) queueSnapshotLocked() {
	start := time.Now()
	snap, err := l.snapshot()
	if err != nil {
		snapshotErrors.Inc()
		slog.Error("jobstore: log snapshot", "err", err)
		return
	}
	pause := time.Since(start)
	snapshotPause.Observe(pause.Seconds())
	slog.Info("jobstore: log snapshot taken", "bytes", len(snap), "pause", pause.Round(time.Microsecond), "records", l.since)
	l.pending = append(l.pending, pendingRecord{snap: snap})
	l.since = 0
	l.nextSnap = l.snapAfter()
}

// wakeWriter tells the writer that records are queued.
func (l *Logged) wakeWriter() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// await wakes the writer and waits for p's batch to be appended; for a
// p whose outcome goes to then, it returns at once.
func (l *Logged) await(ctx context.Context, p pendingRecord) error {
	l.wakeWriter()
	if p.then != nil {
		return nil
	}
	select {
	case err := <-p.done:
		doneChans.Put(p.done)
		return err
	case <-ctx.Done():
		// The change may yet be appended; the caller learns it did not
		// wait, as with a Redis call that timed out after the script ran.
		return ctx.Err()
	}
}

// writer appends the queued records, a batch at a time, until Close.
func (l *Logged) writer() {
	defer close(l.stopped)
	for {
		select {
		case <-l.wake:
		case <-l.done:
			l.flush() // what was queued before Close
			return
		}
		// Let the goroutines that can run first queue their records:
		// under load the batch then takes them too (ward dev at 12,000
		// jobs/s: 0.15 appends a job rather than 0.23, 3-6% more jobs/s);
		// with nothing else to run it returns at once.
		runtime.Gosched()
		l.flush()
	}
}

// flush appends what is queued, in batches of maxBatch at most. In a
// group (Owned's shards), each of its batches takes along what the
// group's other logs have queued, in one pipeline (logGroup.append).
func (l *Logged) flush() {
	for {
		l.writing.Lock()
		b := l.take(true)
		if b == nil {
			l.writing.Unlock()
			return
		}
		if b.snap != nil {
			if b.err == nil {
				l.storeSnapshot(b.seq, b.after, b.snap)
			}
			l.reuseSnapshot(b.snap)
			l.writing.Unlock()
			continue
		}
		if b.records > 0 && l.opts.group != nil {
			l.opts.group.append(b) // unlocks the writing of each log it took
			continue
		}
		if b.records > 0 {
			b.id, b.err = l.append(b.seq, b.buf())
		}
		l.appended(b)
		l.writing.Unlock()
	}
}

// outBatch is a batch a writer took from a log (take), on its way to the
// log's stream.
type outBatch struct {
	l       *Logged
	batch   []pendingRecord
	records int    // records in it (not barriers)
	data    []byte // the batch as the stream holds it (buf)
	seq     int64
	// err is the append's outcome; before it, the store's break (which
	// fails a batch of barriers alone, and a snapshot, unappended).
	err error
	id  string

	// A snapshot to store instead (alone), as of batch seq, trimming the
	// log up to after.
	snap  []byte
	after string
}

// take takes the next batch of what is queued (nil when nothing is),
// or, with snaps, the snapshot queued first. l.writing is held: the
// caller appends it before any later one (appended).
func (l *Logged) take(snaps bool) *outBatch {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := min(len(l.pending), maxBatch)
	if n == 0 {
		return nil
	}
	for i, p := range l.pending[:n] {
		if p.snap != nil {
			n = max(i, 1) // a batch ends before a snapshot; a snapshot goes alone
			break
		}
	}
	if snap := l.pending[0].snap; snap != nil {
		if !snaps {
			return nil // its own writer stores it
		}
		l.pending = l.pending[1:]
		return &outBatch{l: l, snap: snap, seq: l.seq, after: l.lastID, err: l.broken}
	}
	b := &outBatch{l: l, batch: l.pending[:n:n], err: l.broken}
	l.pending = l.pending[n:]
	size := 0
	for _, p := range b.batch {
		if p.size > 0 {
			b.records++
			size += p.size
		}
	}
	if b.records > 0 {
		l.seq++
		b.seq = l.seq
		// The batch is pbuf's front; what stays queued (a batch cut at
		// maxBatch, or before a snapshot) goes to the next pbuf, behind
		// its own batchBinary.
		b.data = l.pbuf[: 1+size : 1+size]
		next := l.spare[:0]
		l.spare = nil
		if rest := l.pbuf[1+size:]; len(rest) > 0 {
			next = append(append(next, batchBinary), rest...)
		}
		l.pbuf = next
	}
	l.inflight = n
	return b
}

// buf is the batch as the stream holds it: batchBinary, then each record
// behind its length (uvarint).
func (b *outBatch) buf() []byte { return b.data }

// appended settles a batch taken (take) once its append is done (b.id,
// b.err) or was not needed (barriers alone, a broken store), and answers
// its callers. l.writing is held.
func (l *Logged) appended(b *outBatch) {
	err := b.err
	if b.records > 0 {
		if err == nil && b.id != "" {
			l.lastID = b.id
		}
		if errors.Is(err, errLogLost) {
			err = l.recover(b.seq, err)
		}
		if err == nil {
			logBatches.Inc()
			logRecords.Add(float64(b.records))
		}
	}
	// A batch of barriers alone was queued after every record before it
	// was appended (appends are in order): they pass, unless the store
	// broke.
	l.mu.Lock()
	l.inflight = 0
	if err != nil {
		l.failLocked(err)
		// Nothing queued after a lost batch may be appended: the log
		// would skip a change the state made.
		for _, p := range l.pending {
			p.finish(l.broken)
		}
		l.pending, l.pbuf = nil, l.pbuf[:0]
	}
	if l.spare == nil && cap(b.data) <= 1<<20 {
		l.spare = b.data[:0] // appended: the next pbuf may be written over it
	}
	l.mu.Unlock()
	// Those who learn of it later (SubmitThen's acknowledgements) first,
	// then those who wait: a waiter's next message (a dispatch) never
	// overtakes the acknowledgement of the submission it rests on.
	for _, p := range b.batch {
		if p.then != nil {
			p.finish(err)
		}
	}
	for _, p := range b.batch {
		if p.then == nil {
			p.finish(err)
		}
	}
}

// append appends one batch and answers its entry's id ("" when a retry
// found it appended already).
func (l *Logged) append(seq int64, b []byte) (string, error) {
	var id string
	err := l.retry(fmt.Sprintf("log append (batch %d)", seq), func(ctx context.Context) (err error) {
		id, err = appendBatch.Run(ctx, l.c, []string{l.keys.stream, l.keys.epoch, l.keys.seq},
			strconv.FormatInt(l.epoch, 10), strconv.FormatInt(seq, 10), b).Text()
		return err
	})
	return id, err
}

// recover makes the log whole again after it lost batches this owner had
// appended: Redis acknowledged them, then restarted from an append-only
// file that lacked them (a machine's crash with appendfsync everysec), or
// failed over to a replica that had not had them. The owner's state holds
// them: it stores the whole state as the snapshot of batch seq (the one
// refused), which holds that batch and every record queued since, and the
// log goes on after it. The callers of those records are answered as if
// their batch was appended. Without an owner that outlived the loss, the
// lost batches are lost, as Redis's own writes are.
func (l *Logged) recover(seq int64, lost error) error {
	l.mu.Lock()
	snap, err := l.snapshot()
	covered := l.pending
	l.pending, l.pbuf = nil, l.pbuf[:0]
	l.mu.Unlock()
	if err == nil {
		err = l.retry(fmt.Sprintf("log recovery (batch %d)", seq), func(ctx context.Context) error {
			return recoverLog.Run(ctx, l.c, []string{l.keys.stream, l.keys.epoch, l.keys.snap, l.keys.seq},
				strconv.FormatInt(l.epoch, 10), strconv.FormatInt(seq, 10), snap).Err()
		})
		l.reuseSnapshot(snap)
	}
	if err == nil {
		logRecoveries.Inc()
		l.lastID = ""
		l.mu.Lock()
		l.snapSeq, l.since = seq, 0
		l.mu.Unlock()
		slog.Warn("jobstore: the log lost batches this owner had appended (Redis restarted from an older append-only file, or a replica behind it took over); the owner stored its whole state as a snapshot", "batch", seq, "lost", lost, "bytes", len(snap))
	} else {
		err = fmt.Errorf("jobstore: %w, and the recovery failed: %w", lost, err)
	}
	for _, p := range covered {
		p.finish(err) // a queued snapshot learns nothing: this one holds its state
	}
	return err
}

// storeSnapshot stores the owner's snapshot of the state as of batch seq
// and trims the log up to entry after (inclusive; nothing when it is "").
// Only a newer owner breaks the store: a snapshot not stored loses
// nothing, as the log still holds its batches.
func (l *Logged) storeSnapshot(seq int64, after string, b []byte) {
	var ok bool
	err := l.retry(fmt.Sprintf("log snapshot (batch %d)", seq), func(ctx context.Context) (err error) {
		ok, err = l.storeSnapshotOnce(ctx, strconv.FormatInt(l.epoch, 10), seq, after, b)
		return err
	})
	switch {
	case errors.Is(err, ErrFenced):
		l.fail(err)
	case err != nil:
		snapshotErrors.Inc()
		slog.Error("jobstore: log snapshot", "batch", seq, "err", err)
	case ok:
		snapshots.Inc()
		snapshotBytes.Set(float64(len(b)))
		l.mu.Lock()
		l.snapSeq = max(l.snapSeq, seq)
		l.mu.Unlock()
	}
}

// storeSnapshotOnce runs writeSnapshot once: false when the log holds a
// snapshot as new already.
func (l *Logged) storeSnapshotOnce(ctx context.Context, epoch string, seq int64, after string, b []byte) (bool, error) {
	minID := ""
	if after != "" {
		minID = nextStreamID(after)
	}
	n, err := writeSnapshot.Run(ctx, l.c, []string{l.keys.stream, l.keys.epoch, l.keys.snap},
		epoch, strconv.FormatInt(seq, 10), b, minID).Int()
	if err != nil && strings.Contains(err.Error(), "FENCED") {
		return false, ErrFenced
	}
	return n == 1, err
}

// nextStreamID is the stream entry id right after id ("ms-n").
func nextStreamID(id string) string {
	ms, n, ok := strings.Cut(id, "-")
	seq, err := strconv.ParseUint(n, 10, 64)
	if !ok || err != nil {
		return id // not an id Redis makes; trims less, never more
	}
	return ms + "-" + strconv.FormatUint(seq+1, 10)
}

// retry runs call, retrying a failure for up to 30 seconds (the scripts
// are safe to run again); a refused epoch is ErrFenced at once.
func (l *Logged) retry(what string, call func(ctx context.Context) error) error {
	deadline := time.Now().Add(30 * time.Second)
	delay := 10 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := call(ctx)
		cancel()
		switch final := finalErr(err); {
		case err == nil:
			return nil
		case final != nil:
			return final
		case time.Now().After(deadline):
			return fmt.Errorf("jobstore: %s: %w", what, err)
		}
		time.Sleep(delay)
		delay = min(2*delay, time.Second)
	}
}

// finalErr is what a log script's err means when no retry can change it
// (another owner's epoch: ErrFenced; a log that lost batches:
// errLogLost), nil otherwise.
func finalErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrFenced) || strings.Contains(err.Error(), "FENCED"):
		return ErrFenced
	case strings.HasPrefix(err.Error(), "LOST"):
		return fmt.Errorf("%w: %s", errLogLost, err.Error())
	}
	return nil
}

// Close appends what is queued and stops the writer. The Redis client is
// the caller's.
func (l *Logged) Close() error {
	l.mu.Lock()
	select {
	case <-l.done:
	default:
		if l.broken == nil && l.snapEvery >= 0 && l.since > 0 {
			l.queueSnapshotLocked() // the next owner reads it, not the log
		}
		close(l.done)
	}
	l.mu.Unlock()
	l.leaseUntil.Store(0) // no read either: another may own the log at once
	<-l.stopped
	if l.viewDone != nil {
		<-l.viewDone // its last write, while the lease is still this owner's
	}
	if l.Err() == nil {
		l.releaseLease()
	}
	if l.ownsClient {
		return l.c.Close()
	}
	return nil
}

// Epoch is the epoch this owner holds the log at.
func (l *Logged) Epoch() int64 { return l.epoch }

// ------------------------------------------------------------- the changes

// Create stores job in PENDING; see Store.
func (l *Logged) Create(ctx context.Context, job *Job, payload []byte) (string, bool, error) {
	res, err := l.Submit(ctx, job, payload, Guard{})
	return res.ID, res.Created, err
}

// Submit stores job behind g's checks; see Store.
func (l *Logged) Submit(ctx context.Context, job *Job, payload []byte, g Guard) (Submitted, error) {
	return l.SubmitThen(ctx, job, payload, g, nil)
}

// SubmitThen is Submit answered before its record is appended; see
// EarlySubmitter. With then nil, it is Submit.
func (l *Logged) SubmitThen(ctx context.Context, job *Job, payload []byte, g Guard, then func(error)) (Submitted, error) {
	var res Submitted
	err := l.changeThen(ctx, func() (bool, *record, error) {
		if job.CreatedAt.IsZero() {
			job.CreatedAt = time.Now()
		}
		var err error
		res, err = l.Memory.Submit(ctx, job, payload, g)
		if err != nil || !res.Created {
			return false, nil, err
		}
		// The record is encoded before the lock is let go: the job's
		// copy and the record are the store's own, reused.
		l.job = *job
		l.job.ID = res.ID
		l.rec = record{Op: opSubmit, Job: &l.job, Payload: payload}
		return true, &l.rec, nil
	}, then)
	return res, err
}

// Transition moves a job; see Store.
func (l *Logged) Transition(ctx context.Context, id string, t Transition) (*Job, error) {
	return l.transition(ctx, id, t, nil, nil)
}

// transition is Transition; elsewhere, when set, is called under the
// lock just before the move is applied, and answers how many places
// t.WorkerID holds outside this log (Owned: in its other shards), which
// count against t.WorkerLimit with the log's own; applied is called once
// the move is applied (or refused), still under the lock.
func (l *Logged) transition(ctx context.Context, id string, t Transition, elsewhere func() int, applied func()) (*Job, error) {
	if t.At.IsZero() {
		t.At = time.Now()
	}
	var j *Job
	err := l.change(ctx, func() (bool, *record, error) {
		var err error
		mt := t
		if elsewhere != nil {
			mt.heldElsewhere = elsewhere()
			defer applied()
		}
		j, err = l.Memory.Transition(ctx, id, mt)
		if err != nil {
			return false, nil, err
		}
		l.move.set(t)
		l.rec = record{Op: opTransition, ID: id, T: &l.move}
		return true, &l.rec, nil
	})
	if err != nil {
		return nil, err
	}
	return j, nil
}

// PutResult stores a job's result blob; see Store.
func (l *Logged) PutResult(ctx context.Context, id string, data []byte) (string, error) {
	var ptr string
	err := l.change(ctx, func() (bool, *record, error) {
		var err error
		ptr, err = l.Memory.PutResult(ctx, id, data)
		return err == nil, &record{Op: opPutResult, ID: id, Data: data}, err
	})
	return ptr, err
}

// DueDeferred hands out deferred jobs whose time has come; see Store.
func (l *Logged) DueDeferred(ctx context.Context, now time.Time, limit int) ([]*Job, error) {
	var jobs []*Job
	err := l.change(ctx, func() (bool, *record, error) {
		var err error
		jobs, err = l.Memory.DueDeferred(ctx, now, limit)
		return err == nil && len(jobs) > 0, &record{Op: opDueDeferred, At: now, N: limit}, err
	})
	return jobs, err
}

// AddDLQ records a dead-lettered job; see Store.
func (l *Logged) AddDLQ(ctx context.Context, e DLQEntry) error {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	return l.change(ctx, func() (bool, *record, error) {
		err := l.Memory.AddDLQ(ctx, e)
		e.Job = nil
		return err == nil, &record{Op: opAddDLQ, DLQ: &e}, err
	})
}

// RemoveDLQ removes a job's DLQ entry; see Store.
func (l *Logged) RemoveDLQ(ctx context.Context, id string) (bool, error) {
	var ok bool
	err := l.change(ctx, func() (bool, *record, error) {
		var err error
		ok, err = l.Memory.RemoveDLQ(ctx, id)
		return err == nil && ok, &record{Op: opRemoveDLQ, ID: id}, err
	})
	return ok, err
}

// Sweep drops what retention let go; see Store.
func (l *Logged) Sweep(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := l.change(ctx, func() (bool, *record, error) {
		var err error
		n, err = l.Memory.Sweep(ctx, now)
		return err == nil && n > 0, &record{Op: opSweep, At: now}, err
	})
	return n, err
}

// SetRetention sets how long ended jobs are kept; every owner of a log
// must be given the same (as with the bound). Set after the replay (as
// Open's caller does), it drops at once what the retention let go, as the
// owner's logged sweeps had: a replay without it kept them. That drop is
// not logged; the next owner's replay makes it at its next sweep.
func (l *Logged) SetRetention(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Memory.SetRetention(d)
	if d > 0 {
		_, _ = l.Memory.Sweep(context.Background(), time.Now())
	}
}

// SetMode stores the scheduler mode; see Store.
func (l *Logged) SetMode(ctx context.Context, mode string) error {
	return l.change(ctx, func() (bool, *record, error) {
		err := l.Memory.SetMode(ctx, mode)
		return err == nil, &record{Op: opSetMode, Mode: mode}, err
	})
}

// SetDrained drains or undrains a worker; see Drains.
func (l *Logged) SetDrained(ctx context.Context, worker string, on bool, at time.Time) (bool, error) {
	if at.IsZero() {
		at = time.Now()
	}
	var changed bool
	err := l.change(ctx, func() (bool, *record, error) {
		var err error
		changed, err = l.Memory.SetDrained(ctx, worker, on, at)
		return err == nil && changed, &record{Op: opSetDrained, ID: worker, On: on, At: at}, err
	})
	return changed, err
}

// CreateRun stores a new workflow run; see RunStore.
func (l *Logged) CreateRun(ctx context.Context, r *Run, events [][]byte) error {
	c := *r
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now()
	}
	return l.change(ctx, func() (bool, *record, error) {
		err := l.Memory.CreateRun(ctx, &c, events)
		return err == nil, &record{Op: opCreateRun, Run: &c, Events: events}, err
	})
}

// AppendRun appends to a run's log; see RunStore.
func (l *Logged) AppendRun(ctx context.Context, id, owner string, after int, events [][]byte, state, reason string) error {
	now := time.Now()
	return l.change(ctx, func() (bool, *record, error) {
		err := l.Memory.appendRunAt(ctx, now, id, owner, after, events, state, reason)
		return err == nil, &record{Op: opAppendRun, ID: id, Owner: owner, N: after, Events: events, State: state, Reason: reason, At: now}, err
	})
}

// ClaimRun makes owner a run's driver; see RunStore.
func (l *Logged) ClaimRun(ctx context.Context, id, owner string, until time.Time) (bool, error) {
	now := time.Now()
	var ok bool
	err := l.change(ctx, func() (bool, *record, error) {
		var err error
		ok, err = l.Memory.claimRunAt(ctx, now, id, owner, until)
		return err == nil && ok, &record{Op: opClaimRun, ID: id, Owner: owner, Until: until, At: now}, err
	})
	return ok, err
}

// ------------------------------------------------------------- the records

// record is one change in the log. Op says which; the other fields are
// what the change was made with, times included, so that applying the
// records in order to an empty state makes the state the owner had.
type record struct {
	Op      logOp             `json:"o"`
	ID      string            `json:"i,omitempty"`
	Job     *Job              `json:"j,omitempty"`
	Payload []byte            `json:"p,omitempty"`
	T       *transitionRecord `json:"t,omitempty"`
	Data    []byte            `json:"d,omitempty"`
	At      time.Time         `json:"a,omitzero"`
	Until   time.Time         `json:"u,omitzero"`
	N       int               `json:"n,omitempty"`
	DLQ     *DLQEntry         `json:"q,omitempty"`
	Mode    string            `json:"m,omitempty"`
	On      bool              `json:"on,omitempty"`
	Run     *Run              `json:"r,omitempty"`
	Events  [][]byte          `json:"e,omitempty"`
	Owner   string            `json:"w,omitempty"`
	State   string            `json:"s,omitempty"`
	Reason  string            `json:"x,omitempty"`
}

type logOp string

const (
	opSubmit      logOp = "submit"
	opTransition  logOp = "move"
	opPutResult   logOp = "result"
	opDueDeferred logOp = "due"
	opAddDLQ      logOp = "dlq+"
	opRemoveDLQ   logOp = "dlq-"
	opSweep       logOp = "sweep"
	opSetMode     logOp = "mode"
	opSetDrained  logOp = "drain"
	opCreateRun   logOp = "run"
	opAppendRun   logOp = "run+"
	opClaimRun    logOp = "claim"
)

// apply makes the record's change to m. A change that was made once is
// made again: an error means the log and the state disagree.
func (r *record) apply(ctx context.Context, m *Memory) error {
	var err error
	switch r.Op {
	case opSubmit:
		if r.Job == nil {
			return errors.New("no job")
		}
		var res Submitted
		res, err = m.Submit(ctx, r.Job, r.Payload, Guard{})
		if err == nil && !res.Created {
			err = fmt.Errorf("job %s was not created", r.Job.ID)
		}
	case opTransition:
		if r.T == nil {
			return errors.New("no transition")
		}
		_, err = m.Transition(ctx, r.ID, r.T.replayed())
	case opPutResult:
		_, err = m.PutResult(ctx, r.ID, r.Data)
	case opDueDeferred:
		_, err = m.DueDeferred(ctx, r.At, r.N)
	case opAddDLQ:
		if r.DLQ == nil {
			return errors.New("no entry")
		}
		err = m.AddDLQ(ctx, *r.DLQ)
	case opRemoveDLQ:
		_, err = m.RemoveDLQ(ctx, r.ID)
	case opSweep:
		_, err = m.Sweep(ctx, r.At)
	case opSetMode:
		err = m.SetMode(ctx, r.Mode)
	case opSetDrained:
		_, err = m.SetDrained(ctx, r.ID, r.On, r.At)
	case opCreateRun:
		if r.Run == nil {
			return errors.New("no run")
		}
		err = m.CreateRun(ctx, r.Run, r.Events)
	case opAppendRun:
		err = m.appendRunAt(ctx, r.At, r.ID, r.Owner, r.N, r.Events, r.State, r.Reason)
	case opClaimRun:
		var ok bool
		ok, err = m.claimRunAt(ctx, r.At, r.ID, r.Owner, r.Until)
		if err == nil && !ok {
			err = fmt.Errorf("run %s was not claimed", r.ID)
		}
	default:
		return fmt.Errorf("unknown op %q", r.Op)
	}
	return err
}

// transitionRecord is a Transition as the log keeps it: its fields with
// short names, the empty ones left out. The guards that depend on other
// replicas or on time (Lock, the limits, a queue's cap) are not kept: the
// move was made, and replaying it must make it again.
type transitionRecord struct {
	To           State     `json:"to"`
	From         State     `json:"fr,omitempty"`
	Pool         string    `json:"po,omitempty"`
	WorkerID     string    `json:"wk,omitempty"`
	ResultPtr    string    `json:"rp,omitempty"`
	Result       []byte    `json:"rs,omitempty"`
	StoreResult  bool      `json:"sr,omitempty"`
	ResultDigest string    `json:"rd,omitempty"`
	Module       string    `json:"mo,omitempty"`
	ModuleDigest string    `json:"md,omitempty"`
	Reason       string    `json:"re,omitempty"`
	ErrorCode    string    `json:"ec,omitempty"`
	ErrorMessage string    `json:"em,omitempty"`
	Log          []byte    `json:"lg,omitempty"`
	LogTruncated bool      `json:"lt,omitempty"`
	Safety       *Safety   `json:"sf,omitempty"`
	Attempt      int       `json:"at,omitempty"`
	MaxRetries   *int      `json:"mr,omitempty"`
	Deadline     time.Time `json:"dl,omitzero"`
	Waits        int       `json:"wt,omitempty"`
	IfWorker     string    `json:"iw,omitempty"`
	IfAttempt    int       `json:"ia,omitempty"`
	IfTenant     string    `json:"it,omitempty"`
	Wait         *Wait     `json:"wa,omitempty"`
	Message      string    `json:"ms,omitempty"`
	At           time.Time `json:"ts"`
	Via          State     `json:"vi,omitempty"`
	ViaMessage   string    `json:"vm,omitempty"`
}

// set makes r t as the log keeps it (t.At is set).
func (r *transitionRecord) set(t Transition) {
	*r = transitionRecord{
		To: t.To, From: t.From, Pool: t.Pool, WorkerID: t.WorkerID, ResultPtr: t.ResultPtr,
		Result: t.Result, StoreResult: t.StoreResult, ResultDigest: t.ResultDigest,
		Module: t.Module, ModuleDigest: t.ModuleDigest, Reason: t.Reason, ErrorCode: t.ErrorCode,
		ErrorMessage: t.ErrorMessage, Log: t.Log, LogTruncated: t.LogTruncated, Safety: t.Safety,
		Attempt: t.Attempt, MaxRetries: t.MaxRetries, Deadline: t.Deadline, Waits: t.Waits,
		IfWorker: t.IfWorker, IfAttempt: t.IfAttempt, IfTenant: t.IfTenant,
		Message: t.Message, At: t.At, Via: t.Via, ViaMessage: t.ViaMessage,
	}
	if t.Wait != nil {
		w := *t.Wait
		w.Cap = 0
		r.Wait = &w
	}
}

// replayed is the Transition that makes the recorded move again.
func (r *transitionRecord) replayed() Transition {
	return Transition{
		To: r.To, From: r.From, Pool: r.Pool, WorkerID: r.WorkerID, ResultPtr: r.ResultPtr,
		Result: r.Result, StoreResult: r.StoreResult, ResultDigest: r.ResultDigest,
		Module: r.Module, ModuleDigest: r.ModuleDigest, Reason: r.Reason, ErrorCode: r.ErrorCode,
		ErrorMessage: r.ErrorMessage, Log: r.Log, LogTruncated: r.LogTruncated, Safety: r.Safety,
		Attempt: r.Attempt, MaxRetries: r.MaxRetries, Deadline: r.Deadline, Waits: r.Waits,
		IfWorker: r.IfWorker, IfAttempt: r.IfAttempt, IfTenant: r.IfTenant, Wait: r.Wait,
		Message: r.Message, At: r.At, Via: r.Via, ViaMessage: r.ViaMessage, Brief: true,
	}
}
