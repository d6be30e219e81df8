package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/version"
)

// queries is the read side of a replica: jobs (get, list), the DLQ (list,
// drop), the replica's status, the store's counts, and workflow runs (get,
// list). It holds only what it reads: the job store, the bus, the live
// hosts, the settings in force, and views of the replica's state.
type queries struct {
	id       string // the replica's
	log      *slog.Logger
	store    jobstore.Store
	bus      *bus.Conn
	hosts    *Hosts
	admin    *admins          // a DLQ drop is an admin's (admin.go)
	settings func() *settings // the configuration in force
	// The replica's state, as its status tells it.
	mode    func() Mode
	started func() time.Time
	leader  func() bool
	// workflows names the workflow definitions in force.
	workflows func() []string
}

// handleGet answers sys.job.get.<tenant>: clients never open the store
// themselves, and a tenant sees its own jobs only (another's is "not
// found").
func (qs *queries) handleGet(ctx context.Context, msg *nats.Msg, q *wardv1.GetJobRequest) {
	reply := &wardv1.GetJobReply{}
	job, err := jobstore.GetFor(ctx, qs.store, q.GetJobId(), tenantOf(msg))
	switch {
	case errors.Is(err, jobstore.ErrNotFound):
		reply.Error = "job " + q.GetJobId() + " not found"
	case err != nil:
		reply.Error = "job store unavailable"
		logStoreFailure(qs.log, "get", q.GetJobId(), err)
	default:
		rec := Record(job)
		// The module's log of the attempt that ended the job: a get's
		// alone, never a list's or the DLQ's (Record leaves it out).
		rec.Log, rec.LogTruncated = job.Log, job.LogTruncated
		events, err := qs.store.Events(ctx, job.ID)
		if err != nil {
			logStoreFailure(qs.log, "events", job.ID, err)
		}
		for _, e := range events {
			rec.Events = append(rec.Events, &wardv1.JobEvent{JobId: job.ID, State: stateEnum(e.State),
				AtUnixMs: e.At.UnixMilli(), Reason: e.Reason, Message: e.Message, WorkerId: e.WorkerID, Chain: e.Chain})
		}
		// A result in the tenant's result bucket (one too large for a
		// message) is not read here: the client reads it by its pointer.
		if q.GetIncludeResult() && job.ResultPtr != "" && !isObjectResult(job) {
			if rec.Result, err = qs.store.Blob(ctx, job.ResultPtr); err != nil {
				reply.Error = "result unavailable: " + err.Error()
			}
		}
		// The context as submitted, for its tenant (or an admin): the
		// job store's blob; one by pointer its reader reads there.
		if q.GetIncludeContext() && job.ContextPtr != "" && !bus.IsObjectPtr(job.ContextPtr) {
			if rec.Context, err = qs.store.Blob(ctx, job.ContextPtr); err != nil && !errors.Is(err, jobstore.ErrNotFound) {
				logStoreFailure(qs.log, "context", job.ID, err)
			}
		}
		reply.Job = rec
		if q.GetIncludeLive() && (job.State == jobstore.Running || job.State == jobstore.Dispatched) {
			qs.addLive(ctx, reply, job)
		}
		qs.fitReply(reply)
	}
	if err := qs.bus.Reply(msg, reply); err != nil {
		// The client waits for an answer that will not come: say why.
		qs.log.Warn("get reply failed", "job_id", q.GetJobId(), "bytes", proto.Size(reply), "err", err)
	}
}

