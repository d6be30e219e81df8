package host

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/sandbox"
)

var (
	moduleLoads = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_host_module_loads_total",
		Help: "Module versions a host loaded from the registry, by result (staged, installed, retired, refused).",
	}, []string{"result"})
	moduleLoadSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "ward_host_module_load_seconds",
		Help:    "Time from a version becoming active to its install on this host: fetch, checks, compile.",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 10),
	})
)

// moduleWatcher keeps a host's modules in step with the registry: for every
// change of a module's active version it fetches the blob, checks its
// digest (and signature, when trusted is set), compiles it, and installs
// it; a retired module is removed. A version stored after the watcher
// started is compiled ahead (staged) and reported, so that its activation
// swaps it in at once. A version that fails any check is refused — logged,
// reported to the registry for `ward module ls` — and the version already
// installed keeps serving.
type moduleWatcher struct {
	registry *modreg.Registry
	runtime  *sandbox.Runtime
	// trusted, when not empty, makes signatures mandatory: a module must be
	// signed by one of these keys.
	trusted []ed25519.PublicKey
	hostID  string
	logger  *slog.Logger
	// install makes m the module that serves a.Name; retire stops serving
	// it (a.Retired is set).
	install func(m *sandbox.Module, a *modreg.Active)
	retire  func(a *modreg.Active)

	// The Follow callback's alone:
	current map[string]*sandbox.Module // name → installed
	staged  map[string]*sandbox.Module // name → compiled ahead, not active
}

// run follows the registry until ctx ends. synced is closed once the
// versions active when it started are installed (or refused), so a host
// can announce itself with them.
func (w *moduleWatcher) run(ctx context.Context, synced chan<- struct{}) error {
	if w.logger == nil {
		w.logger = slog.Default()
	}
	w.current, w.staged = map[string]*sandbox.Module{}, map[string]*sandbox.Module{}
	seen := map[string]modreg.Active{} // the active records applied
	known := map[string]bool{}         // "<name> <version>" of the records seen
	var live atomic.Bool               // past the state at start
	// FollowDirect: a host may create no consumer (auth/perms.go).
	done, err := w.registry.FollowDirect(ctx, func(st *modreg.State) {
		for _, name := range slices.Sorted(maps.Keys(st.Versions)) {
			for _, v := range st.Versions[name] {
				if key := name + " " + v.Version; !known[key] {
					known[key] = true
					if live.Load() {
						w.stage(ctx, v)
					}
				}
			}
		}
		for _, name := range slices.Sorted(maps.Keys(st.Actives)) {
			a := st.Actives[name]
			if old, ok := seen[name]; ok && old.Version == a.Version && old.Digest == a.Digest && old.Retired == a.Retired {
				continue // a refusal, or nothing that concerns this module
			}
			seen[name] = *a
			w.apply(ctx, a)
		}
	})
	if err != nil {
		return err
	}
	live.Store(true)
	close(synced)
	<-done
	return nil
}

// stage compiles a version ahead of its activation, and reports it; a
// version that fails a check is refused as it would be on activation.
func (w *moduleWatcher) stage(ctx context.Context, v *modreg.Version) {
	if m := w.current[v.Name]; m != nil && m.Digest() == v.Digest {
		return
	}
	if m := w.staged[v.Name]; m != nil && m.Digest() == v.Digest {
		return
	}
	log := w.logger.With("module", v.Name, "version", v.Version, "digest", v.Digest)
	start := time.Now()
	m, err := w.loadVersion(ctx, v)
	if err != nil {
		w.refuse(ctx, log, modreg.Event{Name: v.Name, Version: v.Version, Digest: v.Digest, Host: w.hostID, Error: err.Error()})
		return
	}
	if old := w.staged[v.Name]; old != nil {
		old.Close() // staged, never activated
	}
	w.staged[v.Name] = m
	moduleLoads.WithLabelValues("staged").Inc()
	log.Info("module staged: compiled ahead of its activation", "took", time.Since(start).Round(time.Millisecond))
	if err := w.registry.ReportStaged(context.WithoutCancel(ctx), v.Name, w.hostID, v.Digest); err != nil {
		log.Warn("could not report the staged version", "err", err)
	}
}

func (w *moduleWatcher) refuse(ctx context.Context, log *slog.Logger, e modreg.Event) {
	moduleLoads.WithLabelValues("refused").Inc()
	log.Error("module version refused; the installed version keeps serving", "err", e.Error)
	if err := w.registry.ReportRefusal(context.WithoutCancel(ctx), e); err != nil {
		log.Warn("could not report the refusal", "err", err)
	}
}

