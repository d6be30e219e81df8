package scheduler

import (
	"context"
	"fmt"
	"sync"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/bus"
	"github.com/ward-run/ward/jobstore"
)

// Results too large for a message (over bus.InlineResultMax) do not go to
// the job store: the host stores them in the job's tenant's result bucket,
// WARD_RES_<tenant> (JetStream Object Store), and reports the pointer; the
// tenant's clients read them there (client.Get). Hosts may write in the
// buckets but not create streams, so the schedulers create a tenant's
// bucket before its first job runs (ensureResultBucket, from admit).

const (
	// resultBucketTimeout bounds the creation of a tenant's result bucket.
	resultBucketTimeout = 5 * time.Second
	// resultBucketRetry is how long a replica waits before it tries again
	// to create a bucket it failed to create (JetStream down or disabled):
	// meanwhile the tenant's small results go on as ever, its large ones
	// fail result_unavailable.
	resultBucketRetry = 30 * time.Second
)

// resultBuckets remembers the tenants whose result bucket this replica
// made sure of.
type resultBuckets struct {
	ready sync.Map // tenant -> struct{}: the bucket exists

	mu    sync.Mutex            // guards tries; taken alone
	tries map[string]*bucketTry // kept after success: one small entry a tenant
}

// bucketTry serializes the creation of one tenant's bucket.
type bucketTry struct {
	mu    sync.Mutex // held while creating; no other lock of the scheduler is taken under it
	after time.Time  // no new try before
}

// ensureResultBucket creates tenant's result bucket unless this
// replica did already: once per tenant, so the cost of a job is one map
// lookup. A failure is logged and tried again resultBucketRetry later; the
// job goes on.
func (s *Scheduler) ensureResultBucket(ctx context.Context, tenant string) {
	if tenant == "" {
		return
	}
	rb := &s.resBuckets
	if _, ok := rb.ready.Load(tenant); ok {
		return
	}
	rb.mu.Lock()
	if rb.tries == nil {
		rb.tries = map[string]*bucketTry{}
	}
	try := rb.tries[tenant]
	if try == nil {
		try = &bucketTry{}
		rb.tries[tenant] = try
	}
	rb.mu.Unlock()

	try.mu.Lock()
	defer try.mu.Unlock()
	if _, ok := rb.ready.Load(tenant); ok || time.Now().Before(try.after) {
		return
	}
	err := func() error {
		s.objsOnce.Do(func() { s.objs, s.objsErr = bus.NewObjects(s.cfg.Bus) })
		if s.objsErr != nil {
			return s.objsErr
		}
		ctx, cancel := context.WithTimeout(ctx, resultBucketTimeout)
		defer cancel()
		return s.objs.CreateResultBucket(ctx, tenant)
	}()
	if err != nil {
		try.after = time.Now().Add(resultBucketRetry)
		s.log.Warn("result bucket not created: the tenant's results over the inline size will fail result_unavailable",
			"tenant", tenant, "bucket", bus.ResultBucketOf(tenant), "err", err)
		return
	}
	rb.ready.Store(tenant, struct{}{})
}

// resultPtrProblem checks the object pointer a host reports for a job's
// result: it must be the one of this attempt in the job's tenant's result
// bucket (bus.ResultObjectPtr), so that a host cannot point a tenant at an
// object of another tenant's, or of another job. It returns what is wrong,
// or "" — also when the job cannot be read, which the transition then
// deals with.
func (s *Scheduler) resultPtrProblem(ctx context.Context, r *wardv1.JobResult) string {
	ptr := r.GetResultPtr()
	owner, err := bus.ResultOwner(ptr)
	if err != nil {
		return err.Error()
	}
	if want := bus.ResultObjectPtr(owner, r.GetJobId(), int(r.GetAttempt())); ptr != want {
		return fmt.Sprintf("result pointer %s is not job %s attempt %d's (%s)", ptr, r.GetJobId(), r.GetAttempt(), want)
	}
	job, err := s.cfg.Store.Get(ctx, r.GetJobId())
	if err != nil {
		return ""
	}
	if owner != job.Tenant {
		return fmt.Sprintf("result pointer %s is in another tenant's bucket than job %s's", ptr, job.ID)
	}
	return ""
}

// isObjectResult reports whether job's result is in its tenant's result
// bucket, which clients read themselves, rather than in the job store.
func isObjectResult(job *jobstore.Job) bool { return bus.IsObjectPtr(job.ResultPtr) }
