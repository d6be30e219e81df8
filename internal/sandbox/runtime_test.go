package sandbox_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ward-run/ward/api/reason"

	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/testing/poll"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

const (
	echoPkg    = "github.com/ward-run/ward/modules/echo"
	hostilePkg = "github.com/ward-run/ward/internal/sandbox/testdata/hostile"
)

// newRuntime returns a Runtime closed when t ends. Unless cfg names one, it
// uses the compilation cache shared by every test binary: compiling a Go
// module takes seconds.
func newRuntime(t testing.TB, cfg sandbox.Config) *sandbox.Runtime {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = wasmtest.CacheDir(t)
	}
	rt, err := sandbox.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return rt
}

// compile loads pkg, built as a WASI command, with a default manifest.
func compile(t testing.TB, rt *sandbox.Runtime, pkg string) *sandbox.Module {
	t.Helper()
	m, err := rt.Compile(context.Background(), pkg[strings.LastIndexByte(pkg, '/')+1:], wasmtest.Build(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// reactor loads pkg, built as a reactor, with the given isolation.
func reactor(t testing.TB, rt *sandbox.Runtime, pkg string, iso sandbox.Isolation) *sandbox.Module {
	t.Helper()
	m, err := rt.Load(context.Background(), wasmtest.BuildReactor(t, pkg),
		&sandbox.Manifest{Name: pkg[strings.LastIndexByte(pkg, '/')+1:], Isolation: iso})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func logOf(out *sandbox.Output) []byte {
	if out == nil {
		return nil
	}
	return out.Log
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// ask is a request to the hostile module.
func ask(do, arg string) []byte {
	b, _ := json.Marshal(map[string]string{"do": do, "arg": arg})
	return b
}

// mustRun runs in and fails t unless it succeeds.
func mustRun(t testing.TB, rt *sandbox.Runtime, m *sandbox.Module, in sandbox.Input) *sandbox.Output {
	t.Helper()
	out, err := rt.Run(context.Background(), m, in)
	if err != nil {
		t.Fatalf("%s: %v (log %q)", m.Name(), err, logOf(out))
	}
	return out
}

// flavours are the three ways a module runs.
func flavours(t *testing.T, rt *sandbox.Runtime, pkg string) map[string]*sandbox.Module {
	return map[string]*sandbox.Module{
		"command": compile(t, rt, pkg),
		"fresh":   reactor(t, rt, pkg, sandbox.Fresh),
		"pooled":  reactor(t, rt, pkg, sandbox.Pooled),
	}
}

func TestEcho(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{})
	for name, echo := range flavours(t, rt, echoPkg) {
		t.Run(name, func(t *testing.T) {
			for _, n := range []int{0, 1, 1 << 10, 64 << 10, 1 << 20} {
				payload := randomBytes(n)
				out := mustRun(t, rt, echo, sandbox.Input{Payload: payload, Tenant: "acme"})
				if !bytes.Equal(out.Data, payload) {
					t.Fatalf("%d bytes: got %d bytes back", n, len(out.Data))
				}
				if len(out.Log) != 0 || out.Duration <= 0 {
					t.Fatalf("log %q, duration %v", out.Log, out.Duration)
				}
			}
		})
	}
}

// TestCommandStdio: a plain WASI command reads stdin and writes stdout and
// stderr.
func TestCommandStdio(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{})
	cat := compile(t, rt, "./testdata/cat")
	if got := cat.Manifest(); got.ABI != sandbox.ABICommand || got.Isolation != sandbox.Fresh {
		t.Fatalf("manifest %+v", got)
	}
	out := mustRun(t, rt, cat, sandbox.Input{Payload: []byte("meow")})
	if string(out.Data) != "meow" || string(out.Log) != "copied 4 bytes\n" {
		t.Fatalf("got %q, log %q", out.Data, out.Log)
	}
}

func TestLoad(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{})
	wasm := wasmtest.BuildReactor(t, echoPkg)

	const n = 8
	mods := make([]*sandbox.Module, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			m, err := rt.Load(context.Background(), bytes.Clone(wasm), &sandbox.Manifest{Name: fmt.Sprint("echo", i)})
			if err != nil {
				t.Error(err)
			}
			mods[i] = m
		})
	}
	wg.Wait()
	for _, m := range mods[1:] {
		if m.Digest() != mods[0].Digest() {
			t.Fatalf("same bytes gave digests %s and %s", m.Digest(), mods[0].Digest())
		}
	}
	if d := mods[0].Digest(); !strings.HasPrefix(d, "sha256:") || len(d) != len("sha256:")+64 {
		t.Fatalf("Digest() = %q", d)
	}
	m := mods[0].Manifest()
	if m.ABI != sandbox.ABIReactor || m.Isolation != sandbox.Fresh || !mods[0].Interruptible() {
		t.Fatalf("manifest %+v, interruptible %v", m, mods[0].Interruptible())
	}

	// The manifest must match the module.
	for _, man := range []*sandbox.Manifest{
		{Name: "echo", ABI: sandbox.ABICommand},
		{Name: "echo", Isolation: "warm"},
		{Name: ""},
	} {
		if _, err := rt.Load(context.Background(), wasm, man); err == nil {
			t.Errorf("Load with %+v succeeded", man)
		}
	}
	cmd := wasmtest.Build(t, echoPkg)
	if _, err := rt.Load(context.Background(), cmd, &sandbox.Manifest{Name: "echo", Isolation: sandbox.Pooled}); err == nil {
		t.Error("a pooled command was accepted")
	}
}

