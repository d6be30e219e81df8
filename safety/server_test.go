package safety

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
)

// startServer serves the default bundle on a free 127.0.0.1 port and returns
// its address; the server is shut down when the test ends.
func startServer(tb testing.TB) string {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := NewServer(newDefaultKernel(tb))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			tb.Errorf("Serve: %v", err)
		}
	})
	return lis.Addr().String()
}

func dial(tb testing.TB, addr string, cfg ClientConfig) *Client {
	tb.Helper()
	c, err := Dial(addr, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

func TestServerClient(t *testing.T) {
	c := dial(t, startServer(t), ClientConfig{})
	ctx := context.Background()

	resp, err := c.Check(ctx, echoJob())
	if err != nil {
		t.Fatalf("Check(job.echo): %v", err)
	}
	if resp.GetDecision() != safetyv1.Decision_DECISION_ALLOW || resp.GetPolicyRevision() == "" || resp.GetDecisionId() == "" {
		t.Errorf("Check(job.echo) = %v, want ALLOW with revision and decision id", resp)
	}

	resp, err = c.Check(ctx, &safetyv1.CheckRequest{Topic: "sys.destroy"})
	if err != nil {
		t.Fatalf("Check(sys.destroy): %v", err)
	}
	want := []string{"tenant_id is required", "topic sys.destroy is forbidden"}
	if resp.GetDecision() != safetyv1.Decision_DECISION_DENY || !slices.Equal(resp.GetReasons(), want) {
		t.Errorf("Check(sys.destroy) = %v %q, want DENY %q", resp.GetDecision(), resp.GetReasons(), want)
	}
}

func TestServerHealth(t *testing.T) {
	conn, err := grpc.NewClient(startServer(t), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	for _, svc := range []string{"", safetyv1.SafetyKernel_ServiceDesc.ServiceName} {
		resp, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			t.Fatalf("health %q: %v", svc, err)
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health %q = %v, want SERVING", svc, resp.GetStatus())
		}
	}
}

func TestServerShutdownStopsServing(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(newDefaultKernel(t))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	c := dial(t, lis.Addr().String(), ClientConfig{Timeout: 5 * time.Second})
	if _, err := c.Check(context.Background(), echoJob()); err != nil {
		t.Fatal(err)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve after Shutdown: %v", err)
	}
	if _, err := c.Check(context.Background(), echoJob()); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Check after Shutdown = %v, want ErrUnavailable", err)
	}
}

func TestClientClosedPort(t *testing.T) {
	// Take a free port, then close it, so nothing listens there.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()

	const timeout = 2 * time.Second
	c := dial(t, addr, ClientConfig{Timeout: timeout})
	start := time.Now()
	resp, err := c.Check(context.Background(), echoJob())
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Check = %v, %v; want ErrUnavailable", resp, err)
	}
	// Generous bound: it must give up within its own timeout, not hang.
	if d := time.Since(start); d > timeout+time.Second {
		t.Errorf("Check took %s with a %s timeout", d, timeout)
	}
}

func TestClientCallerDeadline(t *testing.T) {
	c := dial(t, startServer(t), ClientConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Check(ctx, echoJob()); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Check with a cancelled context = %v, want ErrUnavailable", err)
	}
}

func TestDialNegativeTimeout(t *testing.T) {
	if c, err := Dial("127.0.0.1:1", ClientConfig{Timeout: -time.Second}); err == nil {
		c.Close()
		t.Error("Dial with a negative timeout succeeded")
	}
}

func BenchmarkGRPCCheck(b *testing.B) {
	c := dial(b, startServer(b), ClientConfig{})
	ctx := context.Background()
	req := echoJob()
	if _, err := c.Check(ctx, req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Check(ctx, req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
