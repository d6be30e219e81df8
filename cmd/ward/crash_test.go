package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/testing/poll"
	"github.com/ward-run/ward/internal/testing/redistest"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// TestDevCrashRetry is issue 29's crash as a user met it: `ward dev` with
// Redis and --data-dir is killed (-9) while a job runs, and restarted. The
// job's attempt 1 is lost with the host that ran it; after its running
// timeout the reconciler of the new process retries it, and tells the
// hosts that attempt 1 is over. The retry must run on the same (new)
// host, which heard that cancel: a cancel names the attempt it ends, so
// attempt 2 is not taken for the cancelled one. (It was: the host
// remembered the job's id for ten minutes and dropped every later dispatch
// of it without a word, and the job ended TIMEOUT after its dispatch
// timeouts.) The job's history is read afterwards: it ends SUCCEEDED on
// attempt 2, with no dispatch timeout on the way.
func TestDevCrashRetry(t *testing.T) {
	redisURL := redistest.Start(t)
	data := t.TempDir()
	mods := echoDir(t)
	// The sleep module sleeps for as long as its payload says.
	dir := t.TempDir()
	sleep := filepath.Join(dir, "sleep.wasm")
	if err := os.WriteFile(sleep, wasmtest.Build(t, "github.com/ward-run/ward/internal/host/testdata/sleep"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sleep.yaml"), "name: sleep\nversion: 1.0.0\ntopic: job.sleep\n")
	// Short timeouts, so the test takes seconds, not the defaults'
	// minutes: attempt 1 is given up 6 s after it started; a dispatch that
	// never starts would wait 60 s, longer than the test waits.
	timeouts := filepath.Join(t.TempDir(), "timeouts.yaml")
	writeFile(t, timeouts, "reconciler:\n  running_timeout: 6s\n  dispatch_timeout: 60s\n  scan_interval: 500ms\n  lease_ttl: 2s\n")
	nats := freeAddr(t)
	_, natsPort, _ := net.SplitHostPort(nats)
	url := "nats://" + nats
	args := []string{"dev", "--modules", mods, "--data-dir", data, "--redis", redisURL, "--nats-port", natsPort,
		"--safety-listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--gateway", "127.0.0.1:0", "--cache-dir", cacheDir}
	env := []string{"TIMEOUT_CONFIG_PATH=" + timeouts}
	start := func() *proc {
		p := startWard(t, "dev", env, args...)
		poll.Until(t, 120*time.Second, "ward dev is up", func() bool { return strings.Contains(p.out.String(), "try:") })
		return p
	}
	dev := start()
	if out, code := cli(t, url, "module", "deploy", sleep); code != 0 {
		t.Fatalf("deploy: exit %d\n%s", code, out)
	}

	c, err := client.Dial(url, client.Options{Creds: devAdminCreds()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	id := fmt.Sprintf("crash-%d", time.Now().UnixNano())
	req := &wardv1.JobRequest{JobId: id, Topic: "job.sleep", TenantId: "acme", Payload: []byte("4s"), Budget: &wardv1.Budget{MaxRetries: 2}}
	poll.Until(t, 60*time.Second, "the job submitted", func() bool {
		rep, err := c.Submit(ctx, req)
		return err == nil && rep.GetAccepted()
	})
	get := func() *wardv1.JobRecord {
		rec, err := c.Get(ctx, id, false)
		if err != nil {
			return nil
		}
		return rec
	}
	poll.Until(t, 60*time.Second, "the job RUNNING", func() bool {
		return get().GetState() == wardv1.JobState_JOB_STATE_RUNNING
	})
	c.Close()

	// kill -9 mid-job: the host, the scheduler and the embedded NATS die
	// at once; Redis keeps the job RUNNING at attempt 1.
	if err := dev.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Wait's error is the kill's (signal: killed); none means ward dev
	// had exited on its own.
	if err := <-dev.done; err == nil {
		t.Fatal("ward dev had exited before the kill")
	}
	dev.waited = true
	dev = start()

	c, err = client.Dial(url, client.Options{Creds: devAdminCreds()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var rec *wardv1.JobRecord
	poll.Until(t, 100*time.Second, "the job ended", func() bool {
		rec = get()
		return rec != nil && terminal(rec.GetState())
	})
	if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || rec.GetAttempt() != 2 {
		t.Errorf("after the crash the job ended %s on attempt %d (%s), want SUCCEEDED on attempt 2", rec.GetState(), rec.GetAttempt(), rec.GetErrorMessage())
	}
	var retried, ran time.Time
	for _, e := range rec.GetEvents() {
		t.Logf("event %s %s %s (%s) on %s", time.UnixMilli(e.GetAtUnixMs()).Format("15:04:05.000"), e.GetState(), e.GetReason(), e.GetMessage(), e.GetWorkerId())
		switch {
		case e.GetReason() == "dispatch_timeout":
			t.Errorf("a dispatch was dropped until its timeout: %s", e.GetMessage())
		case e.GetReason() == "retry" && retried.IsZero():
			retried = time.UnixMilli(e.GetAtUnixMs())
		case e.GetState() == wardv1.JobState_JOB_STATE_RUNNING && !retried.IsZero():
			ran = time.UnixMilli(e.GetAtUnixMs())
		}
	}
	if retried.IsZero() || ran.IsZero() {
		t.Fatalf("no retry, or no run after it, in the job's events")
	}
	// A figure, not an assertion: the retry's own backoff is in it.
	t.Logf("the retry ran %s after it was decided", ran.Sub(retried).Round(time.Millisecond))
	dev.stop(t)
}

func terminal(s wardv1.JobState) bool {
	switch s {
	case wardv1.JobState_JOB_STATE_SUCCEEDED, wardv1.JobState_JOB_STATE_FAILED, wardv1.JobState_JOB_STATE_TIMEOUT, wardv1.JobState_JOB_STATE_CANCELLED:
		return true
	}
	return false
}
