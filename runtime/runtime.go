// Package runtime runs worker modules in a WebAssembly sandbox built on
// wazero.
//
// A Runtime compiles each distinct module once (keyed by its sha256 digest,
// with wazero's compilation cache optionally on disk) and runs every job in a
// fresh instance with its own stdin, stdout and stderr, under time, memory and
// output limits. Failures come back as a *RunError with a stable Code.
//
// A module is a WASI preview 1 command (a Go program built with GOOS=wasip1):
// the payload is its stdin, its stdout is the result, its stderr the log, and
// a non-zero exit code fails the run. It gets its name as argv[0], the wall and
// monotonic clocks, sleep, and a random source; no environment, files or
// network.
//
// The package knows nothing of how jobs arrive or where results go.
package runtime

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// Defaults for the zero values of Config.
const (
	DefaultMemoryLimitBytes = 64 << 20
	DefaultTimeLimit        = 10 * time.Second
	DefaultMaxOutputBytes   = 8 << 20
	DefaultMaxLogBytes      = 64 << 10
)

const (
	pageSize = 64 << 10 // bytes in a WebAssembly memory page
	maxPages = 1 << 16  // 4 GiB, the most a 32-bit memory can address
)

// ErrClosed is returned by Compile and Run once Close has been called.
var ErrClosed = errors.New("runtime: closed")

// Config configures a Runtime. The zero value is usable: every zero field
// takes the default named in its comment.
type Config struct {
	// CacheDir, when set, keeps compiled machine code on disk so that a
	// restarted process (or another Runtime with the same CacheDir) skips
	// compilation. Empty keeps the cache in memory only.
	CacheDir string

	// MemoryLimitBytes caps the linear memory of every instance, rounded down
	// to whole 64 KiB pages (DefaultMemoryLimitBytes if zero, 4 GiB at most).
	// A guest that grows past it fails with CodeMemoryLimit.
	//
	// wazero applies the limit per runtime, not per module or per run, so
	// every module of a Runtime shares it; per-module limits (from the safety
	// decision) come in a later issue.
	MemoryLimitBytes int64

	// TimeLimit is the default wall-time limit of a run, used when
	// Input.TimeLimit is zero (DefaultTimeLimit if zero).
	TimeLimit time.Duration

	// MaxOutputBytes is the default cap on a run's stdout, used when
	// Input.MaxOutputBytes is zero (DefaultMaxOutputBytes if zero).
	MaxOutputBytes int

	// MaxLogBytes caps the stderr kept for each run (DefaultMaxLogBytes if
	// zero). Past it the log is truncated; the run goes on.
	MaxLogBytes int

	// DisableCloseOnContextDone turns off the checks that let a run be
	// stopped at its time limit or on cancellation. It exists only to measure
	// what those checks cost (BenchmarkCloseOnContextDone). It is unsafe for
	// untrusted code: a guest that loops forever then never returns.
	DisableCloseOnContextDone bool
}

// Runtime compiles and runs modules. It is safe for concurrent use.
type Runtime struct {
	cfg        Config
	memPages   uint32
	rt         wazero.Runtime
	cache      wazero.CompilationCache
	baseConfig wazero.ModuleConfig

	mu      sync.Mutex // guards the 3 following fields
	modules map[string]*compileCall
	closed  bool
	running sync.WaitGroup
}

// compileCall is one compilation, shared by every Compile of the same bytes.
type compileCall struct {
	done chan struct{}
	mod  *Module
	err  error
}

// Module is a compiled module, ready to Run any number of times, also
// concurrently.
type Module struct {
	rt       *Runtime
	name     string
	digest   string
	compiled wazero.CompiledModule
}

// Name is the name the module was first compiled under; it is the guest's
// argv[0].
func (m *Module) Name() string { return m.name }

// Digest identifies the module's bytes: "sha256:" and the hex digest.
func (m *Module) Digest() string { return m.digest }

