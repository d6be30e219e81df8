package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/safety"
)

func newGatewayCmd(g *globals) *cobra.Command {
	var cfg assembly.GatewayConfig
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Run the HTTP gateway: the JSON API under /v1 (OpenAPI at /v1/openapi.yaml), event streams and the dashboard at /ui/",
		Long: `gateway serves Ward over HTTP to callers with an API key (ward auth key
add): submit and follow jobs, list them, the DLQ, hosts, modules, policies,
workflow runs and the audit log, as JSON under /v1 and as the dashboard
under /ui/. It keeps no state: it talks to the system over NATS with an
admin's credential (--creds; a tenant's key acts on its tenant's subjects
only) and reads the keys from the ward_apikeys bucket, so any number of
gateways may serve behind a load balancer. /healthz, /readyz and /metrics
need no key.

Serve it behind TLS (a reverse proxy) on anything but loopback, with
--secure-cookies.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Logger = g.logger()
			stopTracing, err := g.tracing("ward-gateway", cfg.Logger)
			if err != nil {
				return err
			}
			defer stopTracing()
			cfg.NATSURL, cfg.Creds, cfg.NATSTLS = client.NATSURL(g.natsURL), g.credsFile(), g.tls
			if !loopback(cfg.Listen) && !cfg.SecureCookies {
				cfg.Logger.Warn("the gateway listens beyond loopback without --secure-cookies: serve it behind TLS", "listen", cfg.Listen)
			}
			ctx, stop := signalContext()
			defer stop()
			gw, err := assembly.StartGateway(ctx, cfg)
			if err != nil {
				return err
			}
			cmd.Printf("gateway on http://%s (dashboard: http://%s/ui/)\n", gw.Addr(), gw.Addr())
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			return gw.Shutdown(sctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", envOr("WARD_GATEWAY_ADDR", "127.0.0.1:8080"), "HTTP listen address ($WARD_GATEWAY_ADDR)")
	f.StringVar(&cfg.PolicyBucket, "bucket", envOr("WARD_POLICY_BUCKET", safety.DefaultBucket), "NATS KV bucket of pushed policy bundles ($WARD_POLICY_BUCKET)")
	f.Float64Var(&cfg.Rate, "rate", 50, "requests a second each API key may make")
	f.IntVar(&cfg.Burst, "burst", 100, "requests an API key may make at once above --rate")
	f.StringVar(&cfg.ModuleKey, "module-key", envOr("WARD_MODULE_KEY", defaultKeyFile(assembly.ModuleKeyFile)), "sign the API's module deploys with this ed25519 key (PEM) ($WARD_MODULE_KEY, else module.key of $WARD_AUTH_DIR or of ward dev's state; none: unsigned)")
	f.StringVar(&cfg.PolicyKey, "policy-key", envOr("WARD_POLICY_KEY", defaultKeyFile(assembly.PolicyKeyFile)), "sign the API's policy pushes with this key ($WARD_POLICY_KEY, else policy.key of $WARD_AUTH_DIR or of ward dev's state; none: unsigned)")
	f.BoolVar(&cfg.SecureCookies, "secure-cookies", os.Getenv("WARD_SECURE_COOKIES") != "", "mark the dashboard's session cookie Secure (behind TLS) ($WARD_SECURE_COOKIES)")
	return cmd
}
