package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/config"
	"github.com/ward-run/ward/node"
)

// TestRetentionDropsEndedJobs: with a retention, an ended job is answered
// "not found" once it has passed, and the reconciler sweeps it from the
// store's indexes; a job still running is not touched. Memory stays flat
// under a steady load because of this.
func TestRetentionDropsEndedJobs(t *testing.T) {
	to, err := config.ParseTimeouts("test", []byte("reconciler:\n  scan_interval: 100ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	store := openRedis(t)
	node.SetRetention(store, 500*time.Millisecond)
	e := start(t, node.Options{Modules: echoModules(t), Store: store, Timeouts: to})
	swept := counterSum(t, "ward_scheduler_jobs_swept_total")
	_, rec := e.run(t, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: []byte("short-lived")})
	if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("ended %s", rec.GetState())
	}
	checkFor(t, 15*time.Second, func() bool {
		_, err := e.client.Get(context.Background(), rec.GetJobId(), true)
		return err != nil && strings.Contains(err.Error(), "not found")
	})
	checkFor(t, 15*time.Second, func() bool { return counterSum(t, "ward_scheduler_jobs_swept_total") > swept })
}

// counterSum is the sum of a counter's series in the default registry.
func counterSum(t testing.TB, name string) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
