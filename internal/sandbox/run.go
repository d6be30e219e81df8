package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ward-run/ward/api/reason"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// Input is one run: the job's payload, who it is for, what it may do, and
// its limits. Zero limits take the manifest's, then the Runtime's.
type Input struct {
	// Payload is the job's context: the guest's stdin (commands) and what
	// ward.context_read returns (every module).
	Payload []byte
	// Tenant partitions pooled instances: an instance only ever serves
	// one tenant.
	Tenant string
	// Job describes the job to the guest (ward.job_info).
	Job JobInfo
	// Grants are the capabilities the job may use; nothing else is
	// allowed.
	Grants Grants

	// TimeLimit bounds the run's wall time, instantiation included. The
	// context given to Run may end it sooner.
	TimeLimit time.Duration
	// MemoryLimitBytes caps the guest's linear memory, rounded down to
	// whole 64 KiB pages.
	MemoryLimitBytes int64
	// MaxOutputBytes caps the result.
	MaxOutputBytes int

	// Progress, when set, receives the guest's ward.progress reports
	// (percent 0–100), at most about ten a second. It runs on the guest's
	// goroutine: it must not block.
	Progress func(percent int, message string)
	// Stream, when set, receives what the guest writes with
	// ward.stream_write, coalesced into chunks numbered from 1, in order,
	// none dropped: at most 16 KiB each, sent within 50 ms of their first
	// byte; the last before Run returns. It runs on the guest's goroutine
	// or a timer's, never two at once, and must not block.
	Stream func(seq int, chunk []byte)
}

// JobInfo is what ward.job_info tells the guest about its job.
type JobInfo struct {
	// ID is the job's id.
	ID string `json:"id,omitempty"`
	// Topic is the topic the job was submitted on.
	Topic string `json:"topic,omitempty"`
	// Attempt counts the job's runs, from 1.
	Attempt int `json:"attempt,omitempty"`
	// Labels are the job's labels.
	Labels map[string]string `json:"labels,omitempty"`
}

// Grants are what a job's module may use. The zero value grants nothing.
type Grants struct {
	// HTTPHosts are the hosts ward.http_request may call: "host" (any
	// port), "host:port", or "*.domain" (any subdomain, any port).
	HTTPHosts []string
	// Mounts are directories the guest sees, read-only.
	Mounts []Mount
	// Env is the guest's environment.
	Env map[string]string
}

// Mount is a host directory the guest reads at Path. Access goes through
// os.Root: nothing outside Dir is reachable, symbolic links included.
type Mount struct {
	Dir  string // on the host
	Path string // in the guest; Dir when empty
}

// Output is what a run produced.
type Output struct {
	// Data is the result: what the guest wrote with ward.output_write,
	// and, for commands, to stdout.
	Data []byte
	// Log is the guest's stderr and ward.log lines, up to
	// Config.MaxLogBytes. A reactor's stdout goes here too.
	Log []byte
	// LogTruncated reports that the guest logged more than Log holds, or
	// faster than the log's rate limit.
	LogTruncated bool
	// Duration is the run's wall time, instantiation included.
	Duration time.Duration
	// Reused reports that a warm pooled instance ran the job.
	Reused bool
}

