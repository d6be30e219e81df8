package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
)

// Results too large for a message (over bus.InlineResultMax) do not go to
// the job store: the host sends them to the schedulers in parts
// (handleResultPart), which store them in the job's tenant's result
// bucket, WARD_RES_<tenant> (JetStream Object Store), and the scheduler
// that takes the result describes the object there (sealResult); the
// tenant's clients read them there (client.Get). Contexts too large for a
// message go the other way: the tenant stores them in its context bucket,
// WARD_CTX_<tenant>, and the schedulers serve them to the job's host
// (handleContext). Hosts write and read no tenant's bucket; tenants write
// their context bucket but configure no stream, so the schedulers create
// both of a tenant's buckets before its first job runs
// (ensureResultBucket, from admit) and when the tenant asks
// (handleBuckets).

const (
	// resultBucketTimeout bounds one try to create a tenant's result bucket.
	resultBucketTimeout = 5 * time.Second
	// resultBucketRetryMin and resultBucketRetryMax bound the wait before
	// another try at a bucket this replica failed to create (JetStream
	// starting, down or disabled): it doubles from the first to the second.
	// Meanwhile the tenant's small results go on as ever; its large ones
	// fail result_unavailable.
	resultBucketRetryMin = time.Second
	resultBucketRetryMax = 30 * time.Second
)

// objectStores are the tenants' object stores as a replica uses them: the
// contexts submitted by pointer (their sizes, the chunks served to the
// job's host), the result buckets it creates, the large results' parts it
// stores and seals, and the check of a result pointer into one. It holds
// the bus, the job store (to check a job's host and attempt) and the
// logger, nothing of the Scheduler's.
type objectStores struct {
	bus   *bus.Conn
	store jobstore.Store
	log   *slog.Logger

	objsOnce sync.Once // opens objs on first use
	objs     *bus.Objects
	objsErr  error

	resBuckets resultBuckets // the tenants whose result bucket exists
}

// resultBuckets remembers the tenants whose result bucket this replica
// made sure of, and those it failed to.
type resultBuckets struct {
	ready sync.Map // tenant -> struct{}: the bucket exists

	mu      sync.Mutex            // guards tries and failing; taken alone
	tries   map[string]*bucketTry // kept after success: one small entry a tenant
	failing map[string]*bucketTry // the last try failed: bucketLoop tries again
}

// bucketTry serializes the creation of one tenant's bucket.
type bucketTry struct {
	mu    sync.Mutex // held while creating; only resultBuckets.mu is taken under it
	fails int        // failed tries in a row (then the tenant is in failing); guarded by mu
	after time.Time  // no new try before; guarded by mu
}

// ensureResultBucket creates tenant's result bucket unless this replica
// did already: once per tenant, so the cost of a job is one map lookup. A
// tenant's first admission makes the first try, so that the bucket is
// there before its job runs (the tenant's admissions meanwhile wait for
// it too). A failure is logged, and bucketLoop tries again
// (retryResultBuckets), with a growing wait, until it succeeds; admissions
// then go on without waiting for it.
func (o *objectStores) ensureResultBucket(ctx context.Context, tenant string) {
	if tenant == "" {
		return
	}
	rb := &o.resBuckets
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
	_, failing := rb.failing[tenant]
	rb.mu.Unlock()
	if failing {
		return
	}
	try.mu.Lock()
	defer try.mu.Unlock()
	if try.fails == 0 {
		o.tryResultBucket(ctx, tenant, try)
	}
}

// tryResultBucket makes one try at tenant's bucket, try.mu held, and
// reports whether the bucket exists.
func (o *objectStores) tryResultBucket(ctx context.Context, tenant string, try *bucketTry) bool {
	rb := &o.resBuckets
	if _, ok := rb.ready.Load(tenant); ok {
		return true
	}
	err := func() error {
		if err := o.openObjects(); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, resultBucketTimeout)
		defer cancel()
		return o.objs.CreateTenantBuckets(ctx, tenant)
	}()
	rb.mu.Lock()
	defer rb.mu.Unlock()
	if err != nil {
		wait := min(resultBucketRetryMin<<min(try.fails, 8), resultBucketRetryMax)
		try.fails++
		try.after = time.Now().Add(wait)
		if rb.failing == nil {
			rb.failing = map[string]*bucketTry{}
		}
		rb.failing[tenant] = try
		o.log.Warn("result bucket not created: the tenant's results over the inline size fail result_unavailable until it is",
			"tenant", tenant, "bucket", bus.ResultBucketOf(tenant), "tries", try.fails, "next_try_in", wait, "err", err)
		return false
	}
	if try.fails > 0 {
		o.log.Info("result bucket created", "tenant", tenant, "bucket", bus.ResultBucketOf(tenant), "failed_tries", try.fails)
	}
	try.fails = 0
	delete(rb.failing, tenant)
	rb.ready.Store(tenant, struct{}{})
	return true
}

