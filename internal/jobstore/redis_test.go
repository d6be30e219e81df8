package jobstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/jobstore/storetest"
	"github.com/ward-run/ward/internal/testing/redistest"
)

// TestRedis runs the suite on one server, flushed before each subtest.
func TestRedis(t *testing.T) {
	url := redistest.Start(t)
	storetest.Run(t, func(t *testing.T) jobstore.Store {
		s, err := jobstore.OpenRedis(url)
		if err != nil {
			t.Fatal(err)
		}
		flush(t, url)
		return s
	})
}

func flush(t testing.TB, url string) {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	if err := c.FlushDB(context.Background()).Err(); err != nil {
		t.Fatalf("FLUSHDB: %v", err)
	}
}

func TestOpenRedisErrors(t *testing.T) {
	if _, err := jobstore.OpenRedis("http://localhost:6379"); err == nil {
		t.Error("OpenRedis accepted an http URL")
	}
	// A port nobody listens on: take a free one and close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if _, err := jobstore.OpenRedis("redis://" + addr); err == nil {
		t.Errorf("OpenRedis of %s (nothing listening) succeeded", addr)
	}
	// A log's options, checked before anything is dialled.
	for _, q := range []string{"?log=x&view=maybe", "?view=1", "?log=x&lease=1ms", "?log=x&snapshot=0", "?snapshot=5"} {
		if _, err := jobstore.Open("redis://" + addr + q); err == nil || !strings.Contains(err.Error(), "redis url") {
			t.Errorf("Open of %s: %v, want an error about the URL", q, err)
		}
	}
}

