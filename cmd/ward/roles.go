package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ward-run/ward/bus"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/config"
	"github.com/ward-run/ward/host"
	"github.com/ward-run/ward/policies"
	"github.com/ward-run/ward/safety"
	"github.com/ward-run/ward/sandbox"
	"github.com/ward-run/ward/scheduler"
)

// shutdownGrace bounds how long a role drains after SIGTERM.
const shutdownGrace = 30 * time.Second

func newSchedulerCmd(g *globals) *cobra.Command {
	var redisURL, safetyAddr, metricsAddr, id string
	var safetyFlags safetyClientFlags
	var useRegistry bool
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run a scheduler replica against NATS_URL, REDIS_URL and SAFETY_KERNEL_ADDR",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := g.logger()
			ctx, stop := signalContext()
			defer stop()
			// POOL_CONFIG_PATH, TIMEOUT_CONFIG_PATH and SCHEDULER_CONFIG_PATH
			// are watched: a change applies without a restart.
			files := config.FilesFromEnv()
			conf, err := config.Load(files)
			if err != nil {
				return err
			}
			store, _, err := openStore(redisURL, false)
			if err != nil {
				return err
			}
			defer store.Close()
			safetyCfg, err := safetyFlags.config()
			if err != nil {
				return err
			}
			kernel, err := safety.Dial(safetyAddr, safetyCfg)
			if err != nil {
				return err
			}
			defer kernel.Close()
			conn, err := bus.Connect(client.NATSURL(g.natsURL), "ward-scheduler")
			if err != nil {
				return err
			}
			defer conn.Close()
			reg, err := openRegistry(ctx, conn, useRegistry)
			if err != nil {
				return err
			}
			_, stopMetrics, err := serveMetrics(metricsAddr, log)
			if err != nil {
				return err
			}
			defer stopMetrics()
			s, err := scheduler.New(scheduler.Config{ID: id, Bus: conn, Store: store, Safety: kernel,
				Pools: conf.Pools, Timeouts: conf.Timeouts, Settings: conf.Scheduler, Files: files, Logger: log,
				Modules: reg})
			if err != nil {
				return err
			}
			if err := s.Start(ctx); err != nil {
				return err
			}
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			return s.Shutdown(sctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&redisURL, "redis", os.Getenv("REDIS_URL"), "Redis URL ($REDIS_URL)")
	f.StringVar(&safetyAddr, "safety", envOr("SAFETY_KERNEL_ADDR", "127.0.0.1:50051"), "safety kernel address ($SAFETY_KERNEL_ADDR)")
	safetyFlags.register(f)
	f.StringVar(&metricsAddr, "metrics", lookupEnvOr("METRICS_ADDR", ":9090"), "Prometheus listen address, empty to disable ($METRICS_ADDR)")
	f.StringVar(&id, "id", "", "replica id (default: random)")
	f.BoolVar(&useRegistry, "module-registry", true, "follow the module registry in NATS JetStream: deployed routes, versions in force")
	cmd.AddCommand(newSchedulerModeCmd(g))
	return cmd
}