// handleBuckets makes sure of the asking tenant's context and result
// buckets, and answers once they exist (an empty StringValue) or with why
// not: a client asks before it stores its tenant's first large context,
// since a tenant may configure no stream itself (auth/perms.go).
func (o *objectStores) handleBuckets(ctx context.Context, msg *nats.Msg, _ *emptypb.Empty) {
	tenant := tenantOf(msg)
	reply := &wrapperspb.StringValue{}
	if tenant == "" {
		reply.Value = "name a tenant: sys.job.buckets.<tenant>"
	} else {
		o.ensureResultBucket(ctx, tenant)
		if _, ok := o.resBuckets.ready.Load(tenant); !ok {
			reply.Value = "the tenant's buckets " + bus.ContextBucketOf(tenant) + " and " + bus.ResultBucketOf(tenant) +
				" could not be created now (is JetStream up?); the scheduler tries again, ask again later"
		}
	}
	if err := o.bus.Reply(msg, reply); err != nil {
		o.log.Warn("buckets reply failed", "tenant", tenant, "err", err)
	}
}

// contextReplyMax bounds the bytes of one ContextReply: a message stays
// under NATS's max_payload (1 MiB by default) with its chunks of 128 KiB.
const contextReplyMax = 768 << 10

// openObjects opens the tenants' object stores (o.objs) on first use: the
// sizes of contexts submitted by pointer, the result buckets, the contexts
// served to hosts and the large results they send.
func (o *objectStores) openObjects() error {
	o.objsOnce.Do(func() { o.objs, o.objsErr = bus.NewObjects(o.bus) })
	return o.objsErr
}

// handleContext serves the context of a job dispatched to the asking host
// (the subject's), at the attempt it names, while the job is DISPATCHED or
// RUNNING there: its tenant stored it in its bucket, which no host may
// read itself, so a context is readable only by the host its job was
// dispatched to. Anything else is refused with its reason, and counted.
func (o *objectStores) handleContext(ctx context.Context, msg *nats.Msg, q *wardv1.ContextRequest) {
	worker := bus.WorkerOf(msg.Subject)
	reply := &wardv1.ContextReply{}
	job, err := o.store.Get(ctx, q.GetJobId())
	switch {
	case errors.Is(err, jobstore.ErrNotFound):
		reply.Error = "job " + q.GetJobId() + " not found"
	case err != nil:
		reply.Error = "job store unavailable"
		logStoreFailure(o.log, "context", q.GetJobId(), err)
	case job.WorkerID != worker || job.Attempt != int(q.GetAttempt()) || (job.State != jobstore.Dispatched && job.State != jobstore.Running):
		reply.Error = fmt.Sprintf("job %s attempt %d is not dispatched to %s", job.ID, q.GetAttempt(), worker)
		reportsRefused.WithLabelValues("context", string(reason.StaleResult)).Inc()
		o.log.Warn("host context request refused", "job_id", job.ID, "worker_id", worker, "attempt", q.GetAttempt(), "why", reply.Error)
	case !bus.IsObjectPtr(job.ContextPtr):
		reply.Error = "job " + job.ID + "'s context is not in its tenant's bucket: it travels in the ticket"
	default:
		if err := o.openObjects(); err != nil {
			reply.Error = err.Error()
			break
		}
		reply.Data, reply.Last, reply.Done, err = o.objs.ContextChunks(ctx, job.ContextPtr, job.PayloadSize, q.GetAfter(), q.GetOffset(), contextReplyMax)
		if err != nil {
			reply.Error = err.Error()
			if errors.Is(err, jetstream.ErrObjectNotFound) || errors.Is(err, bus.ErrTooLarge) || errors.Is(err, jetstream.ErrDigestMismatch) {
				reply.Code = string(reason.InputUnavailable)
			}
		}
	}
	if !hostReplyAllowed(o.log, "context", worker, msg) {
		return
	}
	if err := o.bus.Reply(msg, reply); err != nil {
		o.log.Warn("context reply failed", "job_id", q.GetJobId(), "worker_id", worker, "err", err)
	}
}