// Run runs in on m and returns what the guest produced. A run that fails
// returns a *RunError; its Output is then still returned, with the log and
// whatever the guest wrote before it failed. Other errors (ErrClosed, a
// module from another Runtime) come with no Output.
//
// The run ends at the earlier of its time limit and ctx's deadline; if ctx
// is cancelled first the run fails with reason.Cancelled.
func (r *Runtime) Run(ctx context.Context, m *Module, in Input) (*Output, error) {
	if m == nil || m.rt != r {
		return nil, errors.New("sandbox: module was not compiled by this Runtime")
	}
	if !m.acquire() {
		return nil, ErrModuleClosed
	}
	defer m.done()
	start := time.Now()

	lim := r.limits(m, &in)
	// One context for the run: its cause says what ended it (the time
	// limit, the caller, an output overflow, Close).
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	limit := time.AfterFunc(lim.time, func() { cancel(errTimeLimit) })
	defer limit.Stop()

	c := newCall(r, runCtx, cancel, &in, lim)
	if !r.track(c) {
		return nil, ErrClosed
	}
	defer r.untrack(c)
	out := &Output{}
	var err error
	switch {
	case len(in.Payload) > lim.maxInput:
		err = &RunError{Code: reason.InputTooLarge, Message: fmt.Sprintf("payload of %d bytes is over the module's %d", len(in.Payload), lim.maxInput)}
	case m.code.minMemory > lim.memory:
		err = &RunError{Code: reason.MemoryLimit, Message: fmt.Sprintf("the module needs %d bytes of memory to start; the limit is %d", m.code.minMemory, lim.memory)}
	case m.manifest.Isolation == Pooled:
		out.Reused, err = r.runPooled(runCtx, m, c)
	default:
		err = r.runFresh(runCtx, m, c)
	}
	c.finish()
	c.log.finish()
	out.Data, out.Log, out.LogTruncated = c.out.buf, c.log.log, c.log.truncated
	out.Duration = time.Since(start)
	if err == nil && c.failed {
		err = errModuleFailed
	}
	if err == nil {
		return out, nil
	}
	var re *RunError
	if errors.As(err, &re) {
		return out, re
	}
	return out, classify(runCtx, err, c)
}

// errModuleFailed stands for a run whose guest called ward.fail.
var errModuleFailed = errors.New("module failed")

// errTimeLimit is the cause of a run's context when its time limit passed.
var errTimeLimit = errors.New("time limit")

// limits are one run's resolved limits.
type limits struct {
	time     time.Duration
	memory   uint64
	maxInput int
	maxOut   int
}

func (r *Runtime) limits(m *Module, in *Input) limits {
	first := func(vs ...int64) int64 {
		for _, v := range vs {
			if v > 0 {
				return v
			}
		}
		return 0
	}
	l := limits{
		time:     time.Duration(first(int64(in.TimeLimit), int64(m.manifest.Limits.Time), int64(r.cfg.TimeLimit))),
		maxInput: int(first(int64(m.manifest.Limits.MaxInput), int64(r.cfg.MaxInputBytes))),
		maxOut:   int(first(int64(in.MaxOutputBytes), int64(m.manifest.Limits.MaxOutput), int64(r.cfg.MaxOutputBytes))),
	}
	mem := min(first(in.MemoryLimitBytes, int64(m.manifest.Limits.Memory), r.cfg.MemoryLimitBytes), r.cfg.MaxMemoryBytes)
	l.memory = uint64(mem) / pageSize * pageSize
	return l
}

// instance is one instantiated module.
type instance struct {
	mod   api.Module
	run   api.Function // ward_run for reactors, _start for commands
	mem   *linearMemory
	roots []*os.Root
	// stdout and stderr follow the call the instance serves.
	stdout, stderr *callWriter
	runs           int
	broken         bool // it trapped, was interrupted, or hit a limit

	key poolKey // set for pooled instances
	poolLinks
}

