package assembly_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// The deploy tests run a system with the module registry (JetStream in a
// real nats-server, a real redis-server, the kernel over gRPC, real hosts)
// and deploy versions of testdata/hello, which answers "hello <version>:
// <input>".

const helloPkg = "./testdata/hello"

func hello(t testing.TB, version string) []byte {
	return wasmtest.BuildReactorX(t, helloPkg, "main.version="+version)
}

// variant returns wasm with a custom section named tag appended: the same
// module under another digest, without another build.
func variant(wasm []byte, tag string) []byte {
	content := append([]byte{byte(len(tag))}, tag...)
	content = append(content, '.') // a payload: wazero reads one
	out := append([]byte(nil), wasm...)
	out = append(out, 0, byte(len(content)))
	return append(out, content...)
}

// deployEnv is a running system with the registry, and a registry handle
// for the test.
type deployEnv struct {
	*env
	reg *modreg.Registry
	nc  *nats.Conn
}

func startDeploy(t testing.TB, o assembly.Options) *deployEnv {
	t.Helper()
	o.ModuleRegistry = true
	o.Host.ID = "host-one"
	o.Host.Labels = map[string]string{"machine": o.Host.ID} // jobs may ask for a host by label
	// Every version compiles once on this machine, whichever test or
	// host loads it first: compiling is most of a deploy under -race.
	o.Host.CacheDir = wasmtest.CacheDir(t)
	if o.Host.Modules == nil {
		o.Host.Modules = echoModules(t)
	}
	e := start(t, o)
	// Deploying is an admin's: the hosts' and schedulers' credentials may
	// not write the registry.
	nc := e.client.Bus().NATS()
	reg, err := modreg.Open(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	return &deployEnv{env: e, reg: reg, nc: nc}
}

// deploy deploys hello at version with the route job.hello → pool hello,
// signed with key when it is not nil.
func (e *deployEnv) deploy(t testing.TB, version string, wasm []byte, key ed25519.PrivateKey) *modreg.Active {
	t.Helper()
	v := modreg.Version{Name: "hello", Version: version, Manifest: helloManifest(version), Route: modreg.Route{Topic: "job.hello", Pool: "hello"}}
	if key != nil {
		v.Signature = modreg.Sign(key, modreg.Digest(wasm))
	}
	a, err := e.reg.Deploy(context.Background(), v, wasm)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// loadWithin bounds how long a test waits for hosts to load a version.
// Loading takes about a second; compiling under -race, on a busy two-core
// machine, can take twenty.
const loadWithin = 2 * time.Minute

func helloManifest(version string) string {
	return fmt.Sprintf("name: hello\nversion: %q\nabi: ward-reactor-v1\nisolation: pooled\ntopic: job.hello\npool: hello\n", version)
}

// holds waits until every agent holds digest of hello.
func holds(t testing.TB, digest string, agents ...*assembly.Host) {
	t.Helper()
	checkFor(t, loadWithin, func() bool {
		for _, a := range agents {
			if a.Modules()["hello"] != digest {
				return false
			}
		}
		return true
	})
}

// helloJob runs a job.hello job and returns the stored job.
func (e *deployEnv) helloJob(t testing.TB, payload string, labels map[string]string) *wardv1.JobRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), loadWithin)
	defer cancel()
	id := uuid.NewString()
	w, err := e.client.Watch(id)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := e.client.Submit(ctx, &wardv1.JobRequest{JobId: id, Topic: "job.hello", TenantId: "acme",
		Payload: []byte(payload), Labels: labels}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.Wait(ctx, id, w, nil); err != nil {
		t.Fatal(err)
	}
	rec, err := e.client.Get(ctx, id, true)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func wantResult(t testing.TB, rec *wardv1.JobRecord, want string) {
	t.Helper()
	if rec.GetState() == wardv1.JobState_JOB_STATE_SUCCEEDED && rec.GetModuleDigest() == "" {
		t.Errorf("job %s does not say which module version ran it", rec.GetJobId())
	}
	if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || string(rec.GetResult()) != want {
		t.Fatalf("job %s: %s on %q: %q (%s: %v), want SUCCEEDED %q", rec.GetJobId(), rec.GetState(), rec.GetWorkerId(),
			rec.GetResult(), rec.GetReason(), rec.GetEvents(), want)
	}
}

// addHost starts one more host agent with the registry, as another
// machine would, labelled machine=<id>.
func (e *deployEnv) addHost(t testing.TB, id string, trusted ...ed25519.PublicKey) *assembly.Host {
	t.Helper()
	return e.env.addHost(t, assembly.HostConfig{ID: id, Labels: map[string]string{"machine": id}, Trusted: trusted}, nil, nil, true)
}

// TestDeployServesANewTopic: a module deployed to a running system serves
// the topic its manifest declares, with no restart: the same scheduler and
// host objects (in-process, the same PID) serve it.
func TestDeployServesANewTopic(t *testing.T) {
	e := startDeploy(t, assembly.Options{})
	sched, h := e.n.Scheduler, e.n.Host

	// Before: nothing serves job.hello.
	if rec := e.helloJob(t, "x", nil); rec.GetReason() != "no_pool_mapping" {
		t.Fatalf("job.hello before any deploy: %s %s", rec.GetState(), rec.GetReason())
	}
	a := e.deploy(t, "1", hello(t, "1"), nil)
	// Submitted at once: the job waits while the host loads the module.
	rec := e.helloJob(t, "x", nil)
	wantResult(t, rec, "hello 1: x")
	if rec.GetModule() != "hello" || rec.GetModuleDigest() != a.Digest {
		t.Errorf("the job says module %s %s ran it, want hello %s", rec.GetModule(), rec.GetModuleDigest(), a.Digest)
	}
	if h.Modules()["hello"] != a.Digest || !slices.Contains(h.Pools(), "hello") {
		t.Errorf("host holds %v, serves %v", h.Modules(), h.Pools())
	}
	if e.n.Scheduler != sched || e.n.Host != h {
		t.Error("a part was replaced")
	}
	// The built-in modules still serve.
	_, rec = e.run(t, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: []byte("e")})
	wantResult(t, rec, "e")
}

