package main

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/host"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/safety"
)

// shutdownGrace bounds how long a role drains after SIGTERM.
const shutdownGrace = 30 * time.Second

func newSchedulerCmd(g *globals) *cobra.Command {
	var redisURL, safetyAddr, metricsAddr, id, dispatchSecret, workflowDir, cpuProfile string
	var retention time.Duration
	var safetyFlags safetyClientFlags
	var safetyTLS safetyTLSFlags
	var useRegistry bool
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run a scheduler replica against NATS_URL, REDIS_URL and SAFETY_KERNEL_ADDR",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := g.logger()
			stopTracing, err := g.tracing("ward-scheduler", log)
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
			store, _, err := assembly.OpenStore(ctx, redisURL, false)
			if err != nil {
				return err
			}
			assembly.SetRetention(store, retention)
			// The logged store keeps its state in this process: within
			// ward dev's default bound of ended jobs (a no-op on Redis).
			assembly.SetBound(store, jobstore.Bound{MaxEnded: assembly.DefaultMaxEndedJobs, MaxEndedBytes: assembly.DefaultMaxEndedBytes})
			defer func() {
				if err := store.Close(); err != nil {
					log.Warn("job store close", "err", err)
				}
			}()
			safetyCfg, err := safetyFlags.config()
			if err != nil {
				return err
			}
			if safetyCfg.TLS, err = safetyTLS.config(); err != nil {
				return err
			}
			_, stopMetrics, err := assembly.ServeMetrics(metricsAddr, log)
			if err != nil {
				return err
			}
			defer stopMetrics()
			// POOL_CONFIG_PATH, TIMEOUT_CONFIG_PATH and SCHEDULER_CONFIG_PATH
			// are watched: a change applies without a restart.
			secret, err := readHexKey(dispatchSecret)
			if err != nil {
				return err
			}
			creds := g.creds // explicit only: a part never falls back to ward dev's admin credential
			if creds == "" || secret == nil {
				log.Warn("INSECURE: no --creds or no --dispatch-secret: dispatches go unsigned and heartbeats are not checked against host credentials")
			}
			s, err := assembly.StartScheduler(ctx, assembly.SchedulerConfig{ID: id, NATSURL: client.NATSURL(g.natsURL),
				Store: store, SafetyAddr: safetyAddr, SafetyClient: safetyCfg, Files: config.FilesFromEnv(), WorkflowDir: workflowDir,
				ModuleRegistry: useRegistry, Logger: log, Creds: creds, NATSTLS: g.tls, DispatchSecret: secret})
			if err != nil {
				return err
			}
			lostErr := assembly.WaitStopped(ctx, store)
			if lostErr != nil {
				log.Error("the job store refuses changes: stopping (restarted, this replica waits as a standby)", "err", lostErr)
			}
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			return errors.Join(lostErr, s.Shutdown(sctx))
		},
	}
	f := cmd.Flags()
	f.StringVar(&redisURL, "redis", os.Getenv("REDIS_URL"), "Redis URL ($REDIS_URL)")
	f.StringVar(&safetyAddr, "safety", envOr("SAFETY_KERNEL_ADDR", "127.0.0.1:50051"), "safety kernel address, or several comma-separated: each check goes to one that answers ($SAFETY_KERNEL_ADDR)")
	safetyFlags.register(f)
	safetyTLS.register(f)
	f.StringVar(&metricsAddr, "metrics", lookupEnvOr("METRICS_ADDR", ":9090"), "Prometheus listen address, empty to disable ($METRICS_ADDR)")
	f.StringVar(&id, "id", "", "replica id (default: random)")
	f.StringVar(&workflowDir, "workflows", os.Getenv("WORKFLOW_CONFIG_DIR"), "directory of workflow definitions (*.yaml) served besides the seed ones ($WORKFLOW_CONFIG_DIR)")
	f.DurationVar(&retention, "retention", envDuration("WARD_RETENTION", assembly.DefaultRetention), "how long an ended job (its record, events, input and result) is kept in Redis, then dropped; 0 keeps them for ever ($WARD_RETENTION)")
	f.StringVar(&dispatchSecret, "dispatch-secret", os.Getenv("WARD_DISPATCH_SECRET"), "file of the schedulers' dispatch secret (ward auth init writes dispatch.secret) ($WARD_DISPATCH_SECRET)")
	f.BoolVar(&useRegistry, "module-registry", true, "follow the module registry in NATS JetStream: deployed routes, versions in force")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	cmd.AddCommand(newSchedulerModeCmd(g), newSchedulerLsCmd(g))
	return cmd
}

