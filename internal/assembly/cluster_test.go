package assembly_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
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
