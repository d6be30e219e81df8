package safety

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"

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
	quit   chan struct{} // closed by Shutdown: the CheckStreams end
	once   sync.Once
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
	s := &Server{grpc: grpc.NewServer(opts...), health: health.NewServer(), quit: make(chan struct{})}
	safetyv1.RegisterSafetyKernelServer(s.grpc, handler{k: k, quit: s.quit})
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
	// A CheckStream lasts as long as its scheduler: it is ended, its
	// checks in flight answered, and the scheduler asks its next checks
	// on a stream to another kernel.
	s.once.Do(func() { close(s.quit) })
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
	k    *Kernel
	quit <-chan struct{} // Server.quit
}

func (h handler) Check(ctx context.Context, req *safetyv1.CheckRequest) (*safetyv1.CheckResponse, error) {
	resp, err := h.k.Check(ctx, req)
	if err != nil {
		return nil, statusError(err)
	}
	return resp, nil
}

// streamParallel bounds the checks of one CheckStream decided at once:
// a slow evaluation holds up no other, and a caller that sends faster
// than the kernel decides is slowed down, not queued without bound.
const streamParallel = 64

// CheckStream decides each CheckCall as Check does, on a goroutine of its
// own (streamParallel at once at most), and answers it with its id. It
// ends when the caller ends it, or at Shutdown (Unavailable), once the
// checks in flight are answered.
func (h handler) CheckStream(stream safetyv1.SafetyKernel_CheckStreamServer) error {
	ctx := stream.Context()
	var (
		sendMu sync.Mutex // a stream's Send is not safe for concurrent use
		wg     sync.WaitGroup
		slots  = make(chan struct{}, streamParallel)
		calls  = make(chan *safetyv1.CheckCall)
		ended  = make(chan error, 1)
	)
	go func() { // Recv blocks: it runs apart, so that Shutdown ends the stream
		for {
			call, err := stream.Recv()
			if err != nil {
				ended <- err
				return
			}
			select {
			case calls <- call:
			case <-ctx.Done(): // the handler returned
				return
			}
		}
	}()
	defer wg.Wait() // no Send after the handler returns
	for {
		select {
		case call := <-calls:
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				res := h.decide(ctx, call)
				sendMu.Lock()
				defer sendMu.Unlock()
				// A failed Send means the stream is gone: the caller asks
				// again.
				_ = stream.Send(res)
			})
		case err := <-ended:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case <-h.quit:
			return status.Error(codes.Unavailable, "safety: the kernel is shutting down")
		}
	}
}

// decide answers one call of a CheckStream; a panic in the kernel is an
// Internal error, as recoverUnary makes it for Check.
func (h handler) decide(ctx context.Context, call *safetyv1.CheckCall) (res *safetyv1.CheckResult) {
	res = &safetyv1.CheckResult{Id: call.GetId()}
	if call.GetRequest() == nil {
		res.Code, res.Message = int32(codes.InvalidArgument), "safety: a CheckCall without its request"
		return res
	}
	defer func() {
		if r := recover(); r != nil {
			res.Response, res.Code, res.Message = nil, int32(codes.Internal), fmt.Sprintf("safety: panic in CheckStream: %v", r)
		}
	}()
	resp, err := h.Check(ctx, call.GetRequest())
	if err != nil {
		st := status.Convert(err)
		res.Code, res.Message = int32(st.Code()), st.Message()
		return res
	}
	res.Response = resp
	return res
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
