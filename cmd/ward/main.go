// Command ward is Ward's one binary: every long-lived role (dev, scheduler,
// safety, host) and every client (submit, jobs, bench). This package only
// parses flags and wires parts together.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/telemetry"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "ward:", err)
		if errors.Is(err, context.Canceled) {
			os.Exit(130) // Ctrl-C: what it stopped says so
		}
		if errors.Is(err, client.ErrRefused) {
			// Refused before it ran (tenant_mismatch, a payload too
			// large, a rate limit): the job did not end as asked, as
			// with a job that ended DENIED or FAILED.
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// exitError ends the process with code, after its message was printed.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

type globals struct {
	natsURL  string
	logLevel string
	creds    string
	tenant   string
	// tls is how every connection to NATS speaks TLS (--tls-ca,
	// --tls-cert, --tls-key); zero: plaintext.
	tls auth.TLSFiles
	// otlpEndpoint is where a role exports its traces (--otlp-endpoint);
	// empty: the OTLP environment, else no tracing.
	otlpEndpoint string
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "ward",
		Short:         "Ward routes untrusted jobs through a Rego safety kernel to WebAssembly sandboxes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.natsURL, "nats", "", "NATS URL (default $NATS_URL, else nats://127.0.0.1:4222)")
	root.PersistentFlags().StringVar(&g.creds, "creds", os.Getenv("WARD_CREDS"), "NATS credential `file` (default $WARD_CREDS, else admin.creds in $WARD_AUTH_DIR, else the admin credential that ward dev wrote, if any)")
	root.PersistentFlags().StringVar(&g.tls.CA, "tls-ca", os.Getenv("WARD_TLS_CA"), "speak TLS to NATS: the CA file its certificate must chain to (ward auth init's ca.pem) ($WARD_TLS_CA)")
	root.PersistentFlags().StringVar(&g.tls.Cert, "tls-cert", os.Getenv("WARD_TLS_CERT"), "client certificate for a NATS server that requires one (mutual TLS; ward auth init's client.pem) ($WARD_TLS_CERT)")
	root.PersistentFlags().StringVar(&g.tls.Key, "tls-key", os.Getenv("WARD_TLS_KEY"), "the key of --tls-cert (ward auth init's client-key.pem) ($WARD_TLS_KEY)")
	root.PersistentFlags().StringVar(&g.otlpEndpoint, "otlp-endpoint", "", "export the role's OpenTelemetry traces to this OTLP collector, e.g. http://127.0.0.1:4318 (default $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, $OTEL_EXPORTER_OTLP_ENDPOINT; none: no tracing)")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", envOr("WARD_LOG_LEVEL", "info"), "log level: debug, info, warn, error ($WARD_LOG_LEVEL)")
	root.AddCommand(
		newDevCmd(g), newSchedulerCmd(g), newSafetyCmd(g), newHostCmd(g),
		newSubmitCmd(g), newJobsCmd(g), newBenchCmd(g), newWorkersCmd(g), newModuleCmd(g), newDLQCmd(g), newPolicyCmd(g),
		newAuditCmd(g), newAuthCmd(g), newWorkflowCmd(g), newGatewayCmd(g), newVersionCmd(g),
	)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		serverGC(cmd)
		return g.checkRole(cmd)
	}
	return root
}

// serverCommands are the long-lived roles.
var serverCommands = []string{"ward dev", "ward scheduler", "ward safety", "ward host", "ward gateway"}

// serverGCPercent is the garbage collector's target (GOGC) of the
// long-lived roles when GOGC is not set: a collection once the heap has
// grown by twice what the last one left live, not once. A role's
// allocation rate is the same either way, so collecting half as often
// halves the collector's CPU (a scheduler's store or a host's modules are
// most of a heap that each collection marks again), for a peak heap of
// three times the live one rather than two. docs/CONFIGURATION.md has the
// figures; GOGC and GOMEMLIMIT set in the environment win.
const serverGCPercent = 200

// serverGC sets serverGCPercent for a long-lived role, unless GOGC is set.
func serverGC(cmd *cobra.Command) {
	if _, set := os.LookupEnv("GOGC"); set || !slices.Contains(serverCommands, cmd.CommandPath()) {
		return
	}
	debug.SetGCPercent(serverGCPercent)
}

// adminCommands are the client commands that speak on subjects only an
// admin's credential may use: run with another role's, the server would
// refuse them with a bare permissions violation and the command would
// wait for an answer that never comes. They are refused up front instead.
var adminCommands = []string{
	"ward workers", "ward workers drain", "ward workers undrain", "ward scheduler ls", "ward scheduler mode", "ward jobs stats",
	"ward dlq ls", "ward dlq retry", "ward dlq drop",
	"ward module deploy", "ward module ls", "ward module rollback", "ward module activate", "ward module rm", "ward module rm-version",
	"ward policy push", "ward policy status", "ward policy history", "ward policy rollback",
	"ward audit ls",
	"ward auth key add", "ward auth key ls", "ward auth key revoke",
}

// checkRole refuses an admin command (adminCommands) run with a
// credential of another role, saying what that role may do instead.
func (g *globals) checkRole(cmd *cobra.Command) error {
	if !slices.Contains(adminCommands, cmd.CommandPath()) {
		return nil
	}
	creds := g.credsFile()
	if creds == "" {
		return nil // no credential: a system run --insecure, or the server says
	}
	id, _, err := auth.ReadIdentity(creds)
	if err != nil || id.Role == auth.Admin {
		return nil // the connection reports a credential it cannot use
	}
	what := string(id.Role)
	if id.Name != "" {
		what += " " + id.Name
	}
	hint := ""
	if id.Role == auth.Tenant {
		hint = "; a tenant lists its own jobs with `ward jobs ls` (its dead-lettered ones with `ward jobs ls --state FAILED`), and with an API key reads its DLQ entries and the live hosts through the gateway (GET /v1/dlq, GET /v1/hosts)"
	}
	return fmt.Errorf("%s needs an admin credential; %s is %s's%s", cmd.CommandPath(), creds, what, hint)
}

func (g *globals) logger() *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(g.logLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})
	if telemetry.Configured(g.otlpEndpoint) {
		// A job's log lines carry its trace_id and span_id.
		h = telemetry.LogHandler(h)
	}
	return slog.New(h)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// lookupEnvOr is envOr for variables whose empty value means something
// (METRICS_ADDR= disables metrics).
func lookupEnvOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

// signalContext is cancelled on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// dial connects a client command to NATS and gives it a context that ends
// after timeout, or at Ctrl-C (SIGINT) or SIGTERM, so that a command
// following a job says what it leaves behind; done closes both.
func (g *globals) dial(timeout time.Duration) (*client.Client, context.Context, func(), error) {
	c, err := client.Dial(client.NATSURL(g.natsURL), g.clientOptions())
	if err != nil {
		return nil, nil, nil, err
	}
	sctx, stop := signalContext()
	ctx, cancel := context.WithTimeout(sctx, timeout)
	return c, ctx, func() { cancel(); stop(); c.Close() }, nil
}

// clientOptions say who a client command is, and how it reaches NATS.
func (g *globals) clientOptions() client.Options {
	return client.Options{Creds: g.credsFile(), Tenant: g.tenant, TLS: g.tls}
}

// envInt is the integer in key, else def; a value that does not parse is
// def too (the flag's help names the variable).
func envInt(key string, def int) int {
	if v := os.Getenv(key); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

// envDuration is the duration in key, else def; a value that does not
// parse is def too (the flag's help names the variable).
func envDuration(key string, def time.Duration) time.Duration {
	if v := os.Getenv(key); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}
