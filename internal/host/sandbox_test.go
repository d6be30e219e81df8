package host_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/host"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/poll"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// sandboxHost is a host agent serving the hostile test module (pooled) on
// real NATS (JetStream and auth on: the host has a host credential, the
// test a scheduler's) and Redis, and what a test needs to send it jobs and
// see their results.
type sandboxHost struct {
	t      *testing.T
	agent  *host.Agent
	nats   *natstest.Secure
	conn   *bus.Conn // the test's, with a scheduler's credential
	events *watcher
	mount  string     // under the host's MountRoots
	mu     sync.Mutex // guards n
	n      int
	// stored are the jobs whose context is an object: job id → the
	// pointer and the size judged, which serveContexts serves as a
	// scheduler does.
	stored sync.Map
}

type storedContext struct {
	ptr  string
	size int64
}

// serveContexts answers the host's requests for stored contexts as a
// scheduler does (scheduler.handleContext): the jobs sent to h1 with a
// pointer, and no other.
func (h *sandboxHost) serveContexts() {
	objs, err := bus.NewObjects(h.conn)
	if err != nil {
		h.t.Fatal(err)
	}
	sub, err := h.conn.NATS().Subscribe(bus.ContextSubject("*"), func(m *nats.Msg) {
		q, reply := &wardv1.ContextRequest{}, &wardv1.ContextReply{}
		if err := proto.Unmarshal(m.Data, q); err != nil {
			reply.Error = err.Error()
		} else if v, ok := h.stored.Load(q.GetJobId()); !ok || bus.WorkerOf(m.Subject) != "h1" {
			reply.Error = "not dispatched to " + bus.WorkerOf(m.Subject)
		} else {
			sc := v.(storedContext)
			reply.Data, reply.Last, reply.Done, err = objs.ContextChunks(context.Background(), sc.ptr, sc.size, q.GetAfter(), q.GetOffset(), 768<<10)
			if err != nil {
				reply.Error, reply.Code = err.Error(), "input_unavailable"
			}
		}
		b, _ := proto.Marshal(reply)
		_ = m.Respond(b)
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = sub.Unsubscribe() })
}

