package assembly

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"sync"
	"time"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/safety"
	"github.com/ward-run/ward/policies"
)

// SafetyConfig configures a safety kernel part (`ward safety`).
type SafetyConfig struct {
	// NATSURL is the bus the kernel watches for pushed bundles, answers
	// sys.safety.status on and logs its decisions to. Empty runs the
	// kernel standalone: no pushed bundles, no decision log, no status.
	NATSURL string
	// Listen is the gRPC listen address; "127.0.0.1:0" when empty.
	Listen string
	// Creds is the kernel's .creds file; empty connects without one
	// (--insecure).
	Creds string
	// NATSTLS, when set, makes the part speak TLS to NATS: CA verifies the
	// server, Cert and Key are the part's for a server that requires one
	// (ward auth init's ca.pem, client.pem, client-key.pem).
	NATSTLS auth.TLSFiles
	// TLS, when set, serves gRPC over TLS with Cert and Key (ward auth
	// init's safety.pem, safety-key.pem); with CA too, it is mutual: only
	// clients with a certificate from CA get an answer. Zero serves
	// plaintext, to anyone who reaches Listen.
	TLS auth.TLSFiles
	// PolicyDir, when set, is the policy bundle, reloaded when it changes;
	// otherwise Policies is.
	PolicyDir string
	// Policies is the policy bundle when PolicyDir is empty; Ward's
	// embedded default bundle when nil.
	Policies fs.FS
	// Bucket is the NATS KV bucket of pushed bundles; safety.DefaultBucket
	// when empty.
	Bucket string
	// PolicyPubKey, when set, is the file of the public key that every
	// bundle from Bucket must be signed with (safety.ReloaderConfig.VerifyKey);
	// empty accepts them unsigned.
	PolicyPubKey string
	// ID names the kernel in decision logs and status; random when empty.
	ID string
	// CacheSize is the decisions cached per policy revision (see
	// safety.Config); negative disables the cache.
	CacheSize int
	// Debounce is how long PolicyDir must be quiet before it is read;
	// safety.DefaultDebounce when zero.
	Debounce time.Duration
	Logger   *slog.Logger // slog.Default() when nil
}

// Safety is a running safety kernel: the Kernel with its policy, its gRPC
// server and its reloader, which watches the policy directory and bucket.
type Safety struct {
	kernel    *safety.Kernel
	source    string
	conn      *bus.Conn                 // nil when standalone
	decisions *safety.DecisionPublisher // nil when standalone
	reloader  *safety.Reloader
	srv       *safety.Server
	addr      string
	serving   chan error // Serve's error, once it returns
	done      chan struct{}
	stopOnce  sync.Once
	stopErr   error
}

// StartSafety loads the policy (cfg.PolicyDir, else cfg.Policies) and
// serves it on cfg.Listen. On error nothing is left running.
func StartSafety(ctx context.Context, cfg SafetyConfig) (_ *Safety, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	s := &Safety{serving: make(chan error, 1), done: make(chan struct{})}
	defer func() {
		if err != nil {
			_ = s.Shutdown(context.Background())
		}
	}()
	kc := safety.Config{ID: cfg.ID, CacheSize: cfg.CacheSize}
	if cfg.NATSURL != "" {
		opts, err := natsOptions(cfg.Creds, cfg.NATSTLS)
		if err != nil {
			return nil, err
		}
		if s.conn, err = bus.Connect(cfg.NATSURL, "ward-safety", opts...); err != nil {
			return nil, err
		}
		s.decisions = safety.PublishDecisions(s.conn)
		kc.Log = s.decisions.Log
	}
	s.kernel = safety.NewKernel(kc)
	if err := s.load(ctx, cfg); err != nil {
		return nil, err
	}
	serverTLS, err := cfg.TLS.Server()
	if err != nil {
		return nil, err
	}
	var verify *safety.PolicyPublicKey
	if cfg.PolicyPubKey != "" {
		if verify, err = safety.LoadPolicyPublicKey(cfg.PolicyPubKey); err != nil {
			return nil, err
		}
	}
	lis, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("safety kernel: %w", err)
	}
	s.addr = lis.Addr().String()
	rc := safety.ReloaderConfig{Kernel: s.kernel, Dir: cfg.PolicyDir, Bus: s.conn,
		Bucket: cfg.Bucket, Debounce: cfg.Debounce, Addr: s.addr, Logger: cfg.Logger, VerifyKey: verify}
	if s.conn != nil {
		rc.Audit = auditLog(ctx, s.conn, cfg.Logger)
	}
	s.reloader, err = safety.NewReloader(rc)
	if err == nil {
		err = s.reloader.Start(ctx)
	}
	if err != nil {
		s.reloader = nil
		return nil, errors.Join(err, lis.Close())
	}
	s.srv = safety.NewServerTLS(s.kernel, serverTLS)
	go func() {
		s.serving <- s.srv.Serve(lis)
		close(s.done)
	}()
	cfg.Logger.Info("safety kernel serving", "addr", s.addr, "kernel_id", s.kernel.ID(),
		"revision", s.kernel.Revision(), "source", s.source, "tls", tlsMode(cfg.TLS))
	return s, nil
}

// load reads the bundle cfg names and puts it in force.
func (s *Safety) load(ctx context.Context, cfg SafetyConfig) error {
	if cfg.PolicyDir != "" {
		s.source = "dir " + cfg.PolicyDir
		b, err := safety.ReadBundleDir(cfg.PolicyDir)
		if err != nil {
			return err
		}
		return s.kernel.LoadBundle(ctx, b, s.source)
	}
	embedded := cfg.Policies == nil
	if embedded {
		cfg.Policies, s.source = policies.FS, "embedded"
	} else {
		s.source = "options"
	}
	b, err := safety.ReadBundle(cfg.Policies)
	if err != nil {
		return err
	}
	if embedded {
		return s.kernel.LoadTested(b, s.source) // its tests ran with Ward's
	}
	return s.kernel.LoadBundle(ctx, b, s.source)
}

// Addr is the address the kernel's gRPC server listens on.
func (s *Safety) Addr() string { return s.addr }

// Kernel is the policy evaluator the part serves.
func (s *Safety) Kernel() *safety.Kernel { return s.kernel }

// Status is the kernel's status: revision, source, the last refused bundle.
func (s *Safety) Status() *safetyv1.KernelStatus { return s.reloader.Status() }

// Done is closed when the gRPC server stops serving, after Shutdown or on
// its own failure (Shutdown then returns that error).
func (s *Safety) Done() <-chan struct{} { return s.done }

// Shutdown stops serving and watching, and closes the bus connection.
// Calls after the first return its error.
func (s *Safety) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() { s.stopErr = s.shutdown(ctx) })
	return s.stopErr
}

func (s *Safety) shutdown(ctx context.Context) error {
	var errs []error
	if s.reloader != nil {
		errs = append(errs, s.reloader.Shutdown(ctx))
	}
	if s.srv != nil {
		errs = append(errs, s.srv.Shutdown(ctx), <-s.serving)
	}
	if s.decisions != nil {
		s.decisions.Close() // what is batched goes out before the connection closes
	}
	if s.conn != nil {
		s.conn.Close()
	}
	return errors.Join(errs...)
}
