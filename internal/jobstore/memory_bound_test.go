package jobstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/jobstore/storetest"
)

// TestMemoryBounded runs the conformance suite on a memory store with a
// bound it never reaches: the bookkeeping of ended jobs changes nothing.
func TestMemoryBounded(t *testing.T) {
	storetest.Run(t, func(t *testing.T) jobstore.Store {
		m := jobstore.NewMemory()
		m.SetBound(jobstore.Bound{MaxEnded: 1 << 20, MaxEndedBytes: 1 << 40})
		return m
	})
}

// boundT0 is the time the bound tests' jobs are created.
var boundT0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func boundJob(t *testing.T, m *jobstore.Memory, id, idem string) {
	t.Helper()
	j := &jobstore.Job{ID: id, Topic: "topic.a", Tenant: "acme", CreatedAt: boundT0, IdempotencyKey: idem}
	if _, created, err := m.Create(context.Background(), j, []byte("payload of "+id)); err != nil || !created {
		t.Fatalf("create %s: %v %v", id, created, err)
	}
}

// end takes job id, PENDING, through SCHEDULED and RUNNING to SUCCEEDED at
// boundT0 + sec seconds, with a result.
func end(t *testing.T, m *jobstore.Memory, id string, sec int, result []byte) {
	t.Helper()
	ctx := context.Background()
	at := boundT0.Add(time.Duration(sec) * time.Second)
	_, err := m.Transition(ctx, id, jobstore.Transition{To: jobstore.Scheduled, WorkerID: "w", At: at})
	if err == nil {
		_, err = m.Transition(ctx, id, jobstore.Transition{To: jobstore.Succeeded, Via: jobstore.Running,
			WorkerID: "w", At: at, Result: result, StoreResult: true})
	}
	if err != nil {
		t.Fatalf("end %s: %v", id, err)
	}
}

func evictedTotal(t *testing.T) float64 {
	t.Helper()
	return counterValue(t, "ward_jobstore_jobs_evicted_total")
}

// counterValue is the value of the counter name (no labels) in the
// default registry.
func counterValue(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}

// kept returns which of ids the store still has.
func kept(t *testing.T, m *jobstore.Memory, ids ...string) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		_, err := m.Get(context.Background(), id)
		switch {
		case err == nil:
			out = append(out, id)
		case !errors.Is(err, jobstore.ErrNotFound):
			t.Fatalf("get %s: %v", id, err)
		}
	}
	return out
}

