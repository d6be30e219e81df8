package safety

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"google.golang.org/protobuf/proto"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jsread"
	"github.com/ward-run/ward/internal/version"
)

// DefaultDebounce is how long a watched policy directory must stay quiet
// before the Reloader reads it: an editor's save or a git checkout is
// several events.
const DefaultDebounce = 200 * time.Millisecond

var (
	reloads = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_safety_reloads_total",
		Help: "Bundles the reloader read, by source (dir, kv) and result (loaded, unchanged, refused).",
	}, []string{"source", "result"})
	bundlesRefused = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_safety_bundles_refused_total",
		Help: "Bundles the reloader refused, by source (dir, kv) and reason (signature: missing or not verified; invalid: unreadable, or does not compile; tests: its tests failed).",
	}, []string{"source", "reason"})
	decisionLogErrors = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_safety_decision_log_errors_total",
		Help: "Decisions that could not be published on sys.safety.decision.",
	})
)

func init() {
	// The refusals a dashboard watches read 0 before the first one.
	for _, source := range []string{"dir", "kv"} {
		for _, reason := range []string{"invalid", "tests"} {
			bundlesRefused.WithLabelValues(source, reason)
		}
	}
	bundlesRefused.WithLabelValues("kv", "signature")
}

// Decision logs go out in batches: the first decision of a batch starts
// its clock, and the batch is published when it is decisionBatchAge old or
// holds decisionBatchMax decisions, whichever comes first.
const (
	decisionBatchAge = 100 * time.Millisecond
	decisionBatchMax = 256
)

// DecisionPublisher publishes a kernel's decisions on sys.safety.decision,
// in DecisionLogBatch messages. Its Log is a Config.Log. A publish does not
// block (NATS buffers it); one that fails is counted and its decisions
// dropped.
type DecisionPublisher struct {
	c      *bus.Conn
	mu     sync.Mutex
	batch  []*safetyv1.DecisionLog
	timer  *time.Timer // flushes a batch at its age; nil before the first
	closed bool
}

// PublishDecisions returns the DecisionPublisher of c. Close it before c.
func PublishDecisions(c *bus.Conn) *DecisionPublisher { return &DecisionPublisher{c: c} }

// Log adds l to the batch.
func (p *DecisionPublisher) Log(l *safetyv1.DecisionLog) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.send([]*safetyv1.DecisionLog{l})
		return
	}
	p.batch = append(p.batch, l)
	switch len(p.batch) {
	case decisionBatchMax:
		b := p.take()
		p.mu.Unlock()
		p.send(b)
		return
	case 1:
		if p.timer == nil {
			p.timer = time.AfterFunc(decisionBatchAge, p.flush)
		} else {
			p.timer.Reset(decisionBatchAge)
		}
	}
	p.mu.Unlock()
}

// Close publishes what is batched; later decisions go out one a batch.
func (p *DecisionPublisher) Close() {
	p.mu.Lock()
	p.closed = true
	if p.timer != nil {
		p.timer.Stop()
	}
	b := p.take()
	p.mu.Unlock()
	p.send(b)
}

// flush publishes the batch its clock ran out on.
func (p *DecisionPublisher) flush() {
	p.mu.Lock()
	b := p.take()
	p.mu.Unlock()
	p.send(b)
}

// take empties the batch and returns what it held; p.mu is held.
func (p *DecisionPublisher) take() []*safetyv1.DecisionLog {
	b := p.batch
	p.batch = nil
	return b
}

func (p *DecisionPublisher) send(b []*safetyv1.DecisionLog) {
	if len(b) == 0 {
		return
	}
	if err := p.c.Publish(bus.SubjectSafetyDecision, &safetyv1.DecisionLogBatch{Decisions: b}); err != nil {
		decisionLogErrors.Add(float64(len(b)))
	}
}

