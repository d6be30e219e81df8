package assembly

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ward-run/ward/internal/apikey"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/modreg"
)

// DevOptions configures StartDev: `ward dev`, every part on one machine.
type DevOptions struct {
	// Options are the parts' (Start). StartDev sets NATSURL (its embedded
	// server's), Store (RedisURL's), Creds (unless Insecure) and
	// ModuleRegistry (on); it adds the module signing key to Host.Trusted
	// and the policy one to Safety.PolicyPubKey. When Scheduler.Config is
	// nil it is Scheduler.Files' (config.Load), with placement's CPU
	// threshold at 100 unless Files.Scheduler names a scheduler.yaml.
	Options

	// NATSHost and NATSPort are the embedded NATS server's address (port
	// -1: a random one); DataDir, when set, keeps its JetStream store
	// across runs (StartNATSIn).
	NATSHost string
	NATSPort int
	DataDir  string
	// StateDir holds the authority (auth/: keys, signing keys), the
	// credentials (creds/) and the dashboard's key (DevKeyFile), kept
	// across runs.
	StateDir string
	// Insecure runs without credentials, permissions or signed dispatch.
	Insecure bool

	// RedisURL is the job store's; the in-memory store when empty, which
	// keeps ended jobs for Retention and within Bound (SetBound). BoundSet
	// says the bound was asked for: with Redis, that it does not apply is
	// logged.
	RedisURL  string
	Retention time.Duration
	Bound     jobstore.Bound
	BoundSet  bool

	// MetricsAddr serves Prometheus metrics (ServeMetrics); empty: none.
	MetricsAddr string
	// Gateway, when set, is the HTTP API and dashboard's configuration
	// (StartGateway); StartDev sets its NATSURL, Logger and, unless
	// Insecure, its admin credential and signing keys. Nil runs none.
	Gateway *GatewayConfig
}

// Dev is `ward dev` running: the embedded NATS server, the job store, the
// parts and the gateway.
type Dev struct {
	*Node
	NATS *EmbeddedNATS
	// Store is the job store; StoreName names it, safe to print (a
	// password hidden), with the in-memory store's bound.
	Store     jobstore.Store
	StoreName string
	// Creds are the parts' credentials, in StateDir; nil when Insecure.
	Creds *DevCreds
	// Signing are the signing keys' files; zero when Insecure.
	Signing SigningKeys
	// MetricsAddr is where metrics are served; empty when not.
	MetricsAddr string
	// Gateway is the HTTP API and dashboard (nil without
	// DevOptions.Gateway); DashboardKey is the admin API key to log in
	// with, kept in DashboardKeyFile.
	Gateway                        *Gateway
	DashboardKey, DashboardKeyFile string

	log         *slog.Logger
	stopMetrics func()
}

