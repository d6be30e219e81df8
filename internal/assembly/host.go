package assembly

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/host"
	"github.com/ward-run/ward/internal/sandbox"
)

// HostConfig configures a host agent part (`ward host`). NATSURL is
// required. A host holds no job store credential: contexts come in its
// tickets, results go to the schedulers on the bus.
type HostConfig struct {
	ID      string // the worker id; random when empty
	NATSURL string
	// Modules are the wasm modules served from the start, by module name,
	// with their manifests (see ReadModuleDir); a module without one gets
	// the defaults. The registry's versions replace them.
	Modules   map[string][]byte
	Manifests map[string]*sandbox.Manifest
	// ModuleRegistry makes the host follow the module registry in the bus's
	// JetStream: it loads the active versions before its first heartbeat
	// and swaps them as they are deployed.
	ModuleRegistry bool
	// Trusted, when not empty, makes the host refuse registry modules that
	// are not signed by one of these keys.
	Trusted []ed25519.PublicKey
	// CacheDir is the compiled-module cache; in memory when empty.
	CacheDir string
	// Pools is pools.yaml; the embedded default when nil.
	Pools *config.Pools
	// MaxParallel, HeartbeatInterval, StartedDelay, Capabilities, Labels,
	// Region, Zone, Probes, MountRoots and Env are the host's (see
	// host.Config).
	MaxParallel       int
	HeartbeatInterval time.Duration
	StartedDelay      time.Duration
	Capabilities      []string
	Labels            map[string]string
	Region, Zone      string
	Probes            []host.Probe
	MountRoots        []string
	Env               map[string]string
	Services          map[string]string // the host's named services (host.Config.Services)
	// Creds is the host's .creds file (`ward auth host add`): it names the
	// host and the pools it may serve. Empty connects without one
	// (--insecure).
	Creds string
	// NATSTLS, when set, makes the part speak TLS to NATS: CA verifies the
	// server, Cert and Key are the part's for a server that requires one
	// (ward auth init's ca.pem, client.pem, client-key.pem).
	NATSTLS auth.TLSFiles
	// DispatchKey is the host's key of signed dispatch; nil accepts
	// unsigned dispatches (--insecure).
	DispatchKey []byte
	Logger      *slog.Logger // slog.Default() when nil
}

// Host is a running host agent with its sandbox runtime and bus connection.
type Host struct {
	*host.Agent
	rt   *sandbox.Runtime
	conn *bus.Conn
}

// StartHost compiles the configured modules, connects to the bus and starts
// a host agent. On error nothing is left running.
func StartHost(ctx context.Context, cfg HostConfig) (_ *Host, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Pools == nil {
		if cfg.Pools, err = config.LoadPools(""); err != nil {
			return nil, err
		}
	}
	h := &Host{}
	defer func() {
		if err != nil {
			err = errors.Join(err, h.close())
		}
	}()
	if h.rt, err = sandbox.New(ctx, sandbox.Config{CacheDir: cfg.CacheDir}); err != nil {
		return nil, err
	}
	mods, err := host.LoadModules(ctx, h.rt, cfg.Modules, cfg.Manifests)
	if err != nil {
		return nil, err
	}
	opts, err := natsOptions(cfg.Creds, cfg.NATSTLS)
	if err != nil {
		return nil, err
	}
	var credential string
	if cfg.Creds != "" {
		id, tok, err := auth.ReadIdentity(cfg.Creds)
		if err != nil {
			return nil, err
		}
		if id.Role != auth.Host {
			return nil, fmt.Errorf("node: %s is a %s credential, not a host's", cfg.Creds, id.Role)
		}
		if cfg.ID == "" {
			cfg.ID = id.Name
		} else if cfg.ID != id.Name {
			return nil, fmt.Errorf("node: the credential %s is host %q's, not %q's", cfg.Creds, id.Name, cfg.ID)
		}
		credential = tok
	}
	if h.conn, err = bus.Connect(cfg.NATSURL, "ward-host", opts...); err != nil {
		return nil, err
	}
	reg, err := openRegistryWaiting(ctx, h.conn, cfg.ModuleRegistry, cfg.Logger)
	if err != nil {
		return nil, err
	}
	h.Agent, err = host.New(host.Config{ID: cfg.ID, Bus: h.conn, Runtime: h.rt, Modules: mods,
		Pools: cfg.Pools, MaxParallel: cfg.MaxParallel, HeartbeatInterval: cfg.HeartbeatInterval, StartedDelay: cfg.StartedDelay,
		Capabilities: cfg.Capabilities, Labels: cfg.Labels, Region: cfg.Region, Zone: cfg.Zone, Probes: cfg.Probes,
		Logger: cfg.Logger, MountRoots: cfg.MountRoots, Env: cfg.Env, Registry: reg, Trusted: cfg.Trusted,
		DispatchKey: cfg.DispatchKey, Credential: credential, Services: cfg.Services})
	if err != nil {
		return nil, err
	}
	if err := h.Agent.Start(ctx); err != nil {
		h.Agent = nil
		return nil, err
	}
	return h, nil
}

// Runtime is the host's sandbox runtime.
func (h *Host) Runtime() *sandbox.Runtime { return h.rt }

// Shutdown drains the agent (see host.Agent.Shutdown), then closes its bus
// connection and its runtime.
func (h *Host) Shutdown(ctx context.Context) error {
	err := h.Agent.Shutdown(ctx)
	return errors.Join(err, h.close())
}

func (h *Host) close() error {
	if h.conn != nil {
		h.conn.Close()
	}
	if h.rt != nil {
		return h.rt.Close(context.Background())
	}
	return nil
}

// ReadModuleDir reads every <name>.wasm in dir and the <name>.yaml
// manifest beside it, by module name.
func ReadModuleDir(dir string) (map[string][]byte, map[string]*sandbox.Manifest, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("modules: %w (build them with `make modules`)", err)
	}
	mods := make(map[string][]byte)
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".wasm")
		if !ok || e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, nil, fmt.Errorf("modules: %w", err)
		}
		mods[name] = b
	}
	if len(mods) == 0 {
		return nil, nil, fmt.Errorf("modules: no .wasm file in %s (build them with `make modules`)", dir)
	}
	manifests, err := host.ReadManifests(dir)
	if err != nil {
		return nil, nil, err
	}
	return mods, manifests, nil
}

// Probes returns the probes of a host: the GPU probe unless gpuMode is
// "off" ("auto": NVML, then nvidia-smi), and an Ollama probe when
// ollamaURL is set, polled every interval.
func Probes(gpuMode, ollamaURL string, interval time.Duration, log *slog.Logger) ([]host.Probe, error) {
	var probes []host.Probe
	switch gpuMode {
	case "auto", "":
		probes = append(probes, host.NewGPUProbe(log))
	case "off":
	default:
		return nil, fmt.Errorf("gpu probe %q: want auto or off", gpuMode)
	}
	if ollamaURL != "" {
		probes = append(probes, host.NewOllamaProbe(ollamaURL, interval, log))
	}
	return probes, nil
}