// TestMemoryBoundEvictsOldestEnded fills a store bounded to 3 ended jobs
// past its bound: the jobs that ended first go (by when they ended, not
// by when they were created or ended last), live jobs in every live state
// stay however many there are, and an evicted job reads as one that never
// was.
func TestMemoryBoundEvictsOldestEnded(t *testing.T) {
	ctx := context.Background()
	m := jobstore.NewMemory()
	m.SetBound(jobstore.Bound{MaxEnded: 3})
	before := evictedTotal(t)

	// Live jobs, more than the bound, in every live state (and waiting).
	live := []string{"live-pending", "live-queued", "live-deferred", "live-scheduled", "live-dispatched", "live-running"}
	for _, id := range live {
		boundJob(t, m, id, "")
	}
	moves := map[string]jobstore.Transition{
		"live-queued":     {To: jobstore.Pending, Wait: &jobstore.Wait{Pool: "p", Score: 1}},
		"live-deferred":   {To: jobstore.Pending, Wait: &jobstore.Wait{Until: boundT0.Add(time.Hour)}},
		"live-scheduled":  {To: jobstore.Scheduled, WorkerID: "w", Lock: &jobstore.Lock{Owner: "s1", TTL: time.Minute}},
		"live-dispatched": {To: jobstore.Dispatched, Via: jobstore.Scheduled, WorkerID: "w", Attempt: 1},
		"live-running":    {To: jobstore.Running, Via: jobstore.Scheduled, WorkerID: "w", Attempt: 1},
	}
	for id, tr := range moves {
		if _, err := m.Transition(ctx, id, tr); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}

	// Ended jobs, created in order e1..e6, ended out of that order.
	for i := 1; i <= 6; i++ {
		boundJob(t, m, fmt.Sprintf("e%d", i), fmt.Sprintf("key%d", i))
	}
	all := []string{"e1", "e2", "e3", "e4", "e5", "e6"}
	end(t, m, "e3", 3, []byte("r3"))
	end(t, m, "e1", 1, []byte("r1"))
	end(t, m, "e2", 2, []byte("r2"))
	if got := kept(t, m, all...); !slices.Equal(got, all) {
		t.Fatalf("at the bound, kept %v", got)
	}
	end(t, m, "e4", 4, nil) // over: e1, which ended first, goes
	if got := kept(t, m, all...); !slices.Equal(got, []string{"e2", "e3", "e4", "e5", "e6"}) {
		t.Fatalf("one over the bound, kept %v", got)
	}
	end(t, m, "e6", 6, nil) // e2 goes
	// e5 ends now, but as of a time before e3's: it is the oldest, and goes
	// at once; its move still returns the job.
	j, err := m.Transition(ctx, "e5", jobstore.Transition{To: jobstore.Failed, At: boundT0.Add(2500 * time.Millisecond), Reason: "x"})
	if err != nil || j.State != jobstore.Failed {
		t.Fatalf("e5's end: %v %v", j, err)
	}
	if got := kept(t, m, all...); !slices.Equal(got, []string{"e3", "e4", "e6"}) {
		t.Fatalf("kept %v, want e3 e4 e6", got)
	}
	if got := kept(t, m, live...); !slices.Equal(got, live) {
		t.Fatalf("live jobs kept: %v, want all of %v", got, live)
	}
	if n, _, ev := m.EndedJobs(); n != 3 || ev != 3 {
		t.Errorf("EndedJobs: %d kept, %d evicted; want 3, 3", n, ev)
	}
	if d := evictedTotal(t) - before; d != 3 {
		t.Errorf("ward_jobstore_jobs_evicted_total went up by %v, want 3", d)
	}

	// An evicted job reads as a missing one, everywhere.
	for _, id := range []string{"e1", "e2", "e5"} {
		if _, err := m.Events(ctx, id); !errors.Is(err, jobstore.ErrNotFound) {
			t.Errorf("Events(%s): %v", id, err)
		}
		for _, ptr := range []string{jobstore.ContextPtr(id), jobstore.ResultPtr(id)} {
			if _, err := m.Blob(ctx, ptr); !errors.Is(err, jobstore.ErrNotFound) {
				t.Errorf("Blob(%s): %v", ptr, err)
			}
		}
		if _, err := m.Transition(ctx, id, jobstore.Transition{To: jobstore.Cancelled}); !errors.Is(err, jobstore.ErrNotFound) {
			t.Errorf("Transition(%s): %v, want ErrNotFound", id, err)
		}
		if _, err := jobstore.GetFor(ctx, m, id, "acme"); !errors.Is(err, jobstore.ErrNotFound) {
			t.Errorf("GetFor(%s): %v", id, err)
		}
	}
	page, err := m.List(ctx, jobstore.ListQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, j := range page.Jobs {
		listed = append(listed, j.ID)
	}
	slices.Sort(listed)
	want := append([]string{"e3", "e4", "e6"}, live...)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("List: %v, want %v", listed, want)
	}
	for _, q := range []jobstore.ListQuery{{Limit: 100, Tenant: "acme"}, {Limit: 100, State: jobstore.Succeeded}, {Limit: 100, State: jobstore.Failed}} {
		p, err := m.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range p.Jobs {
			if slices.Contains([]string{"e1", "e2", "e5"}, j.ID) {
				t.Errorf("List(%+v) lists evicted %s", q, j.ID)
			}
		}
	}
	if ids, err := m.Stale(ctx, jobstore.Succeeded, boundT0.Add(time.Hour), 10); err != nil || !slices.Equal(ids, []string{"e3", "e4", "e6"}) {
		t.Errorf("Stale(SUCCEEDED): %v %v", ids, err)
	}
	// Its idempotency key is free again; a kept job's is not.
	j1 := &jobstore.Job{ID: "again", Topic: "topic.a", Tenant: "acme", CreatedAt: boundT0, IdempotencyKey: "key1"}
	if id, created, err := m.Create(ctx, j1, nil); err != nil || !created || id != "again" {
		t.Errorf("key1 after e1's eviction: %s %v %v", id, created, err)
	}
	j3 := &jobstore.Job{ID: "again3", Topic: "topic.a", Tenant: "acme", CreatedAt: boundT0, IdempotencyKey: "key3"}
	if id, created, err := m.Create(ctx, j3, []byte("payload of e3")); err != nil || created || id != "e3" {
		t.Errorf("key3, e3 kept: %s %v %v", id, created, err)
	}
	// The id may be used again.
	boundJob(t, m, "e1", "")
	if got := kept(t, m, "e1"); len(got) != 1 {
		t.Error("e1 not created again")
	}
}