// ReloaderConfig configures a Reloader. Kernel is required.
type ReloaderConfig struct {
	// Kernel is the kernel the Reloader keeps on the newest good bundle.
	Kernel *Kernel
	// Dir is a policy directory to watch (fsnotify): every change is read,
	// checked as Prepare does, and put in force if it passes. Empty
	// watches no directory.
	Dir string
	// Bus, when set, connects the kernel to the fleet: it watches the
	// policy KV bucket (`ward policy push`) and answers status requests on
	// sys.safety.status.
	Bus *bus.Conn
	// Bucket is the policy KV bucket; DefaultBucket when empty.
	Bucket string
	// Debounce is DefaultDebounce when zero.
	Debounce time.Duration
	// VerifyKey, when set, is the key every bundle from the bucket must be
	// signed with (Bundle.Sign, `ward policy push --signing-key`): one
	// without a signature, or whose signature does not verify with
	// VerifyKey or does not cover exactly its files (VerifyBundle), is
	// refused like a bundle that does not compile. Nil accepts the
	// bucket's bundles unsigned; Start logs a warning saying so. Bundles
	// from Dir, the operator's own files, need no signature.
	VerifyKey *PolicyPublicKey
	// Audit, when set, is the JetStream of the audit log (package audit):
	// the kernel records there each bundle pushed to the bucket that it
	// put in force or refused (audit.PolicyApply), as it hears the push
	// (not the bundle it finds at start). What the record says of who
	// pushed is what the bundle claims (audit.Claimed); what is
	// authenticated is the signature, checked with VerifyKey.
	Audit jetstream.JetStream
	// Addr is the kernel's gRPC address, reported in its status.
	Addr   string
	Logger *slog.Logger // slog.Default() when nil
}

// Reloader keeps a Kernel on the newest good bundle from its policy
// directory and from the policy KV bucket, whichever changed last. A
// bundle that does not compile or fails its tests, or one from the bucket
// that is not signed with ReloaderConfig.VerifyKey, is refused, logged,
// counted (ward_safety_bundles_refused_total) and reported in the status;
// the policy in force stays.
type Reloader struct {
	cfg ReloaderConfig
	log *slog.Logger

	mu           sync.Mutex // guards the 10 following fields
	refusedRev   string
	refusedKV    uint64 // the bucket revision of refusedRev, 0 for none
	lastErr      string
	kvConnected  bool
	started      bool               // Start was called
	stopped      bool               // Shutdown was called
	stop         context.CancelFunc // set by a Start that succeeded
	watcher      *fsnotify.Watcher
	status       *bus.Subscription
	impactSub    *bus.Subscription
	statusWorker *bus.Workers

	kvUpdates chan kvUpdate
	wg        sync.WaitGroup // loop and watchKV
}

// NewReloader validates cfg.
func NewReloader(cfg ReloaderConfig) (*Reloader, error) {
	if cfg.Kernel == nil {
		return nil, errors.New("safety: ReloaderConfig.Kernel is required")
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = DefaultDebounce
	}
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultBucket
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Reloader{
		cfg:       cfg,
		log:       cfg.Logger.With("component", "safety", "kernel_id", cfg.Kernel.ID()),
		kvUpdates: make(chan kvUpdate),
	}, nil
}

// Start watches the directory and the bucket. It returns once the
// directory watch and the status subscription are in place; the bucket
// watch connects in the background, retrying until Shutdown. A Start that
// fails closes what it opened; a Reloader starts once.
func (r *Reloader) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return errors.New("safety: Reloader.Start called twice")
	}
	r.started = true
	r.mu.Unlock()

	// What Start opened so far; undo closes it when a step fails.
	var (
		w              *fsnotify.Watcher
		sub, impactSub *bus.Subscription
		workers        *bus.Workers
	)
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	undo := func() error {
		cancel()
		var errs []error
		if sub != nil {
			dctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
			if impactSub != nil {
				errs = append(errs, impactSub.Drain(dctx))
			}
			errs = append(errs, sub.Drain(dctx), workers.Wait(dctx))
			stop()
		}
		if w != nil {
			errs = append(errs, w.Close())
		}
		return errors.Join(errs...)
	}
	if r.cfg.Dir != "" {
		var err error
		if w, err = fsnotify.NewWatcher(); err != nil {
			cancel()
			return fmt.Errorf("safety: watch %s: %w", r.cfg.Dir, err)
		}
		if err := watchTree(w, r.cfg.Dir); err != nil {
			return errors.Join(err, undo())
		}
	}
	if r.cfg.Bus != nil {
		workers = bus.NewWorkers(2) // a status request is answered while an impact is worked out
		s, err := bus.Subscribe(ctx, r.cfg.Bus, bus.SubjectSafetyStatus, "", workers, r.log,
			func(_ context.Context, msg *nats.Msg, _ *safetyv1.StatusRequest) {
				if err := r.cfg.Bus.Reply(msg, r.Status()); err != nil {
					r.log.Debug("status reply failed", "err", err)
				}
			})
		if err != nil {
			return errors.Join(err, undo())
		}
		sub = s
		s, err = bus.Subscribe(ctx, r.cfg.Bus, bus.SubjectSafetyImpact, "", workers, r.log,
			func(ctx context.Context, msg *nats.Msg, q *safetyv1.ImpactRequest) {
				if err := r.cfg.Bus.Reply(msg, r.impact(ctx, q)); err != nil {
					r.log.Debug("impact reply failed", "err", err)
				}
			})
		if err != nil {
			return errors.Join(err, undo())
		}
		impactSub = s
	}
	// Under r.mu, so that a Shutdown sees all of it or none: it waits on
	// the goroutines only after they were added.
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		// undo outside r.mu: a status request in flight takes it.
		return errors.Join(errors.New("safety: Reloader shut down while starting"), undo())
	}
	r.stop, r.watcher, r.status, r.impactSub, r.statusWorker = cancel, w, sub, impactSub, workers
	if r.cfg.Bus != nil {
		r.wg.Go(func() { r.watchKV(ctx) })
	}
	r.wg.Go(func() { r.loop(ctx, w) })
	r.mu.Unlock()
	switch {
	case r.cfg.Bus == nil:
	case r.cfg.VerifyKey == nil:
		r.log.Warn("policy bundles from the bucket are not verified: whoever can write it sets the policy (ward safety --policy-pubkey requires them signed)",
			"bucket", r.cfg.Bucket)
	default:
		r.log.Info("policy bundles from the bucket must be signed", "bucket", r.cfg.Bucket,
			"key_id", r.cfg.VerifyKey.ID(), "algorithm", r.cfg.VerifyKey.Algorithm())
	}
	return nil
}

