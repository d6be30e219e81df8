// Package assembly assembles Ward's long-lived parts — the safety kernel,
// a scheduler replica, a host agent, the gateway — each from its
// configuration and with its own NATS connection. The production roles
// (`ward safety`, `ward scheduler`, `ward host`, `ward gateway`) start one
// part each with StartSafety, StartScheduler, StartHost and StartGateway;
// the end-to-end tests start the first three in one process with Start,
// through the same constructors, so one machine and many cannot drift
// apart, and `ward dev` starts everything with StartDev (dev.go).
//
// assembly sits above the parts it assembles: it imports scheduler,
// safety, host and what they stand on; none of them imports assembly.
package assembly

import (
	"context"
	"errors"
	"log/slog"

	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/jobstore"
)

// Options configures the parts Start runs together: each part's own
// configuration (Safety, Scheduler, Host), and what the assembly decides
// for all of them, which Start sets in each part's configuration over what
// is there: the bus (NATSURL), the logger, the credentials (Creds), the
// module registry, the job store, and how the scheduler reaches the
// kernel. NATSURL and Store are required.
type Options struct {
	NATSURL string
	Store   jobstore.Store // the scheduler's
	Logger  *slog.Logger   // every part's; slog.Default() when nil

	// Creds, when set, are the parts' credentials (IssueDevCreds): each
	// connects with its own, dispatches are signed and hosts admitted; the
	// host's ID defaults to Creds.HostID. Nil runs the parts --insecure.
	Creds *DevCreds
	// ModuleRegistry makes the scheduler and the host follow the module
	// registry in the server's JetStream (`ward module deploy`); the host
	// then starts even without Host.Modules.
	ModuleRegistry bool
	// SafetyOverGRPC makes the scheduler ask the kernel over its gRPC
	// address, as a separate `ward scheduler` does, with
	// Scheduler.SafetyClient's timeout, circuit breaker and fail mode.
	// Otherwise it asks the kernel directly (SchedulerConfig.Kernel): the
	// same Check, without the round trip.
	SafetyOverGRPC bool

	// Safety is the kernel's configuration (StartSafety): Listen is
	// "127.0.0.1:0" when empty; Policies, PolicyDir, Bucket, PolicyPubKey.
	Safety SafetyConfig
	// Scheduler is the replica's configuration (StartScheduler): Config
	// (pools.yaml, timeouts.yaml and scheduler.yaml, each the default when
	// nil; the embedded pools are loaded once for both parts), Files,
	// WorkflowDir, SafetyClient.
	Scheduler SchedulerConfig
	// Host is the host agent's configuration (StartHost). No host is
	// started when Host.Modules is empty, unless ModuleRegistry is set. Its
	// Pools, when nil, are the scheduler's, and the other way round.
	Host HostConfig
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
	// One pools.yaml for both parts: the host's or the scheduler's,
	// whichever is set, else the embedded default.
	bundle := config.Bundle{}
	if o.Scheduler.Config != nil {
		bundle = *o.Scheduler.Config
	}
	if bundle.Pools == nil {
		bundle.Pools = o.Host.Pools
	}
	if bundle.Pools == nil {
		if bundle.Pools, err = config.LoadPools(""); err != nil {
			return nil, err
		}
	}
	if o.Host.Pools == nil {
		o.Host.Pools = bundle.Pools
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
		if o.Host.ID == "" {
			o.Host.ID = cr.HostID
		}
	}
	sc := o.Safety
	sc.NATSURL, sc.Creds, sc.Logger = o.NATSURL, cr.Safety, o.Logger
	if n.Safety, err = StartSafety(ctx, sc); err != nil {
		return nil, err
	}
	kernel := n.Safety.Kernel()
	if o.SafetyOverGRPC {
		kernel = nil
	}
	sch := o.Scheduler
	sch.NATSURL, sch.Store, sch.SafetyAddr, sch.Kernel, sch.Config = o.NATSURL, o.Store, n.Safety.Addr(), kernel, &bundle
	sch.ModuleRegistry, sch.Logger, sch.Creds, sch.DispatchSecret = o.ModuleRegistry, o.Logger, cr.Scheduler, cr.DispatchSecret
	if n.Scheduler, err = StartScheduler(ctx, sch); err != nil {
		return nil, err
	}
	if len(o.Host.Modules) == 0 && !o.ModuleRegistry {
		return n, nil
	}
	hc := o.Host
	hc.NATSURL, hc.ModuleRegistry, hc.Logger, hc.Creds, hc.DispatchKey = o.NATSURL, o.ModuleRegistry, o.Logger, cr.Host, cr.HostKey
	if n.Host, err = StartHost(ctx, hc); err != nil {
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
