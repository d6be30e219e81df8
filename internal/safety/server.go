package safety

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
)

// Server serves a Kernel as the ward.safety.v1.SafetyKernel gRPC service
// (Check, Explain), alongside the standard grpc.health.v1 Health service,
// which reports SERVING for "" and for the SafetyKernel service until
// Shutdown.
type Server struct {
	grpc   *grpc.Server
	health *health.Server
}

// NewServer returns a Server for k that speaks plaintext: anyone who
// reaches its port may call it. Call Serve to accept connections.
func NewServer(k *Kernel) *Server { return NewServerTLS(k, nil) }

// NewServerTLS returns a Server for k that speaks TLS with cfg
// (auth.ServerTLS); with cfg.ClientAuth tls.RequireAndVerifyClientCert,
// only clients with a certificate from cfg.ClientCAs get past the
// handshake. A nil cfg is plaintext, as NewServer.
func NewServerTLS(k *Kernel, cfg *tls.Config) *Server {
	opts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(recoverUnary),
		// A pool of stream workers instead of a goroutine per Check:
		// it cuts the CPU each Check costs. (grpc-go shares each
		// connection's write buffer across writes by default.)
		grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))),
	}
	if cfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg)))
	}
	s := &Server{grpc: grpc.NewServer(opts...), health: health.NewServer()}
	safetyv1.RegisterSafetyKernelServer(s.grpc, handler{k: k})
	healthpb.RegisterHealthServer(s.grpc, s.health)
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(safetyv1.SafetyKernel_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	return s
}

// Serve accepts connections on lis until Shutdown. It returns nil after
// Shutdown, and an error if lis fails or the Server was already shut down.
func (s *Server) Serve(lis net.Listener) error {
	if err := s.grpc.Serve(lis); err != nil {
		return fmt.Errorf("safety: serve: %w", err)
	}
	return nil
}

// Shutdown marks the services NOT_SERVING, stops accepting connections and
// waits for in-flight Checks to finish. When ctx ends first, it closes every
// connection at once and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.health.Shutdown()
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.grpc.Stop()
		<-done
		return fmt.Errorf("safety: shutdown: %w", ctx.Err())
	}
}

// handler adapts Kernel to the generated service interface.
type handler struct {
	safetyv1.UnimplementedSafetyKernelServer
	k *Kernel
}

func (h handler) Check(ctx context.Context, req *safetyv1.CheckRequest) (*safetyv1.CheckResponse, error) {
	resp, err := h.k.Check(ctx, req)
	if err != nil {
		return nil, statusError(err)
	}
	return resp, nil
}

func (h handler) Explain(ctx context.Context, req *safetyv1.CheckRequest) (*safetyv1.ExplainResponse, error) {
	resp, err := h.k.Explain(ctx, req)
	if err != nil {
		return nil, statusError(err)
	}
	return resp, nil
}

// statusError maps a Kernel error to a gRPC status: the caller's own
// cancellation or deadline as such, no policy as Unavailable (the kernel
// cannot decide yet), anything else as Internal.
func statusError(err error) error {
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	case errors.Is(err, ErrNoPolicy):
		return status.Error(codes.Unavailable, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

// recoverUnary turns a panic in a handler into an Internal error, so one bad
// request cannot take the kernel down for every other job.
func recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, status.Errorf(codes.Internal, "safety: panic in %s: %v", info.FullMethod, r)
		}
	}()
	return next(ctx, req)
}
