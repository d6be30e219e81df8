package scheduler

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	jobsReceived = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_jobs_received_total",
		Help: "Jobs accepted on sys.job.submit, by topic (\"unmapped\" for topics no pool serves).",
	}, []string{"topic"})
	jobsDispatched = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_jobs_dispatched_total",
		Help: "Jobs published to a host, by topic.",
	}, []string{"topic"})
	jobsCompleted = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_jobs_completed_total",
		Help: "Jobs that reached a terminal state, by topic and state.",
	}, []string{"topic", "status"})
	safetyDenials = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_safety_denials_total",
		Help: "Jobs denied by the safety kernel or because it could not be asked, by reason code.",
	}, []string{"reason"})
	dlqTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_dlq_total",
		Help: "Jobs sent to the dead-letter queue, by reason code.",
	}, []string{"reason"})
	submitsRefused = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_submissions_refused_total",
		Help: "Submissions refused before a job was stored, by reason code (rate_limited and queue_full are the backpressure).",
	}, []string{"reason"})
	lateUpdates = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_late_updates_total",
		Help: "Progress or results that arrived for a job already past that point, or from a worker it was taken from; ignored, never written.",
	}, []string{"kind"})
	reportsRefused = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_refused_reports_total",
		Help: "Host reports refused because they do not carry the authority they claim (a result or progress report of another host or of an earlier attempt, a heartbeat without its host's credential), by kind and reason code; logged, never applied.",
	}, []string{"kind", "reason"})
	jobFailures = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_job_failures_total",
		Help: "Attempts that failed on the job's own input or module (module_error, exit, trap, timeout, ...), by tenant, module and error code: counted against them, not against the host.",
	}, []string{"tenant", "module", "code"})
	jobsSwept = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_scheduler_jobs_swept_total",
		Help: "Ended jobs past the store's retention, dropped from its indexes (their keys expire with it).",
	})
	timeouts = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_timeouts_total",
		Help: "Jobs the reconciler timed out (ended TIMEOUT or retried), by reason code.",
	}, []string{"reason"})
	liveWorkers = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "ward_scheduler_live_workers",
		Help: "Workers with a recent heartbeat, as this scheduler sees them.",
	})
	workersLost = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_scheduler_workers_lost_total",
		Help: "Workers this scheduler forgot because their heartbeats stopped (silent past the heartbeat TTL); a host that drains or says goodbye is not counted.",
	})
	storeErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_store_errors_total",
		Help: "Job store calls that failed, by operation.",
	}, []string{"op"})
	placements = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_placements_total",
		Help: "Placement decisions, by strategy and outcome (placed, busy, no_worker).",
	}, []string{"strategy", "outcome"})
	queueDepth = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ward_scheduler_queue_depth",
		Help: "Jobs waiting in a pool's queue (all replicas), by pool.",
	}, []string{"pool"})
	queueCap = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "ward_scheduler_queue_cap",
		Help: "The queue length per pool past which submissions are refused (queue_full); 0 is no cap.",
	})
	waits = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_waits_total",
		Help: "Jobs made to wait, by reason: pool_overloaded (queued), tenant_limit (deferred), retry (deferred), zone_throttled (queued), rollout (queued until a host holds the module version in force).",
	}, []string{"reason"})
	retries = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_retries_total",
		Help: "Failed attempts requeued for another, by cause (the error code, dispatch_timeout, running_timeout, or bounced: the host did not start it).",
	}, []string{"cause"})
	zoneFailureRate = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ward_scheduler_zone_failure_rate",
		Help: "Failure rate of a zone's results over the sliding window, as this replica sees them.",
	}, []string{"zone"})
	zoneThrottled = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ward_scheduler_zone_throttled",
		Help: "1 while dispatch into the zone is throttled.",
	}, []string{"zone"})
	drainedWorkers = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "ward_scheduler_drained_workers",
		Help: "Workers an operator drained (all replicas).",
	})
	quarantinedWorkers = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "ward_scheduler_quarantined_workers",
		Help: "Workers in quarantine (all replicas).",
	})
	modeGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ward_scheduler_mode",
		Help: "1 for the scheduler mode in force, 0 for the others.",
	}, []string{"mode"})
	reconcilerLeader = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "ward_scheduler_reconciler_leader",
		Help: "1 while this replica holds the reconciler lease.",
	})
	recovered = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_recovered_total",
		Help: "Jobs the reconciler took over, by kind: orphan (PENDING in no queue), scheduled (SCHEDULED, never dispatched), result (result stored, message lost).",
	}, []string{"kind"})
	configReloads = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_config_reloads_total",
		Help: "Configuration reloads, by result (ok, error).",
	}, []string{"result"})
	publishFailures = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_publish_failures_total",
		Help: "Messages this replica failed to publish, by kind: host_cancel (a host may run a cancelled attempt to its end; its result is refused), dlq, mode.",
	}, []string{"kind"})
)

// workflowReloads counts loads of the workflow definitions.
var workflowReloads = promauto.NewCounterVec(prometheus.CounterOpts{
	Name: "ward_scheduler_workflow_reloads_total",
	Help: "Loads of the workflow definitions (at start and when --workflows changes), by result: ok, or error (a file left out).",
}, []string{"result"})