func newSandboxHost(t *testing.T) *sandboxHost {
	t.Helper()
	s := natstest.StartSecure(t)
	ctx := context.Background()
	rt, err := sandbox.New(ctx, sandbox.Config{CacheDir: wasmtest.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	mod, err := rt.Load(ctx, wasmtest.BuildReactor(t, "github.com/ward-run/ward/internal/sandbox/testdata/hostile"),
		&sandbox.Manifest{Name: "hostile", Isolation: sandbox.Pooled})
	if err != nil {
		t.Fatal(err)
	}
	pools, err := config.ParsePools("test", []byte("topics:\n  job.hostile: hostile\npools:\n  hostile: {}\n"))
	if err != nil {
		t.Fatal(err)
	}

	// The host may mount directories under roots/; a symbolic link in the
	// granted one points out of it.
	roots := t.TempDir()
	if err := os.WriteFile(filepath.Join(roots, "secret"), []byte("the secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	mount := filepath.Join(roots, "repo")
	if err := os.Mkdir(mount, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mount, "readme"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(mount, "up")); err != nil {
		t.Fatal(err)
	}

	hc := connectAs(t, s, auth.Host, "h1")
	a, err := host.New(host.Config{ID: "h1", DispatchKey: auth.HostKey(dispatchSecret, "h1"), Bus: hc,
		Runtime: rt, Pools: pools, Modules: map[string]*sandbox.Module{"hostile": mod}, MaxParallel: 2,
		HeartbeatInterval: time.Second, MountRoots: []string{mount},
		Env: map[string]string{"OLLAMA_MODEL": "llama3", "HOST_SECRET": "no"}})
	if err != nil {
		t.Fatal(err)
	}
	boots.Store("h1", a.Boot())
	c := connectAs(t, s, auth.Scheduler, "test")
	h := &sandboxHost{t: t, agent: a, nats: s, conn: c, events: watch(t, c), mount: mount}
	h.serveContexts()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return h
}

// job is a job for the hostile module.
type job struct {
	tenant  string
	payload []byte
	grants  *wardv1.Grants
	env     map[string]string
	ptr     string // the context pointer, when not the job's own blob
	size    int64  // the size of ptr's context the ticket carries (what the policy judged)
}

// send stores j's context and dispatches it to the host, signed; it
// returns the job id.
func (h *sandboxHost) send(j job) string {
	h.t.Helper()
	h.mu.Lock()
	h.n++
	id := "job-" + strings.ReplaceAll(h.t.Name(), "/", "-") + "-" + string(rune('a'+h.n%26)) + hex.EncodeToString([]byte{byte(h.n)})
	h.mu.Unlock()
	if j.tenant == "" {
		j.tenant = "acme"
	}
	// As a scheduler sends it: a context of the job store in the ticket,
	// with its size; one in the tenant's bucket by its pointer, with the
	// size given.
	req := &wardv1.JobRequest{JobId: id, Topic: "job.hostile", TenantId: j.tenant, ContextPtr: jobstore.ContextPtr(id),
		Payload: j.payload, ContextSize: proto.Int64(int64(len(j.payload))), Pool: "hostile", Env: j.env, Attempt: 1,
		Constraints: &wardv1.Constraints{Grants: j.grants}}
	if j.ptr != "" {
		req.ContextPtr, req.ContextSize = j.ptr, proto.Int64(j.size)
		h.stored.Store(id, storedContext{ptr: j.ptr, size: j.size})
	}
	dispatch(h.t, h.conn, "h1", req)
	return id
}

// wait returns job id's result, polling until it comes.
func (h *sandboxHost) wait(id string) *wardv1.JobResult {
	h.t.Helper()
	return h.events.wait(h.t, id)
}

// output returns a succeeded job's result, which its message carries.
func (h *sandboxHost) output(r *wardv1.JobResult) string {
	h.t.Helper()
	if r.GetStatus() != wardv1.JobState_JOB_STATE_SUCCEEDED || r.GetResultPtr() != "" {
		h.t.Fatalf("job %s: %s %s: %s (result at %q)", r.GetJobId(), r.GetStatus(), r.GetErrorCode(), r.GetErrorMessage(), r.GetResultPtr())
	}
	return string(r.GetResult())
}

func ask(do, arg string) []byte {
	b, _ := json.Marshal(map[string]string{"do": do, "arg": arg})
	return b
}

// TestHostileJobs: each misbehaviour, sent as a job to a host agent, ends
// FAILED with its code, and the same host runs the next job.
func TestHostileJobs(t *testing.T) {
	h := newSandboxHost(t)
	for _, tc := range []struct {
		name    string
		job     job
		code    string
		message string
	}{
		{"infinite loop", job{payload: ask("loop", ""), grants: &wardv1.Grants{TimeLimitMs: 300}}, "timeout", "time limit"},
		{"memory bomb", job{payload: ask("membomb", ""), grants: &wardv1.Grants{MemoryLimitBytes: 32 << 20}}, "memory_limit", "limit 33554432 bytes"},
		{"endless output", job{payload: ask("bigout", "")}, "output_too_large", "exceeded"},
		{"panic", job{payload: ask("panic", "")}, "exit", "panic: no handler for job kind"},
		{"error", job{payload: ask("fail", "cannot do that")}, "module_error", "cannot do that"},
		{"ungranted http", job{payload: ask("http", "http://example.com/")}, "not_granted", "example.com is not granted"},
		{"symlink escape", job{payload: ask("read", h.mount+"/up/secret"), grants: &wardv1.Grants{ReadOnlyDirs: []string{h.mount}}},
			"not_granted", "leaves the mounted directory"},
		{"mount outside the roots", job{payload: ask("read", "/etc/hostname"), grants: &wardv1.Grants{ReadOnlyDirs: []string{"/etc"}}},
			"module_error", "/etc/hostname"},
		{"another job's blob", job{payload: ask("echo", ""), ptr: jobstore.ContextPtr("someone-else")}, "context_unavailable", "is not job"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.wait(h.send(tc.job))
			if r.GetStatus() != wardv1.JobState_JOB_STATE_FAILED || r.GetErrorCode() != tc.code || !strings.Contains(r.GetErrorMessage(), tc.message) {
				t.Fatalf("got %s %s %q, want FAILED %s containing %q", r.GetStatus(), r.GetErrorCode(), r.GetErrorMessage(), tc.code, tc.message)
			}
			if got := h.output(h.wait(h.send(job{payload: ask("echo", "next")}))); got != "next" {
				t.Fatalf("the next job returned %q", got)
			}
		})
	}
}

// TestGrantsThroughHost: the host hands the sandbox exactly the grants of
// the job's constraints.
func TestGrantsThroughHost(t *testing.T) {
	h := newSandboxHost(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("pong")) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)

	for _, tc := range []struct {
		name string
		job  job
		want string
	}{
		{"granted http", job{payload: ask("http", srv.URL), grants: &wardv1.Grants{HttpHosts: []string{u.Host}}}, "200 pong"},
		{"env from the host", job{payload: ask("env", "OLLAMA_MODEL"), grants: &wardv1.Grants{EnvKeys: []string{"OLLAMA_MODEL"}}}, "llama3"},
		{"env from the job", job{payload: ask("env", "OLLAMA_MODEL"), grants: &wardv1.Grants{EnvKeys: []string{"OLLAMA_MODEL"}},
			env: map[string]string{"OLLAMA_MODEL": "mistral"}}, "mistral"},
		{"env not granted", job{payload: ask("env", "HOST_SECRET"), grants: &wardv1.Grants{EnvKeys: []string{"OLLAMA_MODEL"}}}, ""},
		{"granted dir", job{payload: ask("read", h.mount+"/readme"), grants: &wardv1.Grants{ReadOnlyDirs: []string{h.mount}}}, "hello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := h.output(h.wait(h.send(tc.job))); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLargeContext: a context far over one NATS message reaches the module
// whole through the object store; another tenant's object is refused, and
// so is one whose size is not the one the ticket carries (the size the
// policy judged), or that the ticket does not give.
func TestLargeContext(t *testing.T) {
	h := newSandboxHost(t)
	data := make([]byte, 8<<20)
	_, _ = rand.Read(data)
	// A scheduler creates the tenant's buckets; the tenant stores its
	// context in its own; the host reads it with its host credential.
	sched, err := bus.NewObjects(h.conn)
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.CreateTenantBuckets(context.Background(), "acme"); err != nil {
		t.Fatal(err)
	}
	objs, err := bus.NewObjects(connectAs(t, h.nats, auth.Tenant, "acme"))
	if err != nil {
		t.Fatal(err)
	}
	ptr, err := objs.PutContext(context.Background(), "acme", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(data))
	sum := sha256.Sum256(data)
	if got := h.output(h.wait(h.send(job{ptr: ptr, size: size}))); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("the module saw a context with sha256 %s", got)
	}
	r := h.wait(h.send(job{tenant: "intruder", ptr: ptr, size: size}))
	if r.GetErrorCode() != "context_unavailable" || !strings.Contains(r.GetErrorMessage(), "another tenant") {
		t.Fatalf("another tenant's context: %s %s", r.GetErrorCode(), r.GetErrorMessage())
	}
	for _, tc := range []struct {
		size int64
		want string
	}{
		{1024, "not the 1024 bytes the policy judged"},
		{size + 1, "holds 8388608 bytes, not the 8388609 the policy judged"},
		{size - 1, "not the 8388607 bytes the policy judged"},
		{0, "the ticket names no size"},
	} {
		r := h.wait(h.send(job{ptr: ptr, size: tc.size}))
		if r.GetStatus() != wardv1.JobState_JOB_STATE_FAILED || !strings.Contains(r.GetErrorMessage(), tc.want) {
			t.Errorf("a ticket judging %d bytes: %s %s %q, want %q", tc.size, r.GetStatus(), r.GetErrorCode(), r.GetErrorMessage(), tc.want)
		}
	}
}

// TestCancelJob: a cancel on sys.host.cancel stops a running CPU-bound
// guest's sandbox; the job ends FAILED cancelled, a cancel for the ended
// job changes nothing, and the host goes on.
func TestCancelJob(t *testing.T) {
	h := newSandboxHost(t)
	id := h.send(job{payload: ask("loop", ""), grants: &wardv1.Grants{TimeLimitMs: 60_000}})
	poll.Until(t, 30*time.Second, id+" started", func() bool { return h.events.started(id) })
	cancelJob(t, h.conn, id)
	if r := h.wait(id); r.GetErrorCode() != "cancelled" {
		t.Fatalf("cancelled job: %s %s", r.GetErrorCode(), r.GetErrorMessage())
	}
	cancelJob(t, h.conn, id)
	if got := h.output(h.wait(h.send(job{payload: ask("echo", "after")}))); got != "after" {
		t.Fatalf("next job: %q", got)
	}
}
