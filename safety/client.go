package safety

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
)

// ErrUnavailable is wrapped by every Client.Check error that means the
// kernel could not be reached or did not answer in time: no decision was
// made. The scheduler maps it to the reason code safety_unavailable and, by
// default, fails closed. Other Check errors mean the kernel answered with
// an error; they must always be treated as a denial.
var ErrUnavailable = errors.New("safety: kernel unavailable")

// DefaultTimeout is the per-call timeout of a Client whose ClientConfig
// leaves Timeout zero.
const DefaultTimeout = 2 * time.Second

var (
	clientErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_safety_client_errors_total",
		Help: "Failed safety Check calls, by kind (unavailable: no answer from the kernel; error: the kernel answered with an error).",
	}, []string{"kind"})
	clientSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "ward_safety_client_call_duration_seconds",
		Help:    "Duration of safety Check calls as the client sees them, failures included.",
		Buckets: prometheus.ExponentialBuckets(100e-6, 2, 16), // 100µs to ~3s
	})

	unavailableTotal = clientErrors.WithLabelValues("unavailable")
	answerErrorTotal = clientErrors.WithLabelValues("error")
)

// ClientConfig configures a Client. The zero value is ready to use.
type ClientConfig struct {
	// Timeout bounds each Check call, on top of the caller's context.
	// Zero means DefaultTimeout.
	Timeout time.Duration
}

// Client calls a remote safety kernel. It is safe for concurrent use.
type Client struct {
	conn    *grpc.ClientConn
	rpc     safetyv1.SafetyKernelClient
	timeout time.Duration
}

// Dial returns a Client for the kernel at addr (host:port). It does not
// wait for a connection: one is made on the first Check, and remade as
// needed.
func Dial(addr string, cfg ClientConfig) (*Client, error) {
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("safety: dial %s: negative timeout %s", addr, cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("safety: dial %s: %w", addr, err)
	}
	return &Client{
		conn:    conn,
		rpc:     safetyv1.NewSafetyKernelClient(conn),
		timeout: cfg.Timeout,
	}, nil
}

// Check asks the kernel for a decision on req. An error wraps ErrUnavailable
// when the kernel could not be reached or did not answer within the
// Client's timeout or ctx; see ErrUnavailable.
func (c *Client) Check(ctx context.Context, req *safetyv1.CheckRequest) (*safetyv1.CheckResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	start := time.Now()
	resp, err := c.rpc.Check(ctx, req)
	clientSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		switch status.Code(err) {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
			unavailableTotal.Inc()
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		answerErrorTotal.Inc()
		return nil, fmt.Errorf("safety: check: %w", err)
	}
	if resp.GetDecision() == safetyv1.Decision_DECISION_UNSPECIFIED {
		answerErrorTotal.Inc()
		return nil, errors.New("safety: check: kernel returned no decision")
	}
	return resp, nil
}

// Close closes the connection. Checks in flight fail with ErrUnavailable.
func (c *Client) Close() error {
	if err := c.conn.Close(); err != nil {
		return fmt.Errorf("safety: close: %w", err)
	}
	return nil
}
