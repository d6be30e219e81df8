package assembly

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/apikey"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/gateway"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/safety"
	"github.com/ward-run/ward/internal/version"
)

// GatewayConfig is a gateway's (`ward gateway`, and the one in `ward
// dev`).
type GatewayConfig struct {
	NATSURL string
	// Creds must be an admin's: the gateway acts for every tenant's keys
	// (and for each tenant on its own subjects only).
	Creds   string
	NATSTLS auth.TLSFiles
	// Listen is the HTTP address; "127.0.0.1:8080" when empty.
	Listen string
	// PolicyBucket is the kernels' bucket; safety's default when empty.
	PolicyBucket string
	// Rate and Burst limit each API key (gateway.Config).
	Rate  float64
	Burst int
	// SecureCookies marks the dashboard's cookie Secure (behind TLS).
	SecureCookies bool
	// ModuleKey and PolicyKey are the files of the keys the API's module
	// deploys and policy pushes are signed with (module.key, policy.key);
	// empty: unsigned (which hosts and kernels that require signatures
	// refuse).
	ModuleKey, PolicyKey string
	Logger               *slog.Logger
}

// Gateway is a running gateway.
type Gateway struct {
	*gateway.Server
	addr   string
	conn   *client.Client
	keys   *apikey.Store
	cancel context.CancelFunc
	done   chan error
}

// Addr is the address the gateway listens on.
func (g *Gateway) Addr() string { return g.addr }

// Keys is the API key store the gateway checks keys against.
func (g *Gateway) Keys() *apikey.Store { return g.keys }

// StartGateway connects a gateway to the bus and serves it. On error
// nothing is left running.
func StartGateway(ctx context.Context, cfg GatewayConfig) (_ *Gateway, err error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:8080"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("part", "gateway")
	c, err := client.Dial(cfg.NATSURL, client.Options{Creds: cfg.Creds, TLS: cfg.NATSTLS})
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g := &Gateway{conn: c}
	defer func() {
		if err != nil {
			g.close()
		}
	}()
	if !c.Admin() {
		return nil, errors.New("gateway: its credential must be an admin's (it serves every tenant's API keys)")
	}
	js, err := jetstream.New(c.Bus().NATS())
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if err := audit.Ensure(ctx, js); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if g.keys, err = apikey.Open(ctx, js); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	reg, err := modreg.Open(ctx, c.Bus().NATS())
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	parts := gateway.AdminParts{Registry: reg, JS: js, PolicyBucket: cfg.PolicyBucket}
	if parts.Pools, err = config.LoadPools(os.Getenv("POOL_CONFIG_PATH")); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if cfg.ModuleKey != "" {
		b, err := os.ReadFile(cfg.ModuleKey)
		if err != nil {
			return nil, fmt.Errorf("gateway: module key: %w", err)
		}
		if parts.ModuleKey, err = modreg.ParsePrivateKey(b); err != nil {
			return nil, fmt.Errorf("gateway: module key %s: %w", cfg.ModuleKey, err)
		}
	}
	if cfg.PolicyKey != "" {
		if parts.PolicyKey, err = safety.LoadPolicySigningKey(cfg.PolicyKey); err != nil {
			return nil, fmt.Errorf("gateway: policy key: %w", err)
		}
	}
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	g.Server, err = gateway.New(gateway.Config{
		Client: c, Auth: gateway.APIKeys(g.keys), Keys: g.keys,
		Admin: parts,
		Rate:  cfg.Rate, Burst: cfg.Burst, Metrics: metrics, Version: version.Version(),
		Log: log, SecureCookies: cfg.SecureCookies,
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g.addr = ln.Addr().String()
	sctx, cancel := context.WithCancel(context.Background())
	g.cancel, g.done = cancel, make(chan error, 1)
	go func() { g.done <- g.Server.Serve(sctx, ln) }()
	log.Info("gateway listening", "addr", g.addr)
	return g, nil
}

func (g *Gateway) close() {
	if g.keys != nil {
		_ = g.keys.Close()
	}
	if g.conn != nil {
		g.conn.Close()
	}
}

// Shutdown stops serving (event streams end, requests in flight get up
// to 10 s) and closes the connection.
func (g *Gateway) Shutdown(ctx context.Context) error {
	var err error
	if g.cancel != nil {
		g.cancel()
		select {
		case err = <-g.done:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	g.close()
	return err
}
