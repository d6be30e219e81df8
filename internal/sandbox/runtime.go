// Package runtime runs worker modules in a WebAssembly sandbox built on
// wazero.
//
// A Runtime compiles each distinct module once (keyed by its sha256 digest,
// with wazero's compilation cache optionally on disk) and runs jobs in it
// under time, memory, input and output limits, with only the capabilities
// the job was granted. Modules are WASI commands (one fresh instance per
// job) or reactors exporting ward_run (a fresh instance per job, or warm
// instances from a pool, never shared by two tenants). Failures come back
// as a *RunError with a stable Code.
//
// Before compiling, the module's bytes are rewritten (internal/wasmbin):
// its data segments are merged, which makes instantiation several times
// cheaper, and every loop and function entry counts down to a call of the
// host function ward.yield, which is where a run is stopped at its time
// limit (see README.md, "Stopping a guest").
//
// The package knows nothing of how jobs arrive or where results go.
package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	goruntime "runtime"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/ward-run/ward/internal/sandbox/internal/wasmbin"
)

// Defaults for the zero values of Config.
const (
	DefaultMemoryLimitBytes = 64 << 20
	DefaultMaxMemoryBytes   = 1 << 30
	DefaultTimeLimit        = 10 * time.Second
	DefaultMaxInputBytes    = 256 << 20
	DefaultMaxOutputBytes   = 8 << 20
	DefaultMaxLogBytes      = 64 << 10
)

const (
	pageSize       = 64 << 10 // bytes in a WebAssembly memory page
	maxMemoryBytes = 4 << 30  // the most a 32-bit memory can address
	// mergeGap is the largest zero run filled to merge two data segments.
	mergeGap = 4 << 10
	// yieldEvery is how many function entries and loop iterations an
	// instrumented guest runs between two calls of ward.yield: the latency
	// of stopping it, and of the Go runtime's stop-the-world while it
	// runs, against the cost of the call.
	yieldEvery = 1000
)

// ErrClosed is returned by Compile and Run once Close has been called.
var ErrClosed = errors.New("sandbox: closed")

// ErrModuleClosed is returned by Run for a module that was closed.
var ErrModuleClosed = errors.New("sandbox: module closed")

// InterruptMode says how a run that reaches its time limit is stopped.
type InterruptMode int

// The interrupt modes.
const (
	// InterruptInstrumented (the default) stops guests in ward.yield,
	// which the rewrite makes them call every yieldEvery loop iterations and
	// function entries; a module the rewrite cannot handle falls back to
	// InterruptCloseOnContextDone.
	InterruptInstrumented InterruptMode = iota
	// InterruptCloseOnContextDone uses wazero's WithCloseOnContextDone,
	// which exits to Go at every loop iteration: much slower for
	// CPU-bound guests. It exists to be measured against.
	InterruptCloseOnContextDone
	// InterruptNone cannot stop a guest that loops forever, and a guest
	// that loops holds up Go's stop-the-world (and the process) while it
	// does. It exists only to measure what stopping costs.
	InterruptNone
)

// Config configures a Runtime. The zero value is usable: every zero field
// takes the default named in its comment.
type Config struct {
	// CacheDir, when set, keeps compiled machine code on disk so that a
	// restarted process (or another Runtime with the same CacheDir) skips
	// compilation. Empty keeps the cache in memory only.
	CacheDir string

	// MemoryLimitBytes is the memory limit of a run whose Input and
	// manifest name none (DefaultMemoryLimitBytes if zero).
	MemoryLimitBytes int64
	// MaxMemoryBytes caps every run's memory limit, whatever the grant or
	// the manifest says (DefaultMaxMemoryBytes if zero, 4 GiB at most).
	MaxMemoryBytes int64

	// TimeLimit is the time limit of a run whose Input and manifest name
	// none (DefaultTimeLimit if zero).
	TimeLimit time.Duration

	// MaxInputBytes caps the payload of a run whose manifest names no
	// max_input (DefaultMaxInputBytes if zero).
	MaxInputBytes int
	// MaxOutputBytes caps the result of a run whose Input and manifest
	// name none (DefaultMaxOutputBytes if zero).
	MaxOutputBytes int
	// MaxLogBytes caps the log kept for each run: stderr and ward.log
	// together (DefaultMaxLogBytes if zero). Past it the log is
	// truncated; the run goes on.
	MaxLogBytes int

	// HTTP bounds the guests' outbound HTTP (ward.http_request).
	HTTP HTTPConfig
	// Pool configures the warm instances of pooled modules.
	Pool PoolConfig

	// Interrupt selects how runs are stopped; keep the default.
	Interrupt InterruptMode
}

