// Package stack starts Ward's long-lived parts together: a safety kernel on
// a gRPC listener, a scheduler that calls it over gRPC, and a host agent,
// each with its own NATS connection. `ward dev` runs one; so do the
// end-to-end tests. Production runs the same parts as separate processes.
package node

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ward-run/ward/bus"
	"github.com/ward-run/ward/config"
	"github.com/ward-run/ward/host"
	"github.com/ward-run/ward/jobstore"
	"github.com/ward-run/ward/modreg"
	"github.com/ward-run/ward/policies"
	"github.com/ward-run/ward/safety"
	"github.com/ward-run/ward/sandbox"
	"github.com/ward-run/ward/scheduler"
)

// Options configures a Stack. NATSURL and Store are required.
type Options struct {
	NATSURL string
	Store   jobstore.Store
	// SafetyAddr is the kernel's listen address; "127.0.0.1:0" when empty.
	SafetyAddr string
	// Policies is the policy bundle; the default bundle when nil.
	Policies fs.FS
	// PolicyDir, when set, is the policy bundle instead of Policies, and
	// the kernel reloads it when it changes.
	PolicyDir string
	// PolicyBucket is the NATS KV bucket the kernel watches for pushed
	// bundles; safety.DefaultBucket when empty.
	PolicyBucket string
	// SafetyClient configures the scheduler's safety client: timeout,
	// circuit breaker, fail mode.
	SafetyClient safety.ClientConfig
	Pools        *config.Pools    // the embedded default when nil
	Timeouts     *config.Timeouts // the embedded default when nil
	// Settings is scheduler.yaml; the embedded default when nil.
	Settings *config.Scheduler
	// ConfigFiles, where set, are watched by the scheduler and reloaded on
	// change (see scheduler.Config.Files).
	ConfigFiles config.Files
	// Modules are the wasm modules the host serves, by module name. No
	// host is started when empty.
	Modules map[string][]byte
	// Manifests are the modules' manifests, by module name (see
	// host.ReadManifests); a module without one gets the defaults.
	Manifests map[string]*sandbox.Manifest
	// MountRoots are the directories the host may mount for jobs granted
	// read-only directories (host.Config.MountRoots).
	MountRoots []string
	// Env holds the values the host gives jobs' granted environment keys
	// (host.Config.Env).
	Env map[string]string
	// CacheDir is the host's compilation cache; in memory when empty.
	CacheDir          string
	HostID            string
	MaxParallel       int
	HeartbeatInterval time.Duration
	Capabilities      []string
	Labels            map[string]string
	Probes            []host.Probe
	Logger            *slog.Logger

	// ModuleRegistry makes the scheduler and the host follow the module
	// registry in the server's JetStream (`ward module deploy`); the host
	// then starts even without Modules.
	ModuleRegistry bool
	// Trusted, when not empty, makes the host refuse registry modules that
	// are not signed by one of these keys.
	Trusted []ed25519.PublicKey
}

// Stack is a running set of parts.
type Stack struct {
	SafetyAddr string
	Scheduler  *scheduler.Scheduler
	Host       *host.Agent // nil without modules

	safety *kernel
	client *safety.Client
	rt     *sandbox.Runtime
	conns  []*bus.Conn
	log    *slog.Logger
}

// Start starts every part; on error, what was started is stopped.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.SafetyAddr == "" {
		o.SafetyAddr = "127.0.0.1:0"
	}
	if o.Policies == nil {
		o.Policies = policies.FS
	}
	if o.Pools == nil {
		if o.Pools, err = config.LoadPools(""); err != nil {
			return nil, err
		}
	}
	s := &Stack{log: o.Logger}
	defer func() {
		if err != nil {
			_ = s.Shutdown(context.Background())
		}
	}()

	if s.safety, err = startKernel(ctx, o); err != nil {
		return nil, err
	}
	s.SafetyAddr = s.safety.addr
	if s.client, err = safety.Dial(s.SafetyAddr, o.SafetyClient); err != nil {
		return nil, err
	}

	conn := func(name string) (*bus.Conn, error) {
		c, err := bus.Connect(o.NATSURL, name)
		if err == nil {
			s.conns = append(s.conns, c)
		}
		return c, err
	}
	sc, err := conn("ward-scheduler")
	if err != nil {
		return nil, err
	}
	var schedReg *modreg.Registry
	if o.ModuleRegistry {
		if schedReg, err = modreg.Open(ctx, sc.NATS()); err != nil {
			return nil, err
		}
	}
	s.Scheduler, err = scheduler.New(scheduler.Config{Bus: sc, Store: o.Store, Safety: s.client,
		Pools: o.Pools, Timeouts: o.Timeouts, Settings: o.Settings, Files: o.ConfigFiles, Logger: o.Logger,
		Modules: schedReg})
	if err != nil {
		return nil, err
	}
	if err := s.Scheduler.Start(ctx); err != nil {
		return nil, err
	}

	if len(o.Modules) == 0 && !o.ModuleRegistry {
		return s, nil
	}
	if s.rt, err = sandbox.New(ctx, sandbox.Config{CacheDir: o.CacheDir}); err != nil {
		return nil, err
	}
	mods, err := host.LoadModules(ctx, s.rt, o.Modules, o.Manifests)
	if err != nil {
		return nil, err
	}
	hc, err := conn("ward-host")
	if err != nil {
		return nil, err
	}
	var hostReg *modreg.Registry
	if o.ModuleRegistry {
		if hostReg, err = modreg.Open(ctx, hc.NATS()); err != nil {
			return nil, err
		}
	}
	s.Host, err = host.New(host.Config{ID: o.HostID, Bus: hc, Store: o.Store, Runtime: s.rt, Modules: mods,
		Pools: o.Pools, MaxParallel: o.MaxParallel, HeartbeatInterval: o.HeartbeatInterval,
		Capabilities: o.Capabilities, Labels: o.Labels, Probes: o.Probes, Logger: o.Logger,
		MountRoots: o.MountRoots, Env: o.Env, Registry: hostReg, Trusted: o.Trusted})
	if err != nil {
		return nil, err
	}
	if err := s.Host.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Runtime returns the host's sandbox runtime; nil without a host.
func (s *Stack) Runtime() *sandbox.Runtime { return s.rt }

// Shutdown stops the host first (it drains its jobs), then the scheduler,
// then the safety kernel.
func (s *Stack) Shutdown(ctx context.Context) error {
	var errs []error
	if s.Host != nil {
		errs = append(errs, s.Host.Shutdown(ctx))
	}
	if s.Scheduler != nil {
		errs = append(errs, s.Scheduler.Shutdown(ctx))
	}
	for _, c := range s.conns {
		c.Close()
	}
	if s.rt != nil {
		errs = append(errs, s.rt.Close(ctx))
	}
	if s.client != nil {
		errs = append(errs, s.client.Close())
	}
	if s.safety != nil {
		errs = append(errs, s.safety.close(ctx))
	}
	return errors.Join(errs...)
}

// ReadModules reads every <name>.wasm in dir, by name.
func ReadModules(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("modules: %w (build them with `make modules`)", err)
	}
	mods := make(map[string][]byte)
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".wasm")
		if !ok || e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("modules: %w", err)
		}
		mods[name] = b
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("modules: no .wasm file in %s (build them with `make modules`)", dir)
	}
	return mods, nil
}

// Names returns the map's keys, sorted.
func Names[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