func (w *moduleWatcher) apply(ctx context.Context, a *modreg.Active) {
	log := w.logger.With("module", a.Name, "version", a.Version, "digest", a.Digest)
	if a.Retired {
		delete(w.current, a.Name)
		w.retire(a)
		moduleLoads.WithLabelValues("retired").Inc()
		log.Info("module retired")
		return
	}
	if m := w.current[a.Name]; m != nil && m.Digest() == a.Digest {
		// The same bytes under another version: its route may differ.
		w.install(m, a)
		return
	}
	start := time.Now()
	m := w.staged[a.Name]
	if m != nil && m.Digest() == a.Digest {
		delete(w.staged, a.Name) // compiled ahead: the swap is immediate
	} else {
		var err error
		if m, err = w.load(ctx, a); err != nil {
			w.refuse(ctx, log, modreg.Event{Name: a.Name, Version: a.Version, Digest: a.Digest, Host: w.hostID, Error: err.Error()})
			return
		}
	}
	w.current[a.Name] = m
	w.install(m, a)
	moduleLoads.WithLabelValues("installed").Inc()
	moduleLoadSeconds.Observe(time.Since(start).Seconds())
	log.Info("module installed", "took", time.Since(start).Round(time.Millisecond))
}

func (w *moduleWatcher) load(ctx context.Context, a *modreg.Active) (*sandbox.Module, error) {
	v, err := w.registry.Version(ctx, a.Name, a.Version)
	if err != nil {
		return nil, err
	}
	if v.Digest != a.Digest {
		return nil, errors.New("active record and version record disagree on the digest")
	}
	return w.loadVersion(ctx, v)
}

// loadVersion checks a version's signature (with trusted keys) and blob,
// and compiles it with the manifest deployed with it.
func (w *moduleWatcher) loadVersion(ctx context.Context, v *modreg.Version) (*sandbox.Module, error) {
	if len(w.trusted) > 0 {
		if err := modreg.Verify(w.trusted, v.Digest, v.Signature); err != nil {
			return nil, err
		}
	}
	wasm, err := w.registry.Blob(ctx, v.Digest)
	if err != nil {
		return nil, err
	}
	// The manifest deployed with the version says how to run it (ABI,
	// isolation, limits); without one, the defaults.
	man := &sandbox.Manifest{Name: v.Name}
	if v.Manifest != "" {
		if man, err = sandbox.ParseManifest([]byte(v.Manifest)); err != nil {
			return nil, err
		}
		man.Name = v.Name
	}
	return w.runtime.Load(ctx, wasm, man)
}

// watchModules starts the host's moduleWatcher and returns once the active
// versions are installed (or refused), so that the first heartbeat
// announces them: a host that starts after a deploy serves it at once.
func (a *Agent) watchModules(ctx context.Context) error {
	w := &moduleWatcher{registry: a.cfg.Registry, runtime: a.cfg.Runtime, trusted: a.cfg.Trusted,
		hostID: a.cfg.ID, logger: a.log, install: a.install, retire: a.retire}
	wctx, cancel := context.WithCancel(context.Background())
	synced, done := make(chan struct{}), make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = w.run(wctx, synced)
	}()
	select {
	case <-synced:
	case <-done:
	case <-ctx.Done():
		cancel()
		<-done
		return ctx.Err()
	}
	select {
	case <-done: // it stopped: the registry's watch failed
		cancel()
		if err == nil {
			err = errors.New("module registry watch ended")
		}
		return fmt.Errorf("host: %w", err)
	default:
	}
	a.mu.Lock()
	a.watchStop, a.watchDone = cancel, done
	a.mu.Unlock()
	return nil
}

// stopWatch stops the moduleWatcher and waits for it.
func (a *Agent) stopWatch() {
	a.mu.Lock()
	stop, done := a.watchStop, a.watchDone
	a.watchStop, a.watchDone = nil, nil
	a.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// install makes m serve its module. The version it replaces is closed:
// jobs running on it finish on it, and a job that was about to start on
// it starts on m (run).
func (a *Agent) install(m *sandbox.Module, act *modreg.Active) {
	if old := a.table.set(act.Name, m, act); old != nil && old != m {
		old.Close()
	}
	a.changed()
}

// retire stops serving a module.
func (a *Agent) retire(act *modreg.Active) {
	if old := a.table.set(act.Name, nil, act); old != nil {
		old.Close()
	}
	a.changed()
}

// changed follows a change of the modules held: once the host has started,
// a heartbeat tells the schedulers at once rather than at the next beat,
// since jobs wait for it during a rollout. (Hosts take jobs only on their
// own subject, worker.<id>.jobs, as signed dispatches: there is no path
// around the scheduler.)
func (a *Agent) changed() {
	a.mu.Lock()
	beat := a.started && !a.stopped
	a.mu.Unlock()
	if beat {
		a.heartbeat("ready")
	}
}