// addLive puts what the job's running attempt streamed and reported so far
// in reply, as its host sent them: progress reports, then the chunks in
// seq order.
func (qs *queries) addLive(ctx context.Context, reply *wardv1.GetJobReply, job *jobstore.Job) {
	l, err := qs.store.Live(ctx, job.ID)
	if err != nil {
		logStoreFailure(qs.log, "live", job.ID, err)
		return
	}
	if l.Attempt != job.Attempt {
		return // notes of another attempt: none of this one's yet
	}
	for _, p := range l.Progress {
		reply.Live = append(reply.Live, &wardv1.JobProgress{JobId: job.ID, WorkerId: job.WorkerID, Kind: wardv1.JobProgress_KIND_PROGRESS,
			Percent: int32(p.Percent), Message: p.Message, SentAtUnixMs: p.At.UnixMilli(), Attempt: int32(l.Attempt)})
	}
	for _, c := range l.Output {
		reply.Live = append(reply.Live, &wardv1.JobProgress{JobId: job.ID, WorkerId: job.WorkerID, Kind: wardv1.JobProgress_KIND_OUTPUT,
			Seq: c.Seq, Output: c.Data, Attempt: int32(l.Attempt)})
	}
	reply.LiveTruncated = l.Truncated
}

// fitReply keeps a reply within what the NATS server accepts in a message
// (max_payload): a publish over it fails, and the client would wait for
// nothing. A result too large leaves the reply with an error that says so
// (hosts store results over bus.InlineResultMax by pointer, so only one
// written before they did, or by a host that does not, comes here); the
// event log goes too if the record is still too large, then the module's
// log.
func (qs *queries) fitReply(reply *wardv1.GetJobReply) {
	limit := qs.bus.NATS().MaxPayload()
	if limit <= 0 || int64(proto.Size(reply)) <= limit {
		return
	}
	rec := reply.GetJob()
	// A running job's notes first: its oldest chunks go until it fits.
	for len(reply.GetLive()) > 0 && int64(proto.Size(reply)) > limit {
		reply.Live, reply.LiveTruncated = reply.Live[1:], true
	}
	if int64(proto.Size(reply)) <= limit {
		return
	}
	if n := len(rec.GetContext()); n > 0 {
		// Asked for beside the record: the record goes without it.
		rec.Context = nil
		if int64(proto.Size(reply)) <= limit {
			return
		}
	}
	if n := len(rec.GetResult()); n > 0 {
		rec.Result = nil
		reply.Error = fmt.Sprintf("the result of job %s, %d bytes in the job store (%s), is too large for a reply (the NATS server takes messages of %d bytes at most)",
			rec.GetJobId(), n, rec.GetResultPtr(), limit)
		qs.log.Warn("result too large for a reply", "job_id", rec.GetJobId(), "bytes", n, "max_payload", limit)
		if int64(proto.Size(reply)) <= limit {
			return
		}
	}
	if n := len(rec.GetEvents()); n > 0 {
		rec.Events = nil
		msg := fmt.Sprintf("the event log of job %s (%d events) is too large for a reply", rec.GetJobId(), n)
		if reply.Error != "" {
			msg = reply.Error + "; " + msg
		}
		reply.Error = msg
		if int64(proto.Size(reply)) <= limit {
			return
		}
	}
	if n := len(rec.GetLog()); n > 0 {
		rec.Log = nil
		msg := fmt.Sprintf("the log of job %s (%d bytes) is too large for a reply", rec.GetJobId(), n)
		if reply.Error != "" {
			msg = reply.Error + "; " + msg
		}
		reply.Error = msg
	}
}

// handleList answers sys.job.list.<tenant> with a page of the tenant's
// jobs (every tenant's, or the request's tenant's, for an admin on
// sys.job.list._all), newest first, and the cursor of the next page: one
// bounded Store.List call (jobstore.ListScanBudget index entries at most).
// A page that would be over the NATS max payload is cut, and its cursor
// continues after the last job it keeps.
func (qs *queries) handleList(ctx context.Context, msg *nats.Msg, q *wardv1.ListJobsRequest) {
	reply := &wardv1.ListJobsReply{}
	lq, why := listQuery(tenantOf(msg), q)
	if why != "" {
		reply.Error = why
	} else {
		page, err := qs.store.List(ctx, lq)
		switch {
		case errors.Is(err, jobstore.ErrBadCursor):
			reply.Error = "bad cursor: pass the next_cursor of the previous page, with the same state filter"
		case err != nil:
			reply.Error = "job store unavailable"
			logStoreFailure(qs.log, "list", "", err)
		default:
			reply.Jobs = make([]*wardv1.JobRecord, len(page.Jobs))
			for i, j := range page.Jobs {
				reply.Jobs[i] = Record(j)
			}
			reply.NextCursor = page.Next
			qs.fitList(reply, page)
			if _, ok := gatheredShard(ctx); ok {
				// for the gatherer's merge (mergeList)
				reply.Cursors = page.Cursors()[:len(reply.Jobs)]
			}
		}
	}
	if err := qs.bus.Reply(msg, reply); err != nil {
		qs.log.Warn("list reply failed", "bytes", proto.Size(reply), "err", err)
	}
}

