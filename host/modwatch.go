package host

import (
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/runtime"
)

var moduleLoads = promauto.NewCounterVec(prometheus.CounterOpts{
	Name: "ward_host_module_loads_total",
	Help: "Module versions a host loaded from the registry, by result (installed, retired, refused).",
}, []string{"result"})

// ModuleWatcher keeps a host's modules in step with the registry: for every
// change of a module's active version it fetches the blob, checks its
// digest (and signature, when Trusted is set), compiles it, and installs
// it; a retired module is removed. A version that fails any check is
// refused — logged, reported to the registry for `ward module ls` — and
// the version already installed keeps serving.
type ModuleWatcher struct {
	Registry *modreg.Registry
	Runtime  *runtime.Runtime
	// Trusted, when not empty, makes signatures mandatory: a module must be
	// signed by one of these keys.
	Trusted []ed25519.PublicKey
	HostID  string
	Logger  *slog.Logger
	// Install makes m the module that serves name; Retire stops serving it.
	Install func(name string, m *runtime.Module, a *modreg.Active)
	Retire  func(name string)

	mu      sync.Mutex        // guards current
	current map[string]string // name → digest installed
}

// Run watches until ctx ends. synced is closed once the versions active
// when it started are installed (or refused), so a host can announce
// itself with them.
func (w *ModuleWatcher) Run(ctx context.Context, synced chan<- struct{}) error {
	if w.Logger == nil {
		w.Logger = slog.Default()
	}
	w.current = map[string]string{}
	ch, err := w.Registry.Watch(ctx)
	if err != nil {
		return err
	}
	initial := true
	for a := range ch {
		if a == nil {
			if initial {
				initial = false
				close(synced)
			}
			continue
		}
		w.apply(ctx, a)
	}
	if initial {
		close(synced)
	}
	return nil
}

func (w *ModuleWatcher) apply(ctx context.Context, a *modreg.Active) {
	log := w.Logger.With("module", a.Name, "version", a.Version, "digest", a.Digest)
	if a.Retired {
		w.mu.Lock()
		delete(w.current, a.Name)
		w.mu.Unlock()
		w.Retire(a.Name)
		moduleLoads.WithLabelValues("retired").Inc()
		log.Info("module retired")
		return
	}
	w.mu.Lock()
	same := w.current[a.Name] == a.Digest
	w.mu.Unlock()
	if same {
		return
	}
	m, err := w.load(ctx, a)
	if err != nil {
		moduleLoads.WithLabelValues("refused").Inc()
		log.Error("module version refused; the installed version keeps serving", "err", err)
		if rerr := w.Registry.ReportRefusal(context.WithoutCancel(ctx), modreg.Event{Name: a.Name, Version: a.Version,
			Digest: a.Digest, Host: w.HostID, Error: err.Error()}); rerr != nil {
			log.Warn("could not report the refusal", "err", rerr)
		}
		return
	}
	w.mu.Lock()
	w.current[a.Name] = a.Digest
	w.mu.Unlock()
	w.Install(a.Name, m, a)
	moduleLoads.WithLabelValues("installed").Inc()
	log.Info("module installed")
}

func (w *ModuleWatcher) load(ctx context.Context, a *modreg.Active) (*runtime.Module, error) {
	v, err := w.Registry.Version(ctx, a.Name, a.Version)
	if err != nil {
		return nil, err
	}
	if v.Digest != a.Digest {
		return nil, errors.New("active record and version record disagree on the digest")
	}
	if len(w.Trusted) > 0 {
		if err := modreg.Verify(w.Trusted, v.Digest, v.Signature); err != nil {
			return nil, err
		}
	}
	wasm, err := w.Registry.Blob(ctx, v.Digest)
	if err != nil {
		return nil, err
	}
	// The manifest deployed with the version says how to run it (ABI,
	// isolation, limits); without one, the defaults.
	man := &runtime.Manifest{Name: a.Name}
	if v.Manifest != "" {
		if man, err = runtime.ParseManifest([]byte(v.Manifest)); err != nil {
			return nil, err
		}
		man.Name = a.Name
	}
	return w.Runtime.Load(ctx, wasm, man)
}
