package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
)

// TestJobsLs lists past the first page, by each filter, as a user would.
func TestJobsLs(t *testing.T) {
	dev, natsURL := startDev(t, []string{"REDIS_URL="}, "--modules", echoDir(t))
	defer dev.stop(t)
	c, err := client.Dial(natsURL, client.Options{Creds: devAdminCreds()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var last string
	for i := range 30 {
		tenant := "acme"
		if i%3 == 0 {
			tenant = "beta"
		}
		rep, err := c.Submit(ctx, &wardv1.JobRequest{Topic: "job.echo", TenantId: tenant, Payload: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		last = rep.GetJobId()
	}
	// The last job ended: the others, submitted before, had time.
	w, _ := c.Watch(last)
	if _, err := c.Wait(ctx, last, w, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	ls := func(args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(wardBin, append([]string{"jobs", "ls", "--nats", natsURL}, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("ward jobs ls %v: %v\n%s%s", args, err, out, stderr.String())
		}
		return string(out), stderr.String()
	}
	jobs := func(args ...string) []map[string]any {
		t.Helper()
		out, _ := ls(append(args, "-o", "json")...)
		var js []map[string]any
		if err := json.Unmarshal([]byte(out), &js); err != nil {
			t.Fatalf("ward jobs ls %v -o json: %v\n%s", args, err, out)
		}
		return js
	}
	out, stderr := ls("--limit", "10")
	if n := strings.Count(out, "job.echo"); n != 10 || !strings.Contains(stderr, "more: --cursor ") {
		t.Errorf("--limit 10: %d rows, stderr %q\n%s", n, stderr, out)
	}
	cursor := strings.Fields(strings.TrimPrefix(strings.TrimSpace(stderr), "more: --cursor "))[0]
	if next := jobs("--limit", "10", "--cursor", cursor); len(next) != 10 || strings.Contains(out, next[0]["job_id"].(string)) {
		t.Errorf("the page after the cursor: %d jobs, the first %v", len(next), next)
	}
	if all := jobs("--all"); len(all) != 30 {
		t.Errorf("--all: %d jobs, want 30", len(all))
	}
	beta := jobs("--tenant", "beta", "--limit", "100")
	for _, j := range beta {
		if j["tenant_id"] != "beta" {
			t.Errorf("--tenant beta lists %v", j)
		}
	}
	if len(beta) != 10 {
		t.Errorf("--tenant beta: %d jobs, want 10", len(beta))
	}
	if n := len(jobs("--state", "succeeded", "--topic", "job.echo", "--since", "1h", "--limit", "100")); n != 30 {
		t.Errorf("--state succeeded --topic job.echo --since 1h: %d jobs, want 30", n)
	}
	if n := len(jobs("--until", "1h")); n != 0 {
		t.Errorf("--until 1h: %d jobs, want none", n)
	}
	if n := len(jobs("--topic", "job.other")); n != 0 {
		t.Errorf("--topic job.other: %d jobs, want none", n)
	}
	if out, err := exec.Command(wardBin, "jobs", "ls", "--nats", natsURL, "--since", "yesterday").CombinedOutput(); err == nil || !strings.Contains(string(out), "--since") {
		t.Errorf("a bad --since: %v %s", err, out)
	}
	// A host's jobs.
	if n := len(jobs("--host", "dev-host", "--all")); n != 30 {
		t.Errorf("--host dev-host: %d jobs, want 30", n)
	}
	if n := len(jobs("--host", "elsewhere", "--all")); n != 0 {
		t.Errorf("--host elsewhere: %d jobs, want none", n)
	}

	ward := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(wardBin, append(args, "--nats", natsURL)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ward %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	// The exact counts: the 30 jobs ended, all in the last hour.
	stats := ward("jobs", "stats")
	lines := map[string][]string{}
	for _, l := range strings.Split(stats, "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			lines[f[0]] = append(lines[f[0]], f[1])
		}
	}
	// SUCCEEDED twice: its count, then its steps' total (then the
	// busiest step and the bars, which depend on the minute the jobs ran).
	for name, want := range map[string][]string{"SUCCEEDED": {"30", "30"}, "total": {"30"}, "created": {"30"}, "RUNNING": {"0"}, "FAILED": {"0", "0"}} {
		if got := lines[name]; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("ward jobs stats: %s %q, want %q:\n%s", name, got, want, stats)
		}
	}

	// Drained, the host takes no new job: it waits; undrained, it runs.
	if out := ward("workers", "drain", "dev-host"); !strings.Contains(out, "host dev-host drained: no new job is placed on it") ||
		strings.Contains(out, "no live host") {
		t.Errorf("drain says:\n%s", out)
	}
	// A name no live host has (a typo): drained all the same, for a host
	// that may join under it, with a warning that nothing running was.
	if out := ward("workers", "drain", "dev-hots"); !strings.Contains(out, "host dev-hots drained") ||
		!strings.Contains(out, "warning: no live host is named dev-hots") {
		t.Errorf("drain of a name no live host has says:\n%s", out)
	}
	if out := ward("workers", "undrain", "dev-hots"); !strings.Contains(out, "host dev-hots undrained") {
		t.Errorf("undrain of it says:\n%s", out)
	}
	if out := ward("workers"); !strings.Contains(out, "dev-host  drained") {
		t.Errorf("ward workers does not show the drain:\n%s", out)
	}
	rep, err := c.Submit(ctx, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // placement is tried at once and again on the pump's ticks
	if j, err := c.Get(ctx, rep.GetJobId(), false); err != nil || j.GetState() != wardv1.JobState_JOB_STATE_PENDING {
		t.Fatalf("a job submitted while the only host is drained: %v, %v", j.GetState(), err)
	}
	if out := ward("workers", "undrain", "dev-host"); !strings.Contains(out, "host dev-host undrained") {
		t.Errorf("undrain says:\n%s", out)
	}
	w, _ = c.Watch(rep.GetJobId())
	defer w.Close()
	if ev, err := c.Wait(ctx, rep.GetJobId(), w, nil); err != nil || ev.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("after the undrain: %v, %v", ev, err)
	}
	audit := ward("audit", "ls")
	if !strings.Contains(audit, "host.drain") || !strings.Contains(audit, "host.undrain") {
		t.Errorf("the audit log lacks the drain:\n%s", audit)
	}
}
