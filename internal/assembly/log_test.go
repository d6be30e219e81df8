package assembly_test

import (
	"context"
	"testing"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// TestModuleLogReachesTheUser: what a module writes to stderr travels
// with its result from the host, is stored with the end of the job, and
// a get of the job — by its tenant — returns it: a success's log and a
// failure's; a list carries none.
func TestModuleLogReachesTheUser(t *testing.T) {
	pools, err := config.ParsePools("test", []byte("topics:\n  job.cat: cat\n  job.exit: exit\npools:\n  cat: {module: cat}\n  exit: {module: exit}\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, assembly.Options{Host: assembly.HostConfig{Pools: pools, Modules: map[string][]byte{
		// cat copies its input and says so on stderr; exit logs three
		// lines, then exits 3.
		"cat":  wasmtest.Build(t, "github.com/ward-run/ward/internal/sandbox/testdata/cat"),
		"exit": wasmtest.Build(t, "github.com/ward-run/ward/internal/sandbox/testdata/exit"),
	}}})
	tenant := e.clientAs(t, auth.Tenant, "acme")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		topic, log string
		state      wardv1.JobState
	}{
		{"job.cat", "copied 5 bytes\n", wardv1.JobState_JOB_STATE_SUCCEEDED},
		{"job.exit", "starting\nbad input: want JSON\n\n", wardv1.JobState_JOB_STATE_FAILED},
	} {
		_, rec := e.run(t, &wardv1.JobRequest{Topic: tc.topic, TenantId: "acme", Payload: []byte("hello")})
		if rec.GetState() != tc.state {
			t.Fatalf("%s ended %s (%s: %s), want %s", tc.topic, rec.GetState(), rec.GetReason(), rec.GetErrorMessage(), tc.state)
		}
		got, err := tenant.Get(ctx, rec.GetJobId(), false)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.GetLog()) != tc.log || got.GetLogTruncated() {
			t.Errorf("%s: the job's log %q (truncated %v), want %q", tc.topic, got.GetLog(), got.GetLogTruncated(), tc.log)
		}
	}
	jobs, err := tenant.List(ctx, 10, wardv1.JobState_JOB_STATE_UNSPECIFIED)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("list: %d jobs, %v", len(jobs), err)
	}
	for _, j := range jobs {
		if len(j.GetLog()) > 0 {
			t.Errorf("list: job %s carries its log", j.GetJobId())
		}
	}
}