// HTTPConfig bounds the outbound HTTP calls of the ward.http_request host
// function.
type HTTPConfig struct {
	// Timeout bounds one call (10 s if zero); the run's own deadline
	// bounds it too.
	Timeout time.Duration
	// MaxRequestBytes caps a request body (1 MiB if zero).
	MaxRequestBytes int
	// MaxResponseBytes caps a response body (8 MiB if zero).
	MaxResponseBytes int
	// MaxRequests caps the calls of one run (64 if zero).
	MaxRequests int
	// Transport sends the requests (a private http.Transport if nil).
	Transport http.RoundTripper
}

// PoolConfig bounds the warm instances of pooled modules.
type PoolConfig struct {
	// MaxIdle caps the idle instances of the Runtime (64 if zero); past
	// it the least recently used go.
	MaxIdle int
	// MaxIdlePerKey caps the idle instances of one module version for one
	// tenant and one set of grants (8 if zero).
	MaxIdlePerKey int
	// IdleTimeout closes instances idle for longer (2 minutes if zero).
	IdleTimeout time.Duration
	// MaxRuns retires an instance after that many jobs (10,000 if zero).
	MaxRuns int
	// RecycleBytes retires an instance whose memory grew past it during
	// a job (64 MiB if zero): WebAssembly memory never shrinks.
	RecycleBytes int64
}

