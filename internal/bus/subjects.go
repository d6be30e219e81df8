// Package bus is Ward's NATS plumbing: the subjects of the bus contract
// (docs/ARCHITECTURE.md, "Bus contract"), a protobuf codec, and subscriptions
// whose handlers run concurrently, survive panics, and count malformed
// messages instead of failing on them.
package bus

import (
	"strconv"
	"strings"
)

// Subjects of the bus contract.
const (
	// The subjects a client asks on end in its tenant's name
	// (TenantSubject): a tenant's credential may publish only on its own,
	// so the scheduler reads the tenant from the subject (TenantOf), never
	// from the payload. AllTenants is the token of admins' queries.

	// SubjectSubmit carries JobRequest from clients to schedulers, on
	// sys.job.submit.<tenant>. Sent as a request, it is answered with a
	// SubmitReply.
	SubjectSubmit = "sys.job.submit"
	// SubjectJobGet is request/reply on sys.job.get.<tenant>: GetJobRequest
	// → GetJobReply.
	SubjectJobGet = "sys.job.get"
	// SubjectJobList is request/reply on sys.job.list.<tenant>:
	// ListJobsRequest → ListJobsReply.
	SubjectJobList = "sys.job.list"
	// SubjectCancel carries JobCancel to schedulers on
	// sys.job.cancel.<tenant> (queue group: one ends the job CANCELLED and,
	// when asked as a request, answers GetJobReply).
	SubjectCancel = "sys.job.cancel"
	// SubjectBuckets is request/reply on sys.job.buckets.<tenant>: an
	// empty message, answered with a StringValue that is empty once the
	// tenant's context and result buckets exist, or says why they do not.
	// A client asks before it stores its first large context: a tenant may
	// configure no stream itself (auth/perms.go).
	SubjectBuckets = "sys.job.buckets"
	// AllTenants is the tenant token of an admin's get, list and cancel:
	// the job of any tenant. Tenant names never start with '_'.
	AllTenants = "_all"

	// SubjectHostCancel carries JobCancel from schedulers to every host
	// (fan-out: the one running the job stops it). Only schedulers may
	// publish there: a cancel is checked against the job's tenant first.
	SubjectHostCancel = "sys.host.cancel"
	// SubjectResult carries JobResult from hosts to schedulers, on
	// sys.job.result.<worker_id> (ResultSubject): a host may publish only
	// on its own, and its result is applied only to the attempt it was
	// dispatched.
	SubjectResult = "sys.job.result"
	// SubjectContext is request/reply on sys.job.context.<worker_id>
	// (ContextSubject): ContextRequest → ContextReply, the chunks of the
	// context of a job dispatched to that host that its tenant stored in
	// its bucket. Hosts read no tenant's bucket: the schedulers serve a
	// context to the host its job is dispatched to, at that attempt.
	SubjectContext = "sys.job.context"
	// SubjectResultPart is request/reply on sys.job.resultpart.<worker_id>
	// (ResultPartSubject): ResultPart → ResultPartReply, a part of a
	// result too large for the result message. Hosts write no tenant's
	// bucket: the schedulers store the parts of a job dispatched to that
	// host, at that attempt, in its tenant's result bucket.
	SubjectResultPart = "sys.job.resultpart"
	// SubjectProgress carries JobProgress from hosts, on
	// sys.job.progress.<worker_id> (ProgressSubject).
	SubjectProgress = "sys.job.progress"
	// SubjectDLQ carries DLQEntry from schedulers to admins.
	SubjectDLQ = "sys.job.dlq"
	// SubjectHeartbeats matches every host's heartbeat subject.
	SubjectHeartbeats = "sys.heartbeat.*"
	// SubjectEvents matches every job's event subject.
	SubjectEvents = "sys.job.event.>"

	// SubjectDLQList is request/reply: DLQListRequest → DLQListReply.
	SubjectDLQList = "sys.dlq.list"
	// SubjectDLQRetry is request/reply: DLQRetryRequest → SubmitReply (the
	// new job re-submitted from the dead-lettered one).
	SubjectDLQRetry = "sys.dlq.retry"
	// SubjectDLQDrop is request/reply: DLQDropRequest → DLQDropReply. The
	// entry leaves the DLQ; the job stays, until its retention.
	SubjectDLQDrop = "sys.dlq.drop"
	// SubjectMode is request/reply: SchedulerModeRequest →
	// SchedulerModeReply. One replica stores the mode for all.
	SubjectMode = "sys.scheduler.mode"
	// SubjectSchedulerStatus is scatter-gather: a SchedulerStatusRequest,
	// and every replica answers with its SchedulerStatus (`ward scheduler
	// ls`).
	SubjectSchedulerStatus = "sys.scheduler.status"
	// SubjectStats is request/reply: JobStatsRequest → JobStatsReply, the
	// store's exact job counts (admins only).
	SubjectStats = "sys.scheduler.stats"
	// SubjectHostDrain is request/reply: HostDrainRequest →
	// HostDrainReply (admins only, signed). One replica stores the drain
	// for all.
	SubjectHostDrain = "sys.host.drain"
	// SubjectModeChanged carries SchedulerModeReply to every replica
	// (fan-out) when the mode changes, so that each applies it at once.
	SubjectModeChanged = "sys.scheduler.mode.changed"

	// SubjectWorkerPing is scatter-gather: every host replies with the
	// Heartbeat it last sent (`ward workers`).
	SubjectWorkerPing = "sys.worker.ping"

	// SchedulerQueue is the queue group schedulers share.
	SchedulerQueue = "ward-scheduler"
)

