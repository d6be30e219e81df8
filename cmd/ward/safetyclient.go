package main

import (
	"crypto/tls"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/safety"
)

// safetyClientFlags configure how a scheduler asks the safety kernel
// (`ward scheduler`, `ward dev`).
type safetyClientFlags struct {
	timeout         time.Duration
	failMode        string
	breakerFailures int
	breakerCooldown time.Duration
}

func (s *safetyClientFlags) register(f *pflag.FlagSet) {
	f.DurationVar(&s.timeout, "safety-timeout", safety.DefaultTimeout,
		"timeout of one safety check; past it the kernel counts as unavailable")
	f.StringVar(&s.failMode, "safety-fail-mode", envOr("SAFETY_FAIL_MODE", "closed"),
		"when the kernel cannot be asked: closed (the job is DENIED safety_unavailable) or open (it runs unchecked) ($SAFETY_FAIL_MODE)")
	f.IntVar(&s.breakerFailures, "safety-breaker-failures", safety.DefaultBreakerFailures,
		"unavailable checks in a row that open the circuit breaker, which then fails checks at once; negative disables it")
	f.DurationVar(&s.breakerCooldown, "safety-breaker-cooldown", safety.DefaultBreakerCooldown,
		"how long the open breaker waits before one check probes the kernel")
}

func (s *safetyClientFlags) config() (safety.ClientConfig, error) {
	cfg := safety.ClientConfig{Timeout: s.timeout, BreakerFailures: s.breakerFailures, BreakerCooldown: s.breakerCooldown}
	switch s.failMode {
	case "closed":
	case "open":
		cfg.FailOpen = true
	default:
		return cfg, fmt.Errorf("--safety-fail-mode %q: want closed or open", s.failMode)
	}
	if cfg.BreakerFailures == 0 {
		cfg.BreakerFailures = -1 // 0 would mean the default: say what was asked
	}
	return cfg, nil
}

// safetyTLSFlags are the client side of TLS to the safety kernel (`ward
// scheduler`, `ward policy eval --kernel`, `ward policy bench`). Without
// them the client speaks plaintext, as `ward dev`'s scheduler always does
// to its loopback kernel.
type safetyTLSFlags struct{ files auth.TLSFiles }

func (s *safetyTLSFlags) register(f *pflag.FlagSet) {
	f.StringVar(&s.files.CA, "safety-tls-ca", os.Getenv("SAFETY_TLS_CA"),
		"speak TLS to the safety kernel: the CA file its certificate must chain to (ward auth init's ca.pem) ($SAFETY_TLS_CA)")
	f.StringVar(&s.files.Cert, "safety-tls-cert", os.Getenv("SAFETY_TLS_CLIENT_CERT"),
		"client certificate for a kernel that requires one (--grpc-tls-client-ca; ward auth init's client.pem) ($SAFETY_TLS_CLIENT_CERT)")
	f.StringVar(&s.files.Key, "safety-tls-key", os.Getenv("SAFETY_TLS_CLIENT_KEY"),
		"the key of --safety-tls-cert (ward auth init's client-key.pem) ($SAFETY_TLS_CLIENT_KEY)")
}

// config is the client's TLS configuration; nil (plaintext) without flags.
func (s *safetyTLSFlags) config() (*tls.Config, error) { return s.files.Client() }