func (c *Config) setDefaults() error {
	if c.MemoryLimitBytes < 0 || c.MaxMemoryBytes < 0 || c.TimeLimit < 0 || c.MaxInputBytes < 0 ||
		c.MaxOutputBytes < 0 || c.MaxLogBytes < 0 || c.HTTP.Timeout < 0 || c.HTTP.MaxRequestBytes < 0 ||
		c.HTTP.MaxResponseBytes < 0 || c.HTTP.MaxRequests < 0 || c.Pool.MaxIdle < 0 || c.Pool.MaxIdlePerKey < 0 ||
		c.Pool.IdleTimeout < 0 || c.Pool.MaxRuns < 0 || c.Pool.RecycleBytes < 0 {
		return errors.New("sandbox: negative limit in Config")
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if c.MemoryLimitBytes == 0 {
		c.MemoryLimitBytes = DefaultMemoryLimitBytes
	}
	if c.MaxMemoryBytes == 0 {
		c.MaxMemoryBytes = max(DefaultMaxMemoryBytes, c.MemoryLimitBytes)
	}
	if c.TimeLimit == 0 {
		c.TimeLimit = DefaultTimeLimit
	}
	def(&c.MaxInputBytes, DefaultMaxInputBytes)
	def(&c.MaxOutputBytes, DefaultMaxOutputBytes)
	def(&c.MaxLogBytes, DefaultMaxLogBytes)
	if c.HTTP.Timeout == 0 {
		c.HTTP.Timeout = 10 * time.Second
	}
	def(&c.HTTP.MaxRequestBytes, 1<<20)
	def(&c.HTTP.MaxResponseBytes, 8<<20)
	def(&c.HTTP.MaxRequests, 64)
	def(&c.Pool.MaxIdle, 64)
	def(&c.Pool.MaxIdlePerKey, 8)
	if c.Pool.IdleTimeout == 0 {
		c.Pool.IdleTimeout = 2 * time.Minute
	}
	def(&c.Pool.MaxRuns, 10_000)
	if c.Pool.RecycleBytes == 0 {
		c.Pool.RecycleBytes = 64 << 20
	}
	for _, v := range []int64{c.MemoryLimitBytes, c.MaxMemoryBytes} {
		if v < pageSize || v > maxMemoryBytes {
			return fmt.Errorf("sandbox: memory limit %d not between 64 KiB and 4 GiB", v)
		}
	}
	if c.MemoryLimitBytes > c.MaxMemoryBytes {
		return fmt.Errorf("sandbox: MemoryLimitBytes %d is over MaxMemoryBytes %d", c.MemoryLimitBytes, c.MaxMemoryBytes)
	}
	return nil
}

// Runtime compiles and runs modules. It is safe for concurrent use.
type Runtime struct {
	cfg   Config
	cache wazero.CompilationCache
	// wz runs the modules the rewrite instrumented, with no per-iteration
	// exit to Go; checked those it could not, with WithCloseOnContextDone.
	wz, checked wazero.Runtime
	http        *http.Client
	pool        *pool

	mu       sync.Mutex // guards the 4 following fields
	compiled map[string]*compileCall
	closed   bool
	calls    map[*call]struct{} // the runs in flight, stopped by Close
	running  sync.WaitGroup
}

// compileCall is one compilation, shared by every Load of the same bytes.
type compileCall struct {
	done chan struct{}
	code *code
	err  error
	refs int // Loads under way and Modules not yet released (guarded by Runtime.mu)
}

// code is a compiled module, shared by the Modules of the same bytes.
type code struct {
	digest   string
	compiled wazero.CompiledModule
	rt       wazero.Runtime
	// interruptible: the rewrite made it call ward.yield.
	interruptible bool
	abi           ABI
	minMemory     uint64 // bytes the module's memory starts with
}

// New validates cfg and returns a Runtime. Close releases it.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		var err error
		if cache, err = wazero.NewCompilationCacheWithDir(cfg.CacheDir); err != nil {
			return nil, fmt.Errorf("sandbox: compilation cache: %w", err)
		}
	} else {
		cache = wazero.NewCompilationCache()
	}
	r := &Runtime{cfg: cfg, cache: cache, compiled: make(map[string]*compileCall), calls: make(map[*call]struct{})}

	newRT := func(closeOnDone bool) (wazero.Runtime, error) {
		rc := wazero.NewRuntimeConfigCompiler().
			WithCompilationCache(cache).
			WithMemoryLimitPages(uint32(cfg.MaxMemoryBytes / pageSize)).
			WithCloseOnContextDone(closeOnDone)
		rt := wazero.NewRuntimeWithConfig(ctx, rc)
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
			_ = rt.Close(ctx)
			return nil, fmt.Errorf("sandbox: instantiate WASI: %w", err)
		}
		if err := instantiateHost(ctx, rt); err != nil {
			_ = rt.Close(ctx)
			return nil, err
		}
		return rt, nil
	}
	var err error
	if r.wz, err = newRT(cfg.Interrupt == InterruptCloseOnContextDone); err != nil {
		_ = cache.Close(ctx)
		return nil, err
	}
	if r.checked, err = newRT(cfg.Interrupt != InterruptNone); err != nil {
		_ = r.wz.Close(ctx)
		_ = cache.Close(ctx)
		return nil, err
	}
	r.http = newHTTPClient(cfg.HTTP)
	r.pool = newPool(cfg.Pool)
	return r, nil
}

