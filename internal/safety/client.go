package safety

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/sony/gobreaker/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
)

// ErrUnavailable is wrapped by every Client.Check error that means the
// kernel could not be reached, did not answer in time, or the circuit
// breaker is open: no decision was made. The scheduler maps it to the
// reason code safety_unavailable and fails closed (or, configured so,
// open). Other Check errors mean the kernel answered with an error; they
// must always be treated as a denial.
var ErrUnavailable = errors.New("safety: kernel unavailable")

// ErrBreakerOpen is wrapped, with ErrUnavailable, by the Checks that the
// open circuit breaker failed without asking the kernel.
var ErrBreakerOpen = errors.New("safety: circuit breaker open")

// Client defaults, for a ClientConfig that leaves a field zero.
const (
	DefaultTimeout         = 2 * time.Second
	DefaultBreakerFailures = 5
	DefaultBreakerCooldown = time.Second
)

var (
	clientErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_safety_client_errors_total",
		Help: "Failed safety Check calls, by kind (timeout: no answer in time; unavailable: the kernel could not be reached; breaker_open: failed at once by the open circuit breaker; error: the kernel answered with an error).",
	}, []string{"kind"})
	clientSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "ward_safety_client_call_duration_seconds",
		Help:    "Duration of safety Check calls as the client sees them, failures included.",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2, 17), // 50µs to ~3s
	})
	breakerState = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "ward_safety_client_breaker_state",
		Help: "The safety client's circuit breaker: 0 closed, 1 open, 2 half-open (one Check probing the kernel).",
	})
	breakerOpens = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_safety_client_breaker_opens_total",
		Help: "Times the safety client's circuit breaker opened.",
	})
	failOpenTotal = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_safety_client_fail_open_total",
		Help: "Checks a fail-open client answered ALLOW_UNCHECKED because the kernel could not be asked.",
	})

	timeoutTotal     = clientErrors.WithLabelValues("timeout")
	unavailableTotal = clientErrors.WithLabelValues("unavailable")
	breakerOpenTotal = clientErrors.WithLabelValues("breaker_open")
	answerErrorTotal = clientErrors.WithLabelValues("error")
)

// ClientConfig configures a Client. The zero value is ready to use.
type ClientConfig struct {
	// Timeout bounds each Check call, on top of the caller's context.
	// Zero means DefaultTimeout.
	Timeout time.Duration
	// BreakerFailures is how many Checks in a row must find the kernel
	// unavailable to open the circuit breaker. While it is open, Checks
	// fail at once, sparing each job a timeout; after BreakerCooldown one
	// Check probes the kernel, and closes the breaker if it answers. Zero
	// means DefaultBreakerFailures; negative disables the breaker.
	BreakerFailures int
	// BreakerCooldown is how long the breaker stays open before a probe.
	// Zero means DefaultBreakerCooldown.
	BreakerCooldown time.Duration
	// FailOpen makes Check answer DECISION_ALLOW_UNCHECKED, with the
	// reason, instead of an ErrUnavailable error when the kernel cannot be
	// asked: jobs then run unchecked, without constraints. Errors the
	// kernel answers with are still errors. The default, fail closed, is
	// the safe one.
	FailOpen bool
	// TLS, when set, makes the Client speak TLS to the kernel (a kernel
	// served with NewServerTLS): RootCAs verify the kernel's certificate,
	// Certificates are the client's own for a kernel that requires one
	// (auth.ClientTLS). Nil speaks plaintext.
	TLS *tls.Config
}

// Client calls a remote safety kernel. It is safe for concurrent use.
type Client struct {
	conn     *grpc.ClientConn
	rpc      safetyv1.SafetyKernelClient
	streams  *streams // Check's path (stream.go)
	timeout  time.Duration
	breaker  *gobreaker.TwoStepCircuitBreaker[struct{}] // nil when disabled
	failOpen bool
}

// Dial returns a Client for the kernel at addr (host:port), or for several
// kernels (host:port,host:port,...: each check goes to one that is
// connected, round robin, so that losing one kernel costs only the checks
// in flight on it). It does not wait for a connection: one is made on the
// first Check, and remade as needed, retrying at least every second, so
// that a restarted kernel is found again within about a second.
func Dial(addr string, cfg ClientConfig) (*Client, error) {
	if cfg.Timeout < 0 || cfg.BreakerCooldown < 0 {
		return nil, fmt.Errorf("safety: dial %s: negative timeout %s or cooldown %s", addr, cfg.Timeout, cfg.BreakerCooldown)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.BreakerFailures == 0 {
		cfg.BreakerFailures = DefaultBreakerFailures
	}
	if cfg.BreakerCooldown == 0 {
		cfg.BreakerCooldown = DefaultBreakerCooldown
	}
	creds := insecure.NewCredentials()
	if cfg.TLS != nil {
		creds = credentials.NewTLS(cfg.TLS)
	}
	target, opts := addr, []grpc.DialOption(nil)
	kernels := strings.Split(addr, ",")
	if len(kernels) > 1 {
		// Several kernels: every check goes to one that answers (round
		// robin over those connected), so that losing one costs only the
		// checks in flight on it.
		var as []resolver.Address
		for _, k := range kernels {
			k = strings.TrimSpace(k)
			host, _, err := net.SplitHostPort(k)
			if err != nil {
				return nil, fmt.Errorf("safety: dial %s: %q: %w", addr, k, err)
			}
			as = append(as, resolver.Address{Addr: k, ServerName: host})
		}
		r := manual.NewBuilderWithScheme("ward-safety")
		r.InitialState(resolver.State{Addresses: as})
		target = r.Scheme() + ":///kernels"
		opts = append(opts, grpc.WithResolvers(r), grpc.WithDefaultServiceConfig(kernelsServiceConfig))
	}
	conn, err := grpc.NewClient(target, append(opts,
		grpc.WithTransportCredentials(creds),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: cfg.Timeout,
		}),
	)...)
	if err != nil {
		return nil, fmt.Errorf("safety: dial %s: %w", addr, err)
	}
	c := &Client{conn: conn, rpc: safetyv1.NewSafetyKernelClient(conn), timeout: cfg.Timeout, failOpen: cfg.FailOpen}
	c.streams = newStreams(c.rpc, len(kernels)) // a stream to each kernel
	if cfg.BreakerFailures > 0 {
		c.breaker = newBreaker(cfg.BreakerFailures, cfg.BreakerCooldown)
	}
	return c, nil
}

