package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/testing/poll"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// TestJobsLogs runs `ward jobs logs` as a user would, on `ward dev` whose
// job.echo runs a module that sleeps for the duration its payload names,
// then echoes it, or says "bad duration" on stderr and exits 2. One job
// at a time runs: a long one holds the host while a bad one waits. The
// waiting job has no log yet; --follow waits for its end, which comes once
// the long one is cancelled, and prints its log as it is.
func TestJobsLogs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "echo.wasm"), wasmtest.Build(t, "github.com/ward-run/ward/internal/host/testdata/sleep"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The long job must not meet the sandbox's default time limit (10 s)
	// before the test cancels it.
	if err := os.WriteFile(filepath.Join(dir, "echo.yaml"), []byte("name: echo\nversion: 1.0.0\nlimits:\n  time: 10m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dev, natsURL := startDev(t, []string{"REDIS_URL="}, "--modules", dir, "--max-parallel", "1")
	defer dev.stop(t)
	c, err := client.Dial(natsURL, client.Options{Creds: devAdminCreds()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	logs := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.CommandContext(ctx, wardBin, append([]string{"jobs", "logs", "--nats", natsURL}, args...)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), exitCode(err)
	}

	// The long job holds the host's one slot until it is cancelled.
	long, err := c.Submit(ctx, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: []byte("1h")})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, time.Minute, "the long job running", func() bool {
		rec, err := c.Get(ctx, long.GetJobId(), false)
		if err != nil {
			t.Fatal(err)
		}
		if client.Terminal(rec.GetState()) {
			t.Fatalf("the long job ended %s: %s %s", rec.GetState(), rec.GetReason(), rec.GetErrorMessage())
		}
		return rec.GetState() == wardv1.JobState_JOB_STATE_RUNNING
	})
	bad, err := c.Submit(ctx, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: []byte("not a duration")})
	if err != nil {
		t.Fatal(err)
	}
	id := bad.GetJobId()

	// Not ended: no log yet, and it says so.
	out, stderr, code := logs(id)
	if code == 0 || out != "" || !strings.Contains(stderr, "job "+id+" is ") || !strings.Contains(stderr, "its log comes with its end") {
		t.Errorf("ward jobs logs of a job waiting: exit %d, stdout %q, stderr %q", code, out, stderr)
	}

	// --follow waits for the end, then prints the log as it is.
	follow := exec.CommandContext(ctx, wardBin, "jobs", "logs", "--nats", natsURL, "--follow", id)
	var fout, ferr strings.Builder
	follow.Stdout, follow.Stderr = &fout, &ferr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cancel(ctx, long.GetJobId(), "the test is done with it"); err != nil {
		t.Fatal(err)
	}
	if err := follow.Wait(); err != nil || fout.String() != "bad duration\n" {
		t.Errorf("ward jobs logs --follow: %v, stdout %q, stderr %q", err, fout.String(), ferr.String())
	}
	if rec, err := c.Get(ctx, id, false); err != nil || rec.GetState() != wardv1.JobState_JOB_STATE_FAILED {
		t.Fatalf("the bad job: %v, %v", rec.GetState(), err)
	}

	// Ended: the log as it is, nothing on stderr; -o json.
	if out, stderr, code := logs(id); code != 0 || out != "bad duration\n" || stderr != "" {
		t.Errorf("ward jobs logs: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	out, stderr, code = logs(id, "-o", "json")
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
		t.Fatalf("ward jobs logs -o json: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	if v["job_id"] != id || v["log"] != "bad duration\n" || v["truncated"] != false || len(v) != 3 {
		t.Errorf("ward jobs logs -o json: %v", v)
	}
	// The cancelled job ended without a log of its own: an empty one,
	// nothing on stdout and a line on stderr that says so.
	if out, stderr, code := logs(long.GetJobId()); code != 0 || out != "" || !strings.Contains(stderr, "has an empty log") {
		t.Errorf("ward jobs logs of the cancelled job: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	// A job that does not exist.
	if _, stderr, code := logs("no-such-job"); code == 0 || !strings.Contains(stderr, "not found") {
		t.Errorf("ward jobs logs of no job: exit %d, stderr %q", code, stderr)
	}
}