// New validates cfg and returns a Runtime. Close releases it.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.MemoryLimitBytes < 0 || cfg.TimeLimit < 0 || cfg.MaxOutputBytes < 0 || cfg.MaxLogBytes < 0 {
		return nil, errors.New("runtime: negative limit in Config")
	}
	if cfg.MemoryLimitBytes == 0 {
		cfg.MemoryLimitBytes = DefaultMemoryLimitBytes
	}
	if cfg.TimeLimit == 0 {
		cfg.TimeLimit = DefaultTimeLimit
	}
	if cfg.MaxOutputBytes == 0 {
		cfg.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if cfg.MaxLogBytes == 0 {
		cfg.MaxLogBytes = DefaultMaxLogBytes
	}
	pages := cfg.MemoryLimitBytes / pageSize
	if pages < 1 || pages > maxPages {
		return nil, fmt.Errorf("runtime: MemoryLimitBytes %d not between 64 KiB and 4 GiB", cfg.MemoryLimitBytes)
	}

	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		var err error
		if cache, err = wazero.NewCompilationCacheWithDir(cfg.CacheDir); err != nil {
			return nil, fmt.Errorf("runtime: compilation cache: %w", err)
		}
	} else {
		cache = wazero.NewCompilationCache()
	}

	rc := wazero.NewRuntimeConfigCompiler().
		WithCompilationCache(cache).
		WithMemoryLimitPages(uint32(pages)).
		WithCloseOnContextDone(!cfg.DisableCloseOnContextDone)
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		_ = cache.Close(ctx)
		return nil, fmt.Errorf("runtime: instantiate WASI: %w", err)
	}

	return &Runtime{
		cfg:      cfg,
		memPages: uint32(pages),
		rt:       rt,
		cache:    cache,
		// Go's runtime reads the clocks and the random source at start-up,
		// so the guest gets real ones; nothing else is granted. The empty
		// name lets any number of instances live side by side.
		baseConfig: wazero.NewModuleConfig().
			WithName("").
			WithStartFunctions(). // _start is called by Run, see there.
			WithSysWalltime().
			WithSysNanotime().
			WithRandSource(rand.Reader),
		modules: make(map[string]*compileCall),
	}, nil
}