func newSafetyCmd(g *globals) *cobra.Command {
	var (
		listen, policyDir, metricsAddr, bucket, id string
		standalone                                 bool
		cacheSize                                  int
		debounce                                   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "safety",
		Short: "Run the safety kernel: gRPC SafetyKernel (Check, Explain, health) over a Rego policy bundle, reloaded live",
		Long: `safety serves the policy bundle in --policies (default: the embedded one)
to the schedulers. It watches that directory and the NATS KV bucket that
` + "`ward policy push`" + ` writes; a changed bundle is compiled and its tests run
before it is put in force, atomically, and a bundle that fails stays out.
The newest change wins, from either source; at start the bucket's bundle,
if there is one, replaces the directory's. The kernel answers on
sys.safety.status and publishes every decision on sys.safety.decision.
--standalone runs it without NATS: no bucket, no decision log.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := g.logger()
			ctx, stop := signalContext()
			defer stop()
			cfg := safety.Config{ID: id, CacheSize: cacheSize}
			var conn *bus.Conn
			if !standalone {
				var err error
				if conn, err = bus.Connect(client.NATSURL(g.natsURL), "ward-safety"); err != nil {
					return fmt.Errorf("%w (--standalone runs the kernel without NATS)", err)
				}
				defer conn.Close()
				cfg.Log = safety.PublishDecisions(conn)
			}
			k := safety.NewKernel(cfg)
			b, source, err := readPolicies(policyDir)
			if err != nil {
				return err
			}
			if policyDir == "" {
				err = k.LoadTested(b, source) // its tests ran with Ward's
			} else {
				err = k.LoadBundle(ctx, b, source)
			}
			if err != nil {
				return err
			}
			_, stopMetrics, err := serveMetrics(metricsAddr, log)
			if err != nil {
				return err
			}
			defer stopMetrics()
			lis, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("safety kernel: %w", err)
			}
			r, err := safety.NewReloader(safety.ReloaderConfig{Kernel: k, Dir: policyDir, Bus: conn, Bucket: bucket,
				Debounce: debounce, Addr: lis.Addr().String(), Logger: log})
			if err == nil {
				err = r.Start(ctx)
			}
			if err != nil {
				lis.Close()
				return err
			}
			srv := safety.NewServer(k)
			served := make(chan error, 1)
			go func() { served <- srv.Serve(lis) }()
			log.Info("safety kernel serving", "addr", lis.Addr().String(), "kernel_id", k.ID(), "revision", k.Revision(), "source", source)
			select {
			case err = <-served:
			case <-ctx.Done():
			}
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			return errors.Join(err, r.Shutdown(sctx), srv.Shutdown(sctx), <-served)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", envOr("SAFETY_LISTEN_ADDR", "127.0.0.1:50051"), "gRPC listen address ($SAFETY_LISTEN_ADDR)")
	f.StringVar(&policyDir, "policies", os.Getenv("WARD_POLICY_DIR"), "policy bundle directory, watched for changes (default: the embedded bundle) ($WARD_POLICY_DIR)")
	f.StringVar(&bucket, "bucket", envOr("WARD_POLICY_BUCKET", safety.DefaultBucket), "NATS KV bucket of pushed bundles ($WARD_POLICY_BUCKET)")
	f.BoolVar(&standalone, "standalone", false, "run without NATS: no pushed bundles, no decision log, no status")
	f.StringVar(&id, "id", os.Getenv("WARD_KERNEL_ID"), "kernel id in decision logs and status (default: random) ($WARD_KERNEL_ID)")
	f.IntVar(&cacheSize, "cache-size", safety.DefaultCacheSize, "decisions cached per policy revision; negative disables the cache")
	f.DurationVar(&debounce, "debounce", safety.DefaultDebounce, "how long the policy directory must be quiet before it is read")
	f.StringVar(&metricsAddr, "metrics", lookupEnvOr("METRICS_ADDR", ":9091"), "Prometheus listen address, empty to disable ($METRICS_ADDR)")
	return cmd
}

// readPolicies reads the bundle in dir, or the embedded one when dir is
// empty, and names its source.
func readPolicies(dir string) (*safety.Bundle, string, error) {
	if dir == "" {
		b, err := safety.ReadBundle(policies.FS)
		return b, "embedded", err
	}
	b, err := safety.ReadBundleDir(dir)
	return b, "dir " + dir, err
}

func newHostCmd(g *globals) *cobra.Command {
	var (
		redisURL, modulesDir, metricsAddr, id, cacheDir, region, zone string
		caps, labels                                                  []string
		maxParallel                                                   int
		heartbeat                                                     time.Duration
		ollamaURL, gpuMode                                            string
		sb                                                            sandboxFlags
		useRegistry                                                   bool
		trustedKeys                                                   []string
	)
	cmd := &cobra.Command{
		Use:   "host",
		Short: "Run a host agent: heartbeats, and the jobs of every pool whose module it holds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := g.logger()
			ctx, stop := signalContext()
			defer stop()
			pools, err := config.LoadPools(os.Getenv(config.EnvPoolConfig))
			if err != nil {
				return err
			}
			lbls, err := hostLabels(labels, os.Environ())
			if err != nil {
				return err
			}
			probes, err := hostProbes(gpuMode, ollamaURL, heartbeat, log)
			if err != nil {
				return err
			}
			store, _, err := openStore(redisURL, false)
			if err != nil {
				return err
			}
			defer store.Close()
			rt, err := sandbox.New(ctx, sandbox.Config{CacheDir: cacheDir})
			if err != nil {
				return err
			}
			defer rt.Close(context.Background())
			mods, err := loadModules(ctx, rt, modulesDir)
			if err != nil {
				return err
			}
			trusted, err := readTrustedKeys(trustedKeys)
			if err != nil {
				return err
			}
			env, err := sb.env(ollamaURL)
			if err != nil {
				return err
			}
			conn, err := bus.Connect(client.NATSURL(g.natsURL), "ward-host")
			if err != nil {
				return err
			}
			defer conn.Close()
			reg, err := openRegistry(ctx, conn, useRegistry)
			if err != nil {
				return err
			}
			_, stopMetrics, err := serveMetrics(metricsAddr, log)
			if err != nil {
				return err
			}
			defer stopMetrics()
			a, err := host.New(host.Config{ID: id, Bus: conn, Store: store, Runtime: rt, Modules: mods, Pools: pools,
				MaxParallel: maxParallel, HeartbeatInterval: heartbeat, Capabilities: caps, Labels: lbls,
				Region: region, Zone: zone, Probes: probes, Logger: log, MountRoots: sb.mountRoots, Env: env,
				Registry: reg, Trusted: trusted})
			if err != nil {
				return err
			}
			if err := a.Start(ctx); err != nil {
				return err
			}
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			return a.Shutdown(sctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&redisURL, "redis", os.Getenv("REDIS_URL"), "Redis URL ($REDIS_URL)")
	f.StringVar(&modulesDir, "modules", envOr("WARD_MODULES_DIR", "modules/build"), "directory of <name>.wasm modules loaded at start, empty for none; the registry's versions replace them ($WARD_MODULES_DIR)")
	f.BoolVar(&useRegistry, "module-registry", true, "follow the module registry in NATS JetStream: load the active versions, swap them as they are deployed")
	f.StringSliceVar(&trustedKeys, "trusted-key", envList("WARD_TRUSTED_KEYS"), "ed25519 public key file (PEM, `ward module keygen`); with any, registry modules must be signed by one ($WARD_TRUSTED_KEYS, comma-separated)")
	f.StringVar(&metricsAddr, "metrics", lookupEnvOr("METRICS_ADDR", ":9092"), "Prometheus listen address, empty to disable ($METRICS_ADDR)")
	f.StringVar(&id, "id", os.Getenv("WARD_WORKER_ID"), "worker id (default: random) ($WARD_WORKER_ID)")
	f.StringVar(&cacheDir, "cache-dir", defaultCacheDir(), "compiled-module cache directory")
	f.StringVar(&region, "region", os.Getenv("WARD_REGION"), "region reported in heartbeats ($WARD_REGION)")
	f.StringVar(&zone, "zone", os.Getenv("WARD_ZONE"), "zone reported in heartbeats ($WARD_ZONE)")
	f.StringSliceVar(&caps, "capability", nil, "capability this host offers (repeatable), e.g. gpu, ollama")
	f.StringSliceVar(&labels, "label", nil, "label key=value (repeatable); WARD_LABEL_<KEY>=value adds <key>=value too")
	f.IntVar(&maxParallel, "max-parallel", 0, "jobs run at once (default: number of CPUs)")
	f.StringVar(&ollamaURL, "ollama-url", os.Getenv("OLLAMA_URL"), "Ollama beside this host: probed every heartbeat interval; capability ollama while it answers ($OLLAMA_URL)")
	f.StringVar(&gpuMode, "gpu", "auto", "GPU probe: auto (NVML, then nvidia-smi) or off")
	f.DurationVar(&heartbeat, "heartbeat", 2*time.Second, "heartbeat interval")
	sb.register(f)
	return cmd
}

func parseLabels(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("label %q: want key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

// hostLabels merges --label flags over WARD_LABEL_<KEY>=value variables
// (key lower-cased, '_' kept).
func hostLabels(flags, environ []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if key, ok := strings.CutPrefix(k, "WARD_LABEL_"); ok && key != "" {
			out[strings.ToLower(key)] = v
		}
	}
	fl, err := parseLabels(flags)
	if err != nil {
		return nil, err
	}
	maps.Copy(out, fl)
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// hostProbes builds the probes a host runs.
func hostProbes(gpuMode, ollamaURL string, interval time.Duration, log *slog.Logger) ([]host.Probe, error) {
	var probes []host.Probe
	switch gpuMode {
	case "auto":
		probes = append(probes, host.NewGPUProbe(log))
	case "off":
	default:
		return nil, fmt.Errorf("--gpu %q: want auto or off", gpuMode)
	}
	if ollamaURL != "" {
		probes = append(probes, host.NewOllamaProbe(ollamaURL, interval, log))
	}
	return probes, nil
}