// StartDev starts `ward dev`: the job store, the authority with a
// credential for each part, the admin and DevTenant and the signing keys
// (unless Insecure), the embedded NATS server, metrics, the parts (Start)
// and the gateway with the dashboard's key. On error, what was started is
// stopped.
func StartDev(ctx context.Context, o DevOptions) (_ *Dev, err error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	log := o.Logger
	d := &Dev{log: log}
	defer func() {
		if err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), devShutdownGrace)
			defer cancel()
			_ = d.Shutdown(sctx)
		}
	}()
	if o.Scheduler.Config == nil {
		if o.Scheduler.Config, err = config.Load(o.Scheduler.Files); err != nil {
			return nil, err
		}
		if o.Scheduler.Files.Scheduler == "" {
			// One machine runs the host, the control plane, the store and
			// the clients: its CPU load is theirs, and skipping the only
			// host would only stall it. A scheduler.yaml of one's own
			// (SCHEDULER_CONFIG_PATH) sets the threshold again.
			o.Scheduler.Config.Scheduler.Placement.CPUThreshold = 100
		}
	}
	if err := d.openStore(ctx, o); err != nil {
		return nil, err
	}
	var keys *auth.ServerKeys
	if o.Insecure {
		log.Warn("INSECURE: NATS accepts anyone, any client may submit as any tenant, dispatch to a host, write the policy and module buckets; hosts run unsigned dispatches. For comparisons only.")
	} else if keys, err = d.issue(&o); err != nil {
		return nil, err
	}
	if d.NATS, err = StartNATSIn(o.NATSHost, o.NATSPort, keys, o.DataDir); err != nil {
		return nil, err
	}
	if d.MetricsAddr, d.stopMetrics, err = ServeMetrics(o.MetricsAddr, log); err != nil {
		return nil, err
	}
	o.NATSURL, o.Store, o.Creds, o.ModuleRegistry = d.NATS.ClientURL(), d.Store, d.Creds, true
	if d.Node, err = Start(ctx, o.Options); err != nil {
		return nil, err
	}
	if o.Gateway != nil {
		gc := *o.Gateway
		gc.NATSURL, gc.Logger = d.NATS.ClientURL(), log
		if d.Creds != nil {
			// The API's deploys and pushes are signed as the CLI's are.
			gc.Creds, gc.ModuleKey, gc.PolicyKey = d.Creds.Admin, d.Signing.ModuleKey, d.Signing.PolicyKey
		}
		if d.Gateway, err = StartGateway(ctx, gc); err != nil {
			return nil, err
		}
		d.DashboardKeyFile = filepath.Join(o.StateDir, DevKeyFile)
		if d.DashboardKey, err = DevDashboardKey(ctx, d.Gateway.Keys(), o.StateDir); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// devShutdownGrace bounds how long StartDev's failure takes to stop what
// it started.
const devShutdownGrace = 30 * time.Second

// openStore opens the job store of o and sets its retention and bound.
func (d *Dev) openStore(ctx context.Context, o DevOptions) (err error) {
	if d.Store, d.StoreName, err = OpenStore(ctx, o.RedisURL, true); err != nil {
		return err
	}
	SetRetention(d.Store, o.Retention)
	if SetBound(d.Store, o.Bound) {
		d.StoreName += ", " + o.Bound.String() + " (--max-ended-jobs, --max-ended-bytes; the oldest ended go first)"
		d.log.Info("in-memory job store bounded: past the bound, the jobs that ended first are dropped before their retention",
			"max_ended_jobs", o.Bound.MaxEnded, "max_ended_bytes", o.Bound.MaxEndedBytes, "bound", o.Bound.String(), "retention", o.Retention)
	} else if o.BoundSet {
		d.log.Warn("--max-ended-jobs and --max-ended-bytes bound the in-memory job store only: Redis keeps ended jobs for the retention", "retention", o.Retention)
	}
	return nil
}

// issue creates (or reads) the authority in o.StateDir, the parts'
// credentials and the signing keys, and makes the host trust the module
// key and the kernel require the policy one. It returns the embedded
// server's keys.
func (d *Dev) issue(o *DevOptions) (*auth.ServerKeys, error) {
	a, err := auth.Init(filepath.Join(o.StateDir, "auth"))
	if err != nil {
		return nil, err
	}
	keys, err := a.ServerKeys()
	if err != nil {
		return nil, err
	}
	creds, err := IssueDevCreds(a, filepath.Join(o.StateDir, "creds"), o.Host.ID)
	if err != nil {
		return nil, err
	}
	d.Creds = &creds
	// Module versions and policy bundles are signed: hosts and the kernel
	// trust the keys here, and ward module deploy and ward policy push
	// sign with them by default.
	if d.Signing, err = EnsureSigningKeys(a.Dir()); err != nil {
		return nil, err
	}
	pub, err := os.ReadFile(d.Signing.ModulePub)
	if err != nil {
		return nil, err
	}
	mk, err := modreg.ParsePublicKey(pub)
	if err != nil {
		return nil, err
	}
	o.Host.Trusted = append(o.Host.Trusted, mk)
	o.Safety.PolicyPubKey = d.Signing.PolicyPub
	return &keys, nil
}

// Shutdown stops the gateway, the parts (Node.Shutdown, whose error it
// returns), metrics, the embedded NATS server and the job store; the
// others' errors are logged.
func (d *Dev) Shutdown(ctx context.Context) error {
	if d.Gateway != nil {
		if err := d.Gateway.Shutdown(ctx); err != nil {
			d.log.Warn("gateway shutdown", "err", err)
		}
	}
	var err error
	if d.Node != nil {
		err = d.Node.Shutdown(ctx)
	}
	if d.stopMetrics != nil {
		d.stopMetrics()
	}
	if d.NATS != nil {
		if err := d.NATS.Shutdown(); err != nil {
			d.log.Warn("embedded NATS shutdown", "err", err)
		}
	}
	if d.Store != nil {
		if err := d.Store.Close(); err != nil {
			d.log.Warn("job store close", "err", err)
		}
	}
	return err
}

// DevKeyFile is the file in ward dev's state directory that holds the
// dashboard's login key.
const DevKeyFile = "dashboard.key"

// DevDashboardKey returns the admin API key `ward dev` prints for its
// dashboard: the one in dir/DevKeyFile while keys still accepts it (a
// --data-dir keeps the key store across restarts), else a new one, written
// there (0600) for the next start.
func DevDashboardKey(ctx context.Context, keys *apikey.Store, dir string) (string, error) {
	path := filepath.Join(dir, DevKeyFile)
	if b, err := os.ReadFile(path); err == nil {
		k := strings.TrimSpace(string(b))
		if _, err := keys.Verify(ctx, k); err == nil {
			return k, nil
		}
	}
	k, _, err := keys.Add(ctx, apikey.Spec{Tenant: DevTenant, Name: "ward dev dashboard",
		Scopes: []apikey.Scope{apikey.ScopeAdmin}, CreatedBy: "ward dev"})
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return k, os.WriteFile(path, []byte(k+"\n"), 0o600)
}