// Shutdown stops watching and waits for a reload in progress to end.
func (r *Reloader) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	r.stopped = true
	stop, w, sub, impactSub, workers := r.stop, r.watcher, r.status, r.impactSub, r.statusWorker
	r.stop, r.watcher, r.status, r.impactSub, r.statusWorker = nil, nil, nil, nil, nil
	r.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	var errs []error
	if impactSub != nil {
		errs = append(errs, impactSub.Drain(ctx))
	}
	if sub != nil {
		errs = append(errs, sub.Drain(ctx), workers.Wait(ctx))
	}
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("safety: reloader shutdown: %w", ctx.Err()))
	}
	if w != nil {
		errs = append(errs, w.Close())
	}
	return errors.Join(errs...)
}

// impactTimeout bounds the evaluation of one ImpactRequest.
const impactTimeout = 30 * time.Second

// impact answers an ImpactRequest: the candidate bundle compiled (not put
// in force), and compared with the policy in force on the kernel's
// recent decisions (Kernel.Impact).
func (r *Reloader) impact(ctx context.Context, q *safetyv1.ImpactRequest) *safetyv1.ImpactReply {
	k := r.cfg.Kernel
	fail := func(err error) *safetyv1.ImpactReply {
		return &safetyv1.ImpactReply{KernelId: k.ID(), Error: err.Error()}
	}
	b, err := BundleFromProto(q.GetBundle())
	if err != nil {
		return fail(err)
	}
	p, err := Compile(b)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(ctx, impactTimeout)
	defer cancel()
	reply, err := k.Impact(ctx, p)
	if err != nil {
		return fail(err)
	}
	return reply
}

// Status reports the kernel's state.
func (r *Reloader) Status() *safetyv1.KernelStatus {
	k := r.cfg.Kernel
	st := &safetyv1.KernelStatus{KernelId: k.ID(), Addr: r.cfg.Addr, Version: version.Version()}
	if p, source, at := k.Policy(); p != nil {
		st.Revision, st.Source, st.LoadedAtUnixMs = p.Revision(), source, at.UnixMilli()
	}
	n, ok := k.CacheLen()
	st.CacheEnabled, st.CacheEntries = ok, int64(n)
	r.mu.Lock()
	st.RefusedRevision, st.LastError, st.RefusedKvRevision = r.refusedRev, r.lastErr, r.refusedKV
	r.mu.Unlock()
	return st
}

// watchTree makes w watch dir and its subdirectories, skipping dot
// directories as ReadBundle does.
func watchTree(w *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("safety: watch %s: %w", p, err)
		}
		if !d.IsDir() {
			return nil
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if err := w.Add(p); err != nil {
			return fmt.Errorf("safety: watch %s: %w", p, err)
		}
		return nil
	})
}

