package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/testing/poll"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// TestSubmitCtrlC: Ctrl-C during `ward submit --wait` stops following the
// job, not the job: it says so and how to follow it again, and exits 130;
// the job goes on, and `ward jobs watch` follows it again, showing first
// what the job streamed and reported before it re-attached.
func TestSubmitCtrlC(t *testing.T) {
	_, natsURL := startDev(t, []string{"REDIS_URL="}, "--modules", echoDir(t))
	dir := t.TempDir()
	slow := filepath.Join(dir, "slow.wasm")
	if err := os.WriteFile(slow, wasmtest.Build(t, "github.com/ward-run/ward/internal/sandbox/testdata/hostile"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "slow.yaml"), "name: slow\nversion: 1.0.0\ntopic: job.slow\n")
	if out, code := cli(t, natsURL, "module", "deploy", slow, "--wait", "60s"); code != 0 {
		t.Fatalf("deploy slow: exit %d\n%s", code, out)
	}
	sub := startWard(t, "submit --wait", nil, "--nats", natsURL, "submit", "--topic", "job.slow", "--tenant", "acme", "--payload", `{"do": "talk"}`, "--wait")
	poll.Until(t, 60*time.Second, "the job running and talking", func() bool { return strings.Contains(sub.out.String(), "hello from the job") })
	id := strings.Fields(sub.out.String())[1]
	if err := sub.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-sub.done:
		sub.waited = true
		if code := exitCode(err); code != 130 {
			t.Errorf("submit --wait after Ctrl-C: exit %d, want 130\n%s", code, sub.out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("submit --wait did not stop at Ctrl-C:\n%s", sub.out.String())
	}
	if out := sub.out.String(); !strings.Contains(out, "stopped following job "+id+"; it goes on (`ward jobs watch "+id+"` follows it again)") {
		t.Errorf("submit --wait said nothing of the job it leaves:\n%s", out)
	}
	// It goes on: still RUNNING, and jobs watch follows it again.
	if out, code := cli(t, natsURL, "jobs", "get", id); code != 0 || !strings.Contains(out, "state:         RUNNING") {
		t.Errorf("the job after Ctrl-C: exit %d\n%s", code, out)
	}
	// Re-attached, it shows what the job streamed and reported before,
	// once each.
	watch := exec.Command(wardBin, "--nats", natsURL, "jobs", "watch", id, "--timeout", "3s")
	out, _ := watch.CombinedOutput()
	if !strings.Contains(string(out), "RUNNING") || strings.Count(string(out), "hello from the job\n") != 1 ||
		strings.Count(string(out), "PROGRESS    50%  half way") != 1 {
		t.Errorf("jobs watch after Ctrl-C does not show the job's output and progress so far, once:\n%s", out)
	}
	if out, code := cli(t, natsURL, "jobs", "cancel", id); code != 0 {
		t.Errorf("jobs cancel: exit %d\n%s", code, out)
	}
}