// listQuery is the store's query for q on tenant's subject ("": an
// admin's, which may name a tenant), or why q is refused. A tenant lists
// its own jobs whatever q says.
func listQuery(tenant string, q *wardv1.ListJobsRequest) (jobstore.ListQuery, string) {
	lq := jobstore.ListQuery{Tenant: tenant, Topic: q.GetTopic(), Worker: q.GetWorkerId(), Cursor: q.GetCursor(), Limit: int(q.GetLimit())}
	if tenant == "" {
		lq.Tenant = q.GetTenant()
	}
	switch {
	case lq.Limit < 0:
		lq.Limit = 0 // the default, as 0
	case lq.Limit > jobstore.MaxListLimit:
		lq.Limit = jobstore.MaxListLimit
	}
	if st := q.GetState(); st != wardv1.JobState_JOB_STATE_UNSPECIFIED {
		lq.State = jobstore.State(strings.TrimPrefix(st.String(), "JOB_STATE_"))
		if stateEnum(lq.State) != st {
			return lq, fmt.Sprintf("unknown state %d", st)
		}
	}
	since, until := q.GetSinceUnixMs(), q.GetUntilUnixMs()
	switch {
	case since < 0 || until < 0:
		return lq, "since_unix_ms and until_unix_ms may not be negative"
	case since > 0 && until > 0 && until <= since:
		return lq, fmt.Sprintf("until_unix_ms %d is not after since_unix_ms %d", until, since)
	}
	if since > 0 {
		lq.Since = time.UnixMilli(since)
	}
	if until > 0 {
		lq.Until = time.UnixMilli(until)
	}
	return lq, ""
}

// fitList keeps a list reply within what the NATS server accepts in a
// message (max_payload), as fitReply does a get's: it keeps the first jobs
// that fit and sets the cursor after the last of them, so the caller pages
// on instead of waiting for a reply that cannot be sent. A job too large
// for a reply on its own is left out, with an error that names it, and
// the cursor goes past it.
func (qs *queries) fitList(reply *wardv1.ListJobsReply, page jobstore.ListPage) {
	limit := qs.bus.NATS().MaxPayload()
	if limit <= 0 || int64(proto.Size(reply)) <= limit {
		return
	}
	// Room for the reply's other fields: the error and a cursor.
	const slack = 1024
	size, keep := int64(proto.Size(&wardv1.ListJobsReply{NextCursor: reply.GetNextCursor()}))+slack, 0
	for _, rec := range reply.GetJobs() {
		n := int64(proto.Size(rec)) + 1 + int64(protowire.SizeVarint(uint64(proto.Size(rec))))
		if size+n > limit {
			break
		}
		size += n
		keep++
	}
	if keep == 0 {
		reply.Error = fmt.Sprintf("job %s is too large for a list reply (the NATS server takes messages of %d bytes at most): get it alone; next_cursor goes on after it",
			reply.GetJobs()[0].GetJobId(), limit)
		keep = 1
		reply.Jobs = nil
	} else {
		reply.Jobs = reply.Jobs[:keep]
	}
	reply.NextCursor = page.After(keep - 1)
	qs.log.Info("list reply cut to the max payload", "jobs", len(reply.GetJobs()), "of", len(page.Jobs), "max_payload", limit)
}