// loop serializes the loads from both sources; w, when not nil, watches
// the policy directory.
func (r *Reloader) loop(ctx context.Context, w *fsnotify.Watcher) {
	var (
		events <-chan fsnotify.Event
		errs   <-chan error
		fire   <-chan time.Time
	)
	if w != nil {
		events, errs = w.Events, w.Errors
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() && !strings.HasPrefix(fi.Name(), ".") {
					if err := watchTree(w, ev.Name); err != nil {
						r.log.Warn("policy directory watch incomplete", "err", err)
					}
				}
			}
			fire = time.After(r.cfg.Debounce)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			r.log.Warn("policy directory watch", "dir", r.cfg.Dir, "err", err)
			// Events may have been lost: read the directory again.
			fire = time.After(r.cfg.Debounce)
		case <-fire:
			fire = nil
			r.reloadDir(ctx)
		case u := <-r.kvUpdates:
			r.reloadKV(ctx, u)
		}
	}
}

func (r *Reloader) reloadDir(ctx context.Context) {
	b, err := ReadBundleDir(r.cfg.Dir)
	if err != nil {
		r.refuse("dir", "", err)
		return
	}
	_, _ = r.load(ctx, "dir", "dir "+r.cfg.Dir, 0, b) // a refusal is logged, counted and in the status
}

// kvUpdate is a change of the bucket's bundle key; live: heard as it
// was made, not read as the bucket's value when the watch began.
type kvUpdate struct {
	e    jsread.Entry
	live bool
}

func (r *Reloader) reloadKV(ctx context.Context, u kvUpdate) {
	e := u.e
	if e.Deleted {
		r.log.Warn("policy bundle deleted from the bucket; the policy in force stays", "bucket", r.cfg.Bucket)
		return
	}
	var pb safetyv1.PolicyBundle
	if err := proto.Unmarshal(e.Value, &pb); err != nil {
		err = fmt.Errorf("safety: bundle in %s#%d: %w", r.cfg.Bucket, e.Revision, err)
		r.refuseAt("kv", "", e.Revision, err)
		r.audit(ctx, u, &pb, "", err)
		return
	}
	b, err := BundleFromProto(&pb)
	if err != nil {
		r.refuseAt("kv", pb.GetRevision(), e.Revision, err)
		r.audit(ctx, u, &pb, pb.GetRevision(), err)
		return
	}
	if r.cfg.VerifyKey != nil {
		// Before anything else reads the bundle: not even its tests run.
		if err := VerifyBundle(b, r.cfg.VerifyKey); err != nil {
			by := pb.GetPushedBy() // whoever wrote the bucket says so: shown, quoted and cut short
			if len(by) > 64 {
				by = by[:64] + "..."
			}
			err = fmt.Errorf("%w (bucket %s#%d, pushed by %q)", err, r.cfg.Bucket, e.Revision, by)
			r.refuseAt("kv", b.Revision(), e.Revision, err)
			r.audit(ctx, u, &pb, b.Revision(), err)
			return
		}
	}
	loaded, err := r.load(ctx, "kv", fmt.Sprintf("kv %s#%d", r.cfg.Bucket, e.Revision), e.Revision, b)
	if loaded || err != nil {
		r.audit(ctx, u, &pb, b.Revision(), err)
	}
}

// audit records a pushed bundle this kernel put in force (err nil) or
// refused, when it heard the push live. The record is the same from
// every kernel that reached the same outcome (its time is the bucket
// entry's, it names no kernel), and the audit log keeps identical records
// once, so a fleet of kernels leaves one record per push and outcome.
// Its actor is what the bundle claims of who pushed it (audit.Claimed):
// nothing authenticates it. What is authenticated is the signature, when
// the kernel has a key: "signature" says so.
func (r *Reloader) audit(ctx context.Context, u kvUpdate, pb *safetyv1.PolicyBundle, rev string, err error) {
	if r.cfg.Audit == nil || !u.live {
		return
	}
	detail := map[string]string{"revision": rev, "kv_revision": strconv.FormatUint(u.e.Revision, 10), "result": "applied"}
	if err != nil {
		detail["result"], detail["reason"] = "refused", refusalReason(err)
	}
	switch {
	case r.cfg.VerifyKey == nil:
		detail["signature"] = "not checked (the kernel has no --policy-pubkey)"
	case err != nil && errors.Is(err, ErrBundleSignature):
		detail["signature"] = "invalid for key " + r.cfg.VerifyKey.ID()
	default:
		detail["signature"] = "verified: key " + r.cfg.VerifyKey.ID()
	}
	e := audit.Entry{At: u.e.Created, Actor: audit.Claimed(pb.GetPushedBy()), Action: audit.PolicyApply,
		Target: r.cfg.Bucket, Detail: detail}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if aerr := audit.Record(actx, r.cfg.Audit, e); aerr != nil {
		r.log.Warn("audit record not written", "action", e.Action, "revision", rev, "err", aerr)
	}
}

