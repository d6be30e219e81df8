// Package bus is Ward's NATS plumbing: the subjects of the bus contract
// (docs/ARCHITECTURE.md, "Bus contract"), a protobuf codec, and subscriptions
// whose handlers run concurrently, survive panics, and count malformed
// messages instead of failing on them.
package bus

// Subjects of the bus contract.
const (
	// SubjectSubmit carries JobRequest from clients to schedulers. Sent as a
	// request, it is answered with a SubmitReply.
	SubjectSubmit = "sys.job.submit"
	// SubjectResult carries JobResult from hosts to schedulers.
	SubjectResult = "sys.job.result"
	// SubjectProgress carries JobProgress from hosts.
	SubjectProgress = "sys.job.progress"
	// SubjectCancel carries JobCancel to schedulers (queue group: one ends
	// the job CANCELLED and, when asked as a request, answers GetJobReply)
	// and to every host (fan-out: the one running the job stops it).
	SubjectCancel = "sys.job.cancel"
	// SubjectDLQ carries DLQEntry from schedulers to anyone.
	SubjectDLQ = "sys.job.dlq"
	// SubjectHeartbeats matches every host's heartbeat subject.
	SubjectHeartbeats = "sys.heartbeat.>"
	// SubjectEvents matches every job's event subject.
	SubjectEvents = "sys.job.event.>"
	// SubjectJobGet is request/reply: GetJobRequest → GetJobReply.
	SubjectJobGet = "sys.job.get"
	// SubjectJobList is request/reply: ListJobsRequest → ListJobsReply.
	SubjectJobList = "sys.job.list"

	// SubjectDLQList is request/reply: DLQListRequest → DLQListReply.
	SubjectDLQList = "sys.dlq.list"
	// SubjectDLQRetry is request/reply: DLQRetryRequest → SubmitReply (the
	// new job re-submitted from the dead-lettered one).
	SubjectDLQRetry = "sys.dlq.retry"
	// SubjectMode is request/reply: SchedulerModeRequest →
	// SchedulerModeReply. One replica stores the mode for all.
	SubjectMode = "sys.scheduler.mode"
	// SubjectModeChanged carries SchedulerModeReply to every replica
	// (fan-out) when the mode changes, so that each applies it at once.
	SubjectModeChanged = "sys.scheduler.mode.changed"

	// SubjectWorkerPing is scatter-gather: every host replies with the
	// Heartbeat it last sent (`ward workers`).
	SubjectWorkerPing = "sys.worker.ping"

	// SchedulerQueue is the queue group schedulers share.
	SchedulerQueue = "ward-scheduler"
)

// HeartbeatSubject is where worker id publishes its heartbeats.
func HeartbeatSubject(workerID string) string { return "sys.heartbeat." + workerID }

// WorkerJobsSubject is worker id's direct dispatch subject.
func WorkerJobsSubject(workerID string) string { return "worker." + workerID + ".jobs" }

// EventSubject is where schedulers publish job id's state changes.
func EventSubject(jobID string) string { return "sys.job.event." + jobID }

// PoolQueue is the queue group of the hosts serving pool.
func PoolQueue(pool string) string { return "workers-" + pool }