func TestCompileRejects(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{})
	for name, wasm := range map[string][]byte{
		"garbage":    []byte("not wasm"),
		"no exports": {0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00},
	} {
		t.Run(name, func(t *testing.T) {
			for range 2 { // failures are not cached
				if _, err := rt.Compile(context.Background(), name, wasm); err == nil {
					t.Fatal("Compile succeeded")
				}
			}
		})
	}
}

// tinyCommand is a WASI command that does nothing: (module (memory (export
// "memory") 1) (func (export "_start"))). It compiles in a blink, where a
// Go module takes seconds (tens under the race detector).
var tinyCommand = []byte{
	0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00,
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type () -> ()
	0x03, 0x02, 0x01, 0x00, // one function of type 0
	0x05, 0x03, 0x01, 0x00, 0x01, // memory: 1 page
	0x07, 0x13, 0x02, 0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00,
	0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b, // its body: nothing
}

func TestSharedCacheDir(t *testing.T) {
	dir := t.TempDir()
	first := newRuntime(t, sandbox.Config{CacheDir: dir})
	m, err := first.Compile(context.Background(), "tiny", tinyCommand)
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, first, m, sandbox.Input{})
	if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
		t.Fatalf("cache dir holds %d entries (%v), want some", len(entries), err)
	}

	// Two more Runtimes on the same directory, one opened while the first
	// is still alive, both compiling from the cache.
	for i := range 2 {
		rt := newRuntime(t, sandbox.Config{CacheDir: dir})
		m, err := rt.Compile(context.Background(), "tiny", tinyCommand)
		if err != nil {
			t.Fatalf("runtime %d: %v", i+2, err)
		}
		mustRun(t, rt, m, sandbox.Input{})
		if i == 0 {
			if err := first.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// hostileCase is one way to misbehave and the failure it must end in.
type hostileCase struct {
	name     string
	in       sandbox.Input
	code     reason.Code
	message  string // the RunError's message contains it
	exitCode uint32 // checked when not zero
}

func hostileCases(mount string) []hostileCase {
	return []hostileCase{
		{name: "infinite loop", in: sandbox.Input{Payload: ask("loop", ""), TimeLimit: 200 * time.Millisecond},
			code: reason.Timeout, message: "time limit of 200ms"},
		{name: "sleep", in: sandbox.Input{Payload: ask("sleep", ""), TimeLimit: 200 * time.Millisecond},
			code: reason.Timeout},
		{name: "memory bomb", in: sandbox.Input{Payload: ask("membomb", ""), MemoryLimitBytes: 32 << 20},
			code: reason.MemoryLimit, message: "limit 33554432 bytes"},
		{name: "endless output", in: sandbox.Input{Payload: ask("bigout", ""), MaxOutputBytes: 1 << 20},
			code: reason.OutputTooLarge, message: "1048576 bytes"},
		{name: "panic", in: sandbox.Input{Payload: ask("panic", "")},
			code: reason.Exit, message: "panic: no handler for job kind", exitCode: 2},
		{name: "exit", in: sandbox.Input{Payload: ask("exit", "")},
			code: reason.Exit, message: "exit code 3", exitCode: 3},
		{name: "error", in: sandbox.Input{Payload: ask("fail", "bad input: want JSON")},
			code: reason.ModuleError, message: "bad input: want JSON"},
		{name: "refused input", in: sandbox.Input{Payload: ask("refuse", "dir /x is not mounted: grant it")},
			code: reason.InputRefused, message: "dir /x is not mounted: grant it"},
		{name: "ungranted http", in: sandbox.Input{Payload: ask("http", "http://example.com/"),
			Grants: sandbox.Grants{HTTPHosts: []string{"example.org"}}},
			code: reason.NotGranted, message: "host example.com is not granted"},
		{name: "symlink escape", in: sandbox.Input{Payload: ask("read", "/repo/up/secret"),
			Grants: sandbox.Grants{Mounts: []sandbox.Mount{{Dir: mount, Path: "/repo"}}}},
			code: reason.NotGranted, message: "leaves the mounted directory /repo"},
		{name: "write to a mount", in: sandbox.Input{Payload: ask("write", "/repo/new"),
			Grants: sandbox.Grants{Mounts: []sandbox.Mount{{Dir: mount, Path: "/repo"}}}},
			code: reason.ModuleError, message: "/repo/new"},
	}
}

// escapeTree returns a directory to mount: it holds a file, and a symbolic
// link up -> .., whose target's secret must stay out of reach.
func escapeTree(t *testing.T) string {
	t.Helper()
	parent := t.TempDir()
	if err := os.WriteFile(filepath.Join(parent, "secret"), []byte("the secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	mount := filepath.Join(parent, "mount")
	if err := os.Mkdir(mount, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mount, "readme"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(mount, "up")); err != nil {
		t.Fatal(err)
	}
	return mount
}

// TestHostileGuests: every misbehaviour ends in its code, in each of the
// three flavours, and the same Runtime and module then run the next job.
func TestHostileGuests(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{})
	mount := escapeTree(t)
	for flavour, m := range flavours(t, rt, hostilePkg) {
		t.Run(flavour, func(t *testing.T) {
			for _, tc := range hostileCases(mount) {
				t.Run(tc.name, func(t *testing.T) {
					tc.in.Tenant = "acme"
					out, err := rt.Run(context.Background(), m, tc.in)
					var re *sandbox.RunError
					if !errors.As(err, &re) {
						t.Fatalf("Run error = %v, want a *RunError", err)
					}
					if flavour != "command" && tc.name == "panic" {
						tc.exitCode = 0 // a reactor's panic is a trap, with no exit code
					}
					if re.Code != tc.code || !strings.Contains(re.Message, tc.message) || (tc.exitCode != 0 && re.ExitCode != tc.exitCode) {
						t.Fatalf("got %s %q (exit code %d), want %s containing %q (exit code %d); log:\n%s",
							re.Code, re.Message, re.ExitCode, tc.code, tc.message, tc.exitCode, logOf(out))
					}
					if sandbox.ErrorCode(fmt.Errorf("job 7: %w", err)) != tc.code {
						t.Fatalf("ErrorCode does not see %s through wrapping", tc.code)
					}
					if out == nil {
						t.Fatal("no Output with the RunError")
					}
					if bytes.Contains(out.Data, []byte("the secret")) {
						t.Fatal("the secret leaked")
					}
					t.Logf("%v after %v", err, out.Duration)

					// The same module serves the same tenant's next job.
					next := mustRun(t, rt, m, sandbox.Input{Payload: ask("echo", "still here"), Tenant: "acme"})
					if string(next.Data) != "still here" {
						t.Fatalf("next job returned %q", next.Data)
					}
				})
			}
		})
	}
}

// TestMounts: a granted directory is readable, and only it.
func TestMounts(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{})
	m := reactor(t, rt, hostilePkg, sandbox.Pooled)
	mount := escapeTree(t)
	grants := sandbox.Grants{Mounts: []sandbox.Mount{{Dir: mount}}}
	in := func(do, arg string) sandbox.Input {
		return sandbox.Input{Payload: ask(do, arg), Tenant: "acme", Grants: grants}
	}
	if out := mustRun(t, rt, m, in("read", mount+"/readme")); string(out.Data) != "hello" {
		t.Fatalf("read %q", out.Data)
	}
	if out := mustRun(t, rt, m, in("ls", mount)); !strings.Contains(string(out.Data), "readme") {
		t.Fatalf("ls %q", out.Data)
	}
	for _, path := range []string{filepath.Dir(mount) + "/secret", "/etc/passwd", mount + "/../secret"} {
		if _, err := rt.Run(context.Background(), m, in("read", path)); err == nil {
			t.Errorf("read %s succeeded", path)
		}
	}
	// Without the grant, nothing is mounted.
	if _, err := rt.Run(context.Background(), m, sandbox.Input{Payload: ask("read", mount+"/readme"), Tenant: "acme"}); err == nil {
		t.Error("read without a mount succeeded")
	}
	// A directory that is gone fails the run before the module starts.
	_, err := rt.Run(context.Background(), m, sandbox.Input{Payload: ask("echo", ""), Tenant: "acme",
		Grants: sandbox.Grants{Mounts: []sandbox.Mount{{Dir: filepath.Join(mount, "nope")}}}})
	if sandbox.ErrorCode(err) != reason.MountUnavailable {
		t.Errorf("missing mount: %v", err)
	}
}

func TestEnvAndInfo(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{})
	for flavour, m := range flavours(t, rt, hostilePkg) {
		t.Run(flavour, func(t *testing.T) {
			in := sandbox.Input{Payload: ask("env", "OLLAMA_MODEL"), Tenant: "acme",
				Grants: sandbox.Grants{Env: map[string]string{"OLLAMA_MODEL": "llama3"}}}
			if out := mustRun(t, rt, m, in); string(out.Data) != "llama3" {
				t.Fatalf("granted env: %q", out.Data)
			}
			in.Grants.Env = nil
			if out := mustRun(t, rt, m, in); string(out.Data) != "" {
				t.Fatalf("env without a grant: %q", out.Data)
			}
			in = sandbox.Input{Payload: ask("info", ""), Tenant: "acme",
				Job: sandbox.JobInfo{ID: "j1", Topic: "job.test", Attempt: 2, Labels: map[string]string{"k": "v"}}}
			var info struct {
				ID, Tenant, Topic string
				Attempt           int
				Labels            map[string]string
			}
			if err := json.Unmarshal(mustRun(t, rt, m, in).Data, &info); err != nil {
				t.Fatal(err)
			}
			if info.ID != "j1" || info.Tenant != "acme" || info.Topic != "job.test" || info.Attempt != 2 || info.Labels["k"] != "v" {
				t.Fatalf("info %+v", info)
			}
		})
	}
}

func TestLogAndProgress(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{MaxLogBytes: 4 << 10})
	m := reactor(t, rt, hostilePkg, sandbox.Pooled)
	out := mustRun(t, rt, m, sandbox.Input{Payload: ask("log", "1000"), Tenant: "acme"})
	if !out.LogTruncated || len(out.Log) > 4<<10 || !bytes.HasPrefix(out.Log, []byte("info: line 0\n")) {
		t.Fatalf("log of %d bytes, truncated %v: %.60q", len(out.Log), out.LogTruncated, out.Log)
	}

	var mu sync.Mutex
	var got []int
	in := sandbox.Input{Payload: ask("progress", ""), Tenant: "acme", Progress: func(pct int, msg string) {
		mu.Lock()
		defer mu.Unlock()
		if msg != fmt.Sprintf("step %d", pct) {
			t.Errorf("progress %d with message %q", pct, msg)
		}
		got = append(got, pct)
	}}
	mustRun(t, rt, m, in)
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[len(got)-1] != 100 {
		t.Fatalf("progress reports %v, want them to end at 100", got)
	}
}