// instantiate creates an instance of m for c's grants and memory limit.
// Commands get c's payload as stdin.
func (r *Runtime) instantiate(ctx context.Context, m *Module, c *call) (*instance, error) {
	inst := &instance{
		stdout: &callWriter{c: c},
		stderr: &callWriter{c: c, stderr: true},
	}
	mc := baseModuleConfig().
		WithArgs(m.manifest.Name).
		WithStdout(inst.stdout).
		WithStderr(inst.stderr).
		// A sleeping guest blocks in poll_oneoff, where nothing stops it:
		// the sleep ends early when the run does.
		WithNanosleep(func(ns int64) { inst.stderr.sleep(time.Duration(ns)) })
	if m.manifest.ABI == ABICommand {
		mc = mc.WithStdin(bytes.NewReader(c.in.Payload))
	} else {
		// A reactor's stdout is part of its log: its result goes through
		// ward.output_write.
		inst.stdout.stderr = true
	}
	keys := make([]string, 0, len(c.in.Grants.Env))
	for k := range c.in.Grants.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		mc = mc.WithEnv(k, c.in.Grants.Env[k])
	}
	if len(c.in.Grants.Mounts) > 0 {
		fsc := wazero.NewFSConfig()
		for _, mnt := range c.in.Grants.Mounts {
			root, err := os.OpenRoot(mnt.Dir)
			if err != nil {
				inst.closeRoots()
				return nil, &RunError{Code: reason.MountUnavailable, Message: err.Error()}
			}
			inst.roots = append(inst.roots, root)
			// os.Root's fs.FS resolves every name inside the root, symbolic
			// links included, and has no way to write.
			mfs := &mountFS{fsys: root.FS(), path: mnt.guestPath(), w: inst.stderr}
			fsc = fsc.(sysfs.FSConfig).WithSysFSMount(&sysfs.AdaptFS{FS: mfs}, mnt.guestPath())
		}
		mc = mc.WithFSConfig(fsc)
	}

	alloc := &allocator{limit: c.lim.memory}
	ictx := experimental.WithMemoryAllocator(ctx, alloc)
	mod, err := m.code.rt.InstantiateModule(ictx, m.code.compiled, mc)
	inst.mem = alloc.mem
	c.noteMemory(inst)
	if err != nil {
		inst.closeRoots()
		return nil, fmt.Errorf("instantiate: %w", err)
	}
	inst.mod = mod
	if m.manifest.ABI == ABICommand {
		inst.run = mod.ExportedFunction("_start")
		return inst, nil
	}
	inst.run = mod.ExportedFunction("ward_run")
	if _, err := inst.call(ctx, mod.ExportedFunction("_initialize")); err != nil {
		c.noteMemory(inst)
		inst.close()
		return nil, fmt.Errorf("_initialize: %w", err)
	}
	return inst, nil
}

func (mnt Mount) guestPath() string {
	if mnt.Path != "" {
		return path.Clean("/" + mnt.Path)
	}
	return path.Clean("/" + strings.TrimPrefix(mnt.Dir, "/"))
}

// call calls f on the instance under ctx: ward.yield (or wazero's context
// watch) stops it when ctx ends. A call that fails leaves the instance
// broken.
func (inst *instance) call(ctx context.Context, f api.Function) ([]uint64, error) {
	if inst.mem != nil {
		inst.mem.enter()
		defer inst.mem.leave()
	}
	res, err := f.Call(ctx)
	if err != nil {
		inst.broken = true
	}
	return res, err
}

func (inst *instance) closeRoots() {
	for _, root := range inst.roots {
		_ = root.Close()
	}
	inst.roots = nil
}

// close releases the instance.
func (inst *instance) close() {
	if inst.mod != nil {
		_ = inst.mod.Close(context.Background())
	}
	inst.closeRoots()
}

// runFresh runs c in a new instance of m.
func (r *Runtime) runFresh(ctx context.Context, m *Module, c *call) error {
	inst, err := r.instantiate(ctx, m, c)
	if err != nil {
		return err
	}
	defer inst.close()
	res, err := inst.call(withCall(ctx, c), inst.run)
	c.noteMemory(inst)
	if err != nil {
		// A command ends with proc_exit, which reports even a clean exit
		// as an ExitError.
		if exitErr, ok := err.(*sys.ExitError); ok && exitErr.ExitCode() == 0 && m.manifest.ABI == ABICommand {
			return nil
		}
		return err
	}
	return reactorResult(res)
}