// SubjectShard prefixes what a scheduler sends the owner of a job store's
// shard (a logged store of shards with owners, log=NAME&shards=N): a
// message about a tenant of shard i goes, as it came, to
// sys.scheduler.shard.<i>.<its subject> (ShardSubject), which only the
// owner of shard i subscribes to. Only schedulers may publish or
// subscribe there.
const SubjectShard = "sys.scheduler.shard"

// ShardSubject is subject, forwarded to the owner of shard i.
func ShardSubject(i int, subject string) string {
	return SubjectShard + "." + strconv.Itoa(i) + "." + subject
}

// TenantSubject is base (SubjectSubmit, SubjectJobGet, SubjectJobList,
// SubjectCancel) for tenant.
func TenantSubject(base, tenant string) string { return base + "." + tenant }

// TenantOf is the tenant a client subject names: its last token.
func TenantOf(subject string) string { return lastToken(subject) }

// WorkerOf is the worker a host subject (heartbeat, result, progress)
// names: its last token.
func WorkerOf(subject string) string { return lastToken(subject) }

func lastToken(subject string) string {
	for i := len(subject) - 1; i >= 0; i-- {
		if subject[i] == '.' {
			return subject[i+1:]
		}
	}
	return subject
}

// ReportSubject is a host's report subject (ResultSubject,
// ProgressSubject, ContextSubject, ResultPartSubject) for a job whose
// dispatch names the shard whose owner takes its reports
// (JobRequest.report_shard): subject with the shard as one more token;
// subject itself for none.
func ReportSubject(subject, shard string) string {
	if shard == "" {
		return subject
	}
	return subject + "." + shard
}

// SubmitSubject is tenant's submission subject straight to the owner of
// its shard (SubmitReply.shard); TenantSubject(SubjectSubmit, tenant) for
// no shard.
func SubmitSubject(tenant, shard string) string {
	return ReportSubject(TenantSubject(SubjectSubmit, tenant), shard)
}

// ShardedTenantSubject is TenantSubject(base, tenant) straight to the
// owner of the tenant's shard (SubmitReply.shard): a tenant's get, list
// and cancel (SubjectJobGet, SubjectJobList, SubjectCancel), as
// SubmitSubject is its submission's.
func ShardedTenantSubject(base, tenant, shard string) string {
	return ReportSubject(TenantSubject(base, tenant), shard)
}

// ResultSubject is where worker id publishes its results.
func ResultSubject(workerID string) string { return SubjectResult + "." + workerID }

