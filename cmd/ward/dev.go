package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/spf13/cobra"

	"github.com/ward-run/ward/config"
	"github.com/ward-run/ward/host"
	"github.com/ward-run/ward/node"
)

func newDevCmd(g *globals) *cobra.Command {
	var (
		modulesDir, metricsAddr, safetyAddr, policyDir, redisURL, cacheDir, natsHost, cpuProfile string
		natsPort, maxParallel                                                                    int
		sandbox                                                                                  sandboxFlags
	)
	var safetyFlags safetyClientFlags
	var trustedKeys []string
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run every part in one process: embedded NATS, job store, safety kernel, scheduler, host",
		Long: `dev runs Ward on one machine: an embedded NATS server (JetStream on), the
in-memory job store (Redis when REDIS_URL is set), the safety kernel on a
loopback gRPC port, a scheduler and one host agent serving every module in
--modules, and every module deployed with ` + "`ward module deploy`" + `. It stays up until Ctrl-C or SIGTERM, then shuts down cleanly.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := g.logger()
			ctx, stop := signalContext()
			defer stop()
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}

			wasm, err := node.ReadModules(modulesDir)
			if err != nil {
				return err
			}
			manifests, err := host.ReadManifests(modulesDir)
			if err != nil {
				return err
			}
			trusted, err := readTrustedKeys(trustedKeys)
			if err != nil {
				return err
			}
			env, err := sandbox.env(os.Getenv("OLLAMA_URL"))
			if err != nil {
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
			pools, timeouts := conf.Pools, conf.Timeouts
			store, storeName, err := openStore(redisURL, true)
			if err != nil {
				return err
			}
			defer store.Close()

			jsDir, err := os.MkdirTemp("", "ward-dev-jetstream-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(jsDir)
			ns, err := server.NewServer(&server.Options{Host: natsHost, Port: natsPort, JetStream: true,
				StoreDir: jsDir, NoSigs: true, ServerName: "ward-dev"})
			if err != nil {
				return fmt.Errorf("nats: %w", err)
			}
			go ns.Start()
			defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
			if !ns.ReadyForConnections(10 * time.Second) {
				return fmt.Errorf("nats: not ready on %s:%d (is the port taken?)", natsHost, natsPort)
			}

			metrics, stopMetrics, err := serveMetrics(metricsAddr, log)
			if err != nil {
				return err
			}
			defer stopMetrics()

			probes, err := hostProbes("auto", os.Getenv("OLLAMA_URL"), 2*time.Second, log)
			if err != nil {
				return err
			}
			opts := node.Options{Probes: probes, NATSURL: ns.ClientURL(), Store: store, SafetyAddr: safetyAddr,
				Pools: pools, Timeouts: timeouts, Modules: wasm, Manifests: manifests, CacheDir: cacheDir,
				MountRoots: sandbox.mountRoots, Env: env, MaxParallel: maxParallel, HostID: "dev-host", Logger: log,
				Settings: conf.Scheduler, ConfigFiles: files, ModuleRegistry: true, Trusted: trusted}
			opts.PolicyDir = policyDir
			if opts.SafetyClient, err = safetyFlags.config(); err != nil {
				return err
			}
			st, err := node.Start(ctx, opts)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "ward dev is up\n")
			fmt.Fprintf(out, "  NATS:          %s\n", ns.ClientURL())
			if metrics != "" {
				fmt.Fprintf(out, "  metrics:       http://%s/metrics\n", metrics)
			} else {
				fmt.Fprintf(out, "  metrics:       off\n")
			}
			fmt.Fprintf(out, "  safety kernel: %s\n", st.SafetyAddr)
			fmt.Fprintf(out, "  policy:        %s (%s); ward policy push <dir> replaces it\n",
				st.Kernel().Revision(), st.SafetyStatus().GetSource())
			fmt.Fprintf(out, "  job store:     %s\n", storeName)
			fmt.Fprintf(out, "  host:          %s serving %v\n", st.Host.ID(), st.Host.Pools())
			fmt.Fprintf(out, "  modules:       ward module deploy <name>.wasm --manifest <name>.yaml serves a new one at once\n")
			fmt.Fprintf(out, "try:  ward submit --topic job.echo --tenant acme --payload '{\"hello\":\"world\"}' --wait\n")

			<-ctx.Done()
			fmt.Fprintln(out, "shutting down")
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return st.Shutdown(sctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&modulesDir, "modules", envOr("WARD_MODULES_DIR", "modules/build"), "directory of <name>.wasm modules ($WARD_MODULES_DIR)")
	f.StringVar(&natsHost, "nats-host", "127.0.0.1", "embedded NATS listen host")
	f.IntVar(&natsPort, "nats-port", 4222, "embedded NATS port (-1 for a random one)")
	f.StringVar(&metricsAddr, "metrics", lookupEnvOr("METRICS_ADDR", "127.0.0.1:9090"), "Prometheus listen address, empty to disable ($METRICS_ADDR)")
	f.StringVar(&safetyAddr, "safety-listen", "127.0.0.1:50051", "safety kernel gRPC listen address")
	f.StringVar(&policyDir, "policies", os.Getenv("WARD_POLICY_DIR"), "policy bundle directory, watched for changes (default: the embedded bundle) ($WARD_POLICY_DIR)")
	safetyFlags.register(f)
	f.StringVar(&redisURL, "redis", os.Getenv("REDIS_URL"), "Redis URL; the in-memory store when empty ($REDIS_URL)")
	f.StringVar(&cacheDir, "cache-dir", defaultCacheDir(), "compiled-module cache directory")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	f.IntVar(&maxParallel, "max-parallel", 0, "jobs the host runs at once (default: number of CPUs)")
	f.StringSliceVar(&trustedKeys, "trusted-key", envList("WARD_TRUSTED_KEYS"), "ed25519 public key file (PEM); with any, deployed modules must be signed by one ($WARD_TRUSTED_KEYS)")
	sandbox.register(f)
	return cmd
}

func defaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return d + "/ward/wasm"
	}
	return ""
}