// TestPooled: instances are reused within a tenant and never across
// tenants, and are thrown away after a failure, at MaxRuns, or when the
// module is closed.
func TestPooled(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{Pool: sandbox.PoolConfig{MaxRuns: 4}})
	m := reactor(t, rt, hostilePkg, sandbox.Pooled)
	served := func(tenant string) (string, bool) {
		out := mustRun(t, rt, m, sandbox.Input{Payload: ask("served", ""), Tenant: tenant})
		return string(out.Data), out.Reused
	}
	for i, want := range []string{"1", "2", "3"} {
		if got, reused := served("a"); got != want || reused != (i > 0) {
			t.Fatalf("tenant a, job %d: instance served %s jobs (reused %v), want %s", i+1, got, reused, want)
		}
	}
	if got, _ := served("b"); got != "1" {
		t.Fatalf("tenant b's first job ran in an instance that served %s jobs", got)
	}
	// a's instance reached MaxRuns with its 4th job.
	if got, _ := served("a"); got != "4" {
		t.Fatalf("a's 4th job: %s", got)
	}
	if got, _ := served("a"); got != "1" {
		t.Fatalf("after MaxRuns: %s, want a new instance", got)
	}
	// A module error keeps the instance; a trap does not.
	if _, err := rt.Run(context.Background(), m, sandbox.Input{Payload: ask("fail", "no"), Tenant: "a"}); sandbox.ErrorCode(err) != reason.ModuleError {
		t.Fatal(err)
	}
	if got, _ := served("a"); got != "3" {
		t.Fatalf("after a module error: %s, want the same instance", got)
	}
	if _, err := rt.Run(context.Background(), m, sandbox.Input{Payload: ask("loop", ""), Tenant: "a", TimeLimit: 50 * time.Millisecond}); sandbox.ErrorCode(err) != reason.Timeout {
		t.Fatal(err)
	}
	if got, _ := served("a"); got != "1" {
		t.Fatalf("after a timeout: %s, want a new instance", got)
	}
	// A different memory limit is a different instance.
	out := mustRun(t, rt, m, sandbox.Input{Payload: ask("served", ""), Tenant: "a", MemoryLimitBytes: 48 << 20})
	if string(out.Data) != "1" {
		t.Fatalf("another memory limit: %s", out.Data)
	}

	if rt.IdleInstances() == 0 {
		t.Fatal("no idle instances")
	}
	m.Close()
	if n := rt.IdleInstances(); n != 0 {
		t.Fatalf("%d idle instances after Module.Close", n)
	}
	if _, err := rt.Run(context.Background(), m, sandbox.Input{Payload: ask("echo", "")}); !errors.Is(err, sandbox.ErrModuleClosed) {
		t.Fatalf("Run on a closed module: %v", err)
	}
}