// handleDLQList answers sys.dlq.list: dead-lettered jobs, newest first,
// each with its reason and the job.
func (qs *queries) handleDLQList(ctx context.Context, msg *nats.Msg, q *wardv1.DLQListRequest) {
	limit := dlqLimit(q)
	reply := &wardv1.DLQListReply{}
	entries, err := qs.store.DLQ(ctx, q.GetTenantId(), limit)
	if err != nil {
		reply.Error = "job store unavailable"
		logStoreFailure(qs.log, "dlq", "", err)
	}
	for _, e := range entries {
		out := &wardv1.DLQEntry{JobId: e.JobID, Topic: e.Topic, TenantId: e.Tenant, Reason: e.Reason,
			Message: e.Message, AtUnixMs: e.At.UnixMilli()}
		if e.Job != nil {
			out.Job = Record(e.Job)
		}
		reply.Entries = append(reply.Entries, out)
	}
	if err := qs.bus.Reply(msg, reply); err != nil {
		qs.log.Debug("dlq list reply failed", "err", err)
	}
}

// dlqLimit is the number of entries a DLQ listing answers.
func dlqLimit(q *wardv1.DLQListRequest) int {
	if limit := int(q.GetLimit()); limit > 0 && limit <= 1000 {
		return limit
	}
	return 50
}

// handleDLQDrop answers sys.dlq.drop: the job's entry leaves the DLQ;
// the job stays, until its retention.
func (qs *queries) handleDLQDrop(ctx context.Context, msg *nats.Msg, q *wardv1.DLQDropRequest) {
	reply := &wardv1.DLQDropReply{}
	actor, err := qs.admin.of(msg)
	if err != nil {
		reply.Error = err.Error()
		if err := qs.bus.Reply(msg, reply); err != nil {
			qs.log.Debug("dlq drop reply failed", "err", err)
		}
		return
	}
	ok, err := qs.store.RemoveDLQ(ctx, q.GetJobId())
	if err != nil {
		reply.Error = "job store unavailable"
		logStoreFailure(qs.log, "dlq", q.GetJobId(), err)
	}
	reply.Dropped = ok
	if ok {
		qs.log.Info("dead-lettered job dropped from the DLQ", "job_id", q.GetJobId())
	}
	if err := qs.bus.Reply(msg, reply); err != nil {
		qs.log.Debug("dlq drop reply failed", "err", err)
	}
	if ok {
		qs.admin.record(ctx, audit.Entry{Actor: actor, Action: audit.DLQDrop, Target: q.GetJobId()})
	}
}

// handleStatus answers sys.scheduler.status (every replica does): this
// replica's id, build, mode, the reconciler's lease, the hosts it counts
// live, its job store's kind and (a memory store's) bound on ended jobs.
func (qs *queries) handleStatus(_ context.Context, msg *nats.Msg, _ *wardv1.SchedulerStatusRequest) {
	st := &wardv1.SchedulerStatus{
		SchedulerId:     qs.id,
		Version:         version.Version(),
		Mode:            string(qs.mode()),
		StartedAtUnixMs: qs.started().UnixMilli(),
		Reconciler:      qs.leader(),
		LiveWorkers:     int32(qs.hosts.Len()),
		Store:           jobstore.Kind(qs.store),
	}
	if d := qs.hosts.Drained(); len(d) > 0 {
		st.Drained = make(map[string]int64, len(d))
		for w, at := range d {
			st.Drained[w] = at.UnixMilli()
		}
	}
	if m, ok := qs.store.(interface{ Bound() jobstore.Bound }); ok {
		b := m.Bound()
		st.MaxEndedJobs, st.MaxEndedBytes = int64(b.MaxEnded), b.MaxEndedBytes
	}
	if o, ok := qs.store.(interface {
		Shards() int
		Owned() []int
	}); ok {
		st.ShardCount = int32(o.Shards())
		for _, i := range o.Owned() {
			st.Shards = append(st.Shards, int32(i))
		}
	}
	if err := qs.bus.Reply(msg, st); err != nil {
		qs.log.Debug("status reply failed", "err", err)
	}
}

