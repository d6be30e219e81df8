package assembly_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/scheduler"
	"github.com/ward-run/ward/internal/testing/redistest"
)

// TestRedisCluster runs every part on a store on a 3-master Redis Cluster
// (jobstore.Open, redis+cluster://: the Sharded store): jobs of six
// tenants, in six shards, run at once on one host (4 slots: some wait in
// the pool's queue) and succeed with their whole, verified event log; a job that cannot be placed is dead-lettered with its
// reason; a listing of every tenant's jobs sees them all.
func TestRedisCluster(t *testing.T) {
	store, err := jobstore.Open(redistest.StartCluster(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e := start(t, assembly.Options{Store: store, Host: assembly.HostConfig{Modules: echoModules(t), MaxParallel: 4}})
	const tenants, each = 6, 4
	var wg sync.WaitGroup
	recs := make(chan *wardv1.JobRecord, tenants*each)
	for i := range tenants * each {
		wg.Go(func() {
			req := &wardv1.JobRequest{Topic: "job.echo", TenantId: fmt.Sprintf("tenant-%d", i%tenants), Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))}
			_, rec := e.run(t, req)
			recs <- rec
		})
	}
	wg.Wait()
	close(recs)
	for rec := range recs {
		// Five moves, and a wait in the pool's queue for some (4 slots).
		if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || len(rec.GetEvents()) < 5 {
			t.Errorf("job %s of %s: %s with %d events (%s)", rec.GetJobId(), rec.GetTenantId(), rec.GetState(), len(rec.GetEvents()), rec.GetErrorMessage())
		}
		if err := jobstore.VerifyEvents(scheduler.StoredEvents(rec), rec.GetEventsChain()); err != nil {
			t.Errorf("job %s: its event log: %v", rec.GetJobId(), err)
		}
	}
	_, rec := e.run(t, &wardv1.JobRequest{Topic: "job.unknown", TenantId: "tenant-1"})
	if rec.GetState() != wardv1.JobState_JOB_STATE_FAILED || rec.GetReason() != "no_pool_mapping" {
		t.Fatalf("unplaceable job: %s/%s", rec.GetState(), rec.GetReason())
	}
	dlq, err := e.client.DLQ(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(dlq) != 1 || dlq[0].GetJobId() != rec.GetJobId() || dlq[0].GetReason() != "no_pool_mapping" {
		t.Errorf("DLQ %v, want the unplaceable job", dlq)
	}
	seen := 0
	q := &wardv1.ListJobsRequest{Limit: 5}
	for {
		page, err := e.client.ListJobs(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		seen += len(page.GetJobs())
		if page.GetNextCursor() == "" {
			break
		}
		q.Cursor = page.GetNextCursor()
	}
	if seen != tenants*each+1 {
		t.Errorf("listing every tenant's jobs, 5 a page, saw %d, want %d", seen, tenants*each+1)
	}
}

// TestOwnedShards runs two scheduler replicas on a logged store of four
// shards with owners (log=NAME&shards=4): each owns two, and every
// message about a tenant's jobs reaches its shard's owner whichever
// replica the queue group hands it to (submissions, the host's results,
// gets, cancels); an admin's listing, the DLQ and the counts are gathered
// from both. Jobs of eight tenants succeed with their whole, verified
// event log, each in its owner's store alone. Then one replica stops:
// the other takes its shards over, with their jobs, and serves them.
func TestOwnedShards(t *testing.T) {
	url := redistest.Start(t) + "?log=owned&shards=4&lease=600ms"
	ctx := context.Background()
	storeA, err := jobstore.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { storeA.Close() })
	e := start(t, assembly.Options{Store: storeA, Host: assembly.HostConfig{Modules: echoModules(t), MaxParallel: 4}})
	storeB, err := jobstore.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	bundle := *e.opts.Scheduler.Config
	if bundle.Pools, err = config.LoadPools(""); err != nil {
		t.Fatal(err)
	}
	b, err := assembly.StartScheduler(ctx, assembly.SchedulerConfig{NATSURL: e.natsURL, Store: storeB, Kernel: e.n.Safety.Kernel(),
		Config: &bundle, Creds: e.creds.Scheduler, DispatchSecret: e.creds.DispatchSecret})
	if err != nil {
		t.Fatal(err)
	}
	stopB := sync.OnceFunc(func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := b.Shutdown(sctx); err != nil {
			t.Errorf("replica b: %v", err)
		}
		if err := storeB.Close(); err != nil {
			t.Errorf("replica b's store: %v", err)
		}
	})
	t.Cleanup(stopB)
	a, bo := storeA.(*jobstore.Owned), storeB.(*jobstore.Owned)
	checkFor(t, 15*time.Second, func() bool { return len(a.Owned()) == 2 && len(bo.Owned()) == 2 })
	// ward scheduler ls says who owns what.
	sts, err := e.client.Schedulers(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var owned []int32
	for _, st := range sts {
		if st.GetShardCount() != 4 || len(st.GetShards()) != 2 {
			t.Errorf("replica %s reports shards %v of %d, want two of 4", st.GetSchedulerId(), st.GetShards(), st.GetShardCount())
		}
		owned = append(owned, st.GetShards()...)
	}
	if slices.Sort(owned); !slices.Equal(owned, []int32{0, 1, 2, 3}) {
		t.Errorf("the replicas report shards %v, want each of 0-3 once", owned)
	}

	const tenants, each = 8, 3
	var wg sync.WaitGroup
	recs := make(chan *wardv1.JobRecord, tenants*each)
	for i := range tenants * each {
		wg.Go(func() {
			_, rec := e.run(t, &wardv1.JobRequest{Topic: "job.echo", TenantId: fmt.Sprintf("tenant-%d", i%tenants), Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))})
			recs <- rec
		})
	}
	wg.Wait()
	close(recs)
	var ids []string
	for rec := range recs {
		if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
			t.Errorf("job %s of %s: %s (%s)", rec.GetJobId(), rec.GetTenantId(), rec.GetState(), rec.GetErrorMessage())
		}
		if err := jobstore.VerifyEvents(scheduler.StoredEvents(rec), rec.GetEventsChain()); err != nil {
			t.Errorf("job %s: its event log: %v", rec.GetJobId(), err)
		}
		owner, other := a, bo
		if !a.Owns(a.ShardOf(rec.GetTenantId())) {
			owner, other = bo, a
		}
		if _, err := owner.Get(ctx, rec.GetJobId()); err != nil {
			t.Errorf("job %s is not in its shard's owner's store: %v", rec.GetJobId(), err)
		}
		if _, err := other.Get(ctx, rec.GetJobId()); !errors.Is(err, jobstore.ErrNotFound) {
			t.Errorf("job %s is in the other replica's store too: %v", rec.GetJobId(), err)
		}
		ids = append(ids, rec.GetJobId())
	}

	// Both replicas took submissions from the queue group and sent on
	// what was the other's; the host sent each result to its job's owner
	// itself (the shard its dispatch names), so none was forwarded.
	if n := counterSum(t, "ward_scheduler_forwarded_total", "subject", "sys.job.submit"); n == 0 {
		t.Error("no submission was forwarded to its shard's owner")
	}
	if n := counterSum(t, "ward_scheduler_forwarded_total", "subject", "sys.job.result"); n != 0 {
		t.Errorf("%v results were forwarded: the host should send them to the owner", n)
	}

	// Gathered: the DLQ, a listing of every tenant's jobs 5 a page, the counts.
	_, rec := e.run(t, &wardv1.JobRequest{Topic: "job.unknown", TenantId: "tenant-3"})
	if rec.GetState() != wardv1.JobState_JOB_STATE_FAILED || rec.GetReason() != "no_pool_mapping" {
		t.Fatalf("unplaceable job: %s/%s", rec.GetState(), rec.GetReason())
	}
	dlq, err := e.client.DLQ(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(dlq) != 1 || dlq[0].GetJobId() != rec.GetJobId() {
		t.Errorf("DLQ %v, want the unplaceable job", dlq)
	}
	listed := map[string]bool{}
	q := &wardv1.ListJobsRequest{Limit: 5}
	for {
		page, err := e.client.ListJobs(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page.GetJobs() {
			if listed[j.GetJobId()] {
				t.Errorf("job %s listed twice", j.GetJobId())
			}
			listed[j.GetJobId()] = true
		}
		if page.GetNextCursor() == "" {
			break
		}
		q.Cursor = page.GetNextCursor()
	}
	if len(listed) != tenants*each+1 {
		t.Errorf("listing every tenant's jobs, 5 a page, saw %d, want %d", len(listed), tenants*each+1)
	}
	stats, err := e.client.Stats(ctx, 0, 0, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if n := stats.GetStates()["SUCCEEDED"]; n != tenants*each {
		t.Errorf("stats: %d SUCCEEDED, want %d (%v)", n, tenants*each, stats.GetStates())
	}

	// A tenant's client, once a submission's reply named its shard, sends
	// its gets, listings and cancels straight to the shard's owner: none
	// is forwarded, whichever replica would have taken it.
	tc := e.tenantClient(t, "tenant-5")
	sub, err := tc.Submit(ctx, &wardv1.JobRequest{Topic: "job.echo", Payload: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	forwardedReads := func() float64 {
		return counterSum(t, "ward_scheduler_forwarded_total", "subject", "sys.job.get") +
			counterSum(t, "ward_scheduler_forwarded_total", "subject", "sys.job.list") +
			counterSum(t, "ward_scheduler_forwarded_total", "subject", "sys.job.cancel")
	}
	reads := forwardedReads()
	for range 8 {
		if _, err := tc.Get(ctx, sub.GetJobId(), false); err != nil {
			t.Fatalf("tenant-5's get of its job: %v", err)
		}
	}
	if page, err := tc.ListJobs(ctx, &wardv1.ListJobsRequest{Limit: 10}); err != nil || len(page.GetJobs()) != each+1 {
		t.Errorf("tenant-5's listing: %d jobs (%v), want %d", len(page.GetJobs()), err, each+1)
	}
	if _, err := tc.Cancel(ctx, "no-such-job", "a tenant's cancel"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("tenant-5's cancel of a job it does not have: %v, want not found", err)
	}
	if n := forwardedReads() - reads; n != 0 {
		t.Errorf("%v of a tenant's gets, listings and cancels were forwarded: its client should send them to the owner", n)
	}

	// An admin's cancel is asked of every shard: the owner of the job's
	// shard records it, and where no shard has the job the replica that
	// gathered the answers does; each once.
	if _, err := e.client.Cancel(ctx, ids[0], "audited"); err == nil {
		t.Errorf("the cancel of ended job %s succeeded", ids[0])
	}
	if _, err := e.client.Cancel(ctx, "no-such-job", "audited too"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("the cancel of a job no shard has: %v, want not found", err)
	}
	js, err := jetstream.New(e.client.Bus().NATS())
	if err != nil {
		t.Fatal(err)
	}
	var cancels []audit.Entry
	checkFor(t, 10*time.Second, func() bool {
		cancels, err = audit.List(ctx, js, audit.Filter{Action: audit.JobCancel, Limit: 100})
		return err == nil && len(cancels) >= 2
	})
	recorded := map[string][]audit.Entry{}
	for _, x := range cancels {
		recorded[x.Target] = append(recorded[x.Target], x)
	}
	if r := recorded[ids[0]]; len(r) != 1 || r[0].Detail["state"] != "SUCCEEDED" || r[0].Detail["reason"] != "audited" {
		t.Errorf("the cancel of ended job %s is recorded as %+v, want once, with its state", ids[0], r)
	}
	if r := recorded["no-such-job"]; len(r) != 1 || r[0].Detail["result"] != "not found" || r[0].Detail["reason"] != "audited too" {
		t.Errorf("the cancel of a job no shard has is recorded as %+v, want once, not found", r)
	}

	// The client learnt each tenant's shard from a reply: its submissions
	// now go straight to the owner, none forwarded.
	before := counterSum(t, "ward_scheduler_forwarded_total", "subject", "sys.job.submit")
	for i := range tenants {
		_, rec := e.run(t, &wardv1.JobRequest{Topic: "job.echo", TenantId: fmt.Sprintf("tenant-%d", i), Payload: []byte(`{}`)})
		if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
			t.Errorf("tenant-%d's job: %s (%s)", i, rec.GetState(), rec.GetErrorMessage())
		}
	}
	if after := counterSum(t, "ward_scheduler_forwarded_total", "subject", "sys.job.submit"); after != before {
		t.Errorf("%v submissions forwarded after the client learnt the shards", after-before)
	}

	// b stops: a takes its shards over, with their jobs, and serves them.
	stopB()
	checkFor(t, 15*time.Second, func() bool { return len(a.Owned()) == 4 })
	for _, id := range ids {
		if got, err := e.client.Get(ctx, id, false); err != nil || got.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
			t.Errorf("after the takeover, job %s: %v %v", id, got.GetState(), err)
		}
	}
	for i := range tenants {
		_, rec := e.run(t, &wardv1.JobRequest{Topic: "job.echo", TenantId: fmt.Sprintf("tenant-%d", i), Payload: []byte(`{}`)})
		if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
			t.Errorf("tenant-%d's job after the takeover: %s (%s)", i, rec.GetState(), rec.GetErrorMessage())
		}
	}
}

// counterSum is the sum of the counter's series in the default registry
// whose label has the value.
func counterSum(t *testing.T, name, label, value string) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == label && l.GetValue() == value {
						sum += m.GetCounter().GetValue()
					}
				}
			}
		}
	}
	return sum
}