// HostInboxPrefix begins every host's reply inbox, _INBOX.h.<host>, and
// TenantInboxPrefix every tenant's, _INBOX.t.<tenant> (auth.InboxPrefix):
// only that host or tenant may subscribe there, and only the control
// plane publish.
const (
	HostInboxPrefix   = "_INBOX.h"
	TenantInboxPrefix = "_INBOX.t"
)

// ReportReplyAllowed reports whether a scheduler may answer a report of
// worker id on reply: in the host's own inbox, or in an inbox no host or
// tenant owns (an --insecure host's); never in another host's or a
// tenant's, where a host could otherwise make the scheduler answer in its
// name (tell another host its result was taken).
func ReportReplyAllowed(workerID, reply string) bool {
	if strings.HasPrefix(reply, HostInboxPrefix+".") {
		_, ok := inHostInbox(workerID, reply)
		return ok
	}
	return !strings.HasPrefix(reply, TenantInboxPrefix+".")
}

// inHostInbox is what follows worker id's inbox prefix in subject
// (_INBOX.h.<id>.rest); ok is false when subject is not in that inbox.
func inHostInbox(workerID, subject string) (rest string, ok bool) {
	rest, ok = strings.CutPrefix(subject, HostInboxPrefix+".")
	if ok {
		rest, ok = strings.CutPrefix(rest, workerID+".")
	}
	return rest, ok
}

// ResultAckSubject is the reply subject of result seq of worker id (a
// number the host gives each result it sends): a scheduler answers the
// result there with an empty message, or, knowing the shape, by seq in a
// batch on ResultAcksSubject.
func ResultAckSubject(workerID string, seq uint64) string {
	return HostInboxPrefix + "." + workerID + ".ack." + strconv.FormatUint(seq, 10)
}

// ResultAckSubjects matches every ResultAckSubject of worker id.
func ResultAckSubjects(workerID string) string { return HostInboxPrefix + "." + workerID + ".ack.*" }

// ResultAcksSubject is where schedulers answer worker id's results in
// batches (wardv1.ResultAcks): the seqs of every result applied, or
// refused for good, since the last batch.
func ResultAcksSubject(workerID string) string { return HostInboxPrefix + "." + workerID + ".acks" }

// ResultAckSeq is the seq of reply when reply is worker id's
// ResultAckSubject; ok is false for any other reply subject (a request's
// inbox, another host's).
func ResultAckSeq(workerID, reply string) (seq uint64, ok bool) {
	rest, ok := inHostInbox(workerID, reply)
	if !ok {
		return 0, false
	}
	if rest, ok = strings.CutPrefix(rest, "ack."); !ok {
		return 0, false
	}
	seq, err := strconv.ParseUint(rest, 10, 64)
	return seq, err == nil
}

// ContextSubject is where worker id asks for its jobs' stored contexts.
func ContextSubject(workerID string) string { return SubjectContext + "." + workerID }

// ResultPartSubject is where worker id sends the parts of its jobs' large
// results.
func ResultPartSubject(workerID string) string { return SubjectResultPart + "." + workerID }

// ProgressSubject is where worker id publishes its progress reports.
func ProgressSubject(workerID string) string { return SubjectProgress + "." + workerID }

// HeartbeatSubject is where worker id publishes its heartbeats.
func HeartbeatSubject(workerID string) string { return "sys.heartbeat." + workerID }

// WorkerJobsSubject is worker id's dispatch subject, the only one a host
// takes jobs on: schedulers publish a Dispatch there (a DispatchTicket
// signed for that host, auth/ticket.go), and only that host may subscribe.
func WorkerJobsSubject(workerID string) string { return "worker." + workerID + ".jobs" }

// EventSubject is where schedulers publish the state changes of tenant's
// job id: a tenant may subscribe to its own events only. An admin who does
// not know a job's tenant follows EventSubject(AnyTenant, id).
func EventSubject(tenant, jobID string) string { return "sys.job.event." + tenant + "." + jobID }

// AnyTenant is the wildcard tenant token of an admin's subscription.
const AnyTenant = "*"
