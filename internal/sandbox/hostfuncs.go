package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// Results of the host functions below zero. A guest reads the message of
// the last failed call with ward.last_error. The values are part of the
// ABI (sandbox/README.md) and never change.
const (
	// ErrnoInvalid: a pointer or length outside the guest's memory, or a
	// malformed argument.
	ErrnoInvalid = -1
	// ErrnoNotGranted: the job was not granted the capability.
	ErrnoNotGranted = -2
	// ErrnoLimit: a size, count or rate cap was reached.
	ErrnoLimit = -3
	// ErrnoFailed: the operation failed (a network error, a timeout).
	ErrnoFailed = -4
	// ErrnoNoJob: called outside a job (during _initialize).
	ErrnoNoJob = -5
)

// Caps on what one host call takes from the guest.
const (
	maxFailBytes     = 4 << 10
	maxLogLineBytes  = 4 << 10
	maxProgressBytes = 1 << 10
	maxHTTPMetaBytes = 64 << 10
	logBurst         = 200 // lines a run may log at once
	logPerSecond     = 50  // lines a second after the burst
	progressEvery    = 100 * time.Millisecond
)

// call is the state of one run, shared by its host functions and writers.
// A run executes on one goroutine, so call needs no lock.
type call struct {
	r      *Runtime
	ctx    context.Context
	cancel context.CancelCauseFunc
	in     *Input
	lim    limits

	out cappedWriter
	log logWriter

	failed  bool
	failMsg string
	// inputRefused: the module failed with refuse, not fail.
	inputRefused bool
	lastErr      string
	refused      []string // capabilities refused, for reason.NotGranted

	logTokens    float64
	logRefill    time.Time
	lastProgress time.Time
	httpCalls    int
	resp         []byte      // the last HTTP response, for ward.response_read
	body         *httpStream // the body of the last streamed response, for ward.http_read
	stream       streamer    // ward.stream_write

	memRefused bool
}

type callKey struct{}

func withCall(ctx context.Context, c *call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

func newCall(r *Runtime, ctx context.Context, cancel context.CancelCauseFunc, in *Input, lim limits) *call {
	return &call{r: r, ctx: ctx, cancel: cancel, in: in, lim: lim, logTokens: logBurst,
		out:    cappedWriter{max: lim.maxOut, cancel: cancel},
		log:    logWriter{max: r.cfg.MaxLogBytes},
		stream: streamer{emit: in.Stream, max: lim.maxOut}}
}

// finish ends what a run may leave open: its streamed response body, and
// its streamed output, whose last chunk goes out now, before the result.
func (c *call) finish() {
	c.closeBody()
	c.stream.close()
}

// noteMemory records whether the instance's memory refused to grow.
func (c *call) noteMemory(inst *instance) {
	if _, refused := inst.memState(); refused {
		c.memRefused = true
	}
}

// cancelled reports whether the run was stopped.
func (c *call) cancelled() bool { return c.ctx.Err() != nil }

// fail sets the message ward.last_error returns and gives back code.
func (c *call) fail(code int32, format string, args ...any) int32 {
	c.lastErr = fmt.Sprintf(format, args...)
	return code
}

// refuse is fail for a capability the job was not granted.
func (c *call) refuse(format string, args ...any) int32 {
	c.fail(ErrnoNotGranted, format, args...)
	c.noteRefusal(c.lastErr)
	return ErrnoNotGranted
}

// noteRefusal remembers a refused capability for the run's error.
func (c *call) noteRefusal(msg string) {
	if len(c.refused) < 8 {
		c.refused = append(c.refused, msg)
	}
}

// read returns the guest's bytes at [ptr, ptr+n): a view into its memory,
// valid until the guest runs again.
func read(mod api.Module, ptr, n uint32) ([]byte, bool) {
	mem := mod.Memory()
	if mem == nil {
		return nil, false
	}
	return mem.Read(ptr, n)
}

// hostFunc is a host function: it returns its result, with the call of the
// run, or nil outside a job.
type hostFunc func(c *call, mod api.Module, args []uint64) uint64

// hostFunction is one function of the "ward" import module.
type hostFunction struct {
	name    string
	params  []api.ValueType
	results []api.ValueType
	fn      hostFunc
}

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// hostFunctions returns the "ward" import module, by function name. See
// README.md.
func hostFunctions() []hostFunction {
	i32r := []api.ValueType{i32}
	return []hostFunction{
		{"context_size", nil, []api.ValueType{i64}, hostContextSize},
		{"context_read", []api.ValueType{i32, i32, i64}, i32r, hostContextRead},
		{"output_write", []api.ValueType{i32, i32}, i32r, hostOutputWrite},
		{"fail", []api.ValueType{i32, i32}, i32r, hostFail},
		{"refuse", []api.ValueType{i32, i32}, i32r, hostRefuse},
		{"log", []api.ValueType{i32, i32, i32}, i32r, hostLog},
		{"progress", []api.ValueType{i32, i32, i32}, i32r, hostProgress},
		{"job_info", []api.ValueType{i32, i32}, i32r, hostJobInfo},
		{"http_request", []api.ValueType{i32, i32, i32, i32}, i32r, hostHTTPRequest},
		{"response_read", []api.ValueType{i32, i32, i32}, i32r, hostResponseRead},
		{"http_read", []api.ValueType{i32, i32}, i32r, hostHTTPRead},
		{"stream_write", []api.ValueType{i32, i32}, i32r, hostStreamWrite},
		{"last_error", []api.ValueType{i32, i32}, i32r, hostLastError},
	}
}

// instantiateHost adds the "ward" module to rt.
func instantiateHost(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder("ward")
	for _, f := range hostFunctions() {
		fn := f.fn
		b.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
				c, _ := ctx.Value(callKey{}).(*call)
				if c == nil {
					stack[0] = api.EncodeI32(ErrnoNoJob)
					return
				}
				stack[0] = fn(c, mod, stack)
			}), f.params, f.results).
			Export(f.name)
	}
	// yield is what instrumented guests call every yieldEvery loop
	// iterations: the run stops here once its context is done. It takes
	// no call state, and needs none: _initialize calls it too.
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, _ api.Module, _ []uint64) {
			if ctx.Err() != nil {
				panic(sys.NewExitError(exitCodeInterrupted))
			}
		}), nil, nil).
		Export("yield")
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("sandbox: instantiate the ward host module: %w", err)
	}
	return nil
}