// TestOwnedShardWithoutOwner: a shard nobody owns (its owner gave it up
// and no member has taken it yet) answers at once: a submission of its
// tenant fails with no responders (the client asks again until its
// context ends), an admin's
// listing says that one shard of two did not answer and lists the other's
// jobs, and the other shard's tenants go on.
func TestOwnedShardWithoutOwner(t *testing.T) {
	url := redistest.Start(t)
	ctx := context.Background()
	// A second member that takes no shard: the scheduler's share is one
	// of the two, and with a 30 s lease it leaves the other free for a
	// minute and a half (three rounds of a third of a lease).
	rc := redisClientFor(t, url)
	if err := rc.ZAdd(ctx, "ward:log:{gap}:members", redis.Z{Score: float64(time.Now().Add(time.Hour).UnixMilli()), Member: "idle"}).Err(); err != nil {
		t.Fatal(err)
	}
	store, err := jobstore.Open(url + "?log=gap&shards=2&lease=30s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e := start(t, assembly.Options{Store: store, Host: assembly.HostConfig{Modules: echoModules(t), MaxParallel: 4}})
	o := store.(*jobstore.Owned)
	if got := o.Owned(); len(got) != 1 || got[0] != 0 {
		t.Fatalf("owns %v, want [0]", got)
	}
	tenantOf := func(shard int) string {
		for k := 0; ; k++ {
			if tn := fmt.Sprintf("t%d", k); o.ShardOf(tn) == shard {
				return tn
			}
		}
	}
	_, rec := e.run(t, &wardv1.JobRequest{Topic: "job.echo", TenantId: tenantOf(0), Payload: []byte(`{}`)})
	if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("shard 0's tenant: %s (%s)", rec.GetState(), rec.GetErrorMessage())
	}
	// The client asks again for as long as its context lets it
	// (Options.SubmitRetry), then says so.
	subCtx, subCancel := context.WithTimeout(ctx, time.Second)
	_, err = e.client.Submit(subCtx, &wardv1.JobRequest{Topic: "job.echo", TenantId: tenantOf(1)})
	subCancel()
	if !errors.Is(err, bus.ErrNoResponders) {
		t.Errorf("a submission to the shard with no owner: %v, want no responders", err)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	page, err := e.client.ListJobs(sctx, &wardv1.ListJobsRequest{})
	if err == nil {
		err = errors.New(page.GetError())
	}
	if len(page.GetJobs()) != 1 || page.GetJobs()[0].GetJobId() != rec.GetJobId() || !strings.Contains(err.Error(), "1 of 2 shards did not answer") {
		t.Errorf("the listing: %d jobs, %v; want shard 0's job and that 1 of 2 shards did not answer", len(page.GetJobs()), err)
	}
}

func redisClientFor(t *testing.T, url string) redis.UniversalClient {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
