package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/sandbox"
)

func newDevCmd(g *globals) *cobra.Command {
	var (
		modulesDir, metricsAddr, safetyAddr, policyDir, redisURL, natsHost, cpuProfile, stateDir, workflowDir, dataDir, gatewayAddr string
		maxEndedBytes                                                                                                               string
		natsPort, maxEnded                                                                                                          int
		insecure                                                                                                                    bool
		retention                                                                                                                   time.Duration
		hf                                                                                                                          hostFlags
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run every part in one process: embedded NATS, job store, safety kernel, scheduler, host, the HTTP API and dashboard",
		Long: `dev runs Ward on one machine: an embedded NATS server (JetStream on), the
in-memory job store (Redis when REDIS_URL is set), the safety kernel (also
served on a loopback gRPC port, for ward policy eval --kernel), a scheduler
that asks it directly, and one host agent serving every module in
--modules, and every module deployed with ` + "`ward module deploy`" + `. The parts
are built as ` + "`ward safety`, `ward scheduler` and `ward host`" + ` build them, and the
host takes the same flags. It stays up until Ctrl-C or SIGTERM, then shuts
down cleanly.

Security is on: dev creates an operator, the WARD account and a credential
for each part, for the admin and for the tenant "default" in --state-dir
(kept across runs), and NATS accepts nothing else. Every dispatch is signed
for its host, and the host is admitted by its credential. The CLI uses the
admin credential it finds there; WARD_CREDS=<state dir>/creds/tenant-default.creds
acts as a tenant. --insecure turns all of it off, for comparisons.

Its links are plaintext, NATS and the kernel's gRPC both: they listen on
loopback (--nats-host, --safety-listen) and never leave the machine, and
the --tls-* flags do not apply to them. TLS is for the parts run
separately (ward auth init --tls, ward safety --grpc-tls-*).

What survives a restart: the keys and credentials in --state-dir always.
With --data-dir (or $WARD_DATA_DIR), the embedded NATS server keeps its
JetStream store there, so deployed modules, pushed policies, API keys,
audit records and results stored by pointer are there again after a
restart (with the same --state-dir: the data belongs to its account); with
--redis too, jobs, their events and the DLQ survive. Without --data-dir
(the default) the store is a temporary directory, removed at exit, and
each run starts empty; the in-memory job store never survives.

The in-memory job store keeps an ended job until the retention passes
(--retention, 24h), but at most --max-ended-jobs of them (20000) and
--max-ended-bytes (128MiB, by its estimate of their records): past
either, the jobs that ended first are dropped before their retention,
with their events, input, result and idempotency key (a job that has not
ended is never dropped). Redis keeps them for the retention alone.

Every port it needs (--nats-port, --safety-listen, --metrics) is checked
before anything starts, and all those taken are reported at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := g.logger()
			stopTracing, err := g.tracing("ward-dev", log)
			if err != nil {
				return err
			}
			defer stopTracing()
			ctx, stop := signalContext()
			defer stop()
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer func() {
					// After StopCPUProfile (deferred below) has written
					// the profile: a failed Close may have lost its end.
					if err := f.Close(); err != nil {
						log.Error("cpu profile not written", "file", cpuProfile, "err", err)
					}
				}()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}

			ports := map[string]string{"--safety-listen": safetyAddr, "--metrics": metricsAddr, "--gateway": gatewayAddr}
			if natsPort > 0 {
				ports["--nats-port"] = net.JoinHostPort(natsHost, fmt.Sprint(natsPort))
			}
			if err := checkPorts(ports); err != nil {
				return err
			}
			hc, err := hf.config(log)
			if err != nil {
				return err
			}
			if hc.Modules, hc.Manifests, err = assembly.ReadModuleDir(modulesDir); err != nil {
				return err
			}
			files := config.FilesFromEnv()
			conf, err := config.Load(files)
			if err != nil {
				return err
			}
			if files.Scheduler == "" {
				// One machine runs the host, the control plane, the store and
				// the clients: its CPU load is theirs, and skipping the only
				// host would only stall it. A scheduler.yaml of one's own
				// (SCHEDULER_CONFIG_PATH) sets the threshold again.
				conf.Scheduler.Placement.CPUThreshold = 100
			}
			bound, err := endedBound(maxEnded, maxEndedBytes)
			if err != nil {
				return err
			}
			store, storeName, err := assembly.OpenStore(redisURL, true)
			if err != nil {
				return err
			}
			assembly.SetRetention(store, retention)
			if assembly.SetBound(store, bound) {
				storeName += ", " + bound.String() + " (--max-ended-jobs, --max-ended-bytes; the oldest ended go first)"
				log.Info("in-memory job store bounded: past the bound, the jobs that ended first are dropped before their retention",
					"max_ended_jobs", bound.MaxEnded, "max_ended_bytes", bound.MaxEndedBytes, "bound", bound.String(), "retention", retention)
			} else if cmd.Flags().Changed("max-ended-jobs") || cmd.Flags().Changed("max-ended-bytes") {
				log.Warn("--max-ended-jobs and --max-ended-bytes bound the in-memory job store only: Redis keeps ended jobs for the retention", "retention", retention)
			}
			defer func() {
				if err := store.Close(); err != nil {
					log.Warn("job store close", "err", err)
				}
			}()
			var (
				keys    *auth.ServerKeys
				creds   *assembly.DevCreds
				signing assembly.SigningKeys
			)
			if insecure {
				log.Warn("INSECURE: NATS accepts anyone, any client may submit as any tenant, dispatch to a host, write the policy and module buckets; hosts run unsigned dispatches. For comparisons only.")
			} else {
				a, err := auth.Init(filepath.Join(stateDir, "auth"))
				if err != nil {
					return err
				}
				k, err := a.ServerKeys()
				if err != nil {
					return err
				}
				c, err := assembly.IssueDevCreds(a, filepath.Join(stateDir, "creds"), hc.ID)
				if err != nil {
					return err
				}
				keys, creds = &k, &c
				// Module versions and policy bundles are signed: hosts and
				// the kernel trust the keys here, and ward module deploy and
				// ward policy push sign with them by default.
				if signing, err = assembly.EnsureSigningKeys(a.Dir()); err != nil {
					return err
				}
				pub, err := os.ReadFile(signing.ModulePub)
				if err != nil {
					return err
				}
				mk, err := modreg.ParsePublicKey(pub)
				if err != nil {
					return err
				}
				hc.Trusted = append(hc.Trusted, mk)
			}
			ns, err := assembly.StartNATSIn(natsHost, natsPort, keys, dataDir)
			if err != nil {
				return err
			}
			defer func() {
				if err := ns.Shutdown(); err != nil {
					log.Warn("embedded NATS shutdown", "err", err)
				}
			}()
			metrics, stopMetrics, err := assembly.ServeMetrics(metricsAddr, log)
			if err != nil {
				return err
			}
			defer stopMetrics()

			n, err := assembly.Start(ctx, assembly.Options{NATSURL: ns.ClientURL(), Store: store, Logger: log, Creds: creds, ModuleRegistry: true,
				Safety:    assembly.SafetyConfig{Listen: safetyAddr, PolicyDir: policyDir, PolicyPubKey: signing.PolicyPub},
				Scheduler: assembly.SchedulerConfig{Config: conf, Files: files, WorkflowDir: workflowDir},
				Host:      hc})
			if err != nil {
				return err
			}
			self := selfName()
			var gw *assembly.Gateway
			var dashKey string
			if gatewayAddr != "" {
				gc := assembly.GatewayConfig{NATSURL: ns.ClientURL(), Listen: gatewayAddr, Logger: log}
				if creds != nil {
					// The API's deploys and pushes are signed as the CLI's are.
					gc.Creds, gc.ModuleKey, gc.PolicyKey = creds.Admin, signing.ModuleKey, signing.PolicyKey
				}
				if gw, err = assembly.StartGateway(ctx, gc); err == nil {
					dashKey, err = assembly.DevDashboardKey(ctx, gw.Keys(), stateDir)
				}
				if err != nil {
					sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
					defer cancel()
					if gw != nil {
						_ = gw.Shutdown(sctx)
					}
					_ = n.Shutdown(sctx)
					return err
				}
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "ward dev is up\n")
			if gw != nil {
				fmt.Fprintf(out, "  dashboard:     http://%s/ui/  log in with %s (an admin API key, kept in %s)\n", gw.Addr(), dashKey, filepath.Join(stateDir, assembly.DevKeyFile))
				fmt.Fprintf(out, "  API:           http://%s/v1/ (OpenAPI: /v1/openapi.yaml; Authorization: Bearer <key>; %s auth key add --tenant T makes keys)\n", gw.Addr(), self)
			} else {
				fmt.Fprintf(out, "  dashboard:     off (--gateway)\n")
			}
			fmt.Fprintf(out, "  NATS:          %s\n", ns.ClientURL())
			if creds != nil {
				fmt.Fprintf(out, "  credentials:   %s (the CLI uses admin.creds; WARD_CREDS=%s acts as tenant %s)\n", creds.Dir, creds.Tenant, assembly.DevTenant)
				fmt.Fprintf(out, "  signing keys:  %s, %s (module deploy and policy push sign with them)\n", signing.ModuleKey, signing.PolicyKey)
			} else {
				fmt.Fprintf(out, "  credentials:   none: --insecure\n")
			}
			if metrics != "" {
				fmt.Fprintf(out, "  metrics:       http://%s/metrics\n", metrics)
			} else {
				fmt.Fprintf(out, "  metrics:       off\n")
			}
			fmt.Fprintf(out, "  safety kernel: %s\n", n.Safety.Addr())
			fmt.Fprintf(out, "  policy:        %s (%s); %s policy push <dir> replaces it\n",
				n.Safety.Kernel().Revision(), n.Safety.Status().GetSource(), self)
			fmt.Fprintf(out, "  job store:     %s\n", storeName)
			if dataDir != "" {
				fmt.Fprintf(out, "  data:          %s (modules, policies, keys, audit and results kept across restarts)\n", dataDir)
			} else {
				fmt.Fprintf(out, "  data:          temporary (--data-dir keeps modules, policies, keys, audit and results across restarts)\n")
			}
			fmt.Fprintf(out, "  host:          %s serving %v\n", n.Host.ID(), n.Host.Pools())
			fmt.Fprintf(out, "  modules:       %s module deploy <name>.wasm --manifest <name>.yaml serves a new one at once\n", self)
			fmt.Fprintf(out, "try:  %s submit --topic job.echo --tenant acme --payload '{\"hello\":\"world\"}' --wait\n", self)

			<-ctx.Done()
			fmt.Fprintln(out, "shutting down")
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			if gw != nil {
				if err := gw.Shutdown(sctx); err != nil {
					log.Warn("gateway shutdown", "err", err)
				}
			}
			return n.Shutdown(sctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&modulesDir, "modules", envOr("WARD_MODULES_DIR", "modules/build"), "directory of <name>.wasm modules ($WARD_MODULES_DIR)")
	f.StringVar(&natsHost, "nats-host", "127.0.0.1", "embedded NATS listen host (plaintext: keep it on loopback)")
	f.StringVar(&stateDir, "state-dir", envOr("WARD_STATE_DIR", defaultStateDir()), "where the keys and credentials are kept ($WARD_STATE_DIR)")
	f.StringVar(&dataDir, "data-dir", os.Getenv("WARD_DATA_DIR"), "keep the embedded NATS server's JetStream store here: modules, policies, API keys, audit records and results survive a restart (default: a temporary directory, removed at exit) ($WARD_DATA_DIR)")
	f.DurationVar(&retention, "retention", envDuration("WARD_RETENTION", assembly.DefaultRetention), "how long an ended job (its record, events, input and result) is kept, then dropped; 0 keeps them for ever ($WARD_RETENTION)")
	f.IntVar(&maxEnded, "max-ended-jobs", envInt("WARD_MAX_ENDED_JOBS", assembly.DefaultMaxEndedJobs), "the in-memory job store keeps at most this many ended jobs, dropping those that ended first before their retention; 0: no count bound (not with --redis: Redis keeps them for the retention) ($WARD_MAX_ENDED_JOBS)")
	f.StringVar(&maxEndedBytes, "max-ended-bytes", envOr("WARD_MAX_ENDED_BYTES", fmt.Sprintf("%dMiB", assembly.DefaultMaxEndedBytes>>20)), "likewise, at most this much of ended jobs, by the store's estimate of their records (64MiB, 1GiB; the process's RSS runs up to about twice it); 0: no byte bound ($WARD_MAX_ENDED_BYTES)")
	f.BoolVar(&insecure, "insecure", false, "run without credentials, permissions or signed dispatch (for comparisons only)")
	f.IntVar(&natsPort, "nats-port", 4222, "embedded NATS port (-1 for a random one)")
	f.StringVar(&metricsAddr, "metrics", lookupEnvOr("METRICS_ADDR", "127.0.0.1:9090"), "Prometheus listen address, empty to disable ($METRICS_ADDR)")
	f.StringVar(&safetyAddr, "safety-listen", "127.0.0.1:50051", "safety kernel gRPC listen address (plaintext: keep it on loopback)")
	f.StringVar(&policyDir, "policies", os.Getenv("WARD_POLICY_DIR"), "policy bundle directory, watched for changes (default: the embedded bundle) ($WARD_POLICY_DIR)")
	f.StringVar(&workflowDir, "workflows", os.Getenv("WORKFLOW_CONFIG_DIR"), "directory of workflow definitions (*.yaml) served besides the seed ones ($WORKFLOW_CONFIG_DIR)")
	f.StringVar(&gatewayAddr, "gateway", lookupEnvOr("WARD_GATEWAY_ADDR", "127.0.0.1:8080"), "the HTTP API and dashboard's listen address, empty to disable ($WARD_GATEWAY_ADDR)")
	f.StringVar(&redisURL, "redis", os.Getenv("REDIS_URL"), "Redis URL; the in-memory store when empty ($REDIS_URL)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	hf.register(f, "dev-host")
	return cmd
}

// endedBound is the memory store's bound of --max-ended-jobs and
// --max-ended-bytes.
func endedBound(jobs int, size string) (jobstore.Bound, error) {
	if jobs < 0 {
		return jobstore.Bound{}, fmt.Errorf("--max-ended-jobs %d: want a count of jobs, or 0 for no count bound", jobs)
	}
	n, err := sandbox.ParseByteSize(size)
	if err != nil {
		return jobstore.Bound{}, fmt.Errorf("--max-ended-bytes: %w", err)
	}
	return jobstore.Bound{MaxEnded: jobs, MaxEndedBytes: int64(n)}, nil
}

func defaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return d + "/ward/wasm"
	}
	return ""
}