// TestOpenKeepsTheLayout: a store opened once in a layout (no shards,
// shards=N, a log, a log of N shards) refuses to open in another on the
// same server, saying which and how to start afresh, and opens again in
// its own; logs of other names live side by side, but neither a log nor
// the Redis store starts over the other's jobs, which it would leave
// unserved.
func TestOpenKeepsTheLayout(t *testing.T) {
	url := redistest.Start(t)
	ctx := context.Background()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(opt)
	defer rc.Close()
	open := func(query string) error {
		s, err := jobstore.OpenContext(ctx, url+query)
		if err == nil {
			err = s.Close()
		}
		return err
	}
	type step struct {
		query   string
		refused string // what the refusal names; "" when it opens
	}
	run := func(steps ...step) {
		t.Helper()
		for _, c := range steps {
			err := open(c.query)
			switch {
			case c.refused != "" && !errors.Is(err, jobstore.ErrLayout):
				t.Errorf("Open(%q): %v, want ErrLayout", c.query, err)
			case c.refused != "" && !strings.Contains(err.Error(), "delete "+c.refused):
				t.Errorf("Open(%q): %v, which does not say to delete %s to start afresh", c.query, err, c.refused)
			case c.refused == "" && err != nil:
				t.Errorf("Open(%q): %v", c.query, err)
			}
		}
	}
	del := func(key string) {
		t.Helper()
		if err := rc.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	run(step{"", ""}, step{"", ""}, step{"?shards=4", "ward:layout"},
		// The Redis store's jobs are here: no log starts beside them.
		step{"?log=a&shards=4&lease=100ms", "ward:layout"}, step{"?log=b&lease=100ms", "ward:layout"})
	del("ward:layout") // the operator's step, once no job is left to end
	run(step{"?log=a&shards=4&lease=100ms", ""}, step{"?log=a&shards=8&lease=100ms", "ward:log:{a}:layout"},
		step{"?log=a&lease=100ms", "ward:log:{a}:layout"}, step{"?log=a&shards=4&lease=100ms", ""},
		step{"?log=b&lease=100ms", ""}, step{"?log=b&shards=2&lease=100ms", "ward:log:{b}:layout"}, step{"?log=b&lease=100ms", ""},
		// Logs a and b are here: the Redis store does not start beside them.
		step{"", "ward:logs"}, step{"?shards=4", "ward:logs"})
	if logs, err := rc.HGetAll(ctx, "ward:logs").Result(); err != nil || len(logs) != 2 || logs["a"] != "shards=4" || logs["b"] != "shards=0" {
		t.Errorf("ward:logs: %v, %v; want a=shards=4, b=shards=0", logs, err)
	}
	// A log made before ward:logs existed is recorded at its next open.
	del("ward:logs")
	run(step{"?log=b&lease=100ms", ""}, step{"", "ward:logs"})
	// Afresh: with the records deleted, another layout opens.
	del("ward:logs")
	run(step{"?shards=4", ""}, step{"?shards=4", ""})
}

// TestRedisScriptsFlushed: calls sent together in a pipeline when the
// server has lost its scripts (a restart, SCRIPT FLUSH) are each sent
// again with their source, and every one of them runs; results SET in
// the same pipelines are stored.
func TestRedisScriptsFlushed(t *testing.T) {
	url := redistest.Start(t)
	s, err := jobstore.OpenRedis(url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	opt, _ := redis.ParseURL(url)
	admin := redis.NewClient(opt)
	defer admin.Close()
	ctx := context.Background()
	for round := range 3 {
		if err := admin.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 128)
		var wg sync.WaitGroup
		for i := range 64 {
			id := fmt.Sprintf("r%d-%d", round, i)
			wg.Go(func() {
				_, _, err := s.Create(ctx, &jobstore.Job{ID: id, Topic: "t", Tenant: "acme"}, nil)
				errs <- err
			})
			// Results are plain SETs sent in the same pipelines.
			wg.Go(func() {
				ptr, err := s.PutResult(ctx, id, []byte("result of "+id))
				if err == nil {
					var got []byte
					if got, err = s.Blob(ctx, ptr); err == nil && string(got) != "result of "+id {
						err = fmt.Errorf("result of %s reads %q", id, got)
					}
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d, after SCRIPT FLUSH: %v", round, err)
			}
		}
	}
	if jobs, err := s.Recent(ctx, 1000); err != nil || len(jobs) != 3*64 {
		t.Fatalf("%d jobs stored, want %d (%v)", len(jobs), 3*64, err)
	}
}

// hotPath is a job's life as the scheduler writes it: created, then
// dispatched through SCHEDULED in one step, then ended through RUNNING in
// one step, pointing at its result: three store round trips (the host's
// SET of the result is a fourth).
func hotPath(ctx context.Context, s jobstore.Store, id string) error {
	return hotPathOf(ctx, s, id, "acme")
}

// hotPathOf is hotPath for tenant's job.
func hotPathOf(ctx context.Context, s jobstore.Store, id, tenant string) error {
	j := &jobstore.Job{ID: id, Topic: "job.echo", Tenant: tenant, Labels: map[string]string{"team": "ml"}}
	if _, err := s.Submit(ctx, j, []byte(`{"prompt":"hello"}`), jobstore.Guard{Rate: 1e9, Burst: 1 << 30, Queues: []string{"echo"}, QueueCap: 10000}); err != nil {
		return err
	}
	if _, err := s.Transition(ctx, id, jobstore.Transition{To: jobstore.Dispatched, From: jobstore.Pending, Via: jobstore.Scheduled,
		ViaMessage: "worker=w1 reason=LeastLoaded", Pool: "echo", WorkerID: "w1", Attempt: 1, TenantLimit: 1 << 20, WorkerLimit: 1 << 20,
		Lock: &jobstore.Lock{Owner: "s1", TTL: 10 * time.Second}}); err != nil {
		return err
	}
	_, err := s.Transition(ctx, id, jobstore.Transition{To: jobstore.Succeeded, From: jobstore.Dispatched, Via: jobstore.Running,
		IfWorker: "w1", IfAttempt: 1, WorkerID: "w1", ResultPtr: jobstore.ResultPtr(id), Message: "ran in 1 ms"})
	return err
}

// BenchmarkStoreHotPath measures hotPath on each store, one job at a time
// and with 64 at once (as `ward bench -c 64` drives it).
func BenchmarkStoreHotPath(b *testing.B) {
	stores := map[string]func(b *testing.B) jobstore.Store{
		"memory": func(*testing.B) jobstore.Store { return jobstore.NewMemory() },
		"redis": func(b *testing.B) jobstore.Store {
			s, err := jobstore.OpenRedis(redistest.Start(b))
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
		// The sharded layout (16 shards) on one server: what the tags,
		// the directory and the worker places cost.
		"redis-sharded": func(b *testing.B) jobstore.Store {
			s, err := jobstore.Open(redistest.Start(b) + "?shards=16")
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
		// A 3-master Redis Cluster (on this machine's cores).
		"cluster": func(b *testing.B) jobstore.Store {
			s, err := jobstore.Open(redistest.StartCluster(b, 3))
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
	}
	for _, name := range []string{"memory", "redis", "redis-sharded", "cluster"} {
		for _, par := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/c%d", name, par), func(b *testing.B) {
				s := stores[name](b)
				defer s.Close()
				ctx := context.Background()
				var n atomic.Int64
				b.ReportAllocs()
				b.SetParallelism(par) // par × GOMAXPROCS goroutines
				// 16 tenants: a sharded store spreads them over its shards.
				job := func() error {
					i := n.Add(1)
					return hotPathOf(ctx, s, fmt.Sprintf("j%d", i), fmt.Sprintf("t%d", i%16))
				}
				if par == 1 {
					for b.Loop() {
						if err := job(); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := job(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// BenchmarkRedisCreateTransition measures a job's common life: a create and
// four transitions to SUCCEEDED, five round trips.
func BenchmarkRedisCreateTransition(b *testing.B) {
	url := redistest.Start(b)
	s, err := jobstore.OpenRedis(url)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	payload := []byte(`{"prompt":"hello"}`)
	steps := []jobstore.Transition{
		{To: jobstore.Scheduled, Pool: "gpu"},
		{To: jobstore.Dispatched, WorkerID: "w1"},
		{To: jobstore.Running},
		{To: jobstore.Succeeded, ResultPtr: jobstore.ResultPtr("x")},
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		id := fmt.Sprintf("bench-%d", i)
		i++
		j := &jobstore.Job{ID: id, Topic: "inference", Tenant: "acme", Labels: map[string]string{"team": "ml"}}
		if _, _, err := s.Create(ctx, j, payload); err != nil {
			b.Fatal(err)
		}
		for _, st := range steps {
			if _, err := s.Transition(ctx, id, st); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestRedisEventChainSeesTampering: an event rewritten in Redis behind the
// store's back (LSET), or removed (LREM), breaks the job's chain where it
// happened.
func TestRedisEventChainSeesTampering(t *testing.T) {
	url := redistest.Start(t)
	s, err := jobstore.OpenRedis(url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	opt, _ := redis.ParseURL(url)
	admin := redis.NewClient(opt)
	defer admin.Close()
	ctx := context.Background()
	if err := hotPath(ctx, s, "j1"); err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(ctx, "j1")
	if err != nil {
		t.Fatal(err)
	}
	j, err := s.Get(ctx, "j1")
	if err != nil {
		t.Fatal(err)
	}
	if err := jobstore.VerifyEvents(evs, j.Chain); err != nil {
		t.Fatal(err)
	}
	raw, err := admin.LIndex(ctx, "job:events:j1", 1).Result()
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(raw, "worker=w1", "worker=w9", 1)
	if forged == raw {
		t.Fatalf("event 2 %s has no worker=w1", raw)
	}
	if err := admin.LSet(ctx, "job:events:j1", 1, forged).Err(); err != nil {
		t.Fatal(err)
	}
	evs, _ = s.Events(ctx, "j1")
	var ce *jobstore.ChainError
	if err := jobstore.VerifyEvents(evs, j.Chain); !errors.As(err, &ce) || ce.Index != 1 {
		t.Fatalf("event 2 rewritten: %v", err)
	}
	if err := admin.LSet(ctx, "job:events:j1", 1, raw).Err(); err != nil {
		t.Fatal(err)
	}
	last, _ := admin.RPop(ctx, "job:events:j1").Result()
	evs, _ = s.Events(ctx, "j1")
	if err := jobstore.VerifyEvents(evs, j.Chain); !errors.As(err, &ce) || ce.Index != len(evs) || last == "" {
		t.Fatalf("the last event removed: %v", err)
	}
}

// TestRedisDLQIndexesOldEntries: DLQ entries written before the tenants'
// DLQ indexes existed (job:dlq and job:dlq:<id> alone) are in their
// tenant's DLQ from the first read of a tenant's, however many there are,
// many of them dead-lettered in the same millisecond.
func TestRedisDLQIndexesOldEntries(t *testing.T) {
	url := redistest.Start(t)
	opt, _ := redis.ParseURL(url)
	admin := redis.NewClient(opt)
	defer admin.Close()
	ctx := context.Background()
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	want := map[string]int{}
	p := admin.Pipeline()
	for i := range 2500 {
		tenant := []string{"acme", "busy", ""}[i%3]
		at := base.Add(time.Duration(i) * time.Millisecond)
		if i >= 100 && i < 1400 {
			at = base.Add(100 * time.Millisecond) // 1,300 entries of one ms: more than a batch
		}
		id := fmt.Sprintf("old%d", i)
		p.Set(ctx, "job:dlq:"+id, fmt.Sprintf(`{"job_id":%q,"topic":"t","tenant":%q,"reason":"x","at":%q}`, id, tenant, at.Format(time.RFC3339Nano)), 0)
		p.ZAdd(ctx, "job:dlq", redis.Z{Score: float64(at.UnixMilli()), Member: id})
		want[tenant]++
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	s, err := jobstore.OpenRedis(url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tenant := range []string{"acme", "busy"} {
		got, err := s.DLQ(ctx, tenant, 5000)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != want[tenant] {
			t.Errorf("%s's DLQ holds %d entries, want %d", tenant, len(got), want[tenant])
		}
		for _, e := range got {
			if e.Tenant != tenant {
				t.Fatalf("%s's DLQ holds %s of %q", tenant, e.JobID, e.Tenant)
			}
		}
	}
	if all, err := s.DLQ(ctx, "", 5000); err != nil || len(all) != 2500 {
		t.Errorf("every tenant's DLQ: %d entries, %v", len(all), err)
	}
}
