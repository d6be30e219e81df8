package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natstest "github.com/nats-io/nats-server/v2/test"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/testing/logtest"
	"github.com/ward-run/ward/internal/testing/redistest"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// wardBin is the ward binary built once for the package's tests; cacheDir
// is the compiled-module cache its hosts share, as on one machine, and with
// the other packages' tests (wasmtest.SharedCacheDir): `make modules`
// builds the modules as wasmtest does, byte for byte, so a module one
// package compiled is not compiled again by the next.
var wardBin, cacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ward-bin-")
	if err != nil {
		panic(err)
	}
	wardBin = filepath.Join(dir, "ward")
	if cacheDir, err = wasmtest.SharedCacheDir(); err != nil {
		panic(err)
	}
	// Every ward process of these tests, `ward dev` and the CLI, keeps and
	// finds its keys and credentials here, not in the user's home.
	if err := os.Setenv("WARD_STATE_DIR", filepath.Join(dir, "state")); err != nil {
		panic(err)
	}
	if err := os.Unsetenv("WARD_CREDS"); err != nil {
		panic(err)
	}
	build := exec.Command("go", "build", "-race", "-o", wardBin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building ward:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, "removing the test binaries:", err)
	}
	os.Exit(code)
}

// proc is a ward process under test.
type proc struct {
	name   string
	cmd    *exec.Cmd
	out    *logtest.Buffer
	done   chan error
	waited bool // stop received from done
}

func startWard(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(wardBin, args...)
	cmd.Env = append(environWithoutRedis(), env...)
	return startProc(t, name, cmd)
}

// startProc starts cmd, its output kept, and kills it at the test's end
// unless it was waited for (stop); a failed test logs its output.
func startProc(t *testing.T, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, out: &logtest.Buffer{}, done: make(chan error, 1), cmd: cmd}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		// ProcessState is Wait's to write: the process may have exited
		// on its own, so only done says whether it was waited for.
		if !p.waited {
			_ = p.cmd.Process.Kill() // fails only when it has exited already
			if err := <-p.done; t.Failed() {
				t.Logf("--- %s, killed at the test's end: %v", name, err)
			}
		}
		if t.Failed() {
			t.Logf("--- %s output:\n%s", name, p.out.String())
		}
	})
	return p
}

// environWithoutRedis is the test's environment less REDIS_URL: a process
// reaches Redis only where its test gives it the URL.
func environWithoutRedis() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "REDIS_URL=") })
}