// TestMemoryBoundDLQ: a dead-lettered job counts against the bound as any
// ended job, and goes with its DLQ entry.
func TestMemoryBoundDLQ(t *testing.T) {
	ctx := context.Background()
	m := jobstore.NewMemory()
	m.SetBound(jobstore.Bound{MaxEnded: 2})
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("d%d", i)
		boundJob(t, m, id, "")
		if _, err := m.Transition(ctx, id, jobstore.Transition{To: jobstore.Failed, At: boundT0.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if err := m.AddDLQ(ctx, jobstore.DLQEntry{JobID: id, Tenant: "acme", Reason: "x", At: boundT0}); err != nil {
			t.Fatal(err)
		}
	}
	es, err := m.DLQ(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range es {
		ids = append(ids, e.JobID)
		if e.Job == nil {
			t.Errorf("the entry of %s without its job", e.JobID)
		}
	}
	if slices.Sort(ids); !slices.Equal(ids, []string{"d2", "d3"}) {
		t.Errorf("DLQ: %v, want d2 d3", ids)
	}
	if ok, err := m.RemoveDLQ(ctx, "d1"); err != nil || ok {
		t.Errorf("RemoveDLQ(d1): %v %v, want no entry", ok, err)
	}
}

// TestMemoryBoundBytes: a byte bound keeps the estimate of the ended jobs
// under it, and a large result pushes older jobs out.
func TestMemoryBoundBytes(t *testing.T) {
	m := jobstore.NewMemory()
	boundJob(t, m, "probe", "")
	end(t, m, "probe", 0, []byte("r"))
	_, one, _ := m.EndedJobs() // one small ended job's estimate
	if one < 500 || one > 8000 {
		t.Fatalf("one small job's estimate: %d bytes", one)
	}
	limit := 1<<20 + 40*one
	m.SetBound(jobstore.Bound{MaxEndedBytes: limit})
	var ids []string
	for i := 1; i <= 40; i++ {
		id := fmt.Sprintf("s%02d", i)
		ids = append(ids, id)
		boundJob(t, m, id, "")
		end(t, m, id, i, []byte("r"))
		if n, b, _ := m.EndedJobs(); b > limit {
			t.Fatalf("after %s: %d jobs of %d bytes, over %d", id, n, b, limit)
		}
	}
	if got := kept(t, m, append([]string{"probe"}, ids...)...); len(got) != 41 {
		t.Fatalf("under the bound, kept %d of 41", len(got))
	}
	boundJob(t, m, "big", "")
	end(t, m, "big", 60, bytes.Repeat([]byte("x"), 1<<20))
	n, b, ev := m.EndedJobs()
	if b > limit {
		t.Fatalf("%d jobs of %d bytes, over %d", n, b, limit)
	}
	got := kept(t, m, append([]string{"probe"}, ids...)...)
	// The oldest went: what is left is a tail of them.
	if len(got) == 41 || len(got) == 0 || got[len(got)-1] != "s40" || got[0] == "probe" || ev != int64(41-len(got)) {
		t.Fatalf("after a 1 MiB result: kept %v, %d evicted (%d jobs, %d bytes, limit %d, one %d)", got, ev, n, b, limit, one)
	}
	if kept(t, m, "big") == nil {
		t.Fatal("the big job went")
	}
	// A lower bound applies at once. The big job, larger than it alone,
	// goes too, after every older one (oldest ended first, always).
	m.SetBound(jobstore.Bound{MaxEndedBytes: 1 << 19})
	if n, b, _ := m.EndedJobs(); n != 0 || b != 0 {
		t.Fatalf("after SetBound(512 KiB): %d jobs, %d bytes", n, b)
	}
	if kept(t, m, "big") != nil {
		t.Fatal("the job larger than the bound is kept")
	}
}

// TestMemoryBoundSweep: jobs the retention sweeps leave the bound's count,
// and the bound and the retention together keep what each alone would.
func TestMemoryBoundSweep(t *testing.T) {
	ctx := context.Background()
	m := jobstore.NewMemory()
	m.SetRetention(time.Minute)
	m.SetBound(jobstore.Bound{MaxEnded: 4})
	for i := 1; i <= 6; i++ {
		id := fmt.Sprintf("j%d", i)
		boundJob(t, m, id, "")
		end(t, m, id, i*60, nil) // j1 at 1 min, ..., j6 at 6 min
	}
	if n, _, ev := m.EndedJobs(); n != 4 || ev != 2 {
		t.Fatalf("kept %d, evicted %d; want 4, 2", n, ev)
	}
	// At 5 min 30 s, j3 and j4 are past the minute's retention.
	if n, err := m.Sweep(ctx, boundT0.Add(5*time.Minute+30*time.Second)); err != nil || n != 2 {
		t.Fatalf("Sweep: %d %v, want 2", n, err)
	}
	if n, b, ev := m.EndedJobs(); n != 2 || ev != 2 || b <= 0 {
		t.Fatalf("after the sweep: kept %d (%d bytes), evicted %d; want 2, 2", n, b, ev)
	}
	// Room for two more without an eviction.
	for i := 7; i <= 8; i++ {
		id := fmt.Sprintf("j%d", i)
		boundJob(t, m, id, "")
		end(t, m, id, i*60, nil)
	}
	if got := kept(t, m, "j5", "j6", "j7", "j8"); len(got) != 4 {
		t.Fatalf("kept %v", got)
	}
	if _, _, ev := m.EndedJobs(); ev != 2 {
		t.Errorf("evicted %d, want still 2", ev)
	}
	m.SetRetention(0)
	if _, err := m.Sweep(ctx, boundT0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := m.EndedJobs(); n != 4 {
		t.Errorf("kept %d after a sweep without a retention", n)
	}
}

// TestMemoryBoundLarge runs many jobs through a bounded store: however
// many pass, the ended jobs kept and the creation index stay within the
// bound plus the live jobs.
func TestMemoryBoundLarge(t *testing.T) {
	ctx := context.Background()
	m := jobstore.NewMemory()
	const bound, total = 500, 5000
	m.SetBound(jobstore.Bound{MaxEnded: bound})
	var live []string
	for i := 0; i < total; i++ {
		id := fmt.Sprintf("j%05d", i)
		boundJob(t, m, id, "")
		if i%100 == 0 {
			live = append(live, id) // left RUNNING
			if _, err := m.Transition(ctx, id, jobstore.Transition{To: jobstore.Running, Via: jobstore.Scheduled, WorkerID: "w"}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		end(t, m, id, i, []byte("ok"))
		if n, _, _ := m.EndedJobs(); n > bound {
			t.Fatalf("after %d jobs, %d ended kept", i+1, n)
		}
	}
	if got := kept(t, m, live...); len(got) != len(live) {
		t.Fatalf("live kept: %d of %d", len(got), len(live))
	}
	p, err := m.List(ctx, jobstore.ListQuery{Limit: jobstore.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	n, _, _ := m.EndedJobs()
	if len(p.Jobs) > bound+len(live) || len(p.Jobs) < n {
		t.Errorf("listed %d, kept %d ended and %d live", len(p.Jobs), n, len(live))
	}
	// The newest ended are the ones kept.
	if kept(t, m, fmt.Sprintf("j%05d", total-1)) == nil {
		t.Error("the last job went")
	}
}