func TestPoolLimits(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{Pool: sandbox.PoolConfig{MaxIdle: 3, MaxIdlePerKey: 1, IdleTimeout: 100 * time.Millisecond}})
	m := reactor(t, rt, echoPkg, sandbox.Pooled)
	for _, tenant := range []string{"a", "b", "c", "d", "a"} {
		mustRun(t, rt, m, sandbox.Input{Tenant: tenant})
		if n := rt.IdleInstances(); n > 3 {
			t.Fatalf("%d idle instances, MaxIdle is 3", n)
		}
	}
	poll.Until(t, 10*time.Second, "no instance idle past IdleTimeout", func() bool { return rt.IdleInstances() == 0 })
}

// TestRecycle: an instance whose memory grew past RecycleBytes is not
// pooled.
func TestRecycle(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{Pool: sandbox.PoolConfig{RecycleBytes: 1 << 20}})
	m := reactor(t, rt, hostilePkg, sandbox.Pooled)
	for range 2 {
		if out := mustRun(t, rt, m, sandbox.Input{Payload: ask("served", "")}); string(out.Data) != "1" {
			t.Fatalf("served %s: a grown instance was pooled", out.Data)
		}
	}
}

// TestConcurrentPooled: goroutines of several tenants share a pooled module;
// each gets its own result.
func TestConcurrentPooled(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{})
	echo := reactor(t, rt, echoPkg, sandbox.Pooled)
	const goroutines, runs = 12, 20
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range runs {
				payload := fmt.Appendf(randomBytes(g*100), "goroutine %d run %d", g, i)
				out, err := rt.Run(context.Background(), echo, sandbox.Input{Payload: payload, Tenant: fmt.Sprint("t", g%3)})
				if err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(out.Data, payload) {
					t.Errorf("goroutine %d run %d got someone else's output", g, i)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestInputAndMemoryLimits(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{})
	wasm := wasmtest.BuildReactor(t, echoPkg)
	m, err := rt.Load(context.Background(), wasm, &sandbox.Manifest{Name: "echo", Limits: sandbox.Limits{MaxInput: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Run(context.Background(), m, sandbox.Input{Payload: make([]byte, 101)}); sandbox.ErrorCode(err) != reason.InputTooLarge {
		t.Fatalf("101 bytes into max_input 100: %v", err)
	}
	mustRun(t, rt, m, sandbox.Input{Payload: make([]byte, 100)})
	// A limit below what the module starts with fails before it runs; one
	// too small for Go's runtime to start fails in _initialize.
	for _, limit := range []int64{64 << 10, 2 << 20} {
		if _, err := rt.Run(context.Background(), m, sandbox.Input{MemoryLimitBytes: limit}); sandbox.ErrorCode(err) != reason.MemoryLimit {
			t.Fatalf("%d bytes of memory: %v", limit, err)
		}
	}
}

func TestHTTP(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{HTTP: sandbox.HTTPConfig{MaxResponseBytes: 1 << 10}})
	m := reactor(t, rt, hostilePkg, sandbox.Pooled)
	srv := newHTTPStandIns(t)
	run := func(url string, grants ...string) (*sandbox.Output, error) {
		return rt.Run(context.Background(), m, sandbox.Input{Payload: ask("http", url), Tenant: "acme",
			Grants: sandbox.Grants{HTTPHosts: grants}})
	}
	for _, tc := range []struct {
		name, url string
		grants    []string
		code      reason.Code
		want      string // in the output, or in the error message
	}{
		{"granted host", srv.a + "/hello", []string{srv.aHost}, "", "200 hello"},
		{"granted name, any port", srv.a + "/hello", []string{"127.0.0.1"}, "", "200 hello"},
		{"wildcards do not match addresses", srv.a + "/hello", []string{"*.0.0.1"}, reason.NotGranted, "not granted"},
		{"not granted", srv.a + "/hello", nil, reason.NotGranted, "is not granted"},
		{"other port", srv.a + "/hello", []string{"127.0.0.1:1"}, reason.NotGranted, "is not granted"},
		{"same-host redirect", srv.a + "/redirect-same", []string{srv.aHost}, "", "200 hello"},
		{"redirect to another host", srv.a + "/redirect-other", []string{srv.aHost, "localhost"}, reason.NotGranted, "redirect to another host refused"},
		{"response too large", srv.a + "/big", []string{srv.aHost}, reason.ModuleError, "response body over 1024 bytes"},
		{"bad URL", "file:///etc/passwd", []string{srv.aHost}, reason.ModuleError, "not an absolute http(s) URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(tc.url, tc.grants...)
			if tc.code == "" {
				if err != nil || string(out.Data) != tc.want {
					t.Fatalf("got %q, %v; want %q", logOf(out), err, tc.want)
				}
				return
			}
			var re *sandbox.RunError
			if !errors.As(err, &re) || re.Code != tc.code || !strings.Contains(re.Message, tc.want) {
				t.Fatalf("got %v, want %s containing %q", err, tc.code, tc.want)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{})
	for flavour, m := range flavours(t, rt, hostilePkg) {
		t.Run(flavour, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			_, err := rt.Run(ctx, m, sandbox.Input{Payload: ask("loop", "")})
			if code := sandbox.ErrorCode(err); code != reason.Cancelled {
				t.Fatalf("cancelled run: %v, want code %s", err, reason.Cancelled)
			}

			// The caller's deadline, shorter than the run's time limit, is a timeout.
			ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_, err = rt.Run(ctx, m, sandbox.Input{Payload: ask("loop", ""), TimeLimit: time.Minute})
			var re *sandbox.RunError
			if !errors.As(err, &re) || re.Code != reason.Timeout || !strings.Contains(re.Message, "caller's deadline") {
				t.Fatalf("run past the caller's deadline: %v, want code %s", err, reason.Timeout)
			}
		})
	}
}

func TestClose(t *testing.T) {
	rt, err := sandbox.New(context.Background(), sandbox.Config{CacheDir: wasmtest.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	loop := reactor(t, rt, hostilePkg, sandbox.Pooled)
	mustRun(t, rt, loop, sandbox.Input{Payload: ask("echo", "")}) // one idle instance

	// A run in flight when Close gives up waiting is stopped.
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		close(started)
		_, err := rt.Run(context.Background(), loop, sandbox.Input{Payload: ask("loop", ""), TimeLimit: time.Minute})
		done <- err
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		// The run may also have been refused, had Close come first.
		if code := sandbox.ErrorCode(err); code != reason.Cancelled && !errors.Is(err, sandbox.ErrClosed) {
			t.Fatalf("run stopped by Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close left a run going")
	}
	if n := rt.IdleInstances(); n != 0 {
		t.Fatalf("%d idle instances after Close", n)
	}
	if _, err := rt.Run(context.Background(), loop, sandbox.Input{}); !errors.Is(err, sandbox.ErrClosed) {
		t.Fatalf("Run after Close: %v, want ErrClosed", err)
	}
	if _, err := rt.Compile(context.Background(), "echo", []byte("x")); !errors.Is(err, sandbox.ErrClosed) {
		t.Fatalf("Compile after Close: %v, want ErrClosed", err)
	}
	if err := rt.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestForeignModule(t *testing.T) {
	a := newRuntime(t, sandbox.Config{})
	b := newRuntime(t, sandbox.Config{})
	m := compile(t, a, "./testdata/cat")
	if _, err := b.Run(context.Background(), m, sandbox.Input{}); err == nil || sandbox.ErrorCode(err) != "" {
		t.Fatalf("Run of another Runtime's module: %v", err)
	}
}

func TestNewRejects(t *testing.T) {
	for _, cfg := range []sandbox.Config{
		{MemoryLimitBytes: -1},
		{MemoryLimitBytes: 1000},
		{MemoryLimitBytes: 8 << 30},
		{MemoryLimitBytes: 64 << 20, MaxMemoryBytes: 32 << 20},
		{TimeLimit: -time.Second},
		{MaxOutputBytes: -1},
		{Pool: sandbox.PoolConfig{MaxIdle: -1}},
	} {
		if rt, err := sandbox.New(context.Background(), cfg); err == nil {
			_ = rt.Close(context.Background())
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

// TestGCWhileSpinning: a guest in a tight loop does not hold up the Go
// runtime: garbage collections (which stop the world) complete while it
// spins, and it stops at its time limit.
func TestGCWhileSpinning(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{})
	m := reactor(t, rt, hostilePkg, sandbox.Pooled)
	done := make(chan error, 1)
	go func() {
		_, err := rt.Run(context.Background(), m, sandbox.Input{Payload: ask("loop", ""), TimeLimit: 2 * time.Second})
		done <- err
	}()
	collected := make(chan struct{})
	go func() {
		for range 5 {
			goruntime.GC()
		}
		close(collected)
	}()
	select {
	case <-collected:
	case <-time.After(60 * time.Second):
		t.Fatal("garbage collection blocked while the guest spins")
	}
	select {
	case err := <-done:
		if sandbox.ErrorCode(err) != reason.Timeout {
			t.Fatalf("spinning guest: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the spinning guest was not stopped")
	}
}

// TestCompiledCodeIsReleased: the compiled code of some bytes lives while
// an open Module of them does, and while a run of a closed one goes on;
// then it is released, and a later Load compiles it again.
func TestCompiledCodeIsReleased(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{})
	m1 := reactor(t, rt, hostilePkg, sandbox.Pooled)
	m2 := reactor(t, rt, hostilePkg, sandbox.Fresh)
	if n := rt.CompiledModules(); n != 1 {
		t.Fatalf("two Modules of the same bytes hold %d compiled modules, want 1", n)
	}
	in := sandbox.Input{Payload: ask("echo", "x"), Tenant: "acme"}
	mustRun(t, rt, m1, in)
	m1.Close()
	if n := rt.CompiledModules(); n != 1 {
		t.Fatalf("m2 is open, yet %d compiled modules are held", n)
	}
	mustRun(t, rt, m2, in)

	// A run in flight when the last Module closes finishes; the code is
	// released after it.
	inFlight := make(chan struct{})
	var once sync.Once
	ended := make(chan error, 1)
	go func() {
		_, err := rt.Run(context.Background(), m2, sandbox.Input{Payload: ask("progress", ""), Tenant: "acme",
			Progress: func(int, string) { once.Do(func() { close(inFlight) }) }})
		ended <- err
	}()
	<-inFlight
	m2.Close()
	if n := rt.CompiledModules(); n != 1 {
		t.Fatalf("a run is in flight, yet %d compiled modules are held", n)
	}
	if err := <-ended; err != nil {
		t.Fatalf("a run of a Module closed under it: %v", err)
	}
	if n := rt.CompiledModules(); n != 0 {
		t.Fatalf("every Module closed and every run ended, yet %d compiled modules are held", n)
	}
	if _, err := rt.Run(context.Background(), m2, in); !errors.Is(err, sandbox.ErrModuleClosed) {
		t.Fatalf("run of a closed Module: %v", err)
	}
	m3 := reactor(t, rt, hostilePkg, sandbox.Pooled)
	if out := mustRun(t, rt, m3, in); string(out.Data) != "x" {
		t.Fatalf("after a new Load: %q", out.Data)
	}
	if n := rt.CompiledModules(); n != 1 {
		t.Fatalf("after a new Load: %d compiled modules", n)
	}
}
