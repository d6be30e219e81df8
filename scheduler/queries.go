package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/bus"
	"github.com/ward-run/ward/jobstore"
)

// handleGet answers sys.job.get.<tenant>: clients never open the store
// themselves, and a tenant sees its own jobs only (another's is "not
// found").
func (s *Scheduler) handleGet(ctx context.Context, msg *nats.Msg, q *wardv1.GetJobRequest) {
	reply := &wardv1.GetJobReply{}
	job, err := jobstore.GetFor(ctx, s.cfg.Store, q.GetJobId(), tenantOf(msg))
	switch {
	case errors.Is(err, jobstore.ErrNotFound):
		reply.Error = "job " + q.GetJobId() + " not found"
	case err != nil:
		reply.Error = "job store unavailable"
		s.storeFailed("get", q.GetJobId(), err)
	default:
		rec := Record(job)
		// The module's log of the attempt that ended the job: a get's
		// alone, never a list's or the DLQ's (Record leaves it out).
		rec.Log, rec.LogTruncated = job.Log, job.LogTruncated
		events, err := s.cfg.Store.Events(ctx, job.ID)
		if err != nil {
			s.storeFailed("events", job.ID, err)
		}
		for _, e := range events {
			rec.Events = append(rec.Events, &wardv1.JobEvent{JobId: job.ID, State: stateEnum(e.State),
				AtUnixMs: e.At.UnixMilli(), Reason: e.Reason, Message: e.Message, WorkerId: e.WorkerID, Chain: e.Chain})
		}
		// A result in the tenant's result bucket (one too large for a
		// message) is not read here: the client reads it by its pointer.
		if q.GetIncludeResult() && job.ResultPtr != "" && !isObjectResult(job) {
			if rec.Result, err = s.cfg.Store.Blob(ctx, job.ResultPtr); err != nil {
				reply.Error = "result unavailable: " + err.Error()
			}
		}
		// The context as submitted, for its tenant (or an admin): the
		// job store's blob; one by pointer its reader reads there.
		if q.GetIncludeContext() && job.ContextPtr != "" && !bus.IsObjectPtr(job.ContextPtr) {
			if rec.Context, err = s.cfg.Store.Blob(ctx, job.ContextPtr); err != nil && !errors.Is(err, jobstore.ErrNotFound) {
				s.storeFailed("context", job.ID, err)
			}
		}
		reply.Job = rec
		if q.GetIncludeLive() && (job.State == jobstore.Running || job.State == jobstore.Dispatched) {
			s.addLive(ctx, reply, job)
		}
		s.fitReply(reply)
	}
	if err := s.cfg.Bus.Reply(msg, reply); err != nil {
		// The client waits for an answer that will not come: say why.
		s.log.Warn("get reply failed", "job_id", q.GetJobId(), "bytes", proto.Size(reply), "err", err)
	}
}

// addLive puts what the job's running attempt streamed and reported so far
// in reply, as its host sent them: progress reports, then the chunks in
// seq order.
func (s *Scheduler) addLive(ctx context.Context, reply *wardv1.GetJobReply, job *jobstore.Job) {
	l, err := s.cfg.Store.Live(ctx, job.ID)
	if err != nil {
		s.storeFailed("live", job.ID, err)
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
func (s *Scheduler) fitReply(reply *wardv1.GetJobReply) {
	limit := s.cfg.Bus.NATS().MaxPayload()
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
		s.log.Warn("result too large for a reply", "job_id", rec.GetJobId(), "bytes", n, "max_payload", limit)
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
func (s *Scheduler) handleList(ctx context.Context, msg *nats.Msg, q *wardv1.ListJobsRequest) {
	reply := &wardv1.ListJobsReply{}
	lq, why := listQuery(tenantOf(msg), q)
	if why != "" {
		reply.Error = why
	} else {
		page, err := s.cfg.Store.List(ctx, lq)
		switch {
		case errors.Is(err, jobstore.ErrBadCursor):
			reply.Error = "bad cursor: pass the next_cursor of the previous page, with the same state filter"
		case err != nil:
			reply.Error = "job store unavailable"
			s.storeFailed("list", "", err)
		default:
			reply.Jobs = make([]*wardv1.JobRecord, len(page.Jobs))
			for i, j := range page.Jobs {
				reply.Jobs[i] = Record(j)
			}
			reply.NextCursor = page.Next
			s.fitList(reply, page)
		}
	}
	if err := s.cfg.Bus.Reply(msg, reply); err != nil {
		s.log.Warn("list reply failed", "bytes", proto.Size(reply), "err", err)
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
func (s *Scheduler) fitList(reply *wardv1.ListJobsReply, page jobstore.ListPage) {
	limit := s.cfg.Bus.NATS().MaxPayload()
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
	s.log.Info("list reply cut to the max payload", "jobs", len(reply.GetJobs()), "of", len(page.Jobs), "max_payload", limit)
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