// hostReplyAllowed reports whether a host's request (kind) may be answered
// on its reply subject: in that host's own inbox (bus.ReportReplyAllowed).
// One that asks for its answer in another host's inbox or a tenant's is
// not answered there: logged and counted, forbidden.
func hostReplyAllowed(log *slog.Logger, kind, worker string, msg *nats.Msg) bool {
	if msg.Reply == "" || bus.ReportReplyAllowed(worker, msg.Reply) {
		return true
	}
	reportsRefused.WithLabelValues(kind+"_answer", string(reason.Forbidden)).Inc()
	log.Warn("answer not sent: the request's reply subject is another's inbox", "kind", kind, "worker_id", worker, "reply", msg.Reply)
	return false
}

// handleResultPart stores a part of the result of a job dispatched to the
// asking host (the subject's), at the attempt it names, while the job is
// DISPATCHED or RUNNING there, in the job's tenant's result bucket, under
// the name of that attempt's result (bus.PutResultPart): a host writes no
// tenant's bucket itself, so it can store the result of its own attempts
// and nothing else. A part refused for good says so with
// result_unavailable; a store failure is an error the host tries again.
func (o *objectStores) handleResultPart(ctx context.Context, msg *nats.Msg, q *wardv1.ResultPart) {
	worker := bus.WorkerOf(msg.Subject)
	reply := &wardv1.ResultPartReply{}
	refuse := func(why string) {
		reply.Error, reply.Code = why, string(reason.ResultUnavailable)
		reportsRefused.WithLabelValues("result_part", string(reason.ResultUnavailable)).Inc()
		o.log.Warn("host result part refused", "job_id", q.GetJobId(), "worker_id", worker, "attempt", q.GetAttempt(), "part", q.GetIndex(), "why", why)
	}
	job, err := o.store.Get(ctx, q.GetJobId())
	switch {
	case errors.Is(err, jobstore.ErrNotFound):
		refuse("job " + q.GetJobId() + " not found")
	case err != nil:
		reply.Error = "job store unavailable"
		logStoreFailure(o.log, "result_part", q.GetJobId(), err)
	case job.WorkerID != worker || job.Attempt != int(q.GetAttempt()) || (job.State != jobstore.Dispatched && job.State != jobstore.Running):
		refuse(fmt.Sprintf("job %s attempt %d is not running on %s", job.ID, q.GetAttempt(), worker))
	case q.GetIndex() >= bus.ResultPartsMax || len(q.GetData()) > bus.ResultPartMax || len(q.GetData()) == 0:
		refuse(fmt.Sprintf("part %d of %d bytes: a result is at most %d parts of 1 to %d bytes", q.GetIndex(), len(q.GetData()), bus.ResultPartsMax, bus.ResultPartMax))
	default:
		if err := o.openObjects(); err != nil {
			reply.Error = err.Error()
			break
		}
		if err := o.objs.PutResultPart(ctx, job.Tenant, job.ID, job.Attempt, int(q.GetIndex()), q.GetData()); err != nil {
			reply.Error = err.Error()
			o.log.Warn("host result part not stored: the host sends it again", "job_id", job.ID, "worker_id", worker, "part", q.GetIndex(), "err", err)
		}
	}
	if !hostReplyAllowed(o.log, "result_part", worker, msg) {
		return
	}
	if err := o.bus.Reply(msg, reply); err != nil {
		o.log.Warn("result part reply failed", "job_id", q.GetJobId(), "worker_id", worker, "err", err)
	}
}

// sealResult describes, in the job's tenant's result bucket, the result
// whose parts r's host sent (handleResultPart), before the move that ends
// the job: only for the job's current attempt on that host, so that no
// host describes another's result. It returns what is wrong with the
// result (the job then fails result_unavailable), or retry when the
// result cannot be settled now (the store or JetStream failed: the host
// sends it again). A result of an attempt that is no longer current is
// left to the move, which refuses it.
func (o *objectStores) sealResult(ctx context.Context, r *wardv1.JobResult, worker string, job *jobstore.Job) (why string, retry bool) {
	switch {
	case job == nil:
		return "", true // the job could not be read: nothing sealed, nothing settled
	case job.WorkerID != worker || job.Attempt != int(r.GetAttempt()) || (job.State != jobstore.Dispatched && job.State != jobstore.Running):
		return "", false
	}
	size, parts := r.GetResultSize(), int(r.GetResultParts())
	if size <= int64(bus.InlineResultMax) || size > bus.ResultMax || parts > bus.ResultPartsMax || int64(parts) < (size+bus.ResultPartMax-1)/bus.ResultPartMax {
		return fmt.Sprintf("a result of %d bytes in %d parts: one over %d bytes and at most %d, in parts of at most %d", size, parts, bus.InlineResultMax, bus.ResultMax, bus.ResultPartMax), false
	}
	if err := o.openObjects(); err != nil {
		o.log.Warn("result not sealed: the host sends it again", "job_id", job.ID, "err", err)
		return "", true
	}
	if _, err := o.objs.SealResult(ctx, job.Tenant, job.ID, job.Attempt, size, parts, r.GetResultDigest()); err != nil {
		o.log.Warn("result not sealed: the host sends it again", "job_id", job.ID, "err", err)
		return "", true
	}
	return "", false
}

