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
		Help: "Submissions refused before a job was stored, by reason code.",
	}, []string{"reason"})
	lateUpdates = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_late_updates_total",
		Help: "Progress or results that arrived for a job already past that point; ignored, never written.",
	}, []string{"kind"})
	timeouts = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_timeouts_total",
		Help: "Jobs the reconciler marked TIMEOUT, by reason code.",
	}, []string{"reason"})
	liveWorkers = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "ward_scheduler_live_workers",
		Help: "Workers with a heartbeat in the last 30 s, as this scheduler sees them.",
	})
	storeErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_store_errors_total",
		Help: "Job store calls that failed, by operation.",
	}, []string{"op"})
)