func newSafetyCmd(g *globals) *cobra.Command {
	var (
		metricsAddr string
		standalone  bool
		cfg         assembly.SafetyConfig
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
--standalone runs it without NATS: no bucket, no decision log.

Its gRPC is plaintext unless --grpc-tls-cert and --grpc-tls-key are set;
with --grpc-tls-client-ca too it is mutual TLS, and only clients with a
certificate from that CA (ward auth init's client.pem) are answered.
Without it, anyone who can reach --listen may ask for decisions: keep the
default loopback address then.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Logger = g.logger()
			stopTracing, err := g.tracing("ward-safety", cfg.Logger)
			if err != nil {
				return err
			}
			defer stopTracing()
			ctx, stop := signalContext()
			defer stop()
			if !standalone {
				cfg.NATSURL, cfg.Creds, cfg.NATSTLS = client.NATSURL(g.natsURL), g.creds, g.tls
			}
			if cfg.TLS.IsZero() && !loopback(cfg.Listen) {
				cfg.Logger.Warn("INSECURE: the kernel's gRPC is plaintext on a non-loopback address: anyone who reaches it may ask for decisions (--grpc-tls-cert, --grpc-tls-key, --grpc-tls-client-ca)", "listen", cfg.Listen)
			}
			_, stopMetrics, err := assembly.ServeMetrics(metricsAddr, cfg.Logger)
			if err != nil {
				return err
			}
			defer stopMetrics()
			s, err := assembly.StartSafety(ctx, cfg)
			if err != nil {
				if !standalone {
					err = fmt.Errorf("%w (--standalone runs the kernel without NATS)", err)
				}
				return err
			}
			select {
			case <-s.Done():
			case <-ctx.Done():
			}
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			return s.Shutdown(sctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", envOr("SAFETY_LISTEN_ADDR", "127.0.0.1:50051"), "gRPC listen address ($SAFETY_LISTEN_ADDR)")
	f.StringVar(&cfg.PolicyDir, "policies", os.Getenv("WARD_POLICY_DIR"), "policy bundle directory, watched for changes (default: the embedded bundle) ($WARD_POLICY_DIR)")
	f.StringVar(&cfg.Bucket, "bucket", envOr("WARD_POLICY_BUCKET", safety.DefaultBucket), "NATS KV bucket of pushed bundles ($WARD_POLICY_BUCKET)")
	f.StringVar(&cfg.PolicyPubKey, "policy-pubkey", os.Getenv("WARD_POLICY_PUBKEY"), "public key file (PEM, ward policy keygen): bundles from the bucket must be signed with its private half, others are refused; without it they are not verified ($WARD_POLICY_PUBKEY)")
	f.StringVar(&cfg.TLS.Cert, "grpc-tls-cert", os.Getenv("SAFETY_TLS_CERT"), "serve gRPC over TLS with this certificate (ward auth init's safety.pem) ($SAFETY_TLS_CERT)")
	f.StringVar(&cfg.TLS.Key, "grpc-tls-key", os.Getenv("SAFETY_TLS_KEY"), "the key of --grpc-tls-cert (ward auth init's safety-key.pem) ($SAFETY_TLS_KEY)")
	f.StringVar(&cfg.TLS.CA, "grpc-tls-client-ca", os.Getenv("SAFETY_TLS_CLIENT_CA"), "mutual TLS: answer only clients with a certificate from this CA (ward auth init's ca.pem) ($SAFETY_TLS_CLIENT_CA)")
	f.BoolVar(&standalone, "standalone", false, "run without NATS: no pushed bundles, no decision log, no status")
	f.StringVar(&cfg.ID, "id", os.Getenv("WARD_KERNEL_ID"), "kernel id in decision logs and status (default: random) ($WARD_KERNEL_ID)")
	f.IntVar(&cfg.CacheSize, "cache-size", safety.DefaultCacheSize, "decisions cached per policy revision; negative disables the cache")
	f.DurationVar(&cfg.Debounce, "debounce", safety.DefaultDebounce, "how long the policy directory must be quiet before it is read")
	f.StringVar(&metricsAddr, "metrics", lookupEnvOr("METRICS_ADDR", ":9091"), "Prometheus listen address, empty to disable ($METRICS_ADDR)")
	return cmd
}

// hostFlags are the flags of a host agent, shared by `ward host` and the
// host `ward dev` runs, so that both build it the same way.
type hostFlags struct {
	id, cacheDir, region, zone string
	caps, labels               []string
	maxParallel                int
	heartbeat, startedDelay    time.Duration
	ollamaURL, gpuMode         string
	sb                         sandboxFlags
	trustedKeys                []string
	services                   []string
}

func (h *hostFlags) register(f *pflag.FlagSet, defaultID string) {
	f.StringVar(&h.id, "id", envOr("WARD_WORKER_ID", defaultID), "worker id (default: random) ($WARD_WORKER_ID)")
	f.StringVar(&h.cacheDir, "cache-dir", defaultCacheDir(), "compiled-module cache directory")
	f.StringVar(&h.region, "region", os.Getenv("WARD_REGION"), "region reported in heartbeats ($WARD_REGION)")
	f.StringVar(&h.zone, "zone", os.Getenv("WARD_ZONE"), "zone reported in heartbeats ($WARD_ZONE)")
	f.StringSliceVar(&h.caps, "capability", nil, "capability this host offers (repeatable), e.g. gpu, ollama")
	f.StringSliceVar(&h.labels, "label", nil, "label key=value (repeatable); WARD_LABEL_<KEY>=value adds <key>=value too")
	f.IntVar(&h.maxParallel, "max-parallel", 0, "jobs run at once (default: number of CPUs)")
	f.StringVar(&h.ollamaURL, "ollama-url", os.Getenv("OLLAMA_URL"), "Ollama beside this host: probed every heartbeat interval; capability ollama while it answers ($OLLAMA_URL)")
	f.StringVar(&h.gpuMode, "gpu", "auto", "GPU probe: auto (NVML, then nvidia-smi) or off")
	f.StringSliceVar(&h.services, "service", envList("WARD_SERVICES"), "a named service of this host a policy may grant, NAME=URL (repeatable; $WARD_SERVICES); ollama is --ollama-url's, else http://127.0.0.1:11434")
	f.DurationVar(&h.heartbeat, "heartbeat", 2*time.Second, "heartbeat interval")
	f.DurationVar(&h.startedDelay, "started-delay", host.DefaultStartedDelay,
		"report a job's start (RUNNING) once it has run this long; a job that ends sooner reports it with its result, in one store step (negative: every start at once)")
	f.StringSliceVar(&h.trustedKeys, "trusted-key", envList("WARD_TRUSTED_KEYS"), "ed25519 public key `file` (PEM, from ward module keygen); with any, registry modules must be signed by one ($WARD_TRUSTED_KEYS, comma-separated)")
	h.sb.register(f)
}

// config is the host's configuration from the flags, without its bus,
// store and modules.
func (h *hostFlags) config(log *slog.Logger) (assembly.HostConfig, error) {
	lbls, err := hostLabels(h.labels, os.Environ())
	if err != nil {
		return assembly.HostConfig{}, err
	}
	probes, err := assembly.Probes(h.gpuMode, h.ollamaURL, h.heartbeat, log)
	if err != nil {
		return assembly.HostConfig{}, fmt.Errorf("--gpu: %w", err)
	}
	trusted, err := readTrustedKeys(h.trustedKeys)
	if err != nil {
		return assembly.HostConfig{}, err
	}
	env, err := h.sb.env(h.ollamaURL)
	if err != nil {
		return assembly.HostConfig{}, err
	}
	services, err := hostServices(h.services, h.ollamaURL)
	if err != nil {
		return assembly.HostConfig{}, err
	}
	return assembly.HostConfig{ID: h.id, CacheDir: h.cacheDir, Region: h.region, Zone: h.zone, Capabilities: h.caps,
		Labels: lbls, MaxParallel: h.maxParallel, HeartbeatInterval: h.heartbeat, StartedDelay: h.startedDelay, Probes: probes,
		Trusted: trusted, MountRoots: h.sb.mountRoots, Env: env, Services: services, Logger: log}, nil
}

// defaultOllamaURL is where a host's ollama service is when neither
// --ollama-url nor --service ollama=URL says.
const defaultOllamaURL = "http://127.0.0.1:11434"

// hostServices resolves --service NAME=URL and the ollama service.
func hostServices(flags []string, ollamaURL string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range flags {
		name, u, ok := strings.Cut(kv, "=")
		if !ok || name == "" || u == "" {
			return nil, fmt.Errorf("--service %q: want NAME=URL", kv)
		}
		if _, err := url.Parse(u); err != nil {
			return nil, fmt.Errorf("--service %s: %w", name, err)
		}
		out[name] = u
	}
	if _, set := out["ollama"]; !set {
		out["ollama"] = cmp.Or(ollamaURL, defaultOllamaURL)
	}
	return out, nil
}

func newHostCmd(g *globals) *cobra.Command {
	var (
		redisURL, modulesDir, metricsAddr, dispatchKey string
		useRegistry                                    bool
		hf                                             hostFlags
	)
	cmd := &cobra.Command{
		Use:   "host",
		Short: "Run a host agent: heartbeats, and the jobs of every pool whose module it holds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := g.logger()
			stopTracing, err := g.tracing("ward-host", log)
			if err != nil {
				return err
			}
			defer stopTracing()
			ctx, stop := signalContext()
			defer stop()
			cfg, err := hf.config(log)
			if err != nil {
				return err
			}
			if cfg.Pools, err = config.LoadPools(os.Getenv(config.EnvPoolConfig)); err != nil {
				return err
			}
			if modulesDir != "" { // else the registry's modules only
				if cfg.Modules, cfg.Manifests, err = assembly.ReadModuleDir(modulesDir); err != nil {
					return err
				}
			}
			if redisURL != "" {
				log.Warn("a host holds no job store credential: ignoring the Redis URL ($REDIS_URL, --redis); remove it from the host's environment")
			}
			_, stopMetrics, err := assembly.ServeMetrics(metricsAddr, log)
			if err != nil {
				return err
			}
			defer stopMetrics()
			cfg.NATSURL, cfg.ModuleRegistry = client.NATSURL(g.natsURL), useRegistry
			cfg.Creds, cfg.NATSTLS = g.creds, g.tls
			if cfg.DispatchKey, err = readHexKey(dispatchKey); err != nil {
				return err
			}
			if cfg.Creds == "" || cfg.DispatchKey == nil {
				log.Warn("INSECURE: no --creds or no --dispatch-key: this host runs unsigned dispatches")
			}
			// Module signing is on by default: a host with a credential
			// and no --trusted-key trusts the module key of $WARD_AUTH_DIR.
			if len(cfg.Trusted) == 0 && cfg.Creds != "" {
				if p := defaultKeyFile(assembly.ModulePubFile); p != "" {
					if cfg.Trusted, err = readTrustedKeys([]string{p}); err != nil {
						return err
					}
				}
			}
			if len(cfg.Trusted) == 0 {
				log.Warn("INSECURE: no --trusted-key: registry modules are loaded unsigned (ward auth init writes module.pub)")
			}
			a, err := assembly.StartHost(ctx, cfg)
			if err != nil {
				return err
			}
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			return a.Shutdown(sctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&redisURL, "redis", os.Getenv("REDIS_URL"), "ignored: a host holds no job store credential")
	_ = f.MarkDeprecated("redis", "a host holds no job store credential; drop --redis and REDIS_URL")
	f.StringVar(&modulesDir, "modules", envOr("WARD_MODULES_DIR", "modules/build"), "directory of <name>.wasm modules loaded at start, empty for none; the registry's versions replace them ($WARD_MODULES_DIR)")
	f.StringVar(&dispatchKey, "dispatch-key", os.Getenv("WARD_DISPATCH_KEY"), "file of this host's dispatch key (ward auth host add writes host-NAME.key) ($WARD_DISPATCH_KEY)")
	f.BoolVar(&useRegistry, "module-registry", true, "follow the module registry in NATS JetStream: load the active versions, swap them as they are deployed")
	f.StringVar(&metricsAddr, "metrics", lookupEnvOr("METRICS_ADDR", ":9092"), "Prometheus listen address, empty to disable ($METRICS_ADDR)")
	hf.register(f, "")
	return cmd
}

func parseLabels(kvs []string) (map[string]string, error) { return parseKeyValues("--label", kvs) }

// parseKeyValues parses the key=value values of flag (--label, --env),
// naming the flag in the error.
func parseKeyValues(flag string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want KEY=VALUE", flag, kv)
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

// readHexKey reads a hex key file (ward auth writes them); an empty path is
// no key.
func readHexKey(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	k, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(k) < 32 {
		return nil, fmt.Errorf("%s: not a hex key of 32 bytes or more", path)
	}
	return k, nil
}

// loopback reports whether a listen address is on the loopback interface
// only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