// reactorResult turns ward_run's result into an error: zero is success.
func reactorResult(res []uint64) error {
	if len(res) == 1 && uint32(res[0]) != 0 {
		return errModuleFailed
	}
	return nil
}

// runPooled runs c in a warm instance of m for c's tenant and grants, or a
// new one, and gives the instance back to the pool if it is still sound.
func (r *Runtime) runPooled(ctx context.Context, m *Module, c *call) (reused bool, err error) {
	key := makePoolKey(m, c.in, c.lim)
	inst := r.pool.get(key)
	if inst != nil {
		reused = true
		inst.stdout.c, inst.stderr.c = c, c
	} else {
		if inst, err = r.instantiate(ctx, m, c); err != nil {
			return false, err
		}
		inst.key = key
	}
	res, err := inst.call(withCall(ctx, c), inst.run)
	inst.runs++
	c.noteMemory(inst)
	inst.stdout.c, inst.stderr.c = nil, nil
	if err == nil {
		err = reactorResult(res)
	}
	size, _ := inst.memState()
	if inst.broken || c.out.overflowed || c.cancelled() || inst.runs >= r.cfg.Pool.MaxRuns ||
		int64(size) > r.cfg.Pool.RecycleBytes || m.isClosed() {
		inst.close()
	} else {
		r.pool.put(inst)
	}
	return reused, err
}

func (inst *instance) memState() (uint64, bool) {
	if inst == nil || inst.mem == nil {
		return 0, false
	}
	return inst.mem.state()
}

// poolKey says which jobs an instance may serve: one module version, one
// tenant, one memory limit, one set of mounts and one environment (both
// are fixed when an instance starts).
type poolKey struct {
	m      *Module
	tenant string
	memory uint64
	grants string
}

func makePoolKey(m *Module, in *Input, lim limits) poolKey {
	k := poolKey{m: m, tenant: in.Tenant, memory: lim.memory}
	if len(in.Grants.Mounts) == 0 && len(in.Grants.Env) == 0 {
		return k
	}
	var b strings.Builder
	for _, mnt := range in.Grants.Mounts {
		b.WriteString(mnt.Dir)
		b.WriteByte(0)
		b.WriteString(mnt.guestPath())
		b.WriteByte(0)
	}
	b.WriteByte(1)
	keys := make([]string, 0, len(in.Grants.Env))
	for k := range in.Grants.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		b.WriteString(key)
		b.WriteByte(0)
		b.WriteString(in.Grants.Env[key])
		b.WriteByte(0)
	}
	k.grants = b.String()
	return k
}

// callWriter sends an instance's stdout or stderr to the call it serves:
// the result (a command's stdout) or the log.
type callWriter struct {
	c      *call
	stderr bool
}

func (w *callWriter) Write(p []byte) (int, error) {
	switch {
	case w.c == nil:
		// Between jobs (_initialize of a pooled instance): dropped.
		return len(p), nil
	case w.stderr:
		return w.c.log.Write(p)
	}
	return w.c.out.Write(p)
}

// sleep waits d, or until the call's run ends.
func (w *callWriter) sleep(d time.Duration) {
	var done <-chan struct{}
	if w.c != nil {
		done = w.c.ctx.Done()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-done:
	}
}

// mountFS is a mounted directory, seen through os.Root. It tells the call
// the instance serves about names that try to leave the directory, so that
// a run that fails after one gets reason.NotGranted.
type mountFS struct {
	fsys fs.FS
	path string
	w    *callWriter
}

// Open implements fs.FS.
func (m *mountFS) Open(name string) (fs.File, error) {
	f, err := m.fsys.Open(name)
	if err != nil && strings.Contains(err.Error(), "escapes from parent") && m.w.c != nil {
		m.w.c.noteRefusal(fmt.Sprintf("read %s: the path leaves the mounted directory %s", path.Join(m.path, name), m.path))
	}
	return f, err
}

var _ io.Writer = (*callWriter)(nil)