// handleStats answers sys.scheduler.stats (admins only, by subject): the
// store's exact counts of jobs by state, and of jobs created and ended per
// step, read from its indexes.
func (qs *queries) handleStats(ctx context.Context, msg *nats.Msg, q *wardv1.JobStatsRequest) {
	reply := &wardv1.JobStatsReply{}
	if n := q.GetSteps(); n < 0 || n > jobstore.MaxThroughputSteps || (n > 0 && q.GetStepMs() < 1) {
		reply.Error = fmt.Sprintf("%d steps of %d ms: ask for 0 to %d steps of 1 ms or more", n, q.GetStepMs(), jobstore.MaxThroughputSteps)
		if err := qs.bus.Reply(msg, reply); err != nil {
			qs.log.Debug("stats reply failed", "err", err)
		}
		return
	}
	counts, err := qs.store.StateCounts(ctx, sortedPools(qs.settings()))
	if err != nil {
		reply.Error = "job store unavailable"
		logStoreFailure(qs.log, "stats", "", err)
	} else {
		reply.States = make(map[string]int64, len(counts))
		for st, n := range counts {
			reply.States[string(st)] = n
		}
	}
	if q.GetSteps() > 0 && reply.Error == "" {
		until := time.Now()
		if q.GetUntilUnixMs() > 0 {
			until = time.UnixMilli(q.GetUntilUnixMs())
		}
		t, err := qs.store.Throughput(ctx, until, time.Duration(q.GetStepMs())*time.Millisecond, int(q.GetSteps()))
		if err != nil {
			reply.Error = "job store unavailable"
			logStoreFailure(qs.log, "stats", "", err)
		} else {
			reply.StepMs, reply.UntilUnixMs, reply.Created = t.Step.Milliseconds(), t.Until.UnixMilli(), t.Created
			reply.Ended = make(map[string]*wardv1.StepCounts, len(t.Ended))
			for st, c := range t.Ended {
				reply.Ended[string(st)] = &wardv1.StepCounts{Counts: c}
			}
		}
	}
	if err := qs.bus.Reply(msg, reply); err != nil {
		qs.log.Debug("stats reply failed", "err", err)
	}
}

// handleWorkflowGet answers with a run: its tasks (rebuilt from its log),
// and, when asked, its log and definition.
func (qs *queries) handleWorkflowGet(ctx context.Context, msg *nats.Msg, q *wardv1.WorkflowGetRequest) {
	reply := &wardv1.WorkflowGetReply{}
	if run, err := runRecord(ctx, qs.store, qs.log, q.GetRunId(), tenantOf(msg), q.GetEvents()); err != nil {
		reply.Error = err.Error()
	} else {
		reply.Run = run
		fitRun(run, q.GetEventsAfter())
	}
	if err := qs.bus.Reply(msg, reply); err != nil {
		qs.log.Debug("workflow get reply failed", "err", err)
	}
}

// maxRunReply bounds a run's reply, under a NATS message's 1 MiB.
const maxRunReply = 768 << 10

// fitRun keeps run's reply under maxRunReply: its events after the
// after-th, as many as fit (the client asks again for the rest), and its
// tasks' outputs only when they fit too.
func fitRun(run *wardv1.WorkflowRun, after uint64) {
	events := run.Events
	run.EventsTotal = uint64(len(events))
	run.Events = nil
	if proto.Size(run) > maxRunReply/2 {
		for _, t := range run.Tasks {
			t.Output = nil
		}
		run.OutputsDropped = true
	}
	size := proto.Size(run)
	for _, e := range events[min(int(after), len(events)):] {
		n := proto.Size(e) + 8
		if size+n > maxRunReply && len(run.Events) > 0 {
			break
		}
		run.Events = append(run.Events, e)
		size += n
	}
}