// kernelsServiceConfig is the service config with several kernels: round
// robin over those connected, and a check that fails UNAVAILABLE (its
// kernel died under it: the connection reset) is tried again, on the
// next kernel the balancer picks, within the check's timeout. A check
// reads and writes nothing but the kernel's cache, so asking twice is
// safe.
const kernelsServiceConfig = `{
  "loadBalancingConfig": [{"round_robin": {}}],
  "methodConfig": [{
    "name": [{"service": "ward.safety.v1.SafetyKernel"}],
    "retryPolicy": {
      "maxAttempts": 3,
      "initialBackoff": "0.01s",
      "maxBackoff": "0.1s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
}`

// Check asks the kernel for a decision on req. An error wraps ErrUnavailable
// when the kernel could not be reached or did not answer within the
// Client's timeout or ctx, or the breaker is open; see ErrUnavailable. A
// Client that fails open answers DECISION_ALLOW_UNCHECKED instead.
func (c *Client) Check(ctx context.Context, req *safetyv1.CheckRequest) (*safetyv1.CheckResponse, error) {
	resp, err := c.check(ctx, req)
	if err != nil && c.failOpen && errors.Is(err, ErrUnavailable) {
		failOpenTotal.Inc()
		return &safetyv1.CheckResponse{
			Decision: safetyv1.Decision_DECISION_ALLOW_UNCHECKED,
			Reasons:  []string{"admitted unchecked (fail mode open): " + err.Error()},
		}, nil
	}
	return resp, err
}

func (c *Client) check(ctx context.Context, req *safetyv1.CheckRequest) (*safetyv1.CheckResponse, error) {
	// done reports the Check's outcome to the breaker: an error that is
	// not ErrUnavailable was the kernel's answer (IsSuccessful).
	done := func(error) {}
	if c.breaker != nil {
		var err error
		if done, err = c.breaker.Allow(); err != nil {
			breakerOpenTotal.Inc()
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, ErrBreakerOpen)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	start := time.Now()
	resp, err := c.streams.check(ctx, req)
	clientSeconds.Observe(time.Since(start).Seconds())
	err = c.classify(err)
	done(err)
	if err != nil {
		return nil, err
	}
	if resp.GetDecision() == safetyv1.Decision_DECISION_UNSPECIFIED {
		answerErrorTotal.Inc()
		return nil, errors.New("safety: check: kernel returned no decision")
	}
	return resp, nil
}

// Explain asks the kernel to explain its decision on req (see
// Kernel.Explain). It does not go through the breaker.
func (c *Client) Explain(ctx context.Context, req *safetyv1.CheckRequest) (*safetyv1.ExplainResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.rpc.Explain(ctx, req)
	if err := c.classify(err); err != nil {
		return nil, err
	}
	return resp, nil
}

// classify wraps a call error, counting it.
func (c *Client) classify(err error) error {
	if err == nil {
		return nil
	}
	switch status.Code(err) {
	case codes.DeadlineExceeded:
		timeoutTotal.Inc()
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case codes.Unavailable, codes.Canceled:
		unavailableTotal.Inc()
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	answerErrorTotal.Inc()
	return fmt.Errorf("safety: check: %w", err)
}

// Close closes the connection. Checks in flight fail with ErrUnavailable.
func (c *Client) Close() error {
	c.streams.close()
	if err := c.conn.Close(); err != nil {
		return fmt.Errorf("safety: close: %w", err)
	}
	return nil
}

// Breaker states, as the ward_safety_client_breaker_state gauge shows them.
const (
	breakerClosed   = 0
	breakerOpen     = 1
	breakerHalfOpen = 2
)

// newBreaker returns a consecutive-failures circuit breaker (sony/gobreaker,
// two-step: the Check reports its outcome itself): threshold Checks in a
// row that find the kernel unavailable open it; while open, Checks fail
// at once; after cooldown one Check at a time probes the kernel, and the
// first that is answered closes it, the first that is not opens it again.
func newBreaker(threshold int, cooldown time.Duration) *gobreaker.TwoStepCircuitBreaker[struct{}] {
	return gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        "safety",
		MaxRequests: 1,
		Timeout:     cooldown,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= uint32(threshold) },
		// The kernel answered (a decision, or an error of its own): it is up.
		IsSuccessful: func(err error) bool { return !errors.Is(err, ErrUnavailable) },
		OnStateChange: func(_ string, _, to gobreaker.State) {
			switch to {
			case gobreaker.StateOpen:
				breakerState.Set(breakerOpen)
				breakerOpens.Inc()
			case gobreaker.StateHalfOpen:
				breakerState.Set(breakerHalfOpen)
			default:
				breakerState.Set(breakerClosed)
			}
		},
	})
}