// exitCodeInterrupted is the exit code of a guest stopped in ward.yield.
const exitCodeInterrupted = 0xdead

func errno(v int32) uint64 { return api.EncodeI32(v) }

// context_size() -> i64: the payload's size in bytes.
func hostContextSize(c *call, _ api.Module, _ []uint64) uint64 {
	return uint64(len(c.in.Payload))
}

// context_read(ptr, len, offset i64) -> i32: copies up to len bytes of the
// payload from offset to ptr; returns the count, 0 at the end.
func hostContextRead(c *call, mod api.Module, args []uint64) uint64 {
	ptr, n, off := api.DecodeU32(args[0]), api.DecodeU32(args[1]), int64(args[2])
	if off < 0 {
		return errno(c.fail(ErrnoInvalid, "context_read: negative offset %d", off))
	}
	p := c.in.Payload
	if off >= int64(len(p)) {
		return 0
	}
	chunk := p[off:]
	if uint64(len(chunk)) > uint64(n) {
		chunk = chunk[:n]
	}
	if len(chunk) > math.MaxInt32 {
		chunk = chunk[:math.MaxInt32]
	}
	if !mod.Memory().Write(ptr, chunk) {
		return errno(c.fail(ErrnoInvalid, "context_read: buffer [%d, +%d) is outside the module's memory", ptr, len(chunk)))
	}
	return uint64(len(chunk))
}

// output_write(ptr, len) -> i32: appends to the result.
func hostOutputWrite(c *call, mod api.Module, args []uint64) uint64 {
	ptr, n := api.DecodeU32(args[0]), api.DecodeU32(args[1])
	if uint64(len(c.out.buf))+uint64(n) > uint64(c.out.max) {
		// Refused before reading: the run stops with output_too_large.
		c.out.overflow()
		return errno(c.fail(ErrnoLimit, "output_write: the result would exceed %d bytes", c.out.max))
	}
	b, ok := read(mod, ptr, n)
	if !ok {
		return errno(c.fail(ErrnoInvalid, "output_write: [%d, +%d) is outside the module's memory", ptr, n))
	}
	if _, err := c.out.Write(b); err != nil {
		return errno(c.fail(ErrnoLimit, "output_write: %v", err))
	}
	return 0
}

// fail(ptr, len) -> i32: marks the job failed, with the message at ptr.
func hostFail(c *call, mod api.Module, args []uint64) uint64 {
	ptr, n := api.DecodeU32(args[0]), api.DecodeU32(args[1])
	b, ok := read(mod, ptr, min(n, maxFailBytes))
	if !ok {
		return errno(c.fail(ErrnoInvalid, "fail: [%d, +%d) is outside the module's memory", ptr, n))
	}
	c.failed = true
	c.failMsg = validUTF8(b)
	if c.failMsg == "" {
		c.failMsg = "the module failed without a message"
	}
	return 0
}

// refuse(ptr, len) -> i32: fail, for an input no attempt can run (a
// malformed request, a directory the job was not granted): the run fails
// input_refused, and the scheduler does not try it again.
func hostRefuse(c *call, mod api.Module, args []uint64) uint64 {
	if r := hostFail(c, mod, args); r != 0 {
		return r
	}
	c.inputRefused = true
	return 0
}

