package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/sandbox"
)

var instanceRuns = promauto.NewCounterVec(prometheus.CounterOpts{
	Name: "ward_host_instance_runs_total",
	Help: "Jobs run, by module and instance: fresh (a new instance for the job), warm (a pooled instance reused) or cold (a pooled module's new instance).",
}, []string{"module", "instance"})

func instanceKind(m *sandbox.Module, out *sandbox.Output) string {
	switch {
	case m.Manifest().Isolation != sandbox.Pooled:
		return "fresh"
	case out.Reused:
		return "warm"
	}
	return "cold"
}

// jobTable holds a cancel function for every run on this host, by job and
// attempt, and the cancels of attempts that were not running when they
// came (sys.host.cancel, cancel.go). Both live under one lock, so that a
// cancel and a run's start cannot pass each other: a cancel that comes
// before its attempt starts refuses the start (add), one that comes after
// stops the run.
type jobTable struct {
	mu     sync.Mutex // guards the fields below
	runs   map[runKey]context.CancelCauseFunc
	recent map[string]cancelMark // job id -> the highest attempt cancelled
	order  []string              // recent's ids, oldest first
}

// runKey names one attempt of a job. Two attempts of one job may run on
// one host at once: a host paused past its running timeout comes back
// still running attempt 1 while attempt 2 was placed here again.
type runKey struct {
	id      string
	attempt int32
}

// cancelMark is what a host remembers of a cancel for a job it did not run
// when the cancel came.
type cancelMark struct {
	attempt int32 // every attempt up to this one is cancelled
	at      time.Time
}

// Bounds of what a host remembers of cancels for attempts it does not
// run: long enough for any dispatch still on its way to arrive.
const (
	cancelMemory = 10 * time.Minute
	cancelsKept  = 10000
)

// errJobCancelled is the cause of a job's context when a cancel ended it.
var errJobCancelled = errors.New("job cancelled")

