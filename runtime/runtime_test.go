package runtime_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/wasmtest"
	"github.com/ward-run/ward/runtime"
)

const echoPkg = "github.com/ward-run/ward/modules/echo"

// cacheDir is a compilation cache shared by the tests' Runtimes: compiling a
// Go module takes seconds, and sharing the cache is itself under test.
var cacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ward-runtime-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cacheDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// newRuntime returns a Runtime closed when t ends, on the shared cache
// unless cfg names a CacheDir.
func newRuntime(t testing.TB, cfg runtime.Config) *runtime.Runtime {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = cacheDir
	}
	rt, err := runtime.New(context.Background(), cfg)
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

func compile(t testing.TB, rt *runtime.Runtime, pkg string) *runtime.Module {
	t.Helper()
	m, err := rt.Compile(context.Background(), pkg[strings.LastIndexByte(pkg, '/')+1:], wasmtest.Build(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkEcho runs echo on rt with payload and fails t unless it comes back.
func checkEcho(t testing.TB, rt *runtime.Runtime, echo *runtime.Module, payload []byte) {
	t.Helper()
	out, err := rt.Run(context.Background(), echo, runtime.Input{Payload: payload})
	if err != nil {
		t.Fatalf("echo: %v (log %q)", err, logOf(out))
	}
	if !bytes.Equal(out.Data, payload) {
		t.Fatalf("echo returned %d bytes, want the %d sent", len(out.Data), len(payload))
	}
}

func logOf(out *runtime.Output) []byte {
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

func TestEcho(t *testing.T) {
	rt := newRuntime(t, runtime.Config{})
	echo := compile(t, rt, echoPkg)
	for _, n := range []int{0, 1, 1 << 10, 64 << 10, 1 << 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			payload := randomBytes(n)
			out, err := rt.Run(context.Background(), echo, runtime.Input{Payload: payload})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Data, payload) {
				t.Fatalf("got %d bytes, want the %d sent", len(out.Data), n)
			}
			if len(out.Log) != 0 || out.Duration <= 0 {
				t.Fatalf("log %q, duration %v", out.Log, out.Duration)
			}
		})
	}
}

func TestCompileOnce(t *testing.T) {
	rt := newRuntime(t, runtime.Config{})
	wasm := wasmtest.Build(t, echoPkg)

	const n = 8
	mods := make([]*runtime.Module, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			m, err := rt.Compile(context.Background(), fmt.Sprint("echo", i), bytes.Clone(wasm))
			if err != nil {
				t.Error(err)
			}
			mods[i] = m
		})
	}
	wg.Wait()
	for _, m := range mods[1:] {
		if m != mods[0] {
			t.Fatalf("same bytes gave different modules: %p and %p", m, mods[0])
		}
	}
	if d := mods[0].Digest(); !strings.HasPrefix(d, "sha256:") || len(d) != len("sha256:")+64 {
		t.Fatalf("Digest() = %q", d)
	}
	if !strings.HasPrefix(mods[0].Name(), "echo") {
		t.Fatalf("Name() = %q", mods[0].Name())
	}

	// Different bytes are a different module.
	other := compile(t, rt, "./testdata/exit")
	if other == mods[0] || other.Digest() == mods[0].Digest() {
		t.Fatal("different bytes gave the same module")
	}
}