// Module is a compiled module with its manifest, ready to Run any number of
// times, also concurrently. Pooled modules keep their warm instances until
// the Module or the Runtime is closed.
type Module struct {
	rt       *Runtime
	call     *compileCall
	code     *code
	manifest Manifest

	mu       sync.Mutex // guards the 3 following fields
	closed   bool
	runs     int  // in flight
	released bool // its hold on the compiled code
}

// Name is the manifest's name; it is the guest's argv[0].
func (m *Module) Name() string { return m.manifest.Name }

// Digest identifies the module's bytes: "sha256:" and the hex digest.
func (m *Module) Digest() string { return m.code.digest }

// Manifest returns the module's manifest, with its ABI and isolation
// resolved.
func (m *Module) Manifest() Manifest { return m.manifest }

// Close drops the module's idle instances; runs in flight finish, and their
// instances are closed rather than pooled. Later runs fail with
// ErrModuleClosed. Once no open Module of the same bytes is left and its
// last run has ended, the compiled code is released (a later Load compiles
// it again, from the disk cache when there is one): a host swapping
// versions for months keeps only the code it runs.
func (m *Module) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	release := m.runs == 0 && !m.released
	m.released = m.released || release
	m.mu.Unlock()
	m.rt.pool.drop(m)
	if release {
		m.rt.release(m.call)
	}
}

// acquire registers a run; it fails once m is closed.
func (m *Module) acquire() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.runs++
	return true
}

// done ends a run registered by acquire.
func (m *Module) done() {
	m.mu.Lock()
	m.runs--
	release := m.closed && m.runs == 0 && !m.released
	m.released = m.released || release
	m.mu.Unlock()
	if release {
		m.rt.release(m.call)
	}
}

// release drops one hold on c's compiled code, and closes the code when it
// was the last.
func (r *Runtime) release(c *compileCall) {
	r.mu.Lock()
	c.refs--
	last := c.refs == 0 && r.compiled[c.code.digest] == c && !r.closed
	if last {
		delete(r.compiled, c.code.digest)
	}
	r.mu.Unlock()
	if last {
		// wazero: safe while instances of it still run.
		_ = c.code.compiled.Close(context.Background())
	}
}

func (m *Module) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// Load validates and compiles wasm, and checks it against its manifest. The
// same bytes are compiled once: later calls, concurrent ones included,
// share the compiled code.
func (r *Runtime) Load(ctx context.Context, wasm []byte, man *Manifest) (*Module, error) {
	if man == nil {
		return nil, errors.New("sandbox: Load: no manifest")
	}
	if err := man.Validate(); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(wasm)
	digest := "sha256:" + hex.EncodeToString(sum[:])

	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	c, ok := r.compiled[digest]
	if !ok {
		c = &compileCall{done: make(chan struct{})}
		r.compiled[digest] = c
	}
	c.refs++ // released by the Module's Close, or below on failure
	r.mu.Unlock()

	if ok {
		select {
		case <-c.done:
		case <-ctx.Done():
			r.mu.Lock()
			c.refs-- // the compiling Load holds its own
			r.mu.Unlock()
			return nil, ctx.Err()
		}
	} else {
		c.code, c.err = r.compile(ctx, digest, wasm)
		if c.err != nil {
			// Forget failures so that a later call may try again.
			r.mu.Lock()
			delete(r.compiled, digest)
			r.mu.Unlock()
		}
		close(c.done)
	}
	if c.err != nil {
		return nil, fmt.Errorf("sandbox: module %s (%s): %w", man.Name, digest, c.err)
	}

	m := &Module{rt: r, call: c, code: c.code, manifest: *man}
	if err := m.resolve(man); err != nil {
		r.release(c)
		return nil, err
	}
	return m, nil
}

