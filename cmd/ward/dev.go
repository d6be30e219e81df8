package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/sandbox"
)

// devLong is `ward dev --help`.
const devLong = `dev runs Ward on one machine: an embedded NATS server (JetStream on), the
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
before anything starts, and all those taken are reported at once.`

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
		Long:  devLong,
		Args:  cobra.NoArgs,
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
				stopProfile, err := startCPUProfile(cpuProfile, log)
				if err != nil {
					return err
				}
				defer stopProfile()
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
			bound, err := endedBound(maxEnded, maxEndedBytes)
			if err != nil {
				return err
			}
			o := assembly.DevOptions{
				Options: assembly.Options{Logger: log,
					Safety:    assembly.SafetyConfig{Listen: safetyAddr, PolicyDir: policyDir},
					Scheduler: assembly.SchedulerConfig{Files: config.FilesFromEnv(), WorkflowDir: workflowDir},
					Host:      hc},
				NATSHost: natsHost, NATSPort: natsPort, DataDir: dataDir, StateDir: stateDir, Insecure: insecure,
				RedisURL: redisURL, Retention: retention, Bound: bound,
				BoundSet:    cmd.Flags().Changed("max-ended-jobs") || cmd.Flags().Changed("max-ended-bytes"),
				MetricsAddr: metricsAddr,
			}
			if gatewayAddr != "" {
				o.Gateway = &assembly.GatewayConfig{Listen: gatewayAddr}
			}
			d, err := assembly.StartDev(ctx, o)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			printDev(out, d, dataDir)
			lostErr := assembly.WaitStopped(ctx, d.Store)
			fmt.Fprintln(out, "shutting down")
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			return errors.Join(lostErr, d.Shutdown(sctx))
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

// printDev prints where ward dev's parts are and how to use them.
func printDev(out io.Writer, d *assembly.Dev, dataDir string) {
	self := selfName()
	fmt.Fprintf(out, "ward dev is up\n")
	if d.Gateway != nil {
		fmt.Fprintf(out, "  dashboard:     http://%s/ui/  log in with %s (an admin API key, kept in %s)\n", d.Gateway.Addr(), d.DashboardKey, d.DashboardKeyFile)
		fmt.Fprintf(out, "  API:           http://%s/v1/ (OpenAPI: /v1/openapi.yaml; Authorization: Bearer <key>; %s auth key add --tenant T makes keys)\n", d.Gateway.Addr(), self)
	} else {
		fmt.Fprintf(out, "  dashboard:     off (--gateway)\n")
	}
	fmt.Fprintf(out, "  NATS:          %s\n", d.NATS.ClientURL())
	if d.Creds != nil {
		fmt.Fprintf(out, "  credentials:   %s (the CLI uses admin.creds; WARD_CREDS=%s acts as tenant %s)\n", d.Creds.Dir, d.Creds.Tenant, assembly.DevTenant)
		fmt.Fprintf(out, "  signing keys:  %s, %s (module deploy and policy push sign with them)\n", d.Signing.ModuleKey, d.Signing.PolicyKey)
	} else {
		fmt.Fprintf(out, "  credentials:   none: --insecure\n")
	}
	if d.MetricsAddr != "" {
		fmt.Fprintf(out, "  metrics:       http://%s/metrics\n", d.MetricsAddr)
	} else {
		fmt.Fprintf(out, "  metrics:       off\n")
	}
	fmt.Fprintf(out, "  safety kernel: %s\n", d.Safety.Addr())
	fmt.Fprintf(out, "  policy:        %s (%s); %s policy push <dir> replaces it\n",
		d.Safety.Kernel().Revision(), d.Safety.Status().GetSource(), self)
	fmt.Fprintf(out, "  job store:     %s\n", d.StoreName)
	if dataDir != "" {
		fmt.Fprintf(out, "  data:          %s (modules, policies, keys, audit and results kept across restarts)\n", dataDir)
	} else {
		fmt.Fprintf(out, "  data:          temporary (--data-dir keeps modules, policies, keys, audit and results across restarts)\n")
	}
	fmt.Fprintf(out, "  host:          %s serving %v\n", d.Host.ID(), d.Host.Pools())
	fmt.Fprintf(out, "  modules:       %s module deploy <name>.wasm --manifest <name>.yaml serves a new one at once\n", self)
	fmt.Fprintf(out, "try:  %s submit --topic job.echo --tenant acme --payload '{\"hello\":\"world\"}' --wait\n", self)
}

// startCPUProfile writes a CPU profile of the run to file until the
// function it returns is called.
func startCPUProfile(file string, log *slog.Logger) (func(), error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		if err := f.Close(); err != nil {
			log.Error("cpu profile not written", "file", file, "err", err)
		}
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		// After StopCPUProfile has written the profile: a failed Close
		// may have lost its end.
		if err := f.Close(); err != nil {
			log.Error("cpu profile not written", "file", file, "err", err)
		}
	}, nil
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