// add registers attempt of job id and returns its context and the function
// that unregisters it; ok is false, and nothing is registered, when a
// cancel for that attempt (or a later one) came first.
func (t *jobTable) add(ctx context.Context, id string, attempt int32) (_ context.Context, done func(), ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m, seen := t.recent[id]; seen && attempt <= m.attempt {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancelCause(ctx)
	if t.runs == nil {
		t.runs = map[runKey]context.CancelCauseFunc{}
	}
	k := runKey{id, attempt}
	t.runs[k] = cancel
	return ctx, func() {
		t.mu.Lock()
		delete(t.runs, k)
		t.mu.Unlock()
		cancel(nil)
	}, true
}

// cancel stops the runs of job id up to attempt (an attempt of 0 or less
// names every one): their sandboxes stop at once and each ends FAILED with
// code cancelled. It remembers the cancel, so that a dispatch of such an
// attempt that comes later is refused, and reports how many runs it
// stopped. A later attempt of the job is not touched.
func (t *jobTable) cancel(id string, attempt int32, now time.Time) int {
	if attempt <= 0 {
		attempt = math.MaxInt32
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for k, cancel := range t.runs {
		if k.id == id && k.attempt <= attempt {
			cancel(errJobCancelled)
			n++
		}
	}
	if t.recent == nil {
		t.recent = make(map[string]cancelMark)
	}
	m, seen := t.recent[id]
	if !seen {
		t.order = append(t.order, id)
	}
	t.recent[id] = cancelMark{attempt: max(m.attempt, attempt), at: now}
	for len(t.order) > 0 && (len(t.order) > cancelsKept || now.Sub(t.recent[t.order[0]].at) > cancelMemory) {
		delete(t.recent, t.order[0])
		t.order = t.order[1:]
	}
	return n
}

// cancelled reports whether attempt of job id was cancelled before it came
// to run.
func (t *jobTable) cancelled(id string, attempt int32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, seen := t.recent[id]
	return seen && attempt <= m.attempt
}

// errPartRefused is a part of a result a scheduler refused for good.
var errPartRefused = errors.New("refused")

// putResult sends a result over bus.InlineResultMax to the schedulers in
// parts of bus.ResultPartMax (bus.SubjectResultPart), in order, each again
// until a scheduler answers it (as sendResult does): a host writes no
// tenant's bucket, so the schedulers store the parts of the jobs
// dispatched to it in the job's tenant's result bucket, and the scheduler
// that takes the result describes the object (its size, parts and the
// digest the host reports). It returns how many parts it sent. A part
// refused for good (the job is no longer this host's at that attempt) is
// an error, and so is giving up.
func (a *Agent) putResult(ctx context.Context, req *wardv1.JobRequest, data []byte) (int, error) {
	if len(data) > bus.ResultMax {
		return 0, fmt.Errorf("a result of %d bytes, more than the %d a result may have", len(data), bus.ResultMax)
	}
	subject := bus.ReportSubject(bus.ResultPartSubject(a.cfg.ID), req.GetReportShard())
	parts := 0
	for off := 0; off < len(data); off += bus.ResultPartMax {
		q := &wardv1.ResultPart{JobId: req.GetJobId(), TenantId: req.GetTenantId(), Attempt: req.GetAttempt(), Index: uint32(parts),
			Data: data[off:min(off+bus.ResultPartMax, len(data))]}
		tries, err := untilAnswered(ctx, func() (bool, error) {
			tctx, cancel := context.WithTimeout(ctx, resultTry)
			defer cancel()
			reply := &wardv1.ResultPartReply{}
			if err := a.cfg.Bus.Request(tctx, subject, q, reply); err != nil {
				return false, err
			}
			switch {
			case reply.GetCode() != "":
				return true, fmt.Errorf("part %d of the result %w: %s", q.GetIndex(), errPartRefused, reply.GetError())
			case reply.GetError() != "":
				return false, errors.New(reply.GetError())
			}
			return false, nil
		}, func(err error) {
			a.log.Warn("result part not stored yet: sending it again", "job_id", req.GetJobId(), "attempt", req.GetAttempt(), "part", q.GetIndex(), "err", err)
		})
		if errors.Is(err, errPartRefused) {
			return parts, err
		}
		if err != nil {
			return parts, fmt.Errorf("part %d of the result not stored after %d tries: %w", parts, tries, err)
		}
		parts++
	}
	return parts, nil
}

// readContext reads the job's context: a context object of its tenant in
// JetStream (nats-os://WARD_CTX_<tenant>/sha256-<hex>), whose bytes must
// have the digest its name says and the size the ticket carries (those
// the policy judged); else the payload its ticket carries, which the
// scheduler signed: the bytes the client submitted and the policy judged.
// A host holds no job store credential, so a ticket whose context is in
// the job store (redis://ctx:<job id>) carries it. A pointer to anything
// else — some other job's blob, another tenant's object — is refused: a
// client chooses the pointer it submits.
func (a *Agent) readContext(ctx context.Context, req *wardv1.JobRequest) ([]byte, error) {
	ptr := req.GetContextPtr()
	if !strings.HasPrefix(ptr, bus.ObjectScheme) {
		if ptr != "" && ptr != jobstore.ContextPtr(req.GetJobId()) {
			return nil, fmt.Errorf("context pointer %q is not job %s's", ptr, req.GetJobId())
		}
		p := req.GetPayload()
		switch {
		case req.ContextSize == nil && len(p) == 0 && ptr != "":
			return nil, &inputError{errors.New("the ticket carries neither the context nor its size, and this host reads no job store (a scheduler older than this host?)")}
		case req.ContextSize != nil && int64(len(p)) != req.GetContextSize():
			return nil, &inputError{fmt.Errorf("the ticket carries %d bytes of context, not the %d the policy judged", len(p), req.GetContextSize())}
		}
		return p, nil
	}
	owner, err := bus.ContextOwner(ptr)
	if err != nil {
		return nil, err
	}
	if owner != req.GetTenantId() {
		return nil, fmt.Errorf("context %s belongs to another tenant", ptr)
	}
	want, err := bus.ContextDigest(ptr)
	if err != nil {
		return nil, err
	}
	// The policy judged the size the ticket carries: a host reads no
	// more, and runs bytes of that size or nothing (the object's
	// description, which gave the scheduler the size, is the
	// tenant's to rewrite).
	size := req.GetContextSize()
	if req.ContextSize == nil || size <= 0 {
		return nil, &inputError{fmt.Errorf("context %s: the ticket names no size for it (a scheduler older than this host?)", ptr)}
	}
	if size > a.cfg.MaxContextBytes {
		return nil, &inputError{fmt.Errorf("context %s: %d bytes, more than this host takes (%d)", ptr, size, a.cfg.MaxContextBytes)}
	}
	data, err := a.fetchContext(ctx, req, size)
	if err != nil {
		return nil, err
	}
	// The policy judged the digest the pointer names and the size the
	// ticket carries: run those bytes or nothing.
	if got := bus.ContentDigest(data); got != want {
		return nil, &inputError{fmt.Errorf("context %s holds %s, not the %s its name says", ptr, got, want)}
	}
	if int64(len(data)) != size {
		return nil, &inputError{fmt.Errorf("context %s holds %d bytes, not the %d the policy judged", ptr, len(data), size)}
	}
	return data, nil
}

// fetchContext asks the schedulers for the stored context of req's job, in
// chunks (bus.SubjectContext): a host reads no tenant's bucket, and a
// scheduler serves a context only to the host its job is dispatched to,
// at that attempt. It stops at size bytes, the size the policy judged.
func (a *Agent) fetchContext(ctx context.Context, req *wardv1.JobRequest, size int64) ([]byte, error) {
	ptr := req.GetContextPtr()
	buf := make([]byte, 0, size)
	q := &wardv1.ContextRequest{JobId: req.GetJobId(), TenantId: req.GetTenantId(), Attempt: req.GetAttempt()}
	for {
		reply := &wardv1.ContextReply{}
		tctx, cancel := context.WithTimeout(ctx, contextTry)
		err := a.cfg.Bus.Request(tctx, bus.ReportSubject(bus.ContextSubject(a.cfg.ID), req.GetReportShard()), q, reply)
		cancel()
		switch {
		case err != nil:
			return nil, fmt.Errorf("context %s: %w", ptr, err)
		case reply.GetCode() == string(reason.InputUnavailable):
			return nil, &inputError{fmt.Errorf("context %s is gone or not the %d bytes the policy judged: %s", ptr, size, reply.GetError())}
		case reply.GetError() != "":
			return nil, fmt.Errorf("context %s: %s", ptr, reply.GetError())
		case int64(len(buf)+len(reply.GetData())) > size:
			return nil, &inputError{fmt.Errorf("context %s is not the %d bytes the policy judged: more came", ptr, size)}
		}
		buf = append(buf, reply.GetData()...)
		if reply.GetDone() {
			return buf, nil
		}
		if len(reply.GetData()) == 0 {
			return nil, fmt.Errorf("context %s: a scheduler sent nothing at %d bytes", ptr, len(buf))
		}
		q.After, q.Offset = reply.GetLast(), int64(len(buf))
	}
}

// contextTry bounds one request of fetchContext.
const contextTry = 30 * time.Second

// input turns a job into the sandbox's Input: its payload, and exactly what
// the safety decision granted, no more. A granted directory this host may
// not mount (outside its MountRoots, or absent) is left out: a grant is a
// permission, and a job that needs the directory fails when it finds it
// missing.
func (a *Agent) input(req *wardv1.JobRequest, payload []byte) sandbox.Input {
	in := sandbox.Input{
		Payload: payload,
		Tenant:  req.GetTenantId(),
		Job: sandbox.JobInfo{ID: req.GetJobId(), Topic: req.GetTopic(), Attempt: int(req.GetAttempt()),
			Labels: maps.Clone(req.GetLabels())},
		Progress: func(pct int, msg string) {
			_ = a.cfg.Bus.Publish(bus.ReportSubject(bus.ProgressSubject(a.cfg.ID), req.GetReportShard()), &wardv1.JobProgress{JobId: req.GetJobId(), TenantId: req.GetTenantId(), WorkerId: a.cfg.ID,
				Kind: wardv1.JobProgress_KIND_PROGRESS, Percent: int32(pct), Message: msg, SentAtUnixMs: time.Now().UnixMilli(),
				Attempt: req.GetAttempt()})
		},
		// The runtime numbers the chunks and bounds them (sandbox/stream.go);
		// the attempt tells a watcher which run of the job they come from.
		Stream: func(seq int, chunk []byte) {
			_ = a.cfg.Bus.Publish(bus.ReportSubject(bus.ProgressSubject(a.cfg.ID), req.GetReportShard()), &wardv1.JobProgress{JobId: req.GetJobId(), TenantId: req.GetTenantId(), WorkerId: a.cfg.ID,
				Kind: wardv1.JobProgress_KIND_OUTPUT, Seq: int64(seq), Output: chunk, Attempt: req.GetAttempt(),
				SentAtUnixMs: time.Now().UnixMilli()})
		},
	}
	g := req.GetConstraints().GetGrants()
	if g == nil {
		return in
	}
	in.TimeLimit = time.Duration(g.GetTimeLimitMs()) * time.Millisecond
	in.MemoryLimitBytes = g.GetMemoryLimitBytes()
	in.Grants.HTTPHosts = g.GetHttpHosts()
	for _, key := range g.GetEnvKeys() {
		if v, ok := req.GetEnv()[key]; ok {
			in.Grants.Env = setEnv(in.Grants.Env, key, v)
		} else if v, ok := a.cfg.Env[key]; ok {
			in.Grants.Env = setEnv(in.Grants.Env, key, v)
		}
	}
	// Services last: a job's own environment cannot point a granted name
	// elsewhere. A service this host does not have is left out; the module
	// finds no URL and says so (its warnings reach the job's events).
	for _, name := range g.GetServices() {
		u, ok := a.cfg.Services[name]
		if !ok {
			continue
		}
		hostport, err := serviceHost(u)
		if err != nil {
			a.log.Warn("service not granted: bad URL", "service", name, "url", u, "err", err)
			continue
		}
		in.Grants.HTTPHosts = append(in.Grants.HTTPHosts, hostport)
		in.Grants.Env = setEnv(in.Grants.Env, ServiceEnv(name), u)
	}
	for _, dir := range g.GetReadOnlyDirs() {
		m, err := a.mount(dir)
		if err != nil {
			a.log.Debug("granted directory not mounted", "job_id", req.GetJobId(), "err", err)
			continue
		}
		in.Grants.Mounts = append(in.Grants.Mounts, m)
	}
	return in
}

func setEnv(env map[string]string, k, v string) map[string]string {
	if env == nil {
		env = map[string]string{}
	}
	env[k] = v
	return env
}

// mount checks a granted directory against the host's MountRoots: it must
// resolve, symbolic links followed, to a directory inside one of them. The
// guest sees it at the path granted.
func (a *Agent) mount(dir string) (sandbox.Mount, error) {
	if !filepath.IsAbs(dir) {
		return sandbox.Mount{}, fmt.Errorf("granted directory %q is not an absolute path", dir)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return sandbox.Mount{}, fmt.Errorf("granted directory: %w", err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return sandbox.Mount{}, fmt.Errorf("granted directory %s is not a directory", dir)
	}
	for _, root := range a.cfg.MountRoots {
		rr, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(rr, real); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return sandbox.Mount{Dir: real, Path: filepath.Clean(dir)}, nil
		}
	}
	return sandbox.Mount{}, fmt.Errorf("granted directory %s is outside the directories host %s may mount (%v)", dir, a.cfg.ID, a.cfg.MountRoots)
}

// ServiceEnv is the environment variable a granted service's URL is in:
// OLLAMA_URL for ollama (what the LLM modules read), else
// WARD_SERVICE_<NAME>_URL.
func ServiceEnv(name string) string {
	if name == "ollama" {
		return "OLLAMA_URL"
	}
	return "WARD_SERVICE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_URL"
}

// serviceHost is the host:port a service URL is reached at.
func serviceHost(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Host == "" {
		return "", fmt.Errorf("%q has no host", raw)
	}
	if u.Port() != "" {
		return u.Host, nil
	}
	switch u.Scheme {
	case "https":
		return u.Host + ":443", nil
	case "http":
		return u.Host + ":80", nil
	}
	return u.Host, nil
}

// warnings are the module's warn-level log lines of a run, a few and
// shortened: what the job's result and last event say of a fallback.
func warnings(log []byte) []string {
	const maxLines, maxLen = 5, 300
	var out []string
	if !bytes.Contains(log, []byte("warn: ")) {
		return nil // the common case: no line to split
	}
	for line := range strings.SplitSeq(string(log), "\n") {
		msg, ok := strings.CutPrefix(line, "warn: ")
		if !ok {
			continue
		}
		if len(msg) > maxLen {
			msg = msg[:maxLen] + "…"
		}
		out = append(out, msg)
		if len(out) == maxLines {
			break
		}
	}
	return out
}

// inputError is a job input that is missing or not what its pointer
// names: the job's fault (reason.InputUnavailable), which does not count
// against the host.
type inputError struct{ err error }

func (e *inputError) Error() string { return e.err.Error() }
func (e *inputError) Unwrap() error { return e.err }
