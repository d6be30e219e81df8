// Package node assembles Ward's long-lived parts — the safety kernel, a
// scheduler replica, a host agent — each from its configuration and with
// its own NATS connection. The production roles (`ward safety`, `ward
// scheduler`, `ward host`) start one part each with StartSafety,
// StartScheduler and StartHost; `ward dev` and the end-to-end tests start
// all three in one process with Start, through the same constructors, so
// one machine and many cannot drift apart.
//
// node sits above the parts it assembles: it imports scheduler, safety,
// host and what they stand on; none of them imports node.
package assembly

import (
	"context"
	"crypto/ed25519"
	"errors"
	"io/fs"
	"log/slog"
	"time"

	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/host"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/safety"
	"github.com/ward-run/ward/internal/sandbox"
)

// Options configures the parts Start runs together. NATSURL and Store are
// required.
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
	// PolicyPubKey, when set, is the file of the key every bundle pushed to
	// PolicyBucket must be signed with (SafetyConfig.PolicyPubKey).
	PolicyPubKey string
	// SafetyOverGRPC makes the scheduler ask the kernel over its gRPC
	// address, as a separate `ward scheduler` does, with SafetyClient's
	// timeout, circuit breaker and fail mode. Otherwise it asks the kernel
	// directly: the same Check, without the round trip.
	SafetyOverGRPC bool
	SafetyClient   safety.ClientConfig
	Pools          *config.Pools    // the embedded default when nil
	Timeouts       *config.Timeouts // the embedded default when nil
	// Settings is scheduler.yaml; the embedded default when nil.
	Settings *config.Scheduler
	// ConfigFiles, where set, are watched by the scheduler and reloaded on
	// change (see scheduler.Config.Files).
	ConfigFiles config.Files
	// WorkflowDir is a directory of workflow definitions besides the
	// seed ones (SchedulerConfig.WorkflowDir).
	WorkflowDir string
	// Modules are the wasm modules the host serves, by module name. No
	// host is started when empty, unless ModuleRegistry is set.
	Modules map[string][]byte
	// Manifests are the modules' manifests, by module name (see
	// ReadModuleDir); a module without one gets the defaults.
	Manifests map[string]*sandbox.Manifest
	// MountRoots are the directories the host may mount for jobs granted
	// read-only directories (host.Config.MountRoots).
	MountRoots []string
	// Env holds the values the host gives jobs' granted environment keys
	// (host.Config.Env).
	Env map[string]string
	// Services are the host's named services (host.Config.Services).
	Services map[string]string
	// CacheDir is the host's compilation cache; in memory when empty.
	CacheDir          string
	HostID            string
	MaxParallel       int
	HeartbeatInterval time.Duration
	StartedDelay      time.Duration // host.Config.StartedDelay
	Capabilities      []string
	Labels            map[string]string
	Region, Zone      string
	Probes            []host.Probe
	Logger            *slog.Logger

	// ModuleRegistry makes the scheduler and the host follow the module
	// registry in the server's JetStream (`ward module deploy`); the host
	// then starts even without Modules.
	ModuleRegistry bool
	// Trusted, when not empty, makes the host refuse registry modules that
	// are not signed by one of these keys.
	Trusted []ed25519.PublicKey

	// Creds, when set, are the parts' credentials (IssueDevCreds): each
	// connects with its own, dispatches are signed and hosts admitted.
	// Nil runs the parts --insecure.
	Creds *DevCreds
}

// Node is a running set of parts in one process.
type Node struct {
	Safety    *Safety
	Scheduler *Scheduler
	Host      *Host // nil without modules or registry
}

// Start starts the safety kernel, a scheduler that asks it directly (the
// kernel also serves gRPC, for the CLI and other replicas), and a host agent (when there are modules to serve), each through its own
// constructor. On error, what was started is stopped.
func Start(ctx context.Context, o Options) (_ *Node, err error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Pools == nil {
		if o.Pools, err = config.LoadPools(""); err != nil {
			return nil, err
		}
	}
	n := &Node{}
	defer func() {
		if err != nil {
			_ = n.Shutdown(context.Background())
		}
	}()
	var cr DevCreds
	if o.Creds != nil {
		cr = *o.Creds
		if o.HostID == "" {
			o.HostID = cr.HostID
		}
	}
	if n.Safety, err = StartSafety(ctx, SafetyConfig{NATSURL: o.NATSURL, Listen: o.SafetyAddr, Creds: cr.Safety,
		PolicyDir: o.PolicyDir, Policies: o.Policies, Bucket: o.PolicyBucket, PolicyPubKey: o.PolicyPubKey, Logger: o.Logger}); err != nil {
		return nil, err
	}
	kernel := n.Safety.Kernel()
	if o.SafetyOverGRPC {
		kernel = nil
	}
	if n.Scheduler, err = StartScheduler(ctx, SchedulerConfig{NATSURL: o.NATSURL, Store: o.Store,
		SafetyAddr: n.Safety.Addr(), SafetyClient: o.SafetyClient, Kernel: kernel,
		Config: &config.Bundle{Pools: o.Pools, Timeouts: o.Timeouts, Scheduler: o.Settings},
		Files:  o.ConfigFiles, WorkflowDir: o.WorkflowDir, ModuleRegistry: o.ModuleRegistry, Logger: o.Logger,
		Creds: cr.Scheduler, DispatchSecret: cr.DispatchSecret}); err != nil {
		return nil, err
	}
	if len(o.Modules) == 0 && !o.ModuleRegistry {
		return n, nil
	}
	n.Host, err = StartHost(ctx, HostConfig{ID: o.HostID, NATSURL: o.NATSURL,
		Modules: o.Modules, Manifests: o.Manifests, ModuleRegistry: o.ModuleRegistry, Trusted: o.Trusted,
		CacheDir: o.CacheDir, Pools: o.Pools, MaxParallel: o.MaxParallel, HeartbeatInterval: o.HeartbeatInterval, StartedDelay: o.StartedDelay,
		Capabilities: o.Capabilities, Labels: o.Labels, Region: o.Region, Zone: o.Zone, Probes: o.Probes,
		MountRoots: o.MountRoots, Env: o.Env, Services: o.Services, Logger: o.Logger, Creds: cr.Host, DispatchKey: cr.HostKey})
	if err != nil {
		return nil, err
	}
	return n, nil
}

// Shutdown stops the host first (it drains its jobs), then the scheduler,
// then the safety kernel.
func (n *Node) Shutdown(ctx context.Context) error {
	var errs []error
	if n.Host != nil {
		errs = append(errs, n.Host.Shutdown(ctx))
	}
	if n.Scheduler != nil {
		errs = append(errs, n.Scheduler.Shutdown(ctx))
	}
	if n.Safety != nil {
		errs = append(errs, n.Safety.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