// resolve fills in the manifest's ABI and isolation from the code, and
// checks that they agree.
func (m *Module) resolve(man *Manifest) error {
	c := m.call
	switch {
	case m.manifest.ABI == "":
		m.manifest.ABI = c.code.abi
	case m.manifest.ABI != c.code.abi:
		return fmt.Errorf("sandbox: module %s: manifest says abi %s, the module is a %s", man.Name, man.ABI, c.code.abi)
	}
	if m.manifest.Isolation == "" {
		m.manifest.Isolation = Fresh
	}
	if m.manifest.ABI == ABICommand && m.manifest.Isolation == Pooled {
		return fmt.Errorf("sandbox: module %s: a wasi-command cannot be pooled", man.Name)
	}
	return nil
}

func (r *Runtime) compile(ctx context.Context, digest string, wasm []byte) (*code, error) {
	c := &code{digest: digest}
	ctx = experimental.WithCompilationWorkers(ctx, goruntime.GOMAXPROCS(0))
	if r.cfg.Interrupt == InterruptInstrumented {
		rewritten, _, err := wasmbin.Rewrite(wasm, wasmbin.Options{MergeGap: mergeGap,
			Yield: &wasmbin.Yield{Module: "ward", Name: "yield", Every: yieldEvery}})
		if err == nil {
			if compiled, err := r.wz.CompileModule(ctx, rewritten); err == nil {
				c.compiled, c.rt, c.interruptible = compiled, r.wz, true
			}
		}
	} else {
		// Merging data segments is safe whatever the interrupt mode.
		if rewritten, _, err := wasmbin.Rewrite(wasm, wasmbin.Options{MergeGap: mergeGap}); err == nil {
			if compiled, err := r.checked.CompileModule(ctx, rewritten); err == nil {
				c.compiled, c.rt = compiled, r.checked
			}
		}
	}
	if c.compiled == nil {
		compiled, err := r.checked.CompileModule(ctx, wasm)
		if err != nil {
			return nil, fmt.Errorf("compile: %w", err)
		}
		c.compiled, c.rt = compiled, r.checked
	}

	exports := c.compiled.ExportedFunctions()
	_, start := exports["_start"]
	_, init := exports["_initialize"]
	run, hasRun := exports["ward_run"]
	switch {
	case start:
		c.abi = ABICommand
	case init && hasRun:
		if len(run.ParamTypes()) != 0 || len(run.ResultTypes()) != 1 || run.ResultTypes()[0] != api.ValueTypeI32 {
			_ = c.compiled.Close(ctx)
			return nil, errors.New("ward_run must be func() int32")
		}
		c.abi = ABIReactor
	default:
		_ = c.compiled.Close(ctx)
		return nil, errors.New("exports neither _start (a WASI command) nor _initialize and ward_run (a Ward reactor)")
	}
	for _, mem := range c.compiled.ExportedMemories() {
		c.minMemory = max(c.minMemory, uint64(mem.Min())*pageSize)
	}
	return c, nil
}

// Close refuses new compilations and runs, waits for the runs in flight until
// ctx is done, then stops those still going (they fail with reason.Cancelled)
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
		// Stop the runs still going, and wait for them to return: closing
		// the wazero runtimes under a running guest would free its memory.
		r.mu.Lock()
		for c := range r.calls {
			c.cancel(ErrClosed)
		}
		r.mu.Unlock()
		<-idle
	}
	r.pool.close()
	bg := context.WithoutCancel(ctx)
	return errors.Join(r.wz.Close(bg), r.checked.Close(bg), r.cache.Close(bg))
}

// track registers a run; it fails once the Runtime is closed.
func (r *Runtime) track(c *call) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.calls[c] = struct{}{}
	r.running.Add(1)
	return true
}

// untrack ends what track started.
func (r *Runtime) untrack(c *call) {
	r.mu.Lock()
	delete(r.calls, c)
	r.mu.Unlock()
	r.running.Done()
}

// baseModuleConfig is what every instance gets: the real clocks and a random
// source (Go's runtime reads them at start), and the empty name, which lets
// any number of instances live side by side.
func baseModuleConfig() wazero.ModuleConfig {
	return wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader)
}