func TestCompileRejects(t *testing.T) {
	rt := newRuntime(t, runtime.Config{})
	// A valid module that is not a WASI command: magic, version, nothing else.
	for name, wasm := range map[string][]byte{
		"garbage":  []byte("not wasm"),
		"no start": {0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00},
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

func TestSharedCacheDir(t *testing.T) {
	dir := cacheDir
	wasm := wasmtest.Build(t, echoPkg)
	payload := []byte("from the cache")

	first := newRuntime(t, runtime.Config{CacheDir: dir})
	m, err := first.Compile(context.Background(), "echo", wasm)
	if err != nil {
		t.Fatal(err)
	}
	checkEcho(t, first, m, payload)
	if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
		t.Fatalf("cache dir holds %d entries (%v), want some", len(entries), err)
	}

	// Two more Runtimes on the same directory, one opened while the first
	// is still alive, both compiling from the cache.
	for i := range 2 {
		rt := newRuntime(t, runtime.Config{CacheDir: dir})
		m, err := rt.Compile(context.Background(), "echo", wasm)
		if err != nil {
			t.Fatalf("runtime %d: %v", i+2, err)
		}
		checkEcho(t, rt, m, payload)
		if i == 0 {
			if err := first.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestHostileGuests(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pkg      string
		cfg      runtime.Config
		in       runtime.Input
		code     runtime.Code
		message  string // the RunError's message contains it
		exitCode uint32
	}{
		{
			name: "infinite loop", pkg: "./testdata/loop",
			in:   runtime.Input{TimeLimit: 200 * time.Millisecond},
			code: runtime.CodeTimeout,
		},
		{
			name: "sleep", pkg: "./testdata/sleep",
			in:   runtime.Input{TimeLimit: 200 * time.Millisecond},
			code: runtime.CodeTimeout,
		},
		{
			name: "memory bomb", pkg: "./testdata/membomb",
			cfg:      runtime.Config{MemoryLimitBytes: 32 << 20},
			code:     runtime.CodeMemoryLimit,
			message:  "out of memory",
			exitCode: 2,
		},
		{
			name: "endless output", pkg: "./testdata/bigout",
			in:      runtime.Input{MaxOutputBytes: 1 << 20},
			code:    runtime.CodeOutputTooLarge,
			message: "1048576 bytes",
		},
		{
			name: "exit code", pkg: "./testdata/exit",
			code:     runtime.CodeExit,
			message:  "bad input: want JSON (exit code 3)",
			exitCode: 3,
		},
		{
			name: "panic", pkg: "./testdata/panic",
			code:     runtime.CodeExit,
			message:  "panic: no handler for job kind",
			exitCode: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRuntime(t, tc.cfg)
			guest := compile(t, rt, tc.pkg)
			echo := compile(t, rt, echoPkg)

			out, err := rt.Run(context.Background(), guest, tc.in)
			var re *runtime.RunError
			if !errors.As(err, &re) {
				t.Fatalf("Run error = %v, want a *RunError", err)
			}
			if re.Code != tc.code || !strings.Contains(re.Message, tc.message) || re.ExitCode != tc.exitCode {
				t.Fatalf("got %s %q (exit code %d), want %s containing %q (exit code %d); log:\n%s",
					re.Code, re.Message, re.ExitCode, tc.code, tc.message, tc.exitCode, logOf(out))
			}
			if runtime.ErrorCode(fmt.Errorf("job 7: %w", err)) != tc.code {
				t.Fatalf("ErrorCode does not see %s through wrapping", tc.code)
			}
			if out == nil {
				t.Fatal("no Output with the RunError")
			}
			t.Logf("%v after %v", err, out.Duration)

			// The Runtime is unharmed.
			checkEcho(t, rt, echo, []byte("still here"))
		})
	}
}

func TestCancel(t *testing.T) {
	rt := newRuntime(t, runtime.Config{})
	loop := compile(t, rt, "./testdata/loop")

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := rt.Run(ctx, loop, runtime.Input{})
	if code := runtime.ErrorCode(err); code != runtime.CodeCancelled {
		t.Fatalf("cancelled run: %v, want code %s", err, runtime.CodeCancelled)
	}

	// The caller's deadline, shorter than the run's time limit, is a timeout.
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = rt.Run(ctx, loop, runtime.Input{TimeLimit: time.Minute})
	if code := runtime.ErrorCode(err); code != runtime.CodeTimeout {
		t.Fatalf("run past the caller's deadline: %v, want code %s", err, runtime.CodeTimeout)
	}
}

func TestConcurrentRuns(t *testing.T) {
	rt := newRuntime(t, runtime.Config{})
	echo := compile(t, rt, echoPkg)

	const goroutines, runs = 16, 4
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range runs {
				payload := fmt.Appendf(randomBytes(g*1000), "goroutine %d run %d", g, i)
				out, err := rt.Run(context.Background(), echo, runtime.Input{Payload: payload})
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

func TestClose(t *testing.T) {
	rt, err := runtime.New(context.Background(), runtime.Config{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	loop := compile(t, rt, "./testdata/loop")
	echo := compile(t, rt, echoPkg)

	// A run in flight when Close gives up waiting is stopped.
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		close(started)
		_, err := rt.Run(context.Background(), loop, runtime.Input{TimeLimit: time.Minute})
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
		if code := runtime.ErrorCode(err); code != runtime.CodeCancelled && !errors.Is(err, runtime.ErrClosed) {
			t.Fatalf("run stopped by Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close left a run going")
	}

	if _, err := rt.Run(context.Background(), echo, runtime.Input{}); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("Run after Close: %v, want ErrClosed", err)
	}
	if _, err := rt.Compile(context.Background(), "echo", []byte("x")); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("Compile after Close: %v, want ErrClosed", err)
	}
	if err := rt.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestForeignModule(t *testing.T) {
	a := newRuntime(t, runtime.Config{})
	b := newRuntime(t, runtime.Config{})
	m := compile(t, a, echoPkg)
	if _, err := b.Run(context.Background(), m, runtime.Input{}); err == nil || runtime.ErrorCode(err) != "" {
		t.Fatalf("Run of another Runtime's module: %v", err)
	}
}

func TestNewRejects(t *testing.T) {
	for _, cfg := range []runtime.Config{
		{MemoryLimitBytes: -1},
		{MemoryLimitBytes: 1000},
		{MemoryLimitBytes: 8 << 30},
		{TimeLimit: -time.Second},
		{MaxOutputBytes: -1},
	} {
		if rt, err := runtime.New(context.Background(), cfg); err == nil {
			_ = rt.Close(context.Background())
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}
