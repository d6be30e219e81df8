//go:build lattice

package lattice

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/scheduler"
	"github.com/ward-run/ward/internal/testing/history"
	"github.com/ward-run/ward/internal/testing/ollamatest"
	"github.com/ward-run/ward/internal/testing/repotest"
)

// soak, when set (-soak 30m), keeps the load on that long after the
// faults, and reports each process's memory and goroutines at its start
// and end.
var soak = flag.Duration("soak", 0, "after the faults, keep the load on this long and report memory and goroutine growth per process")

// redisCluster, when set (-redis-cluster), puts the store on a Redis
// Cluster of three masters (each with AOF) instead of one redis-server:
// the Sharded store (jobstore.Open, redis+cluster://), and the Redis
// fault restarts one master.
var redisCluster = flag.Bool("redis-cluster", false, "run the store on a 3-master Redis Cluster")

// redisLog, when set (-redis-log), puts the store on the logged store
// (log=lattice: the state in the owning scheduler's memory, a log in
// Redis; the other scheduler follows it as a standby), with a lease of 2 s.
var redisLog = flag.Bool("redis-log", false, "run the store on the logged store (log=lattice)")

// redisShards, with -redis-log, splits the logged store into that many
// shards with owners (log=lattice&shards=N): both schedulers own some and
// send each other what is the other's.
var redisShards = flag.Int("redis-shards", 0, "with -redis-log, the shards with owners the log is split into")

// redisView, with -redis-log, has each log's owner keep its view
// (view=1), and the end check that it holds what a replay of the log
// does.
var redisView = flag.Bool("redis-view", false, "with -redis-log, keep each log's view (view=1) and check it at the end")

// rate is the load offered, in jobs a second: a mix of echo, chat-simple
// and (on the GPU host) chat-advanced jobs, from three tenants.
const rate = 40

// proc is one OS process of the lattice.
type proc struct {
	name string
	bin  string
	args []string
	env  []string
	out  *bytes.Buffer
	// log is the process's whole output, appended across restarts (out
	// keeps its last 4 MiB): the history checker reads the hosts' and
	// the schedulers'.
	log  *os.File
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	// metrics is the process's metrics address (Ward's processes).
	metrics string
}

// usage is a process's resident memory (MiB) and goroutines (-1 when its
// metrics did not answer).
func (p *proc) usage() (rss float64, goroutines int) {
	p.mu.Lock()
	pid := p.cmd.Process.Pid
	p.mu.Unlock()
	goroutines = -1
	if f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				kb, _ := strconv.ParseFloat(strings.Fields(v)[0], 64)
				rss = kb / 1024
			}
		}
		f.Close()
	}
	if p.metrics == "" {
		return rss, goroutines
	}
	resp, err := http.Get("http://" + p.metrics + "/metrics")
	if err != nil {
		return rss, goroutines
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			goroutines = int(n)
		}
	}
	return rss, goroutines
}

type lattice struct {
	t       *testing.T
	dir     string
	ward    string
	procs   map[string]*proc
	natsURL string
	auth    string
	redis   string
	// redisAddrs are the Redis servers (a cluster's masters): the end
	// reads the store's counts there.
	redisAddrs []string
	env        []string
}

func (l *lattice) start(name, bin string, env []string, args ...string) *proc {
	l.t.Helper()
	p := &proc{name: name, bin: bin, args: args, env: env, out: &bytes.Buffer{}}
	f, err := os.OpenFile(l.logPath(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { f.Close() })
	p.log = f
	if bin == l.ward {
		// Each Ward process serves its metrics: the soak reads its
		// goroutines there.
		p.metrics = fmt.Sprintf("127.0.0.1:%d", freePort(l.t))
		p.env = append(slices.Clone(env), "METRICS_ADDR="+p.metrics)
		switch args[0] {
		case "host", "scheduler", "safety":
			p.args = append(slices.Clone(args), "--metrics", p.metrics)
		case "gateway": // its metrics are on its own address
			if i := slices.Index(args, "--listen"); i >= 0 {
				p.metrics = args[i+1]
			}
		}
	}
	l.procs[name] = p
	l.run(p)
	return p
}

func (l *lattice) run(p *proc) {
	l.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(environWithoutRedis(), p.env...)
	cmd.Stdout, cmd.Stderr = &lockedWriter{p: p}, &lockedWriter{p: p}
	if err := cmd.Start(); err != nil {
		l.t.Fatalf("%s: %v", p.name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	done := p.done
	go func() { _ = cmd.Wait(); close(done) }()
}

// environWithoutRedis is the test's environment less REDIS_URL: a process
// reaches Redis only where the lattice gives it the URL (the schedulers).
func environWithoutRedis() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "REDIS_URL=") })
}

type lockedWriter struct{ p *proc }

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	if w.p.out.Len() > 4<<20 {
		w.p.out.Reset()
	}
	_, _ = w.p.log.Write(b)
	return w.p.out.Write(b)
}