// stop sends SIGTERM and requires a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.waited = true
		if err != nil {
			t.Errorf("%s exited with %v after SIGTERM", p.name, err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("%s did not exit within 30 s of SIGTERM", p.name)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func echoDir(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "echo.wasm"), wasmtest.Build(t, "github.com/ward-run/ward/modules/echo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func waitSucceeded(t *testing.T, c *client.Client, payload string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := &wardv1.JobRequest{JobId: fmt.Sprintf("proc-%d", time.Now().UnixNano()), Topic: "job.echo", TenantId: "acme", Payload: []byte(payload)}
	w, err := c.Watch(req.JobId)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// The host may not have sent its first heartbeat yet, or the safety
	// kernel may still be loading its policy: no_workers or
	// safety_unavailable then is correct, and the test submits again.
	for {
		if _, err := c.Submit(ctx, req); err != nil {
			if ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		final, err := c.Wait(ctx, req.JobId, w, nil)
		if err != nil {
			t.Fatal(err)
		}
		if final.GetState() == wardv1.JobState_JOB_STATE_SUCCEEDED {
			break
		}
		if r := final.GetReason(); r != "no_workers" && r != "safety_unavailable" {
			t.Fatalf("job ended %s: %s %s", final.GetState(), final.GetReason(), final.GetMessage())
		}
		time.Sleep(100 * time.Millisecond)
		req.JobId = fmt.Sprintf("proc-%d", time.Now().UnixNano())
		w.Close()
		if w, err = c.Watch(req.JobId); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := c.Get(ctx, req.JobId, true)
	if err != nil {
		t.Fatal(err)
	}
	if string(rec.GetResult()) != payload {
		t.Fatalf("result %q, want %q", rec.GetResult(), payload)
	}
}

// TestSeparateProcesses runs the happy path with the safety kernel, a
// scheduler and a host as separate ward processes over NATS and Redis, and
// stops each with SIGTERM.
func TestSeparateProcesses(t *testing.T) {
	// The production path, with auth on: `ward auth init` writes the keys
	// and a nats-server configuration, which the server here runs with;
	// each part gets its own credential, each host `ward auth host add`'s.
	keys := t.TempDir()
	auth := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(wardBin, append([]string{"auth", "--dir", keys}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ward auth %v: %v\n%s", args, err, out)
		}
	}
	auth("init")
	auth("host", "add", "host-1", "-o", keys)
	auth("host", "add", "host-2", "-o", keys)
	opts, err := server.ProcessConfigFile(filepath.Join(keys, "nats-server.conf"))
	if err != nil {
		t.Fatalf("the nats-server.conf ward auth init wrote: %v", err)
	}
	opts.Host, opts.Port, opts.StoreDir, opts.NoSigs = "127.0.0.1", -1, t.TempDir(), true
	ns := natstest.RunServer(opts)
	defer ns.Shutdown()
	// Redis as the deployment files run it (deploy/redis/acl.sh): its
	// default user off, and the schedulers' user ward-scheduler limited to
	// the job store's commands and keys. The scheduler alone is given it.
	redisPass := fmt.Sprintf("%x", time.Now().UnixNano())
	aclFile := filepath.Join(t.TempDir(), "users.acl")
	acl := exec.Command("sh", filepath.Join("..", "..", "deploy", "redis", "acl.sh"), aclFile)
	acl.Env = append(os.Environ(), "REDIS_PASSWORD="+redisPass, "REDIS_ADMIN_PASSWORD=")
	if out, err := acl.CombinedOutput(); err != nil {
		t.Fatalf("deploy/redis/acl.sh: %v\n%s", err, out)
	}
	redisURL := "redis://ward-scheduler:" + redisPass + "@" + redistest.StartArgs(t, "--aclfile", aclFile) + "/0"
	safetyAddr := freeAddr(t)
	// The hosts share the machine with the test and whatever runs beside
	// it: their CPU load says nothing about them, and placement must not
	// hold the test's jobs back for it (cpu_over_threshold).
	schedCfg := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(schedCfg, []byte("placement: {cpu_threshold: 100}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k := func(f string) string { return filepath.Join(keys, f) }
	// env has no Redis: the kernel and the hosts run with no Redis setting
	// at all (startWard drops a REDIS_URL of the test's own environment);
	// the scheduler's adds REDIS_URL.
	env := []string{"NATS_URL=" + ns.ClientURL(), "SAFETY_KERNEL_ADDR=" + safetyAddr, "METRICS_ADDR=",
		"SCHEDULER_CONFIG_PATH=" + schedCfg, "WARD_AUTH_DIR=" + keys}
	schedEnv := append(slices.Clone(env), "REDIS_URL="+redisURL)

	// --metrics "": METRICS_ADDR= in env does not disable them (an empty
	// variable reads as unset), and the default ports may be taken.
	safety := startWard(t, "safety", env, "safety", "--listen", safetyAddr, "--metrics", "",
		"--creds", k("safety.creds"), "--policy-pubkey", k("policy.pub"))
	sched := startWard(t, "scheduler", schedEnv, "scheduler", "--metrics", "", "--creds", k("scheduler.creds"), "--dispatch-secret", k("dispatch.secret"))
	host := startWard(t, "host", env, "host", "--id", "host-1", "--modules", echoDir(t), "--heartbeat", "200ms", "--cache-dir", cacheDir, "--metrics", "",
		"--creds", k("host-host-1.creds"), "--dispatch-key", k("host-host-1.key"), "--trusted-key", k("module.pub"))
	// A second host with no modules of its own: the registry's only.
	host2 := startWard(t, "host2", env, "host", "--id", "host-2", "--modules", "", "--heartbeat", "200ms", "--cache-dir", cacheDir, "--metrics", "",
		"--creds", k("host-host-2.creds"), "--dispatch-key", k("host-host-2.key"), "--trusted-key", k("module.pub"))

	c, err := client.Dial(ns.ClientURL(), client.Options{Creds: k("admin.creds")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitSucceeded(t, c, `{"hello":"world"}`)
	// Both hosts up before the deploy counts them: host-2 waits for the
	// module registry a scheduler creates, as a host may create no stream.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ws, err := c.Workers(context.Background(), 500*time.Millisecond)
		if err == nil && len(ws) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("live hosts: %d, %v; want 2", len(ws), err)
		}
	}
	// The hosts ran that job, and run the module jobs below, with no Redis
	// setting: none in their environment (as the kernel sees it, on Linux)
	// and none on their command lines.
	for _, h := range []*proc{host, host2} {
		if slices.ContainsFunc(h.cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "REDIS_URL=") }) ||
			slices.ContainsFunc(h.cmd.Args, func(a string) bool { return strings.HasPrefix(a, "--redis") }) {
			t.Fatalf("%s was given Redis: %v %v", h.name, h.cmd.Env, h.cmd.Args)
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", h.cmd.Process.Pid)); err == nil {
			for kv := range strings.SplitSeq(string(b), "\x00") {
				if strings.HasPrefix(kv, "REDIS_URL=") {
					t.Errorf("%s runs with %s in its environment", h.name, kv)
				}
			}
		}
	}

	// Deploy a module with a new topic to the running processes, then a
	// second version, roll back, and retire it; no process restarts.
	procs := []*proc{safety, sched, host, host2}
	pids := make([]int, len(procs))
	for i, p := range procs {
		pids[i] = p.cmd.Process.Pid
	}
	dir := t.TempDir()
	writeHello := func(version string) string {
		path := filepath.Join(dir, "hello-"+version+".wasm")
		wasm := wasmtest.BuildReactorX(t, "../../internal/assembly/testdata/hello", "main.version="+version)
		man := "name: hello\nversion: \"" + version + "\"\nabi: ward-reactor-v1\nisolation: pooled\ntopic: job.hello\npool: hello\n"
		if err := os.WriteFile(path, wasm, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(strings.TrimSuffix(path, ".wasm")+".yaml", []byte(man), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ward := func(args ...string) (string, error) {
		cmd := exec.Command(wardBin, append(args, "--nats", ns.ClientURL())...)
		// The admin's credential; deploys sign with the module key of
		// WARD_AUTH_DIR, which the hosts trust.
		cmd.Env = append(os.Environ(), "WARD_CREDS="+k("admin.creds"), "WARD_AUTH_DIR="+keys)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	mustWard := func(want string, args ...string) string {
		t.Helper()
		out, err := ward(args...)
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("ward %s: %v, want %q in:\n%s", strings.Join(args, " "), err, want, out)
		}
		return out
	}
	v1, v2 := writeHello("1"), writeHello("2")
	mustWard("rolled out: hello 1 on 2/2 live hosts", "module", "deploy", v1, "--wait", "2m")
	mustWard("hello 1: hi", "submit", "--topic", "job.hello", "--tenant", "acme", "--payload", "hi", "--wait")
	// A compile takes seconds under -race, and tens of seconds on a loaded
	// machine: the staging window is as long as the rollout's, so that
	// the check below (v2 compiled ahead on both hosts) fails only when a
	// host does not compile it at all.
	out := mustWard("rolled out: hello 2 on 2/2 live hosts", "module", "deploy", v2, "--wait", "2m", "--stage-timeout", "2m")
	if !strings.Contains(out, "staged: hello 2 compiled ahead on 2/2 live hosts") {
		t.Errorf("v2 was not compiled ahead on both hosts before its activation:\n%s", out)
	}
	mustWard("hello 2: hi", "submit", "--topic", "job.hello", "--tenant", "acme", "--payload", "hi", "--wait")
	ls := mustWard("job.hello→hello", "module", "ls")
	if !regexp.MustCompile(`(?m)^hello\s+registry\s+2\s+sha256:\S+\s+\*\s+2\s`).MatchString(ls) {
		t.Errorf("ward module ls does not show version 2 active on 2 hosts:\n%s", ls)
	}
	mustWard("rolled out: hello 1 on 2/2 live hosts", "module", "rollback", "hello", "--wait", "2m")
	mustWard("hello 1: hi", "submit", "--topic", "job.hello", "--tenant", "acme", "--payload", "hi", "--wait")
	mustWard("rolled out: hello retired on 2/2 live hosts", "module", "rm", "hello", "--wait", "2m")
	if out, err := ward("submit", "--topic", "job.hello", "--tenant", "acme", "--payload", "hi", "--wait"); err == nil ||
		!strings.Contains(out, "module_retired") {
		t.Errorf("a job for a retired module: %v\n%s", err, out)
	}
	// Every admin action of the run is in the audit log, with who did it.
	audit := mustWard("module.deploy", "audit", "ls")
	for _, want := range []string{"admin:admin", "module.rollback", "module.rm", "hello"} {
		if !strings.Contains(audit, want) {
			t.Errorf("ward audit ls does not show %q:\n%s", want, audit)
		}
	}
	for i, p := range procs {
		select {
		case err := <-p.done:
			p.waited = true
			t.Errorf("%s exited during the deploys: %v", p.name, err)
		default:
			if p.cmd.Process.Pid != pids[i] {
				t.Errorf("%s changed pid", p.name)
			}
		}
	}

	host2.stop(t)
	host.stop(t)
	sched.stop(t)
	safety.stop(t)
}

// startDev starts `ward dev` on random ports with env and args, waits
// until it says it is up, and returns it with its NATS URL.
func startDev(t *testing.T, env []string, args ...string) (*proc, string) {
	t.Helper()
	dev := startWard(t, "dev", env, append([]string{"dev", "--nats-port", "-1", "--metrics", "127.0.0.1:0",
		"--safety-listen", "127.0.0.1:0", "--gateway", "127.0.0.1:0", "--cache-dir", cacheDir}, args...)...)
	deadline := time.Now().Add(120 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("ward dev did not come up:\n%s", dev.out.String())
		}
		out := dev.out.String()
		if strings.Contains(out, "try:") {
			sc := bufio.NewScanner(strings.NewReader(out))
			for sc.Scan() {
				if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "NATS:"); ok {
					return dev, strings.TrimSpace(v)
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDev runs `ward dev` as a user would, submits with `ward submit
// --wait`, and stops it with SIGTERM.
func TestDev(t *testing.T) {
	dev, natsURL := startDev(t, []string{"REDIS_URL="}, "--modules", echoDir(t))

	out, err := exec.Command(wardBin, "submit", "--nats", natsURL, "--topic", "job.echo", "--tenant", "acme",
		"--payload", `{"hello":"world"}`, "--wait").CombinedOutput()
	if err != nil {
		t.Fatalf("ward submit: %v\n%s", err, out)
	}
	for _, want := range []string{"PENDING", "SCHEDULED", "DISPATCHED", "RUNNING", "SUCCEEDED", `{"hello":"world"}`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("ward submit output lacks %q:\n%s", want, out)
		}
	}
	id := strings.Fields(strings.SplitN(string(out), "\n", 2)[0])[1]
	out, err = exec.Command(wardBin, "jobs", "get", "--nats", natsURL, id).CombinedOutput()
	if err != nil {
		t.Fatalf("ward jobs get: %v\n%s", err, out)
	}
	for _, want := range []string{"SUCCEEDED", "job.echo", "acme", "ALLOW", "result:        in the job store, with the job", "events:"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("ward jobs get output lacks %q:\n%s", want, out)
		}
	}

	out, err = exec.Command(wardBin, "workers", "--nats", natsURL).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "dev-host") || !strings.Contains(string(out), "echo") {
		t.Errorf("ward workers: %v\n%s", err, out)
	}

	cmd := exec.Command(wardBin, "submit", "--nats", natsURL, "--topic", "sys.destroy", "--tenant", "acme", "--wait")
	out, err = cmd.CombinedOutput()
	if code := exitCode(err); code == 0 || !strings.Contains(string(out), "DENIED") || !strings.Contains(string(out), "sys.destroy is forbidden") {
		t.Errorf("sys.destroy: exit %d\n%s", code, out)
	}

	// The banner gives the dashboard's URL and a key that logs in; the
	// same key reads the job through the API.
	var dashURL, key string
	for _, line := range strings.Split(dev.out.String(), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "dashboard:"); ok {
			if f := strings.Fields(rest); len(f) >= 5 && f[1] == "log" {
				dashURL, key = f[0], f[4]
			}
		}
	}
	if !strings.HasPrefix(dashURL, "http://127.0.0.1:") || !strings.HasPrefix(key, "ward_") {
		t.Fatalf("no dashboard URL and key in the banner:\n%s", dev.out.String())
	}
	base := strings.TrimSuffix(dashURL, "/ui/")
	req, _ := http.NewRequest("GET", base+"/v1/jobs/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"state":"SUCCEEDED"`) || !strings.Contains(string(body), `"result":{"hello":"world"}`) {
		t.Errorf("GET /v1/jobs/%s with the banner's key: %d %s", id, resp.StatusCode, body)
	}

	dev.stop(t)
	if !strings.Contains(dev.out.String(), "shutting down") {
		t.Errorf("dev output:\n%s", dev.out.String())
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestHostLabels(t *testing.T) {
	got, err := hostLabels([]string{"zone=eu-1", "rack=r2"}, []string{"PATH=/bin", "WARD_LABEL_ZONE=us-2", "WARD_LABEL_DISK_TYPE=ssd"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"zone": "eu-1", "rack": "r2", "disk_type": "ssd"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("got %v, want %v (flags win over the environment)", got, want)
		}
	}
	if _, err := hostLabels([]string{"novalue"}, nil); err == nil {
		t.Fatal("a label without = accepted")
	}
}

// devAdminCreds is the admin credential `ward dev` writes in its state.
func devAdminCreds() string {
	return filepath.Join(os.Getenv("WARD_STATE_DIR"), "creds", "admin.creds")
}