// load puts b in force unless it is the revision in force already: it
// reports whether it did, or the error that refused it. kvRev is the
// bucket revision b came from, 0 for none.
func (r *Reloader) load(ctx context.Context, kind, source string, kvRev uint64, b *Bundle) (bool, error) {
	rev := b.Revision()
	if rev == r.cfg.Kernel.Revision() {
		// Back to the policy in force (a fixed typo, a re-push): nothing
		// to load, and nothing refused any more.
		reloads.WithLabelValues(kind, "unchanged").Inc()
		r.clearRefusal()
		r.log.Debug("policy unchanged", "source", source, "revision", rev)
		return false, nil
	}
	start := time.Now()
	if err := r.cfg.Kernel.LoadBundle(ctx, b, source); err != nil {
		r.refuseAt(kind, rev, kvRev, err)
		return false, err
	}
	reloads.WithLabelValues(kind, "loaded").Inc()
	r.clearRefusal()
	r.log.Info("policy loaded", "source", source, "revision", rev, "took", time.Since(start))
	return true, nil
}

func (r *Reloader) clearRefusal() {
	r.mu.Lock()
	r.refusedRev, r.lastErr, r.refusedKV = "", "", 0
	r.mu.Unlock()
}

func (r *Reloader) refuse(kind, rev string, err error) { r.refuseAt(kind, rev, 0, err) }

// refuseAt is refuse for a bundle of the bucket's revision kvRev.
func (r *Reloader) refuseAt(kind, rev string, kvRev uint64, err error) {
	reason := refusalReason(err)
	reloads.WithLabelValues(kind, "refused").Inc()
	bundlesRefused.WithLabelValues(kind, reason).Inc()
	r.mu.Lock()
	r.refusedRev, r.lastErr, r.refusedKV = rev, err.Error(), kvRev
	r.mu.Unlock()
	r.log.Error("policy bundle refused; the policy in force stays", "source", kind, "revision", rev,
		"reason", reason, "in_force", r.cfg.Kernel.Revision(), "err", err)
}

// refusalReason is the reason label of a refusal for err.
func refusalReason(err error) string {
	var tf *TestsFailedError
	switch {
	case errors.Is(err, ErrBundleSignature):
		return "signature"
	case errors.As(err, &tf):
		return "tests"
	}
	return "invalid"
}

// watchKV follows the bucket's bundle key, reconnecting with backoff until
// ctx ends. Entries go to loop, which loads them.
func (r *Reloader) watchKV(ctx context.Context) {
	const maxBackoff = 10 * time.Second
	backoff := 250 * time.Millisecond
	warned := false
	for ctx.Err() == nil {
		err := r.watchKVOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if r.kvWasConnected() {
			backoff, warned = 250*time.Millisecond, false
		}
		if !warned {
			r.log.Warn("policy bucket watch failed; retrying", "bucket", r.cfg.Bucket, "err", err)
			warned = true
		} else {
			r.log.Debug("policy bucket watch failed; retrying", "bucket", r.cfg.Bucket, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// kvWasConnected reports, and clears, whether the last watch got going.
func (r *Reloader) kvWasConnected() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := r.kvConnected
	r.kvConnected = false
	return was
}

func (r *Reloader) watchKVOnce(ctx context.Context) error {
	if _, err := policyBucket(ctx, r.cfg.Bus.NATS(), r.cfg.Bucket); err != nil {
		return err
	}
	// The bundle key's value when the follow begins comes first, then its
	// changes as they are made (live). Followed with a subscription and
	// direct gets (internal/jsread): a kernel's credential may create no
	// consumer, whose delivery subject NATS would not check.
	var live atomic.Bool
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done, err := jsread.FollowKV(wctx, r.cfg.Bus.NATS(), r.cfg.Bucket, bundleKey, kvResync, func(batch []jsread.Entry) {
		for _, e := range batch {
			select {
			case r.kvUpdates <- kvUpdate{e: e, live: live.Load()}:
			case <-wctx.Done():
				return
			}
		}
	})
	if err != nil {
		return fmt.Errorf("safety: follow %s: %w", r.cfg.Bucket, err)
	}
	live.Store(true)
	r.mu.Lock()
	r.kvConnected = true
	r.mu.Unlock()
	r.log.Info("watching the policy bucket", "bucket", r.cfg.Bucket)
	<-done
	return nil
}

// kvResync is how often the kernel reads the bundle key again, in case
// its subscription missed a change (a reconnect).
const kvResync = 10 * time.Second
