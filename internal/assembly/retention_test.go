package assembly_test

import (
	"context"
	"strings"
	"testing"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/config"
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
	assembly.SetRetention(store, 500*time.Millisecond)
	e := start(t, assembly.Options{Store: store, Scheduler: assembly.SchedulerConfig{Config: &config.Bundle{Timeouts: to}}, Host: assembly.HostConfig{Modules: echoModules(t)}})
	swept := counter(t, "ward_scheduler_jobs_swept_total", "", "")
	_, rec := e.run(t, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: []byte("short-lived")})
	if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("ended %s", rec.GetState())
	}
	checkFor(t, 15*time.Second, func() bool {
		_, err := e.client.Get(context.Background(), rec.GetJobId(), true)
		return err != nil && strings.Contains(err.Error(), "not found")
	})
	checkFor(t, 15*time.Second, func() bool {
		return counter(t, "ward_scheduler_jobs_swept_total", "", "") > swept
	})
}