// Compile validates and compiles wasm, a WASI command. The same bytes are
// compiled once: later calls, concurrent ones included, return the same
// *Module, under the name it was first compiled with.
func (r *Runtime) Compile(ctx context.Context, name string, wasm []byte) (*Module, error) {
	sum := sha256.Sum256(wasm)
	digest := "sha256:" + hex.EncodeToString(sum[:])

	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	if c, ok := r.modules[digest]; ok {
		r.mu.Unlock()
		select {
		case <-c.done:
			return c.mod, c.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	c := &compileCall{done: make(chan struct{})}
	r.modules[digest] = c
	r.mu.Unlock()

	c.mod, c.err = r.compile(ctx, name, digest, wasm)
	if c.err != nil {
		// Forget failures so that a later call may try again.
		r.mu.Lock()
		delete(r.modules, digest)
		r.mu.Unlock()
	}
	close(c.done)
	return c.mod, c.err
}

func (r *Runtime) compile(ctx context.Context, name, digest string, wasm []byte) (*Module, error) {
	compiled, err := r.rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("runtime: compile %s (%s): %w", name, digest, err)
	}
	if _, ok := compiled.ExportedFunctions()["_start"]; !ok {
		_ = compiled.Close(ctx)
		return nil, fmt.Errorf("runtime: module %s (%s) exports no _start: only WASI commands are supported", name, digest)
	}
	return &Module{rt: r, name: name, digest: digest, compiled: compiled}, nil
}

// Input is one run's payload and limits. Zero limits take the Runtime's
// defaults.
type Input struct {
	// Payload is the guest's stdin.
	Payload []byte
	// TimeLimit bounds the run's wall time, instantiation included. The
	// context given to Run may end it sooner.
	TimeLimit time.Duration
	// MaxOutputBytes caps the guest's stdout.
	MaxOutputBytes int
}

// Output is what a run produced.
type Output struct {
	// Data is the guest's stdout: the result.
	Data []byte
	// Log is the guest's stderr, up to Config.MaxLogBytes.
	Log []byte
	// LogTruncated reports that the guest wrote more stderr than Log holds.
	LogTruncated bool
	// Duration is the run's wall time, instantiation included.
	Duration time.Duration
}

// Run runs m in a fresh instance, with in.Payload as stdin, and returns what
// it wrote. A run that fails returns a *RunError; its Output is then still
// returned, with the log and whatever the guest wrote before it failed.
// Other errors (ErrClosed, a module from another Runtime) come with no Output.
//
// The run ends at the earlier of in.TimeLimit and ctx's deadline; if ctx is
// cancelled first the run fails with CodeCancelled.
func (r *Runtime) Run(ctx context.Context, m *Module, in Input) (*Output, error) {
	if m == nil || m.rt != r {
		return nil, errors.New("runtime: module was not compiled by this Runtime")
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	r.running.Add(1)
	r.mu.Unlock()
	defer r.running.Done()

	limit := in.TimeLimit
	if limit <= 0 {
		limit = r.cfg.TimeLimit
	}
	maxOut := in.MaxOutputBytes
	if maxOut <= 0 {
		maxOut = r.cfg.MaxOutputBytes
	}

	runCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	stdout := &cappedWriter{max: maxOut, onOverflow: cancel}
	stderr := &logWriter{max: r.cfg.MaxLogBytes}
	mc := r.baseConfig.
		// A sleeping guest blocks in poll_oneoff, where wazero cannot stop
		// it: the sleep ends early when the run's context does.
		WithNanosleep(func(ns int64) {
			t := time.NewTimer(time.Duration(ns))
			select {
			case <-t.C:
			case <-runCtx.Done():
				t.Stop()
			}
		}).
		WithArgs(m.name).
		WithStdin(bytes.NewReader(in.Payload)).
		WithStdout(stdout).
		WithStderr(stderr)

	start := time.Now()
	err := r.run(runCtx, m, mc)
	stderr.finish()
	out := &Output{
		Data:         stdout.buf,
		Log:          stderr.log,
		LogTruncated: stderr.truncated,
		Duration:     time.Since(start),
	}
	if err == nil {
		return out, nil
	}
	return out, r.classify(ctx, runCtx, err, stdout, stderr)
}

// run instantiates m and calls _start itself rather than through
// WithStartFunctions, so that instantiation errors and guest failures stay
// apart.
func (r *Runtime) run(ctx context.Context, m *Module, mc wazero.ModuleConfig) error {
	mod, err := r.rt.InstantiateModule(ctx, m.compiled, mc)
	if err != nil {
		return fmt.Errorf("instantiate: %w", err)
	}
	defer mod.Close(context.WithoutCancel(ctx))
	_, err = mod.ExportedFunction("_start").Call(ctx)
	// A command ends with proc_exit, which reports even a clean exit as an
	// ExitError.
	if exitErr, ok := err.(*sys.ExitError); ok && exitErr.ExitCode() == 0 {
		return nil
	}
	return err
}

// Close refuses new compilations and runs, waits for the runs in flight until
// ctx is done, then stops those still going (they fail with CodeCancelled)
// and releases the runtime. The compilation cache on disk is kept.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()

	idle := make(chan struct{})
	go func() {
		r.running.Wait()
		close(idle)
	}()
	select {
	case <-idle:
	case <-ctx.Done():
	}
	// Closing the wazero runtime also stops any instance still running.
	err := r.rt.CloseWithExitCode(context.WithoutCancel(ctx), exitCodeRuntimeClosed)
	return errors.Join(err, r.cache.Close(context.WithoutCancel(ctx)))
}

// exitCodeRuntimeClosed is the exit code runs see when Close stops them.
const exitCodeRuntimeClosed = 0xdead