// handleWorkflowList answers with the tenant's runs, newest first.
func (qs *queries) handleWorkflowList(ctx context.Context, msg *nats.Msg, q *wardv1.WorkflowListRequest) {
	limit := runListLimit(q)
	reply := &wardv1.WorkflowListReply{Workflows: qs.workflows()}
	runs, err := qs.store.ListRuns(ctx, tenantOf(msg), limit)
	if err != nil {
		logStoreFailure(qs.log, "list runs", "", err)
	}
	for _, run := range runs {
		reply.Runs = append(reply.Runs, runMessage(run))
	}
	if err := qs.bus.Reply(msg, reply); err != nil {
		qs.log.Debug("workflow list reply failed", "err", err)
	}
}

// runListLimit is the number of runs a workflow listing answers.
func runListLimit(q *wardv1.WorkflowListRequest) int {
	if limit := int(q.GetLimit()); limit > 0 && limit <= 1000 {
		return limit
	}
	return 100
}

// Record converts a stored job to its wire form, without events, result or
// log: lists, DLQ entries and replies to moves stay small (handleGet adds
// the log).
func Record(j *jobstore.Job) *wardv1.JobRecord {
	rec := &wardv1.JobRecord{
		JobId: j.ID, Topic: j.Topic, TenantId: j.Tenant, State: stateEnum(j.State), Priority: int32(j.Priority),
		Pool: j.Pool, WorkerId: j.WorkerID, ContextPtr: j.ContextPtr, ResultPtr: j.ResultPtr, ResultDigest: j.ResultDigest,
		CreatedAtUnixMs: j.CreatedAt.UnixMilli(), UpdatedAtUnixMs: j.UpdatedAt.UnixMilli(),
		Reason: j.Reason, ErrorCode: j.ErrorCode, ErrorMessage: j.ErrorMessage, Labels: j.Labels,
		IdempotencyKey: j.IdempotencyKey, Attempt: int32(j.Attempt), Waiting: j.Waiting, MaxRetries: int32(j.MaxRetries),
		Module: j.Module, ModuleDigest: j.ModuleDigest, EventsChain: j.Chain, TraceId: j.TraceID,
	}
	if !j.Deadline.IsZero() {
		rec.DeadlineUnixMs = j.Deadline.UnixMilli()
	}
	if j.CPUMillicores > 0 || j.MemoryBytes > 0 {
		rec.Resources = &wardv1.Resources{CpuMillicores: j.CPUMillicores, MemoryBytes: j.MemoryBytes}
	}
	if sf := j.Safety; sf != nil {
		rec.Safety = &wardv1.SafetyRecord{Decision: sf.Decision, Reasons: sf.Reasons,
			PolicyRevision: sf.PolicyRevision, DecisionId: sf.DecisionID,
			InputDigest: sf.InputDigest, EvalNs: sf.EvalNS, Cached: sf.Cached, DecidedAtUnixMs: sf.DecidedAtUnixMS}
		if len(sf.Constraints) > 0 {
			rec.Safety.Constraints = &wardv1.Constraints{}
			_ = protojson.Unmarshal(sf.Constraints, rec.Safety.Constraints)
		}
	}
	return rec
}

// StoredEvents are a record's events as the job store logged them, links
// included, for jobstore.VerifyEvents against rec.events_chain.
func StoredEvents(rec *wardv1.JobRecord) []jobstore.Event {
	out := make([]jobstore.Event, len(rec.GetEvents()))
	for i, e := range rec.GetEvents() {
		out[i] = jobstore.Event{At: time.UnixMilli(e.GetAtUnixMs()), State: jobstore.State(strings.TrimPrefix(e.GetState().String(), "JOB_STATE_")),
			Reason: e.GetReason(), Message: e.GetMessage(), WorkerID: e.GetWorkerId(), Chain: e.GetChain()}
	}
	return out
}