// signal sends sig; with SIGKILL or SIGTERM it waits for the exit.
func (l *lattice) signal(name string, sig syscall.Signal) {
	p := l.procs[name]
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	_ = cmd.Process.Signal(sig)
	if sig == syscall.SIGKILL || sig == syscall.SIGTERM {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
}

func (l *lattice) stopAll() {
	for _, p := range l.procs {
		p.mu.Lock()
		cmd, done := p.cmd, p.done
		p.mu.Unlock()
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
}

// logPath is where a process's output is kept.
func (l *lattice) logPath(name string) string { return filepath.Join(l.dir, "logs", name+".log") }

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitListen(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitJetStream waits until the cluster has a JetStream meta leader and
// can create a stream replicated three ways.
func waitJetStream(t *testing.T, url, creds string) {
	t.Helper()
	c, err := client.Dial(url, client.Options{Creds: creds})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	js, err := jetstream.New(c.Bus().NATS())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "lattice_ready", Replicas: 3})
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the NATS cluster's JetStream is not ready: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func goBuild(t *testing.T, out, pkg string, flags ...string) {
	t.Helper()
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", out, pkg)...)
	cmd.Dir = repoRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

func (l *lattice) wardCmd(args ...string) string {
	l.t.Helper()
	cmd := exec.Command(l.ward, args...)
	cmd.Env = append(environWithoutRedis(), l.env...)
	b, err := cmd.CombinedOutput()
	if err != nil {
		l.t.Fatalf("ward %v: %v\n%s", args, err, b)
	}
	return string(b)
}

// job is what the load generator knows of a job it submitted.
type job struct {
	id, topic string
	at        time.Time
	retries   int
}

// TestLattice is the lattice under load and faults; it prints a table of
// each fault's figures.
func TestLattice(t *testing.T) {
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "modules", "build", "echo.wasm")); err != nil {
		t.Fatalf("the modules are not built: make modules (%v)", err)
	}
	dir := t.TempDir()
	l := &lattice{t: t, dir: dir, procs: map[string]*proc{}}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	// HOG=1: busy loops on every core for the whole run, beside the
	// lattice (separate processes, as other work on the machine is).
	// With it, the waits for jobs to end are twice as long; what is
	// checked is the same.
	patience := time.Duration(1)
	if os.Getenv("HOG") != "" && os.Getenv("HOG") != "0" {
		startHog(t, runtime.NumCPU())
		patience = 2
	}
	l.ward = filepath.Join(dir, "ward")
	natsBin := filepath.Join(dir, "nats-server")
	// The lattice's ward has failpoints (internal/failpoint): a scheduler
	// can be killed between a dispatch's store write and its publish.
	goBuild(t, l.ward, "./cmd/ward", "-tags", "failpoints")
	goBuild(t, natsBin, "github.com/nats-io/nats-server/v2")
	defer l.stopAll()
	defer func() {
		if t.Failed() {
			for _, p := range l.procs {
				t.Logf("--- %s:\n%s", p.name, tail(p))
			}
		}
	}()

	// Trust: ward auth init's operator, accounts and credentials.
	l.auth = filepath.Join(dir, "auth")
	l.wardCmd("auth", "init", "--dir", l.auth)
	conf, err := os.ReadFile(filepath.Join(l.auth, "nats-server.conf"))
	if err != nil {
		t.Fatal(err)
	}

	// A three-server NATS cluster, JetStream replicated three ways.
	var clientPorts, routePorts [3]int
	for i := range 3 {
		clientPorts[i], routePorts[i] = freePort(t), freePort(t)
	}
	var urls []string
	for i := range 3 {
		var routes []string
		for j := range 3 {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[j]))
			}
		}
		c := strings.Replace(string(conf), `listen: "0.0.0.0:4222"`, fmt.Sprintf(`listen: "127.0.0.1:%d"`, clientPorts[i]), 1)
		c = strings.Replace(c, `jetstream { store_dir: "/var/lib/nats" }`, fmt.Sprintf(`jetstream { store_dir: %q }`, filepath.Join(dir, fmt.Sprintf("js%d", i))), 1)
		// no_advertise: a client knows the servers it was given, and no
		// others: the host behind the cut proxies reaches NATS only
		// through them.
		c += fmt.Sprintf("\nserver_name: n%d\ncluster {\n  name: ward\n  listen: \"127.0.0.1:%d\"\n  routes: [%s]\n  no_advertise: true\n}\n", i, routePorts[i], strings.Join(routes, ", "))
		path := filepath.Join(dir, fmt.Sprintf("nats-%d.conf", i))
		if err := os.WriteFile(path, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
		l.start(fmt.Sprintf("nats-%d", i), natsBin, nil, "-c", path)
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", clientPorts[i]))
	}
	for _, p := range clientPorts {
		waitListen(t, fmt.Sprintf("127.0.0.1:%d", p))
	}
	l.natsURL = strings.Join(urls, ",")
	waitJetStream(t, l.natsURL, filepath.Join(l.auth, "admin.creds"))
	// Host h1 reaches each NATS server through a proxy that can cut it off.
	var cuts []*cutProxy
	var cutURLs []string
	for _, p := range clientPorts {
		cp := newCutProxy(t, fmt.Sprintf("127.0.0.1:%d", p))
		cuts = append(cuts, cp)
		cutURLs = append(cutURLs, "nats://"+cp.addr())
	}

	// Redis with AOF on: one server, or a cluster of three masters
	// (-redis-cluster), whose first is the one the Redis fault restarts.
	if *redisCluster {
		var addrs []string
		for i := range 3 {
			port, bus := freePort(t), freePort(t)
			rdir := filepath.Join(dir, fmt.Sprintf("redis-%d", i))
			_ = os.MkdirAll(rdir, 0o700)
			name := fmt.Sprintf("redis-%d", i)
			if i == 0 {
				name = "redis"
			}
			l.start(name, "redis-server", nil, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--appendonly", "yes",
				"--appendfsync", "everysec", "--dir", rdir, "--save", "", "--cluster-enabled", "yes",
				"--cluster-config-file", "nodes.conf", "--cluster-port", fmt.Sprint(bus), "--cluster-node-timeout", "5000")
			addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port))
		}
		for _, a := range addrs {
			waitListen(t, a)
		}
		if out, err := exec.Command("redis-cli", append(append([]string{"--cluster", "create"}, addrs...), "--cluster-yes")...).CombinedOutput(); err != nil {
			t.Fatalf("redis-cli --cluster create: %v: %s", err, out)
		}
		l.redis = "redis+cluster://" + addrs[0] + "?addr=" + addrs[1] + "&addr=" + addrs[2]
		l.redisAddrs = addrs
		waitStore(t, l.redis)
	} else {
		redisPort := freePort(t)
		redisDir := filepath.Join(dir, "redis")
		_ = os.MkdirAll(redisDir, 0o700)
		l.start("redis", "redis-server", nil, "--port", fmt.Sprint(redisPort), "--bind", "127.0.0.1", "--appendonly", "yes",
			"--appendfsync", "everysec", "--dir", redisDir, "--save", "")
		waitListen(t, fmt.Sprintf("127.0.0.1:%d", redisPort))
		l.redis = fmt.Sprintf("redis://127.0.0.1:%d", redisPort)
		l.redisAddrs = []string{fmt.Sprintf("127.0.0.1:%d", redisPort)}
		if *redisLog {
			l.redis += "?log=" + latticeLog + "&lease=2s"
			if *redisShards > 0 {
				l.redis += fmt.Sprintf("&shards=%d", *redisShards)
			}
			if *redisView {
				l.redis += "&view=1"
			}
		}
	}

	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sched := "placement:\n  cpu_threshold: 100\ntenants:\n  default: {max_concurrent_jobs: 50, rate: 0}\n  wait_budget: 2m\n"
	timeouts := "reconciler:\n  scan_interval: 1s\n  lease_ttl: 3s\n  pending_timeout: 5s\n  result_grace: 3s\n  dispatch_timeout: 10s\n  running_timeout: 20s\n" +
		"topics:\n  job.echo: {max_retries: 3}\n  job.chat.simple: {max_retries: 3}\n  job.chat.advanced: {max_retries: 3, running_timeout: 20s}\n" +
		"  job.repo.scan: {max_retries: 3}\n  job.repo.sast: {max_retries: 3}\n"
	// bound is the longest a job may take by these timeouts, with no
	// fault: the tenants' wait_budget in a queue, then 4 attempts (3
	// retries), each at most pending + dispatch + running timeouts, the
	// result grace, a reconciler scan and a retry's backoff (≤ 2 s here).
	bound := 2*time.Minute + 4*(5+10+20+3+1+2)*time.Second
	// The environment every process shares, with no Redis in it: only the
	// schedulers reach Redis (REDIS_URL, added to theirs); hosts, kernels,
	// the gateway and the CLI hold no Redis setting at all.
	failpointFile := filepath.Join(dir, "failpoint")
	l.env = []string{"NATS_URL=" + l.natsURL, "WARD_JS_REPLICAS=3", "WARD_LOG_LEVEL=warn", "METRICS_ADDR=",
		"SCHEDULER_CONFIG_PATH=" + write("scheduler.yaml", sched), "TIMEOUT_CONFIG_PATH=" + write("timeouts.yaml", timeouts),
		"WARD_STATE_DIR=" + filepath.Join(dir, "state"), "WARD_AUTH_DIR=" + l.auth}

	// Two kernels; each scheduler knows both (SAFETY_KERNEL_ADDR, a list).
	var kernels [2]string
	for i := range 2 {
		kernels[i] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		l.start(fmt.Sprintf("safety-%d", i), l.ward, l.env, "safety", "--creds", filepath.Join(l.auth, "safety.creds"),
			"--listen", kernels[i], "--policy-pubkey", filepath.Join(l.auth, "policy.pub"), "--id", fmt.Sprintf("k%d", i))
	}
	for _, k := range kernels {
		waitListen(t, k)
	}
	for i := range 2 {
		l.start(fmt.Sprintf("scheduler-%d", i), l.ward, append(slices.Clone(l.env), "REDIS_URL="+l.redis, "SAFETY_KERNEL_ADDR="+kernels[i]+","+kernels[1-i],
			"WARD_FAILPOINT_FILE="+failpointFile), "scheduler",
			"--id", fmt.Sprintf("s%d", i), "--creds", filepath.Join(l.auth, "scheduler.creds"),
			"--dispatch-secret", filepath.Join(l.auth, "dispatch.secret"))
	}

	// Four hosts; h0 is tagged GPU, beside a stand-in Ollama.
	ollama := ollamatest.New(t, func(r ollamatest.Request) []string { return []string{"an ", "answer ", "to ", r.Prompt} })
	for i := range 4 {
		id := fmt.Sprintf("h%d", i)
		add := []string{"auth", "--dir", l.auth, "host", "add", id, "-o", l.auth}
		args := []string{"host", "--id", id, "--creds", filepath.Join(l.auth, "host-"+id+".creds"), "--dispatch-key", filepath.Join(l.auth, "host-"+id+".key"),
			"--trusted-key", filepath.Join(l.auth, "module.pub"), "--modules", filepath.Join(root, "modules", "build"),
			"--gpu", "off", "--heartbeat", "500ms", "--max-parallel", "4", "--cache-dir", filepath.Join(dir, "cache"), "--started-delay", "20ms"}
		if i == 0 {
			add = append(add, "--gpu")
			args = append(args, "--capability", "gpu", "--ollama-url", ollama.URL)
		}
		l.wardCmd(add...)
		// Hosts log at DEBUG: every (job, attempt) accepted and every
		// result answered, for the history checker.
		env := append(slices.Clone(l.env), "WARD_LOG_LEVEL=debug")
		if id == "h1" {
			env = append(env, "NATS_URL="+strings.Join(cutURLs, ","))
		}
		l.start("host-"+id, l.ward, env, args...)
	}
	gw := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	l.start("gateway", l.ward, l.env, "gateway", "--creds", filepath.Join(l.auth, "admin.creds"), "--listen", gw)
	waitListen(t, gw)
	// An admin API key: a share of the load comes through the gateway.
	// (The key is stdout's first line; what it is follows on stderr.)
	apiKey, _, _ := strings.Cut(l.wardCmd("auth", "key", "add", "--tenant", "ops", "--admin", "--name", "lattice",
		"--creds", filepath.Join(l.auth, "admin.creds"), "--nats", l.natsURL), "\n")
	if !strings.HasPrefix(apiKey, "ward_") {
		t.Fatalf("ward auth key add printed %q", apiKey)
	}

	c, err := client.Dial(l.natsURL, client.Options{Creds: filepath.Join(l.auth, "admin.creds")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// The history: every acknowledged submit in the submitters' log, what
	// the hosts ran in theirs, the store's record of each job.
	acks := newAckLog(t, filepath.Join(dir, "acks.log"))
	k := &checker{t: t, l: l, c: c, acks: filepath.Join(dir, "acks.log"), bound: bound,
		hosts: []string{"host-h0", "host-h1", "host-h2", "host-h3"}, recs: map[string]*wardv1.JobRecord{}}

	// Every job's end, on one subscription; ends counted by the second.
	var (
		mu       sync.Mutex
		jobs     = map[string]*job{}
		ended    = map[string]bool{}
		perSec   = map[int64]int{}
		started  = time.Now()
		submitOK atomic.Int64
		refused  atomic.Int64
	)
	sub, err := c.Bus().NATS().Subscribe(bus.SubjectEvents, func(m *nats.Msg) {
		var ev wardv1.JobEvent
		if proto.Unmarshal(m.Data, &ev) != nil || !client.Terminal(ev.GetState()) {
			return
		}
		mu.Lock()
		if _, ok := jobs[ev.GetJobId()]; ok && !ended[ev.GetJobId()] {
			ended[ev.GetJobId()] = true
			perSec[int64(time.Since(started)/time.Second)]++
		}
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = sub.SetPendingLimits(-1, -1)

	// Wait until the lattice runs a job end to end.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		id := uuid.NewString()
		w, _ := c.Watch(id)
		_, err := c.Submit(ctx, &wardv1.JobRequest{JobId: id, Topic: "job.echo", TenantId: "warm", Payload: []byte("warm")})
		var last *wardv1.JobEvent
		if err == nil {
			last, err = c.Wait(ctx, id, w, nil)
		}
		w.Close()
		cancel()
		if err == nil && last.GetState() == wardv1.JobState_JOB_STATE_SUCCEEDED {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lattice does not run a job: %v %v", err, last)
		}
		time.Sleep(time.Second)
	}
	// ... and until every host has joined, the GPU host with Ollama: the
	// first to come up runs that job, and an LLM job sent before h0 joined
	// would fail no_workers, rightly (no live host can run it).
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		hbs, err := c.Workers(ctx, time.Second)
		cancel()
		ready := 0
		for _, hb := range hbs {
			if hb.GetWorkerId() != "h0" || slices.Contains(hb.GetCapabilities(), "ollama") {
				ready++
			}
		}
		if err == nil && ready == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every host joined: %d of 4 (%v)", ready, err)
		}
	}

	// A repository for the repo jobs, as `ward submit --repo` sends it: a
	// JSON head, then the gzipped tar.
	repoPayload := append([]byte("{}\n"), repotest.Archive(t, repotest.Tree(t))...)

	// forget drops a job that was refused at submission: it is no job.
	forget := func(id string) {
		refused.Add(1)
		mu.Lock()
		delete(jobs, id)
		mu.Unlock()
	}

	// Workflow runs (a fan-out of three echo jobs and a join), started
	// with the client, retried with the same id until a replica answers.
	runs := map[string]time.Time{}
	fan := []byte("name: lattice-fan\nsteps:\n  - id: each\n    topic: job.echo\n    for_each: 0..2\n    payload: {i: \"${{ item }}\"}\n" +
		"  - id: sum\n    topic: job.echo\n    depends_on: [each]\n    payload: {n: \"${{ len(steps.each.output) }}\"}\n")
	var runsRefused atomic.Int64
	startRun := func(id, tenant string) {
		for attempt := 0; ; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := c.RunWorkflow(ctx, &wardv1.WorkflowRunRequest{RunId: id, TenantId: tenant, Definition: fan, Input: []byte("{}")})
			cancel()
			if err == nil || (errors.Is(err, client.ErrRefused) && strings.Contains(err.Error(), "exists")) {
				return
			}
			if attempt > 20 {
				runsRefused.Add(1)
				mu.Lock()
				delete(runs, id)
				mu.Unlock()
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	// A job submitted through the gateway's API, with the job's id as its
	// idempotency key, retried until the gateway answers.
	var viaGateway atomic.Int64
	gatewaySubmit := func(j *job, tenant string, payload []byte) {
		body, _ := json.Marshal(map[string]any{"job_id": j.id, "topic": j.topic, "payload_text": string(payload), "tenant": tenant})
		for attempt := 0; ; attempt++ {
			req, _ := http.NewRequest(http.MethodPost, "http://"+gw+"/v1/jobs", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+apiKey)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", j.id)
			resp, err := http.DefaultClient.Do(req)
			var why string
			if err == nil {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				resp.Body.Close()
				if resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusOK {
					submitOK.Add(1)
					acks.ack(j)
					viaGateway.Add(1)
					return
				}
				why = resp.Status + ": " + string(b)
			} else {
				why = err.Error()
			}
			if attempt > 20 {
				if refused.Load() < 3 {
					t.Logf("gateway submission of %s refused 20 times, the last: %s", j.id, why)
				}
				forget(j.id)
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
	}

	// cancelJob cancels an acknowledged job (it may have ended already):
	// the history checker then finds no attempt of it run after.
	var cancels atomic.Int64
	cancelJob := func(j *job) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := c.Cancel(ctx, j.id, "lattice"); err == nil {
			cancels.Add(1)
		}
	}

	// The load: rate jobs a second, as long as it runs.
	loadCtx, stopLoad := context.WithCancel(context.Background())
	var loadWG sync.WaitGroup
	loadWG.Go(func() {
		tk := time.NewTicker(time.Second / rate)
		defer tk.Stop()
		n := 0
		for {
			select {
			case <-loadCtx.Done():
				return
			case <-tk.C:
			}
			n++
			topic, payload := "job.echo", []byte(fmt.Sprintf(`{"n":%d}`, n))
			switch {
			case n%10 == 0:
				topic, payload = "job.chat.advanced", []byte("why is the sky blue?")
			case n%5 == 0:
				topic, payload = "job.chat.simple", []byte("hello")
			case n%20 == 7:
				topic, payload = "job.repo.scan", repoPayload
			case n%20 == 17:
				topic, payload = "job.repo.sast", repoPayload
			}
			if n%120 == 0 { // a workflow run every 3 s
				id := "run-" + uuid.NewString()
				mu.Lock()
				runs[id] = time.Now()
				mu.Unlock()
				go startRun(id, fmt.Sprintf("t%d", n%3))
			}
			j := &job{id: uuid.NewString(), topic: topic, at: time.Now(), retries: 3}
			mu.Lock()
			jobs[j.id] = j
			mu.Unlock()
			if n%10 == 3 { // one job in ten through the gateway's API
				go gatewaySubmit(j, fmt.Sprintf("t%d", n%3), payload)
				continue
			}
			n := n // this job's number, for its goroutine
			go func() {
				for attempt := 0; ; attempt++ {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					// Resubmitted with the same id and key until some
					// replica answers: a submission nobody answered may
					// have been taken; the key makes it one job.
					rep, err := c.Submit(ctx, &wardv1.JobRequest{JobId: j.id, Topic: topic, TenantId: fmt.Sprintf("t%d", n%3),
						Payload: payload, IdempotencyKey: j.id})
					cancel()
					if err == nil && rep.GetAccepted() {
						submitOK.Add(1)
						acks.ack(j)
						if n%50 == 21 { // one job in 50 is cancelled at once
							cancelJob(j)
						}
						return
					}
					if rep != nil && !rep.GetAccepted() && attempt > 20 {
						forget(j.id)
						return
					}
					time.Sleep(500 * time.Millisecond)
				}
			}()
		}
	})

	rateAt := func(sec int64) int {
		mu.Lock()
		defer mu.Unlock()
		return perSec[sec]
	}
	baseline := func(from, to int64) float64 {
		sum := 0
		for s := from; s < to; s++ {
			sum += rateAt(s)
		}
		return float64(sum) / float64(to-from)
	}
	// All jobs submitted before cut ended, within wait. The store is the
	// truth: a job whose end event the bus did not deliver (NATS core is
	// at most once) but which the store holds ended counts as ended, and
	// as a missed event.
	var missedEvents atomic.Int64
	settle := func(cut time.Time, wait time.Duration) (pending []string) {
		deadline := time.Now().Add(wait)
		for {
			pending = pending[:0]
			mu.Lock()
			for id, j := range jobs {
				if j.at.Before(cut) && !ended[id] {
					pending = append(pending, id)
				}
			}
			mu.Unlock()
			if time.Now().After(deadline.Add(-wait / 2)) {
				for _, id := range slices.Clone(pending) {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					rec, err := c.Get(ctx, id, false)
					cancel()
					if err == nil && client.Terminal(rec.GetState()) {
						mu.Lock()
						if !ended[id] {
							ended[id] = true
							missedEvents.Add(1)
						}
						mu.Unlock()
						pending = slices.DeleteFunc(pending, func(p string) bool { return p == id })
					}
				}
			}
			if len(pending) == 0 || time.Now().After(deadline) {
				return pending
			}
			time.Sleep(500 * time.Millisecond)
		}
	}

	time.Sleep(8 * time.Second) // a steady state
	var figures []figure
	// Results that did not move their job (refused as stale, or late),
	// by the schedulers' metrics, across their restarts.
	var late lateResults
	lateCtx, stopLate := context.WithCancel(context.Background())
	defer stopLate()
	late.follow(lateCtx, l)
	var lastJobs int
	fault := func(name string, inject func() string) {
		t.Helper()
		from, lateFrom := time.Now(), late.count()
		faultSec := int64(time.Since(started) / time.Second)
		// The steady rate: what ended in the seconds before, at most the
		// rate offered (the first seconds end a warm-up's backlog too).
		base := min(baseline(max(1, faultSec-6), faultSec), rate)
		note := inject()
		to := time.Now()
		endSec := int64(time.Since(started) / time.Second)
		// Recovery: from the fault until the first whole second, once the
		// fault is over, whose ends are back to 90% of the steady rate
		// (up to 90 s), and the lowest second meanwhile.
		rec, low, recovery := "not within 90 s", base, 90*time.Second
		for until := time.Now().Add(90 * time.Second); time.Now().Before(until); {
			time.Sleep(time.Second)
			cur, found := int64(time.Since(started)/time.Second), false
			for sec := faultSec + 1; sec < cur; sec++ {
				low = min(low, float64(rateAt(sec)))
				if sec >= endSec && float64(rateAt(sec)) >= 0.9*base {
					rec, found = fmt.Sprintf("%d s", sec-faultSec), true
					recovery = time.Duration(sec-endSec) * time.Second
					break
				}
			}
			if found {
				break
			}
		}
		// The ends of each second from the fault to its recovery.
		var series []string
		for sec := faultSec; sec < int64(time.Since(started)/time.Second) && len(series) < 120; sec++ {
			series = append(series, strconv.Itoa(rateAt(sec)))
		}
		t.Logf("fault %q: ends per second from it on: %s", name, strings.Join(series, " "))
		pending := settle(time.Now().Add(-2*time.Second), patience*90*time.Second)
		// The history so far, with this fault's window and recovery.
		k.mu.Lock()
		k.faults = append(k.faults, history.Fault{Name: name, From: from, To: to, Recovery: recovery})
		k.mu.Unlock()
		h := k.check(false)
		fig := figure{fault: name, stuck: len(pending), recovery: rec, base: base, low: low, note: note,
			jobs: h.Jobs - lastJobs, lost: len(h.Lost), dup: len(h.Duplicated), refused: late.count() - lateFrom, violations: h.Violations()}
		lastJobs = h.Jobs
		figures = append(figures, fig)
		t.Logf("fault %q: steady %.0f ends/s, lowest %.0f, recovery %s, jobs not ended %d %s", name, base, low, rec, len(pending), note)
		t.Logf("fault %q: %s; results of earlier attempts the schedulers refused or ignored since the fault: %d (%d logged refused as stale)",
			name, h, fig.refused, k.refusedSince(from))
		if h.Violations() > 0 {
			t.Errorf("fault %q: the history checker found %d violations", name, h.Violations())
		}
	}

	fault("kill -9 a scheduler (restarted after 3 s)", func() string {
		l.signal("scheduler-0", syscall.SIGKILL)
		time.Sleep(3 * time.Second)
		l.run(l.procs["scheduler-0"])
		return ""
	})
	fault("kill -9 a host mid-job (restarted after 3 s)", func() string {
		l.signal("host-h2", syscall.SIGKILL)
		time.Sleep(3 * time.Second)
		l.run(l.procs["host-h2"])
		return ""
	})
	fault("kill -9 a safety kernel (restarted after 3 s)", func() string {
		l.signal("safety-1", syscall.SIGKILL)
		time.Sleep(3 * time.Second)
		l.run(l.procs["safety-1"])
		return "the schedulers ask the other kernel meanwhile"
	})
	fault("kill -9 a NATS server (restarted after 5 s)", func() string {
		l.signal("nats-1", syscall.SIGKILL)
		time.Sleep(5 * time.Second)
		l.run(l.procs["nats-1"])
		return ""
	})
	fault("kill -9 a scheduler, a host and a NATS server together (restarted after 5 s)", func() string {
		for _, p := range []string{"scheduler-1", "host-h1", "nats-2"} {
			l.signal(p, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Second)
		for _, p := range []string{"nats-2", "scheduler-1", "host-h1"} {
			l.run(l.procs[p])
		}
		return ""
	})
	redisFault := "restart Redis (SIGTERM, AOF)"
	if *redisCluster {
		redisFault = "restart one of the 3 Redis masters (SIGTERM, AOF)"
	}
	fault(redisFault, func() string {
		l.signal("redis", syscall.SIGTERM)
		l.run(l.procs["redis"])
		return ""
	})
	// A host stopped, not dead: the schedulers place jobs on it until its
	// heartbeats are 30 s late, its attempts pass their dispatch (10 s) and
	// running (20 s) timeouts and are retried elsewhere; once continued,
	// its late results must be refused, not end the new attempts.
	var stopAt, contAt time.Time
	fault("SIGSTOP a host past its running timeout and heartbeat TTL (35 s), then SIGCONT", func() string {
		waitHolding(l.logPath("host-h3"), patience*30*time.Second) // stopped while it runs a job
		stopAt = time.Now()
		l.signal("host-h3", syscall.SIGSTOP)
		time.Sleep(35 * time.Second)
		l.signal("host-h3", syscall.SIGCONT)
		contAt = time.Now()
		return fmt.Sprintf("h3 held %d attempts it had accepted", len(hostsRunning(l.logPath("host-h3"), stopAt)))
	})
	k.stranded(t, "h3", stopAt, contAt)

	// A host cut off NATS, alive: through the proxies between h1 and each
	// NATS server, nothing passes for 35 s (no close either way), then
	// every connection is reset and h1 reconnects; its jobs are retried
	// elsewhere meanwhile, and what it sends of them after is refused.
	var cutAt, healAt time.Time
	fault("cut a host off NATS (its proxies drop everything, 35 s), then heal", func() string {
		waitHolding(l.logPath("host-h1"), patience*30*time.Second) // cut off while it runs a job
		cutAt = time.Now()
		for _, cp := range cuts {
			cp.partition()
		}
		time.Sleep(35 * time.Second)
		for _, cp := range cuts {
			cp.heal()
		}
		healAt = time.Now()
		return fmt.Sprintf("h1 held %d attempts it had accepted", len(hostsRunning(l.logPath("host-h1"), cutAt)))
	})
	k.stranded(t, "h1", cutAt, healAt)

	// A scheduler killed between a dispatch's store write and its publish:
	// the failpoint in the lattice's build (internal/failpoint), armed by
	// SIGUSR1, SIGKILLs it at its next dispatch. The job's attempt is
	// DISPATCHED in the store and no host ever hears of it: the reconciler
	// retries it after the dispatch timeout.
	var fpJob, fpAttempt string
	fault("kill -9 a scheduler between a dispatch's store write and its publish (failpoint; restarted after 3 s)", func() string {
		if err := os.WriteFile(failpointFile, []byte("dispatch-after-store"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := l.procs["scheduler-0"]
		p.mu.Lock()
		done := p.done
		p.mu.Unlock()
		l.signal("scheduler-0", syscall.SIGUSR1)
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			t.Errorf("the dispatch-after-store failpoint was not hit in 2 minutes")
			l.signal("scheduler-0", syscall.SIGKILL)
		}
		_ = os.Remove(failpointFile)
		time.Sleep(3 * time.Second)
		l.run(p)
		b, _ := os.ReadFile(l.logPath("scheduler-0"))
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "failpoint: dispatch-after-store hit at "); ok {
				for _, f := range strings.Fields(strings.TrimSuffix(rest, ": SIGKILL")) {
					if v, ok := strings.CutPrefix(f, "job_id="); ok {
						fpJob = v
					}
					if v, ok := strings.CutPrefix(f, "attempt="); ok {
						fpAttempt = v
					}
				}
			}
		}
		return fmt.Sprintf("killed with job %s attempt %s stored DISPATCHED, unpublished", fpJob, fpAttempt)
	})
	if fpJob != "" {
		// That attempt never reached a host, and the job still ended.
		rec := k.record(fpJob)
		ran := 0
		for _, h := range k.hosts {
			lines, _ := history.ReadLog(l.logPath(h))
			runs, _ := history.HostHistory(h, lines)
			for _, r := range runs {
				if r.Job == fpJob && strconv.Itoa(r.Attempt) == fpAttempt {
					ran++
				}
			}
		}
		switch {
		case rec == nil: // a job of the warm-up or a workflow step: not in the history
			t.Logf("the failpoint's job %s is not one the load submitted (a workflow step?)", fpJob)
		case ran > 0:
			t.Errorf("job %s attempt %s, never published, was accepted by a host %d times", fpJob, fpAttempt, ran)
		case !client.Terminal(rec.GetState()):
			t.Errorf("job %s, whose dispatch was never published, did not end: %s", fpJob, rec.GetState())
		default:
			t.Logf("the failpoint's job %s (attempt %s never published) ended %s after %d attempts", fpJob, fpAttempt, rec.GetState(), rec.GetAttempt())
		}
	}
	fault("fill the echo pool past its capacity (400 jobs at once on 16 slots)", func() string {
		var wg sync.WaitGroup
		for i := range 400 {
			j := &job{id: uuid.NewString(), topic: "job.echo", at: time.Now(), retries: 3}
			mu.Lock()
			jobs[j.id] = j
			mu.Unlock()
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if _, err := c.Submit(ctx, &wardv1.JobRequest{JobId: j.id, Topic: j.topic, TenantId: fmt.Sprintf("t%d", i%3),
					Payload: []byte(fmt.Sprintf(`{"burst":%d}`, i)), IdempotencyKey: j.id}); err != nil {
					forget(j.id)
					return
				}
				submitOK.Add(1)
				acks.ack(j)
				if i%10 == 5 { // one in ten of the burst is cancelled while it queues
					cancelJob(j)
				}
			})
		}
		wg.Wait()
		return "queued behind the hosts' slots"
	})
	fault("push a policy and deploy a module under load", func() string {
		pol := filepath.Join(dir, "policy")
		_ = os.MkdirAll(pol, 0o755)
		for _, f := range []string{"ward.rego", "ward_test.rego", "data.yaml"} {
			b, err := os.ReadFile(filepath.Join(root, "policies", f))
			if err != nil {
				t.Fatal(err)
			}
			_ = os.WriteFile(filepath.Join(pol, f), b, 0o644)
		}
		_ = os.WriteFile(filepath.Join(pol, "lattice.rego"), []byte("package ward.safety\n\ndeny contains \"topic job.closed is closed\" if input.topic == \"job.closed\"\n"), 0o644)
		out := l.wardCmd("policy", "push", pol, "--creds", filepath.Join(l.auth, "admin.creds"), "--nats", l.natsURL)
		man := filepath.Join(dir, "hello.yaml")
		_ = os.WriteFile(man, []byte("name: hello\nversion: \"1\"\nabi: ward-reactor-v1\nisolation: pooled\ntopic: job.hello\npool: hello\n"), 0o644)
		out += l.wardCmd("module", "deploy", filepath.Join(root, "modules", "build", "echo.wasm"), "--manifest", man,
			"--creds", filepath.Join(l.auth, "admin.creds"), "--nats", l.natsURL, "--wait", (patience * time.Minute).String())
		return strings.Join(strings.Fields(lastLines(out, 2)), " ")
	})

	fault("starve the CPU while a module deploys", func() string {
		ctx, cancel := context.WithCancel(context.Background())
		var hogs sync.WaitGroup
		for range 2 * runtime.NumCPU() {
			hogs.Go(func() {
				for ctx.Err() == nil {
					for i := 0; i < 1e6; i++ {
					}
				}
			})
		}
		man := filepath.Join(dir, "hello2.yaml")
		_ = os.WriteFile(man, []byte("name: hello\nversion: \"2\"\nabi: ward-reactor-v1\nisolation: pooled\ntopic: job.hello\npool: hello\n"), 0o644)
		out := l.wardCmd("module", "deploy", filepath.Join(root, "modules", "build", "echo.wasm"), "--manifest", man,
			"--creds", filepath.Join(l.auth, "admin.creds"), "--nats", l.natsURL, "--wait", (patience * 2 * time.Minute).String())
		cancel()
		hogs.Wait()
		if !strings.Contains(out, "on 4/4 live hosts") {
			t.Errorf("the rollout under a starved CPU did not count every live host:\n%s", out)
		}
		return strings.Join(strings.Fields(lastLines(out, 1)), " ")
	})

	if *soak > 0 {
		type sample struct {
			rss float64
			g   int
		}
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range l.procs {
				if !yield(n) {
					return
				}
			}
		})
		first := map[string]sample{}
		for _, n := range names {
			r, g := l.procs[n].usage()
			first[n] = sample{r, g}
		}
		t.Logf("soak: the load stays on for %s", *soak)
		end := time.Now().Add(*soak)
		for time.Now().Before(end) {
			time.Sleep(min(time.Minute, time.Until(end)))
			settle(time.Now().Add(-time.Minute), 30*time.Second)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "| process | RSS MiB at the start | at the end | goroutines at the start | at the end |\n|---|---:|---:|---:|---:|\n")
		for _, n := range names {
			r, g := l.procs[n].usage()
			fmt.Fprintf(&b, "| %s | %.0f | %.0f | %d | %d |\n", n, first[n].rss, r, first[n].g, g)
		}
		t.Logf("soak of %s:\n%s", *soak, b.String())
	}

	// The end: no more load, every job ends, and each is checked.
	stopLoad()
	loadWG.Wait()
	pending := settle(time.Now(), patience*2*time.Minute)
	// The history of the whole run, every record read again.
	final := k.check(true)
	t.Logf("the end: %s", final)
	if final.Violations() > 0 {
		t.Errorf("the history checker found %d violations at the end", final.Violations())
	}
	// Nothing runs: the store's tenant and worker counts and the hosts'
	// active jobs are back to zero.
	if nonzero := k.countsZero(l.redisAddrs, time.Minute); len(nonzero) > 0 {
		t.Errorf("counts not back to zero a minute after the last job ended: %v", nonzero)
	} else {
		t.Logf("the end: every tenant's and worker's active count in the store, and every host's active jobs, back to 0")
	}
	if *redisView {
		// Each log's view, written by owners killed, paused, cut off and
		// taken over along the way, holds what a replay of its log does.
		if n, diff := viewsAgree(l.redisAddrs, 30*time.Second); diff != "" {
			t.Errorf("the logs' views differ from their replays: %s", diff)
		} else {
			t.Logf("the end: the logs' views hold what their replays do: %d jobs in the same state indexes", n)
		}
	}
	mu.Lock()
	ids := make([]string, 0, len(jobs))
	for id := range jobs {
		ids = append(ids, id)
	}
	mu.Unlock()
	var (
		states                     = map[string]int{}
		reasons                    = map[string]int{}
		overRun, badLog, multiTerm int
		offGPU                     int
	)
	for _, id := range ids {
		rec := k.record(id) // as the final check read it
		if rec == nil {
			t.Errorf("job %s: no record", id)
			continue
		}
		states[strings.TrimPrefix(rec.GetState().String(), "JOB_STATE_")]++
		if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
			reasons[rec.GetReason()]++
			if reasons[rec.GetReason()] <= 3 { // say why, for the first few of each reason
				last := rec.GetEvents()[len(rec.GetEvents())-1]
				t.Logf("job %s (%s, %s) ended %s %s at %s: %s", id, rec.GetTopic(), rec.GetTenantId(), rec.GetState(), rec.GetReason(),
					time.UnixMilli(last.GetAtUnixMs()).Sub(started).Round(time.Second), last.GetMessage())
				if reasons[rec.GetReason()] == 1 {
					for _, e := range rec.GetEvents() {
						t.Logf("    %s %s worker=%q %s", time.UnixMilli(e.GetAtUnixMs()).Sub(started).Round(time.Millisecond),
							e.GetState(), e.GetWorkerId(), e.GetMessage())
					}
				}
			}
		}
		// LLM jobs land only where Ollama is: the GPU host.
		if rec.GetTopic() == "job.chat.advanced" && rec.GetState() == wardv1.JobState_JOB_STATE_SUCCEEDED && rec.GetWorkerId() != "h0" {
			offGPU++
			t.Errorf("LLM job %s ran on %s, not on the GPU host h0", id, rec.GetWorkerId())
		}
		evs := scheduler.StoredEvents(rec)
		if err := jobstore.VerifyEvents(evs, rec.GetEventsChain()); err != nil {
			badLog++
			t.Errorf("job %s: its event log: %v", id, err)
		}
		terminal, dispatched := 0, 0
		for _, e := range rec.GetEvents() {
			if client.Terminal(e.GetState()) {
				terminal++
			}
			if e.GetState() == wardv1.JobState_JOB_STATE_DISPATCHED {
				dispatched++
			}
		}
		if terminal != 1 {
			multiTerm++
			t.Errorf("job %s has %d terminal events", id, terminal)
		}
		// Runs: one per dispatch; no more than the retry policy allows.
		if dispatched > 1+3 {
			overRun++
			t.Errorf("job %s was dispatched %d times, its retry policy allows 4", id, dispatched)
		}
	}
	t.Logf("\n%s", table(figures, len(ids), len(pending), int(refused.Load()), states, overRun, badLog, multiTerm))
	t.Logf("history at the end: %d jobs acknowledged, %d lost, %d duplicated, %d violations; %d jobs cancelled by the load; results of earlier attempts refused or ignored over the run: %d (%d logged refused as stale)",
		final.Jobs, len(final.Lost), len(final.Duplicated), final.Violations(), cancels.Load(), late.count(), k.refusedSince(started))
	t.Logf("end events the bus did not deliver (the store had the end): %d; why the others did not succeed: %v; LLM jobs off the GPU host: %d",
		missedEvents.Load(), reasons, offGPU)
	if len(pending) > 0 {
		t.Errorf("%d jobs did not end: %v", len(pending), pending[:min(5, len(pending))])
	}
	// Every workflow run ends, each with its log's chain whole.
	mu.Lock()
	runIDs := slices.Collect(func(yield func(string) bool) {
		for id := range runs {
			if !yield(id) {
				return
			}
		}
	})
	mu.Unlock()
	runStates := map[string]int{}
	deadline = time.Now().Add(patience * 2 * time.Minute)
	for _, id := range runIDs {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			run, err := c.Workflow(ctx, id, false)
			cancel()
			if err == nil && run.GetState() != "RUNNING" {
				runStates[run.GetState()]++
				if run.GetState() != "SUCCEEDED" {
					t.Errorf("workflow run %s ended %s: %s", id, run.GetState(), run.GetReason())
				}
				break
			}
			if time.Now().After(deadline) {
				runStates["not ended"]++
				t.Errorf("workflow run %s did not end: %v %v", id, run.GetState(), err)
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	t.Logf("workflow runs: %d started, %v; not started (refused 20 times): %d; jobs submitted through the gateway: %d",
		len(runIDs), runStates, runsRefused.Load(), viaGateway.Load())
	// What Ward's processes warned about, each message once.
	for _, name := range slices.Sorted(maps.Keys(l.procs)) {
		p := l.procs[name]
		if p.bin != l.ward {
			continue
		}
		p.mu.Lock()
		out := p.out.String()
		p.mu.Unlock()
		seen := map[string]int{}
		var order []string
		for _, line := range strings.Split(out, "\n") {
			if !strings.Contains(line, "level=WARN") && !strings.Contains(line, "level=ERROR") {
				continue
			}
			msg := line
			if i := strings.Index(line, "msg="); i >= 0 {
				msg = line[i:]
				if j := strings.Index(msg, " job_id="); j >= 0 {
					msg = msg[:j]
				}
			}
			if seen[msg] == 0 {
				order = append(order, line)
			}
			seen[msg]++
		}
		for _, line := range order[:min(8, len(order))] {
			t.Logf("%s warned: %.300s", name, line)
		}
	}
	for _, f := range figures {
		if f.stuck > 0 {
			t.Errorf("fault %q left %d jobs not ended", f.fault, f.stuck)
		}
	}
}

// figure is what a fault did.
type figure struct {
	fault, recovery, note string
	stuck                 int
	base, low             float64
	// The history checker's: jobs acknowledged since the fault before,
	// lost (not ended past their bound), (job, attempt)s run twice, and
	// every violation, all so far; results of earlier attempts the
	// schedulers refused since the fault began.
	jobs, lost, dup, refused, violations int
}

func table(fs []figure, submitted, notEnded, refused int, states map[string]int, overRun, badLog, multiTerm int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| fault | jobs | lost (not ended) | duplicated | late results refused or ignored | history violations | recovery to 90%% | steady ends/s | lowest ends/s | note |\n|---|---:|---:|---:|---:|---:|---|---:|---:|---|\n")
	for _, f := range fs {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %s | %.0f | %.0f | %s |\n", f.fault, f.jobs, max(f.stuck, f.lost), f.dup, f.refused, f.violations,
			f.recovery, f.base, f.low, f.note)
	}
	fmt.Fprintf(&b, "\nsubmitted %d, not ended %d (lost or stuck), refused at submission %d; ended: %v\n", submitted, notEnded, refused, states)
	fmt.Fprintf(&b, "run more often than the retry policy allows: %d; a broken or unordered event log: %d; other than one terminal event: %d\n", overRun, badLog, multiTerm)
	return b.String()
}

func tail(p *proc) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return lastLines(p.out.String(), 20)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// waitStore waits until the store at url opens (a new cluster takes a
// moment to agree that every slot is served).
func waitStore(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := jobstore.Open(url)
		if err == nil {
			s.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("store %s: %v", url, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