// TestDeployWhileAJobRuns: a job running on v1 when v2 lands finishes on
// v1; jobs after the rollout run v2. Rollback brings v1 back; rm retires
// the topic, and its jobs go to the DLQ with module_retired.
func TestDeployWhileAJobRuns(t *testing.T) {
	e := startDeploy(t, assembly.Options{Host: assembly.HostConfig{MaxParallel: 4}})
	h := e.n.Host
	wasm1, wasm2 := hello(t, "1"), hello(t, "2")
	v1 := e.deploy(t, "1", wasm1, nil)
	holds(t, v1.Digest, h)

	// The host has compiled v2 already (as a host that ran it before
	// has): the swap takes milliseconds, well inside the slow job.
	ctx, cancel := context.WithTimeout(context.Background(), loadWithin)
	defer cancel()
	man, err := sandbox.ParseManifest([]byte(helloManifest("2")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.n.Host.Runtime().Load(ctx, wasm2, man); err != nil {
		t.Fatal(err)
	}

	// A slow job on v1.
	slow := uuid.NewString()
	w, err := e.client.Watch(slow)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := e.client.Submit(ctx, &wardv1.JobRequest{JobId: slow, Topic: "job.hello", TenantId: "acme", Payload: []byte("sleep 4000")}); err != nil {
		t.Fatal(err)
	}
	checkFor(t, loadWithin, func() bool {
		rec, err := e.client.Get(ctx, slow, false)
		return err == nil && rec.GetState() == wardv1.JobState_JOB_STATE_RUNNING
	})

	v2 := e.deploy(t, "2", wasm2, nil)
	holds(t, v2.Digest, h)
	if rec, err := e.client.Get(ctx, slow, false); err != nil || rec.GetState() != wardv1.JobState_JOB_STATE_RUNNING {
		t.Fatalf("the slow job was no longer running when v2 landed (%v %v): the test proves nothing", rec.GetState(), err)
	}
	// v2 serves while the slow job still runs on v1.
	if rec := e.helloJob(t, "y", nil); rec.GetModuleDigest() != v2.Digest {
		t.Errorf("a job after the rollout ran on %s, want v2 %s", rec.GetModuleDigest(), v2.Digest)
	} else {
		wantResult(t, rec, "hello 2: y")
	}
	if _, err := e.client.Wait(ctx, slow, w, nil); err != nil {
		t.Fatal(err)
	}
	rec, err := e.client.Get(ctx, slow, true)
	if err != nil {
		t.Fatal(err)
	}
	wantResult(t, rec, "hello 1: sleep 4000")
	if rec.GetModuleDigest() != v1.Digest {
		t.Errorf("the slow job says it ran on %s, want v1 %s", rec.GetModuleDigest(), v1.Digest)
	}

	// Rollback: v1 again.
	if _, err := e.reg.Rollback(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	holds(t, v1.Digest, h)
	wantResult(t, e.helloJob(t, "z", nil), "hello 1: z")

	// rm: the host stops serving it, and its jobs go to the DLQ.
	if _, err := e.reg.Remove(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	holds(t, "", h)
	rec = e.helloJob(t, "gone", nil)
	last := rec.GetEvents()[len(rec.GetEvents())-1]
	if rec.GetState() != wardv1.JobState_JOB_STATE_FAILED || rec.GetReason() != "module_retired" ||
		!strings.Contains(last.GetMessage(), "ward module rm") {
		t.Fatalf("job after rm: %s %s %q", rec.GetState(), rec.GetReason(), last.GetMessage())
	}
	dlq, err := e.client.DLQ(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(dlq, func(d *wardv1.DLQEntry) bool {
		return d.GetJobId() == rec.GetJobId() && d.GetReason() == "module_retired"
	}) {
		t.Errorf("job %s not in the DLQ with module_retired: %v", rec.GetJobId(), dlq)
	}
	// Deployed again, it serves again.
	v3 := e.deploy(t, "3", hello(t, "3"), nil)
	holds(t, v3.Digest, h)
	wantResult(t, e.helloJob(t, "back", nil), "hello 3: back")
}

// TestRefusedVersionsKeepTheOldOneServing: a tampered blob, a digest that
// does not match, an unsigned or untrusted module on hosts that require
// signatures, and bytes that are not wasm are each refused on the host,
// the refusal shows in the registry, and v1 keeps serving.
func TestRefusedVersionsKeepTheOldOneServing(t *testing.T) {
	pub, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, _ := ed25519.GenerateKey(nil)
	e := startDeploy(t, assembly.Options{Host: assembly.HostConfig{Trusted: []ed25519.PublicKey{pub}}})
	h := e.n.Host
	ctx := context.Background()
	v1 := e.deploy(t, "1", hello(t, "1"), key)
	holds(t, v1.Digest, h)
	wantResult(t, e.helloJob(t, "a", nil), "hello 1: a")

	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := js.ObjectStore(ctx, modreg.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, modreg.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	v2 := hello(t, "2")

	cases := []struct {
		name   string
		deploy func() *modreg.Active
		why    string // in the refusal
	}{
		{"tampered blob", func() *modreg.Active {
			// Other bytes stored under v2's digest before v2 is deployed.
			tampered := append([]byte(nil), v2...)
			tampered[len(tampered)/2] ^= 0xff
			if _, err := obs.PutBytes(ctx, "sha256-"+strings.TrimPrefix(modreg.Digest(v2), "sha256:"), tampered); err != nil {
				t.Fatal(err)
			}
			a := e.deploy(t, "2-tampered", v2, key)
			return a
		}, "does not match its digest"},
		{"wrong digest", func() *modreg.Active {
			// Records written by hand: an active version whose digest is
			// not its version record's.
			v := modreg.Version{Name: "hello", Version: "2-wrong", Digest: modreg.Digest(v2), Size: len(v2),
				Manifest: helloManifest("2-wrong"), Signature: modreg.Sign(key, modreg.Digest(v2)), DeployedAt: time.Now()}
			a := &modreg.Active{Name: "hello", Version: "2-wrong", Digest: modreg.Digest(variant(v2, "wrong")),
				Route: modreg.Route{Topic: "job.hello", Pool: "hello"}, Signed: true, UpdatedAt: time.Now()}
			// The version record first, as a deploy writes them: a host
			// that hears of the active record before its version's refuses
			// it as not found, which is not the refusal under test.
			for _, r := range []struct {
				key string
				rec any
			}{{"mod.hello.v.2-wrong", v}, {"mod.hello.active", a}} {
				b, _ := json.Marshal(r.rec)
				if _, err := kv.Put(ctx, r.key, b); err != nil {
					t.Fatal(err)
				}
			}
			return a
		}, "disagree on the digest"},
		{"unsigned", func() *modreg.Active { return e.deploy(t, "2-unsigned", variant(v2, "unsigned"), nil) }, "unsigned"},
		{"untrusted signature", func() *modreg.Active {
			return e.deploy(t, "2-untrusted", variant(v2, "untrusted"), otherKey)
		}, "not signed by a trusted key"},
		{"not wasm", func() *modreg.Active {
			return e.deploy(t, "2-notwasm", []byte("\x00asm\x01\x00\x00\x00 this is not a module"), key)
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := c.deploy()
			var ev modreg.Event
			checkFor(t, loadWithin, func() bool {
				mods, err := e.reg.List(ctx)
				if err != nil {
					return false
				}
				for _, m := range mods {
					for _, x := range m.Events {
						if m.Name == "hello" && x.Version == a.Version && x.Digest == a.Digest && x.Host == h.ID() {
							ev = x
							return true
						}
					}
				}
				return false
			})
			if !strings.Contains(ev.Error, c.why) {
				t.Errorf("refusal %q, want it to say %q", ev.Error, c.why)
			}
			if h.Modules()["hello"] != v1.Digest {
				t.Errorf("host holds %s, want v1 %s", h.Modules()["hello"], v1.Digest)
			}
			// v1 keeps serving the jobs submitted after the refusal.
			rec := e.helloJob(t, c.name, nil)
			wantResult(t, rec, "hello 1: "+c.name)
			if rec.GetModuleDigest() != v1.Digest {
				t.Errorf("ran on %s, want v1 %s", rec.GetModuleDigest(), v1.Digest)
			}
		})
	}
	// A good version after all that is served.
	good := e.deploy(t, "3", hello(t, "3"), key)
	holds(t, good.Digest, h)
	wantResult(t, e.helloJob(t, "ok", nil), "hello 3: ok")
}

// TestEveryHostPicksUpADeploy: two hosts pick up a deploy and both serve
// it; a host started after the deploy holds the active version when Start
// returns, before its first job.
func TestEveryHostPicksUpADeploy(t *testing.T) {
	e := startDeploy(t, assembly.Options{})
	h1 := e.n.Host
	h2 := e.addHost(t, "host-two")
	e.waitWorkers(t, 2)

	v1 := e.deploy(t, "1", hello(t, "1"), nil)
	holds(t, v1.Digest, h1, h2)
	for _, h := range []*assembly.Host{h1, h2} {
		rec := e.helloJob(t, "to "+h.ID(), map[string]string{"machine": h.ID()})
		wantResult(t, rec, "hello 1: to "+h.ID())
		if rec.GetWorkerId() != h.ID() {
			t.Errorf("job for %s ran on %s", h.ID(), rec.GetWorkerId())
		}
	}
	v2 := e.deploy(t, "2", hello(t, "2"), nil)
	holds(t, v2.Digest, h1, h2)

	late := e.addHost(t, "host-late")
	if got := late.Modules()["hello"]; got != v2.Digest {
		t.Fatalf("a host started after the deploy holds %q, want %s", got, v2.Digest)
	}
	if !slices.Contains(late.Pools(), "hello") {
		t.Errorf("late host serves %v", late.Pools())
	}
	e.waitWorkers(t, 3)
	rec := e.helloJob(t, "late", map[string]string{"machine": late.ID()})
	wantResult(t, rec, "hello 2: late")
	if rec.GetWorkerId() != late.ID() {
		t.Errorf("job for the late host ran on %s", rec.GetWorkerId())
	}
}

// TestPolicyRequiresSignedModules: with pool hello in the policy's
// signed_pools, an unsigned version's jobs are DENIED before placement,
// and a signed one's run, on hosts that trust no key at all.
func TestPolicyRequiresSignedModules(t *testing.T) {
	b := defaultBundleWith(t, nil)
	fsys := fstest.MapFS{}
	for name, src := range b.Files {
		if name == "data.yaml" {
			signed := strings.Replace(string(src), "signed_pools: []", `signed_pools: ["hello"]`, 1)
			if signed == string(src) {
				t.Fatal("data.yaml has no signed_pools: [] line: update this test")
			}
			src = []byte(signed)
		}
		fsys[name] = &fstest.MapFile{Data: src}
	}
	e := startDeploy(t, assembly.Options{Safety: assembly.SafetyConfig{Policies: fsys}})
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	v1 := e.deploy(t, "1", hello(t, "1"), nil)
	holds(t, v1.Digest, e.n.Host)
	rec := e.helloJob(t, "x", nil)
	last := rec.GetEvents()[len(rec.GetEvents())-1]
	if rec.GetState() != wardv1.JobState_JOB_STATE_DENIED || !strings.Contains(last.GetMessage(), "pool hello runs only signed modules") {
		t.Fatalf("unsigned hello: %s %s %q", rec.GetState(), rec.GetReason(), last.GetMessage())
	}
	// The same bytes, signed (by any key: the hosts here trust none).
	v2 := e.deploy(t, "1-signed", hello(t, "1"), key)
	holds(t, v2.Digest, e.n.Host)
	// The scheduler asks the policy with the version it has heard of. The
	// same bytes have the same digest: wait for the signed version itself.
	checkFor(t, loadWithin, func() bool {
		v, d, _ := e.n.Scheduler.ModuleVersion("hello")
		return v == v2.Version && d == v2.Digest
	})
	wantResult(t, e.helloJob(t, "y", nil), "hello 1: y")
	// echo is not in signed_pools.
	_, rec = e.run(t, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: []byte("e")})
	wantResult(t, rec, "e")
}

// stagedOn waits until every agent has compiled digest of hello ahead
// (the registry's staged records).
func (e *deployEnv) stagedOn(t testing.TB, digest string, agents ...*assembly.Host) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	states := make(chan *modreg.State, 64)
	done, err := e.reg.Follow(ctx, func(st *modreg.State) {
		select {
		case states <- st:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); <-done }()
	deadline := time.After(loadWithin)
	for {
		select {
		case st := <-states:
			n := 0
			for _, a := range agents {
				if st.Staged["hello"][a.ID()] == digest {
					n++
				}
			}
			if n == len(agents) {
				return
			}
		case <-deadline:
			t.Fatalf("%s not staged on every host within %s", digest, loadWithin)
		}
	}
}

// TestStagedDeploy: a version stored with Stage is compiled ahead on every
// host while the active version keeps serving, without a job waiting;
// Activate then swaps it in from what was compiled.
func TestStagedDeploy(t *testing.T) {
	e := startDeploy(t, assembly.Options{})
	h1 := e.n.Host
	h2 := e.addHost(t, "host-two")
	ctx := context.Background()
	v1 := e.deploy(t, "1", hello(t, "1"), nil)
	holds(t, v1.Digest, h1, h2)

	wasm2 := hello(t, "2")
	staged, err := e.reg.Stage(ctx, modreg.Version{Name: "hello", Version: "2", Manifest: helloManifest("2"),
		Route: modreg.Route{Topic: "job.hello", Pool: "hello"}}, wasm2)
	if err != nil {
		t.Fatal(err)
	}
	// While it compiles, v1 serves.
	rec := e.helloJob(t, "during", nil)
	wantResult(t, rec, "hello 1: during")
	e.stagedOn(t, staged.Digest, h1, h2)
	if h1.Modules()["hello"] != v1.Digest || h2.Modules()["hello"] != v1.Digest {
		t.Fatal("a staged version is in force before its activation")
	}
	before := loads(t, "staged")
	if before < 2 {
		t.Errorf("ward_host_module_loads_total{result=staged} = %v, want at least 2", before)
	}
	installedBefore := loads(t, "installed")

	if _, err := e.reg.Activate(ctx, "hello", "2"); err != nil {
		t.Fatal(err)
	}
	holds(t, staged.Digest, h1, h2)
	for _, h := range []*assembly.Host{h1, h2} {
		rec := e.helloJob(t, "after", map[string]string{"machine": h.ID()})
		wantResult(t, rec, "hello 2: after")
		if rec.GetModuleDigest() != staged.Digest {
			t.Errorf("ran on %s, want v2 %s", rec.GetModuleDigest(), staged.Digest)
		}
	}
	if got := loads(t, "installed") - installedBefore; got != 2 {
		t.Errorf("%v installs on activation, want 2", got)
	}
}

// loads reads ward_host_module_loads_total{result}, summed over the
// hosts of this process.
func loads(t testing.TB, result string) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "ward_host_module_loads_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