// log(level, ptr, len) -> i32: logs a line (0 debug, 1 info, 2 warn,
// 3 error). Lines past the rate or the run's log cap are dropped and
// answered ErrnoLimit.
func hostLog(c *call, mod api.Module, args []uint64) uint64 {
	level, ptr, n := api.DecodeU32(args[0]), api.DecodeU32(args[1]), api.DecodeU32(args[2])
	if level > 3 {
		return errno(c.fail(ErrnoInvalid, "log: level %d is not 0 to 3", level))
	}
	b, ok := read(mod, ptr, min(n, maxLogLineBytes))
	if !ok {
		return errno(c.fail(ErrnoInvalid, "log: [%d, +%d) is outside the module's memory", ptr, n))
	}
	now := time.Now()
	if !c.logRefill.IsZero() {
		c.logTokens = min(logBurst, c.logTokens+now.Sub(c.logRefill).Seconds()*logPerSecond)
	}
	c.logRefill = now
	if c.logTokens < 1 || len(c.log.log) >= c.log.max {
		c.log.truncated = true
		return errno(c.fail(ErrnoLimit, "log: rate or size limit reached; line dropped"))
	}
	c.logTokens--
	line := make([]byte, 0, len(b)+8)
	line = append(line, [...]string{"debug: ", "info: ", "warn: ", "error: "}[level]...)
	line = append(line, validUTF8(b)...)
	line = append(line, '\n')
	_, _ = c.log.Write(line)
	return 0
}

// progress(percent, ptr, len) -> i32: reports progress. Reports closer than
// progressEvery to the last one passed on are dropped (they are
// superseded), except 100%.
func hostProgress(c *call, mod api.Module, args []uint64) uint64 {
	pct, ptr, n := int32(args[0]), api.DecodeU32(args[1]), api.DecodeU32(args[2])
	if pct < 0 || pct > 100 {
		return errno(c.fail(ErrnoInvalid, "progress: percent %d is not 0 to 100", pct))
	}
	b, ok := read(mod, ptr, min(n, maxProgressBytes))
	if !ok {
		return errno(c.fail(ErrnoInvalid, "progress: [%d, +%d) is outside the module's memory", ptr, n))
	}
	now := time.Now()
	if c.in.Progress == nil || (pct < 100 && now.Sub(c.lastProgress) < progressEvery) {
		return 0
	}
	c.lastProgress = now
	c.in.Progress(int(pct), validUTF8(b))
	return 0
}

// jobInfo is what job_info writes: JSON.
type jobInfo struct {
	JobInfo
	Tenant string   `json:"tenant,omitempty"`
	Mounts []string `json:"mounts,omitempty"`
}

// job_info(ptr, cap) -> i32: writes the job's description (JSON) if it fits
// in cap bytes; returns its length either way.
func hostJobInfo(c *call, mod api.Module, args []uint64) uint64 {
	ptr, capacity := api.DecodeU32(args[0]), api.DecodeU32(args[1])
	info := jobInfo{JobInfo: c.in.Job, Tenant: c.in.Tenant}
	for _, m := range c.in.Grants.Mounts {
		info.Mounts = append(info.Mounts, m.guestPath())
	}
	b, err := json.Marshal(info)
	if err != nil {
		return errno(c.fail(ErrnoFailed, "job_info: %v", err))
	}
	if uint64(len(b)) <= uint64(capacity) && !mod.Memory().Write(ptr, b) {
		return errno(c.fail(ErrnoInvalid, "job_info: [%d, +%d) is outside the module's memory", ptr, len(b)))
	}
	return uint64(len(b))
}

// response_read(ptr, len, offset) -> i32: copies the last HTTP response
// (see http_request) from offset; returns the count, 0 at the end.
func hostResponseRead(c *call, mod api.Module, args []uint64) uint64 {
	ptr, n, off := api.DecodeU32(args[0]), api.DecodeU32(args[1]), api.DecodeU32(args[2])
	if uint64(off) >= uint64(len(c.resp)) {
		return 0
	}
	chunk := c.resp[off:]
	if uint64(len(chunk)) > uint64(n) {
		chunk = chunk[:n]
	}
	if !mod.Memory().Write(ptr, chunk) {
		return errno(c.fail(ErrnoInvalid, "response_read: [%d, +%d) is outside the module's memory", ptr, len(chunk)))
	}
	return uint64(len(chunk))
}

// last_error(ptr, cap) -> i32: writes up to cap bytes of the last failed
// call's message; returns the message's length.
func hostLastError(c *call, mod api.Module, args []uint64) uint64 {
	ptr, capacity := api.DecodeU32(args[0]), api.DecodeU32(args[1])
	msg := c.lastErr
	if uint64(len(msg)) > uint64(capacity) {
		msg = msg[:capacity]
	}
	if !mod.Memory().Write(ptr, []byte(msg)) {
		return errno(ErrnoInvalid)
	}
	return uint64(len(c.lastErr))
}

// validUTF8 returns b as a string with invalid UTF-8 replaced.
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