// bucketLoop tries again, every second, the result buckets whose creation
// failed (retryResultBuckets). It is a loop of its own so that a try
// waiting on JetStream holds up nothing else.
func (o *objectStores) bucketLoop(lctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-lctx.Done():
			return
		case now := <-t.C:
			o.retryResultBuckets(lctx, now)
		}
	}
}

// retryResultBuckets tries again the buckets whose creation failed and
// whose wait is over. A round stops at its first
// failure: when JetStream is away, one try a round tells.
func (o *objectStores) retryResultBuckets(ctx context.Context, now time.Time) {
	rb := &o.resBuckets
	rb.mu.Lock()
	if len(rb.failing) == 0 {
		rb.mu.Unlock()
		return
	}
	due := make(map[string]*bucketTry, len(rb.failing))
	maps.Copy(due, rb.failing)
	rb.mu.Unlock()
	for tenant, try := range due {
		if ctx.Err() != nil {
			return
		}
		try.mu.Lock()
		ok := true
		if try.fails > 0 && !now.Before(try.after) {
			ok = o.tryResultBucket(ctx, tenant, try)
		}
		try.mu.Unlock()
		if !ok {
			return
		}
	}
}

// resultPtrProblem checks where a host's succeeded result is: in the
// message itself (no pointer), at most bus.InlineResultMax; or at the
// object of this attempt in the job's tenant's result bucket
// (bus.ResultObjectPtr), so that a host cannot point a tenant at an object
// of another tenant's, or of another job; or, from a host of an earlier
// version that stored it itself, at the job's own result blob
// (jobstore.ResultPtr) and nowhere else in the job store, so that no host
// can point a tenant at another job's context or result. It returns what
// is wrong, or "" — also when the job cannot be read, which the
// transition then deals with — and the job, when it read it (an object
// pointer).
func (o *objectStores) resultPtrProblem(ctx context.Context, r *wardv1.JobResult) (*jobstore.Job, string) {
	ptr := r.GetResultPtr()
	switch {
	case ptr == "":
		if n := len(r.GetResult()); n > bus.InlineResultMax {
			return nil, fmt.Sprintf("a result of %d bytes in the message, more than %d (a larger one goes to the tenant's result bucket)", n, bus.InlineResultMax)
		}
		return nil, ""
	case ptr == jobstore.ResultPtr(r.GetJobId()) && len(r.GetResult()) == 0:
		return nil, ""
	case !bus.IsObjectPtr(ptr):
		return nil, fmt.Sprintf("result pointer %s is not job %s's result", ptr, r.GetJobId())
	}
	owner, err := bus.ResultOwner(ptr)
	if err != nil {
		return nil, err.Error()
	}
	if !bus.IsDigest(r.GetResultDigest()) {
		return nil, fmt.Sprintf("result %s comes with no digest (%q): its readers could not tell it from another host's rewrite", ptr, r.GetResultDigest())
	}
	if want := bus.ResultObjectPtr(owner, r.GetJobId(), int(r.GetAttempt())); ptr != want {
		return nil, fmt.Sprintf("result pointer %s is not job %s attempt %d's (%s)", ptr, r.GetJobId(), r.GetAttempt(), want)
	}
	job, err := o.store.Get(ctx, r.GetJobId())
	if err != nil {
		return nil, ""
	}
	if owner != job.Tenant {
		return job, fmt.Sprintf("result pointer %s is in another tenant's bucket than job %s's", ptr, job.ID)
	}
	return job, ""
}

// isObjectResult reports whether job's result is in its tenant's result
// bucket, which clients read themselves, rather than in the job store.
func isObjectResult(job *jobstore.Job) bool { return bus.IsObjectPtr(job.ResultPtr) }
