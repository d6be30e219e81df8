package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/testing/poll"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// cli runs the ward binary against natsURL and returns its output (stdout
// and stderr) and exit code.
func cli(t *testing.T, natsURL string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(wardBin, append([]string{"--nats", natsURL}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), exitCode(err)
}

// TestCLITour is the new user's tour of issue 16 on one `ward dev`: read
// commands print JSON, jobs watch re-attaches, jobs ls --watch follows new
// jobs, ward version names the parts, dlq retry refuses a SUCCEEDED job,
// and module deploy, activate, rm-version and rollback check what they
// are given.
func TestCLITour(t *testing.T) {
	dev, natsURL := startDev(t, []string{"REDIS_URL="}, "--modules", echoDir(t))
	if !strings.Contains(dev.out.String(), "try:  "+wardBin+" submit ") {
		t.Errorf("the banner does not name the binary as run (%s):\n%s", wardBin, dev.out.String())
	}

	watch := startWard(t, "jobs ls --watch", nil, "--nats", natsURL, "jobs", "ls", "--watch")
	poll.Until(t, 30*time.Second, "jobs ls --watch lists", func() bool { return strings.Contains(watch.out.String(), "JOB ") })

	out, code := cli(t, natsURL, "submit", "--topic", "job.echo", "--tenant", "acme", "--payload", `{"hello":"world"}`)
	if code != 0 {
		t.Fatalf("submit: exit %d\n%s", code, out)
	}
	id := strings.Fields(out)[1]
	// watch follows it to its end (or prints it at once when it ended).
	out, code = cli(t, natsURL, "jobs", "watch", id)
	if code != 0 || !strings.Contains(out, "SUCCEEDED") || !strings.Contains(out, `{"hello":"world"}`) || strings.Count(out, "SUCCEEDED") != 1 {
		t.Errorf("jobs watch: exit %d\n%s", code, out)
	}
	poll.Until(t, 30*time.Second, "jobs ls --watch shows the job's end", func() bool {
		return strings.Contains(watch.out.String(), id) && strings.Contains(watch.out.String(), "SUCCEEDED")
	})
	out, code = cli(t, natsURL, "submit", "--topic", "sys.destroy", "--tenant", "acme")
	if code != 0 || len(strings.Fields(out)) < 2 {
		// Accepted: the kernel denies it after (jobs watch below).
		t.Fatalf("submit sys.destroy: exit %d\n%s", code, out)
	}
	denied := strings.Fields(out)[1]
	out, code = cli(t, natsURL, "jobs", "watch", denied)
	if code != 2 || !strings.Contains(out, "ended DENIED: safety_denied: topic sys.destroy is forbidden") {
		t.Errorf("jobs watch of a denied job: exit %d\n%s", code, out)
	}

	// A submission refused before it ran exits 2, as the README says of
	// the tour's failures: a tenant's credential naming another tenant.
	mismatch := exec.Command(wardBin, "--nats", natsURL, "submit", "--topic", "job.echo", "--tenant", "acme", "--wait")
	mismatch.Env = append(os.Environ(), "WARD_CREDS="+filepath.Join(os.Getenv("WARD_STATE_DIR"), "creds", "tenant-default.creds"))
	mout, merr := mismatch.CombinedOutput()
	if exitCode(merr) != 2 || !strings.Contains(string(mout), "submission refused: tenant_mismatch") {
		t.Errorf("a tenant's credential naming another tenant: exit %d\n%s", exitCode(merr), mout)
	}

	// An admin's commands with a tenant's credential: refused at once,
	// saying why and what a tenant does instead, with a non-zero exit
	// (not a permissions violation, a wait and "no live host answered").
	for _, args := range [][]string{{"workers"}, {"dlq", "ls", "--tenant", "default"}, {"scheduler", "ls"}, {"module", "ls"}} {
		c := exec.Command(wardBin, append([]string{"--nats", natsURL}, args...)...)
		c.Env = append(os.Environ(), "WARD_CREDS="+filepath.Join(os.Getenv("WARD_STATE_DIR"), "creds", "tenant-default.creds"))
		out, err := c.CombinedOutput()
		if exitCode(err) == 0 || !strings.Contains(string(out), "ward "+strings.Join(args[:min(2, len(args))], " ")) ||
			!strings.Contains(string(out), "needs an admin credential") || !strings.Contains(string(out), "is tenant default's") ||
			strings.Contains(string(out), "Permissions Violation") {
			t.Errorf("%v with a tenant's credential: exit %d\n%s", args, exitCode(err), out)
		}
	}

	// README: `ward auth tenant add acme -o acme.creds` beside ward dev
	// (no ./ward-auth): ward dev's keys make a credential it trusts.
	cwd := t.TempDir()
	add := exec.Command(wardBin, "auth", "tenant", "add", "acme", "-o", "acme.creds")
	add.Dir = cwd
	if aout, err := add.CombinedOutput(); err != nil || !strings.Contains(string(aout), "using ward dev's") {
		t.Errorf("auth tenant add beside ward dev: exit %d\n%s", exitCode(err), aout)
	} else {
		sub := exec.Command(wardBin, "--nats", natsURL, "--creds", filepath.Join(cwd, "acme.creds"), "submit", "--topic", "job.echo", "--payload", `"acme's"`, "--wait")
		if sout, err := sub.CombinedOutput(); err != nil || !strings.Contains(string(sout), `"acme's"`) {
			t.Errorf("a job with the credential auth tenant add wrote: exit %d\n%s", exitCode(err), sout)
		}
	}

	out, code = cli(t, natsURL, "jobs", "get", id, "-o", "json", "--result")
	var rec map[string]any
	if err := json.Unmarshal([]byte(out), &rec); err != nil || code != 0 || rec["state"] != "SUCCEEDED" ||
		rec["result"].(map[string]any)["hello"] != "world" {
		t.Errorf("jobs get -o json: exit %d, %v\n%s", code, err, out)
	}
	out, code = cli(t, natsURL, "jobs", "get", id, "--json")
	if code != 0 || !strings.Contains(out, `"state": "SUCCEEDED"`) {
		t.Errorf("jobs get --json: exit %d\n%s", code, out)
	}
	// The table says where the context and result are, not a redis://
	// pointer on ward dev's memory store.
	out, code = cli(t, natsURL, "jobs", "get", id)
	if code != 0 || strings.Contains(out, "redis://") || !strings.Contains(out, "in the job store, with the job") {
		t.Errorf("jobs get: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"jobs", "ls"}, {"workers"}, {"dlq", "ls"}, {"module", "ls"}, {"policy", "status"}, {"workflow", "ls"}} {
		out, code := cli(t, natsURL, append(args, "-o", "json")...)
		var list []map[string]any
		if err := json.Unmarshal([]byte(out), &list); err != nil || code != 0 {
			t.Errorf("%v -o json: exit %d, %v\n%s", args, code, err, out)
		}
		if args[0] == "workers" && (len(list) != 1 || list[0]["version"] == nil) {
			t.Errorf("workers -o json: no host's version\n%s", out)
		}
	}
	if out, code := cli(t, natsURL, "scheduler", "mode", "-o", "yaml"); code != 0 || out != "mode: NORMAL\n" {
		t.Errorf("scheduler mode -o yaml: exit %d\n%s", code, out)
	}
	if out, code := cli(t, natsURL, "jobs", "ls", "-o", "wide"); code == 0 || !strings.Contains(out, "want table, json or yaml") {
		t.Errorf("jobs ls -o wide: exit %d\n%s", code, out)
	}

	out, code = cli(t, natsURL, "version", "-o", "json")
	var v struct {
		Client struct{ Version, Go string }
		System struct {
			Reachable  bool
			NATSServer string `json:"nats_server"`
			Schedulers []struct {
				ID, Version, Store string
				MaxEndedJobs       int64 `json:"max_ended_jobs"`
				MaxEndedBytes      int64 `json:"max_ended_bytes"`
			}
			Hosts   []struct{ ID, Version string }
			Kernels []struct{ ID, Version, Revision string }
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 || v.Client.Go == "" || !v.System.Reachable ||
		v.System.NATSServer == "" || len(v.System.Schedulers) != 1 || len(v.System.Hosts) != 1 || len(v.System.Kernels) != 1 {
		t.Errorf("version -o json: exit %d, %v\n%s", code, err, out)
	} else if cv := v.Client.Version; cv == "" || v.System.Schedulers[0].Version != cv || v.System.Hosts[0].Version != cv || v.System.Kernels[0].Version != cv {
		// One build, one version string: the client's is its scheduler's,
		// host's and kernel's, in the form each reports, whatever Go
		// stamped into the binary (buildvcs, a modified tree).
		t.Errorf("version -o json: the parts of one build report other versions than the client's %q\n%s", cv, out)
	} else if sc := v.System.Schedulers[0]; sc.Store != "memory" || sc.MaxEndedJobs != 20000 || sc.MaxEndedBytes != 128<<20 {
		// ward dev's memory store says its bound (the defaults).
		t.Errorf("version -o json: the scheduler's store %q, bound %d jobs, %d bytes; want memory, 20000, 128 MiB\n%s", sc.Store, sc.MaxEndedJobs, sc.MaxEndedBytes, out)
	}
	// What a user compares: the lines of the table.
	if out, code := cli(t, natsURL, "version"); code != 0 || len(v.System.Schedulers) != 1 ||
		!strings.Contains(out, "ward:         "+v.Client.Version+"\n") ||
		!strings.Contains(out, "scheduler:    "+v.System.Schedulers[0].ID+" "+v.Client.Version+"\n") ||
		!strings.Contains(out, "  job store:  memory, at most 20000 ended jobs and 128 MiB of them\n") {
		t.Errorf("version: exit %d, not %q for the client and its scheduler\n%s", code, v.Client.Version, out)
	}
	// Every replica says its build, its mode and whether it reconciles.
	out, code = cli(t, natsURL, "scheduler", "ls", "-o", "json")
	var scheds []struct {
		SchedulerID string `json:"scheduler_id"`
		Version     string `json:"version"`
		Mode        string `json:"mode"`
		Reconciler  bool   `json:"reconciler"`
		LiveWorkers int    `json:"live_workers"`
	}
	if err := json.Unmarshal([]byte(out), &scheds); err != nil || code != 0 || len(scheds) != 1 || scheds[0].SchedulerID == "" ||
		scheds[0].Version != v.Client.Version || scheds[0].Mode != "NORMAL" || scheds[0].LiveWorkers != 1 {
		t.Errorf("scheduler ls -o json: exit %d, %v\n%s", code, err, out)
	}
	if out, code := cli(t, natsURL, "scheduler", "ls"); code != 0 || !strings.Contains(out, "SCHEDULER") || len(scheds) != 1 || !strings.Contains(out, scheds[0].SchedulerID) {
		t.Errorf("scheduler ls: exit %d\n%s", code, out)
	}
	if out, code := cli(t, "nats://127.0.0.1:1", "version", "--wait", "500ms"); code != 0 || !strings.Contains(out, "not reachable") {
		t.Errorf("version without a system: exit %d\n%s", code, out)
	}

	if out, code := cli(t, natsURL, "dlq", "retry", id); code == 0 || !strings.Contains(out, "is SUCCEEDED: only a job that ended FAILED") {
		t.Errorf("dlq retry of a SUCCEEDED job: exit %d\n%s", code, out)
	}
	// The denied job went to the DLQ: its tenant's, not another's.
	if out, code := cli(t, natsURL, "dlq", "ls", "--tenant", "acme"); code != 0 || !strings.Contains(out, denied) {
		t.Errorf("dlq ls --tenant acme: exit %d\n%s", code, out)
	}
	if out, code := cli(t, natsURL, "dlq", "ls", "--tenant", "globex"); code != 0 || strings.Contains(out, denied) {
		t.Errorf("dlq ls --tenant globex: exit %d\n%s", code, out)
	}
	// Dropped, it leaves the DLQ, once.
	if out, code := cli(t, natsURL, "dlq", "drop", denied); code != 0 || !strings.Contains(out, "dropped "+denied) {
		t.Errorf("dlq drop: exit %d\n%s", code, out)
	}
	if out, _ := cli(t, natsURL, "dlq", "ls"); strings.Contains(out, denied) {
		t.Errorf("a dropped job is still in the DLQ:\n%s", out)
	}
	if out, code := cli(t, natsURL, "dlq", "drop", denied); code == 0 || !strings.Contains(out, "is not in the DLQ") {
		t.Errorf("a second dlq drop: exit %d\n%s", code, out)
	}

	// workflow run --wait: a line a step and the outputs, a text output
	// as text; every event with --events; the run as it is with -o json.
	dir := t.TempDir()
	fan := filepath.Join(dir, "fan.yaml")
	writeFile(t, fan, `name: fan
steps:
  - {id: each, topic: job.echo, for_each: 0..99, max_parallel: 16, payload: {i: "${{ item }}"}}
  - {id: sum, topic: job.echo, depends_on: [each], payload: {n: "${{ len(steps.each.output) }}", report: "# Report\n\nall fine\n"}}
outputs: {n: steps.sum.output.n, report: steps.sum.output.report}
`)
	out, code = cli(t, natsURL, "workflow", "run", fan, "--wait")
	if code != 0 || strings.Count(out, "\n") > 20 || !strings.Contains(out, "step each           100 succeeded\n") ||
		!strings.Contains(out, "  n: 100\n") || !strings.Contains(out, "── report ──\n# Report\n\nall fine\n") || strings.Contains(out, "TaskPlaced") {
		t.Errorf("workflow run --wait of 100 items: exit %d, %d lines\n%s", code, strings.Count(out, "\n"), out)
	}
	out, code = cli(t, natsURL, "workflow", "run", fan, "--wait", "--events")
	// Every event as it comes. A task's placement is recorded when its
	// job is placed at admission; one that waited in the pool's queue
	// (16 in parallel on a host of 2 slots, more under load) gets none,
	// so only some are certain.
	if code != 0 || strings.Count(out, "TaskSucceeded") != 101 || strings.Count(out, "TaskPlaced") < 1 || !strings.Contains(out, "RunSucceeded") {
		t.Errorf("workflow run --wait --events: exit %d, %d TaskSucceeded and %d TaskPlaced lines", code, strings.Count(out, "TaskSucceeded"), strings.Count(out, "TaskPlaced"))
	}
	out, code = cli(t, natsURL, "workflow", "run", fan, "--wait", "-o", "json")
	var fanRun struct {
		State   string
		Outputs struct {
			N      int
			Report string
		}
	}
	if err := json.Unmarshal([]byte(out), &fanRun); err != nil || code != 0 || fanRun.State != "SUCCEEDED" || fanRun.Outputs.N != 100 || fanRun.Outputs.Report != "# Report\n\nall fine\n" {
		t.Errorf("workflow run --wait -o json: exit %d, %v\n%s", code, err, out)
	}

	// lint and run name the same problems of one file, all of them: a
	// topic no pool serves, and a step an expression reads that is none.
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "name: bad\nsteps:\n  - {id: a, topic: job.nope}\n  - {id: b, topic: job.echo, depends_on: [a], payload: \"${{ steps.zzz.output }}\"}\n")
	for _, args := range [][]string{{"workflow", "lint", bad}, {"workflow", "run", bad}} {
		out, code := cli(t, natsURL, args...)
		if code == 0 || !strings.Contains(out, `step "a": no pool serves topic "job.nope"`) || !strings.Contains(out, `reads steps.zzz: there is no such step`) {
			t.Errorf("%v: exit %d, not both problems\n%s", args[:2], code, out)
		}
	}

	// Module deploy checks before it uploads.
	notWasm := filepath.Join(dir, "script.wasm")
	writeFile(t, notWasm, "#!/bin/sh\necho hi\n")
	if out, code := cli(t, natsURL, "module", "deploy", notWasm); code == 0 || !strings.Contains(out, notWasm+": not a WebAssembly module") {
		t.Errorf("deploy of a shell script: exit %d\n%s", code, out)
	}
	hello := filepath.Join(dir, "hello.wasm")
	if err := os.WriteFile(hello, wasmtest.Build(t, "github.com/ward-run/ward/modules/echo"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "hello.yaml"), "name: hello\nversion: 1.0.0\ntopic: job.echo\npool: hello\n")
	if out, code := cli(t, natsURL, "module", "deploy", hello); code == 0 || !strings.Contains(out, "topic job.echo goes to echo") ||
		!strings.Contains(out, "nothing was uploaded") {
		t.Errorf("deploy of a route pools.yaml overrides: exit %d\n%s", code, out)
	}
	writeFile(t, filepath.Join(dir, "hello.yaml"), "name: hello\nversion: 1.0.0\ntopic: job.hello\nbogus: 1\n")
	if out, code := cli(t, natsURL, "module", "deploy", hello); code == 0 || !strings.Contains(out, "manifest "+filepath.Join(dir, "hello.yaml")) {
		t.Errorf("deploy with a bad manifest: exit %d\n%s", code, out)
	}
	if out, _ := cli(t, natsURL, "module", "ls"); strings.Contains(out, "hello") {
		t.Errorf("a refused deploy uploaded:\n%s", out)
	}
	for _, ver := range []string{"1.0.0", "2.0.0"} {
		writeFile(t, filepath.Join(dir, "hello.yaml"), "name: hello\nversion: "+ver+"\ntopic: job.hello\n")
		if out, code := cli(t, natsURL, "module", "deploy", hello, "--wait", "60s"); code != 0 {
			t.Fatalf("deploy hello %s: exit %d\n%s", ver, code, out)
		}
	}
	if out, code := cli(t, natsURL, "module", "rollback", "ghost"); code == 0 || !strings.Contains(out, "module ghost is not deployed") {
		t.Errorf("rollback of an unknown module: exit %d\n%s", code, out)
	}
	// The module ward dev's host serves of its own (--modules): listed,
	// with where it comes from; a rollback of it says why there is none.
	if out, code := cli(t, natsURL, "module", "ls"); code != 0 || !regexp.MustCompile(`(?m)^echo\s+host\s+-\s+sha256:\S+\s+-\s+1\s`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^hello\s+registry\s+2\.0\.0\s`).MatchString(out) {
		t.Errorf("module ls: exit %d, no echo served by the host, or no hello of the registry\n%s", code, out)
	}
	if out, code := cli(t, natsURL, "module", "rollback", "echo"); code == 0 || !strings.Contains(out, "1 live host(s) serve their own echo") {
		t.Errorf("rollback of the host's own echo: exit %d\n%s", code, out)
	}
	if out, code := cli(t, natsURL, "module", "rollback", "hello"); code != 0 || !strings.Contains(out, "hello: 1.0.0") {
		t.Errorf("rollback: exit %d\n%s", code, out)
	}
	if out, code := cli(t, natsURL, "module", "activate", "hello", "2.0.0"); code != 0 || !strings.Contains(out, "hello: 2.0.0") {
		t.Errorf("activate after the rollback: exit %d\n%s", code, out)
	}
	if out, code := cli(t, natsURL, "module", "rm-version", "hello", "2.0.0"); code == 0 || !strings.Contains(out, "is active") {
		t.Errorf("rm-version of the active version: exit %d\n%s", code, out)
	}
	if out, code := cli(t, natsURL, "module", "rm-version", "hello", "1.0.0"); code != 0 {
		t.Errorf("rm-version: exit %d\n%s", code, out)
	}
	if out, _ := cli(t, natsURL, "module", "ls"); strings.Contains(out, "1.0.0") || !strings.Contains(out, "2.0.0") {
		t.Errorf("module ls after rm-version:\n%s", out)
	}
	// Unsigned: refused by the activation, as ward dev's hosts require signatures.
	writeFile(t, filepath.Join(dir, "hello.yaml"), "name: hello\nversion: 3.0.0\ntopic: job.hello\n")
	other := filepath.Join(dir, "other")
	if out, code := cli(t, natsURL, "module", "keygen", "--out", other); code != 0 {
		t.Fatalf("keygen: %d\n%s", code, out)
	}
	_, _ = cli(t, natsURL, "module", "deploy", hello, "--sign-key", other+".key", "--stage-timeout", "0")
	if out, code := cli(t, natsURL, "module", "activate", "hello", "3.0.0"); code == 0 || !strings.Contains(out, "not activated") {
		t.Errorf("activate of a version signed by an untrusted key: exit %d\n%s", code, out)
	}

	// ward bench: the warm-up's jobs run first and are left out of the
	// report, which tells the CPU of the process watched (ward dev).
	pid := strconv.Itoa(dev.cmd.Process.Pid)
	out, code = cli(t, natsURL, "bench", "-n", "30", "-c", "4", "--warmup", "20", "--tenant", "benchtour", "--cpu-of", pid, "-o", "json")
	var rep struct {
		Jobs, Succeeded int
		PIDCPU          map[string]float64 `json:"pid_cpu_us_per_job"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rep); code != 0 || err != nil || rep.Jobs != 30 || rep.Succeeded != 30 || rep.PIDCPU[pid] <= 0 {
		t.Errorf("bench --warmup 20 -n 30 --cpu-of ward dev: exit %d, %+v (%v)\n%s", code, rep, err, out)
	}
	out, code = cli(t, natsURL, "jobs", "ls", "--tenant", "benchtour", "--limit", "100", "-o", "json")
	var ran []map[string]any
	if err := json.Unmarshal([]byte(out), &ran); code != 0 || err != nil || len(ran) != 50 {
		t.Errorf("the bench's jobs, warm-up included: %d (exit %d, %v), want 50", len(ran), code, err)
	}

	watch.stop(t)
	dev.stop(t)
}

// TestDevDataDir: a module deployed and a policy pushed before a restart
// of ward dev --data-dir are live after it; and a second ward dev on the
// same ports is told at once of every port taken.
func TestDevDataDir(t *testing.T) {
	data := t.TempDir()
	nats, safety, metrics, gw := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	_, natsPort, _ := net.SplitHostPort(nats)
	args := []string{"dev", "--modules", echoDir(t), "--data-dir", data, "--nats-port", natsPort,
		"--safety-listen", safety, "--metrics", metrics, "--gateway", gw, "--cache-dir", cacheDir}
	start := func() *proc {
		p := startWard(t, "dev", []string{"REDIS_URL="}, args...)
		poll.Until(t, 120*time.Second, "ward dev is up", func() bool { return strings.Contains(p.out.String(), "try:") })
		return p
	}
	url := "nats://" + nats
	dev := start()

	second := exec.Command(wardBin, args...)
	out, err := second.CombinedOutput()
	for _, want := range []string{nats + " (--nats-port): in use", safety + " (--safety-listen): in use", metrics + " (--metrics): in use", gw + " (--gateway): in use"} {
		if exitCode(err) == 0 || !strings.Contains(string(out), want) {
			t.Errorf("a second ward dev: %v, output lacks %q:\n%s", err, want, out)
		}
	}

	dir := t.TempDir()
	hello := filepath.Join(dir, "hello.wasm")
	if err := os.WriteFile(hello, wasmtest.Build(t, "github.com/ward-run/ward/modules/echo"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "hello.yaml"), "name: hello\nversion: 1.0.0\ntopic: job.hello\n")
	if out, code := cli(t, url, "module", "deploy", hello); code != 0 {
		t.Fatalf("deploy: exit %d\n%s", code, out)
	}
	pol := policyDir(t, map[string]string{"blocked.rego": blockedRule})
	if out, code := cli(t, url, "policy", "push", pol); code != 0 {
		t.Fatalf("policy push: exit %d\n%s", code, out)
	}
	key := dashboardKey(t, dev)
	dev.stop(t)

	dev = start()
	if again := dashboardKey(t, dev); again != key {
		t.Errorf("the dashboard's key changed across a restart with --data-dir: %s, then %s", key, again)
	}
	res, code := cli(t, url, "submit", "--topic", "job.hello", "--tenant", "acme", "--payload", "after the restart", "--wait")
	if code != 0 || !strings.Contains(res, "after the restart") {
		t.Errorf("the module deployed before the restart: exit %d\n%s", code, res)
	}
	if out := submitEcho(t, url, "blocked"); !strings.Contains(out, "tenant blocked is suspended") {
		t.Errorf("the policy pushed before the restart:\n%s", out)
	}
	dev.stop(t)
}

// dashboardKey is the login key ward dev's banner gives.
func dashboardKey(t *testing.T, dev *proc) string {
	t.Helper()
	for _, line := range strings.Split(dev.out.String(), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "dashboard:"); ok {
			if f := strings.Fields(rest); len(f) >= 5 && strings.HasPrefix(f[4], "ward_") {
				return f[4]
			}
		}
	}
	t.Fatalf("no dashboard key in the banner:\n%s", dev.out.String())
	return ""
}
