package assembly

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/safety"
	"github.com/ward-run/ward/internal/scheduler"
)

// SchedulerConfig configures a scheduler replica part (`ward scheduler`).
// NATSURL, Store and SafetyAddr (or Kernel) are required.
type SchedulerConfig struct {
	ID      string // the replica's id; random when empty
	NATSURL string
	Store   jobstore.Store
	// SafetyAddr is the safety kernel's gRPC address; SafetyClient says
	// how to ask it (timeout, circuit breaker, fail mode, TLS).
	SafetyAddr   string
	SafetyClient safety.ClientConfig
	// Kernel, when set, is a safety kernel in this process (`ward dev`,
	// assembly.Start): the scheduler asks it directly, the same Check that its
	// gRPC server answers, without the round trip, and SafetyAddr and
	// SafetyClient are not used.
	Kernel *safety.Kernel
	// Config is pools.yaml, timeouts.yaml and scheduler.yaml; the embedded
	// defaults, or the Files, when nil.
	Config *config.Bundle
	// Files, where a path is set, are watched and reloaded on change (see
	// scheduler.Config.Files).
	Files config.Files
	// WorkflowDir, when set, is a directory of workflow definitions
	// (*.yaml) served besides the embedded seed ones (config.Workflows).
	WorkflowDir string
	// ModuleRegistry makes the scheduler follow the module registry in the
	// bus's JetStream (`ward module deploy`): deployed routes, versions in
	// force, retired modules.
	ModuleRegistry bool
	// Creds is the scheduler's .creds file; empty connects without one
	// (--insecure).
	Creds string
	// NATSTLS, when set, makes the part speak TLS to NATS: CA verifies the
	// server, Cert and Key are the part's for a server that requires one
	// (ward auth init's ca.pem, client.pem, client-key.pem).
	NATSTLS auth.TLSFiles
	// DispatchSecret is the schedulers' secret of signed dispatch; nil
	// sends unsigned dispatches (--insecure). With Creds, heartbeats are
	// admitted by the host credentials they carry.
	DispatchSecret []byte
	Logger         *slog.Logger // slog.Default() when nil
}

// Scheduler is a running scheduler replica with its bus connection and its
// safety client.
type Scheduler struct {
	*scheduler.Scheduler
	conn   *bus.Conn
	kernel *safety.Client // nil with SchedulerConfig.Kernel
}

// StartScheduler connects a scheduler replica to the bus, the store and the
// safety kernel, and starts it. On error nothing is left running.
func StartScheduler(ctx context.Context, cfg SchedulerConfig) (_ *Scheduler, err error) {
	if cfg.Store == nil {
		return nil, errors.New("node: SchedulerConfig.Store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Config == nil {
		if cfg.Config, err = config.Load(cfg.Files); err != nil {
			return nil, err
		}
	}
	s := &Scheduler{}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	var checker scheduler.SafetyChecker = cfg.Kernel
	if cfg.Kernel == nil {
		if s.kernel, err = safety.Dial(cfg.SafetyAddr, cfg.SafetyClient); err != nil {
			return nil, err
		}
		checker = s.kernel
	}
	opts, err := natsOptions(cfg.Creds, cfg.NATSTLS)
	if err != nil {
		return nil, err
	}
	if s.conn, err = bus.Connect(cfg.NATSURL, "ward-scheduler", opts...); err != nil {
		return nil, err
	}
	var (
		signer *auth.Signer
		trust  *auth.HostTrust
		admins *auth.AdminTrust
	)
	if cfg.DispatchSecret != nil {
		signer = auth.NewSigner(cfg.DispatchSecret, 0)
	}
	if cfg.Creds != "" {
		_, own, err := auth.ReadIdentity(cfg.Creds)
		if err != nil {
			return nil, err
		}
		if trust, err = auth.NewHostTrust(own); err != nil {
			return nil, err
		}
		if admins, err = auth.NewAdminTrust(own); err != nil {
			return nil, err
		}
	}
	// A scheduler started while a NATS cluster elects its JetStream
	// leader waits for it, as a host waits for the registry.
	reg, err := openRegistryWaiting(ctx, s.conn, cfg.ModuleRegistry, cfg.Logger)
	if err != nil {
		return nil, err
	}
	workflows, err := config.Workflows(cfg.WorkflowDir)
	if err != nil {
		return nil, err
	}
	s.Scheduler, err = scheduler.New(scheduler.Config{ID: cfg.ID, Bus: s.conn, Store: cfg.Store, Safety: checker,
		Pools: cfg.Config.Pools, Timeouts: cfg.Config.Timeouts, Settings: cfg.Config.Scheduler, Files: cfg.Files,
		Logger: cfg.Logger, Modules: reg, Signer: signer, HostTrust: trust, Workflows: workflows, WorkflowDir: cfg.WorkflowDir,
		AdminTrust: admins, Audit: auditLog(ctx, s.conn, cfg.Logger)})
	if err != nil {
		return nil, err
	}
	if err := s.Scheduler.Start(ctx); err != nil {
		s.Scheduler = nil
		return nil, err
	}
	return s, nil
}

// Shutdown stops the replica (see scheduler.Scheduler.Shutdown), then
// closes its connections.
func (s *Scheduler) Shutdown(ctx context.Context) error {
	err := s.Scheduler.Shutdown(ctx)
	s.close()
	return err
}

func (s *Scheduler) close() {
	if s.conn != nil {
		s.conn.Close()
	}
	if s.kernel != nil {
		_ = s.kernel.Close()
	}
}

// registryWait bounds how long a host waits for the module registry to be
// created.
const registryWait = 2 * time.Minute

// openRegistryWaiting is openRegistry for a host, whose credential may
// read the registry but not create it: a host started before any scheduler
// (or admin) has created the buckets waits for them, up to registryWait.
func openRegistryWaiting(ctx context.Context, conn *bus.Conn, use bool, log *slog.Logger) (*modreg.Registry, error) {
	deadline := time.Now().Add(registryWait)
	for logged := false; ; logged = true {
		reg, err := openRegistry(ctx, conn, use)
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return reg, err
		}
		if !logged {
			log.Info("waiting for the module registry (a scheduler or an admin creates it; JetStream must be up)", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// openRegistry opens the module registry in conn's JetStream when use is
// set; nil otherwise.
func openRegistry(ctx context.Context, conn *bus.Conn, use bool) (*modreg.Registry, error) {
	if !use {
		return nil, nil
	}
	reg, err := modreg.Open(ctx, conn.NATS())
	if err != nil {
		return nil, fmt.Errorf("%w; run without the registry with --module-registry=false", err)
	}
	return reg, nil
}
