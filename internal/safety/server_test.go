package safety

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	"github.com/ward-run/ward/internal/testing/poll"
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
	tb.Cleanup(serve(tb, srv, lis))
	return lis.Addr().String()
}

// serve runs srv on lis and returns what stops it: Shutdown, then Serve's
// return (nil after a Shutdown), each an error of the test's if it fails.
func serve(tb testing.TB, srv *Server, lis net.Listener) (stop func()) {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			tb.Errorf("Serve: %v", err)
		}
	}
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

// BenchmarkGRPCCheck64 is Check over loopback gRPC with 64 callers at once
// (closed loop: each sends its next Check when the last one is answered),
// on the default bundle with its decision cache, as the scheduler calls
// it. The p50 and p99 include the queueing 64 callers cause on this
// machine's cores.
func BenchmarkGRPCCheck64(b *testing.B) {
	c := dial(b, startServer(b), ClientConfig{})
	ctx := context.Background()
	req := echoJob()
	if _, err := c.Check(ctx, req); err != nil {
		b.Fatal(err)
	}
	var (
		mu  sync.Mutex
		all latencies
	)
	b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	all.start()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine latencies
		for pb.Next() {
			start := time.Now()
			if _, err := c.Check(ctx, req); err != nil {
				b.Error(err)
				return
			}
			mine.time(start)
		}
		mu.Lock()
		all.d = append(all.d, mine.d...)
		mu.Unlock()
	})
	all.report(b)
}

// TestGRPCLoad runs the load test `ward policy bench` runs, paced, and
// logs the percentiles (go test -run GRPCLoad -v). It asserts nothing
// about time: it checks that the load generator and the server hold up.
func TestGRPCLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	// No breaker: the Checks the end of one run cuts short would open it
	// for the next.
	c := dial(t, startServer(t), ClientConfig{BreakerFailures: -1, Timeout: 10 * time.Second})
	for _, cfg := range []LoadConfig{
		{Callers: 64, Duration: time.Second, Rate: 500},
		{Callers: 64, Duration: time.Second, Rate: 500, Distinct: 100000},
	} {
		res := Load(context.Background(), c, cfg)
		t.Logf("64 callers, %.0f/s, %d distinct: %s", cfg.Rate, cfg.Distinct, res)
		if res.Errors > 0 || res.Checks == 0 {
			t.Errorf("load test: %s", res)
		}
	}
}

func TestClientExplain(t *testing.T) {
	c := dial(t, startServer(t), ClientConfig{})
	req := echoJob()
	req.Topic = "sys.destroy"
	resp, err := c.Explain(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetResult().GetDecision() != safetyv1.Decision_DECISION_DENY || len(resp.GetFired()) == 0 || resp.GetInput() == "" {
		t.Errorf("Explain = %v", resp)
	}
}

func TestServerNoPolicyIsUnavailable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(NewKernel(Config{}))
	defer serve(t, srv, lis)()
	c := dial(t, lis.Addr().String(), ClientConfig{BreakerFailures: -1})
	if _, err := c.Check(context.Background(), echoJob()); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Check on a kernel without a policy = %v, want ErrUnavailable", err)
	}
}

// TestClientBreaker: a kernel that goes away opens the breaker after
// BreakerFailures Checks, which then fail at once; once it is back, a probe
// after the cooldown closes the breaker.
func TestClientBreaker(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	k := newDefaultKernel(t)
	stop := serve(t, NewServer(k), lis)
	c := dial(t, addr, ClientConfig{Timeout: time.Second, BreakerFailures: 3, BreakerCooldown: 50 * time.Millisecond})
	if _, err := c.Check(context.Background(), echoJob()); err != nil {
		t.Fatal(err)
	}
	if stop(); t.Failed() {
		t.FailNow()
	}
	for i := range 3 {
		if _, err := c.Check(context.Background(), echoJob()); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrBreakerOpen) {
			t.Fatalf("Check %d with the kernel down = %v, want ErrUnavailable from the kernel", i, err)
		}
	}
	if _, err := c.Check(context.Background(), echoJob()); !errors.Is(err, ErrBreakerOpen) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Check after 3 failures = %v, want ErrBreakerOpen", err)
	}

	lis, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer serve(t, NewServer(k), lis)()
	poll.Until(t, 10*time.Second, "a Check answered after the kernel came back", func() bool {
		_, err := c.Check(context.Background(), echoJob())
		if err != nil && !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Check after the kernel came back: %v", err)
		}
		return err == nil
	})
}

// TestBreakerStates: threshold unavailable Checks in a row open the
// breaker (an answer between them resets the count; an error the kernel
// answered with is an answer); open, it lets nothing through; after the
// cooldown, one Check at a time probes: unavailable, it opens again;
// answered, it closes.
func TestBreakerStates(t *testing.T) {
	const cooldown = 20 * time.Millisecond
	b := newBreaker(2, cooldown)
	down := fmt.Errorf("%w: connection refused", ErrUnavailable)
	denied := errors.New("safety: check: the kernel answered with an error")
	check := func(outcome error) {
		t.Helper()
		done, err := b.Allow()
		if err != nil {
			t.Fatalf("a Check was refused in state %s: %v", b.State(), err)
		}
		done(outcome)
	}
	refused := func() bool {
		_, err := b.Allow()
		return err != nil
	}
	check(down)
	check(nil) // an answer resets the count
	check(down)
	check(denied) // so does an error of the kernel's
	check(down)
	if b.State() != gobreaker.StateClosed {
		t.Fatalf("one failure in a row: %s, want closed", b.State())
	}
	check(down) // the second in a row: open
	if b.State() != gobreaker.StateOpen || !refused() {
		t.Fatalf("two failures in a row: %s, want open and refusing", b.State())
	}
	// The cooldown over: one probe, and only one.
	poll.Until(t, 5*time.Second, "half-open after the cooldown", func() bool { return b.State() == gobreaker.StateHalfOpen })
	done, err := b.Allow()
	if err != nil || !refused() {
		t.Fatalf("half-open: the probe %v, a second Check let through", err)
	}
	done(down) // the probe fails: open again
	if b.State() != gobreaker.StateOpen {
		t.Fatalf("after a failed probe: %s, want open", b.State())
	}
	poll.Until(t, 5*time.Second, "half-open again", func() bool { return b.State() == gobreaker.StateHalfOpen })
	check(nil) // the probe answered: closed
	if b.State() != gobreaker.StateClosed || refused() {
		t.Fatalf("after an answered probe: %s, want closed", b.State())
	}
}

func TestClientFailOpen(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	c := dial(t, addr, ClientConfig{Timeout: time.Second, FailOpen: true})
	resp, err := c.Check(context.Background(), echoJob())
	if err != nil || resp.GetDecision() != safetyv1.Decision_DECISION_ALLOW_UNCHECKED ||
		len(resp.GetReasons()) != 1 || !strings.Contains(resp.GetReasons()[0], "fail mode open") {
		t.Fatalf("Check with the kernel down, failing open = %v, %v", resp, err)
	}
	// A kernel that answers with an error is no reason to fail open.
	k := newKernel(t, bundle(t, map[string]string{"ward.rego": "package ward.safety\n\nconstraints := {\"bogus\": 1}\n"}), Config{})
	lis, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer serve(t, NewServer(k), lis)()
	c = dial(t, lis.Addr().String(), ClientConfig{FailOpen: true})
	if resp, err := c.Check(context.Background(), echoJob()); err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("Check on a failing policy = %v, %v; want the kernel's error", resp, err)
	}
}

// TestClientSeveralKernels: a client of two kernels keeps getting answers
// while one of them is gone, every one of them.
func TestClientSeveralKernels(t *testing.T) {
	a := startServer(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(newDefaultKernel(t))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	c := dial(t, a+","+lis.Addr().String(), ClientConfig{Timeout: 2 * time.Second})
	ctx := context.Background()
	for range 10 {
		if _, err := c.Check(ctx, echoJob()); err != nil {
			t.Fatalf("with both kernels: %v", err)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	// (Its CheckStream was open: Shutdown ended it, and returned.) The
	// client finds the second one gone; the checks go to the first.
	failed := 0
	for range 50 {
		if _, err := c.Check(ctx, echoJob()); err != nil {
			failed++
		}
	}
	// A check sent to the gone kernel before the client noticed is tried
	// again on the other (the retry policy): none fails.
	if failed > 0 {
		t.Errorf("%d of 50 checks failed with one of two kernels gone", failed)
	}
	if _, err := Dial("127.0.0.1:1,not-an-address", ClientConfig{}); err == nil {
		t.Error("a kernel list with a bad address dialled")
	}
}

// TestCheckStream: the client's checks go over one CheckStream, many in
// flight at once, and each gets its own decision: allowed jobs and denied
// ones interleaved, none answered with another's.
func TestCheckStream(t *testing.T) {
	c := dial(t, startServer(t), ClientConfig{})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for i := range 400 {
		wg.Go(func() {
			req := echoJob()
			req.JobId = fmt.Sprintf("job-%d", i)
			want := safetyv1.Decision_DECISION_ALLOW
			if i%2 == 1 {
				req.Topic, want = "sys.destroy", safetyv1.Decision_DECISION_DENY
			}
			resp, err := c.Check(ctx, req)
			switch {
			case err != nil:
				errs <- fmt.Errorf("%s: %w", req.JobId, err)
			case resp.GetDecision() != want:
				errs <- fmt.Errorf("%s (%s): %s %q, want %s", req.JobId, req.Topic, resp.GetDecision(), resp.GetReasons(), want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(c.streams.slots); n != 1 {
		t.Errorf("%d streams to one kernel, want 1", n)
	}
	if c.streams.unary.Load() {
		t.Error("the client fell back to a call a check with a kernel that serves CheckStream")
	}
}

// unaryOnly is a kernel older than CheckStream: Check and Explain only.
type unaryOnly struct {
	safetyv1.UnimplementedSafetyKernelServer
	h handler
}

func (u unaryOnly) Check(ctx context.Context, req *safetyv1.CheckRequest) (*safetyv1.CheckResponse, error) {
	return u.h.Check(ctx, req)
}

// TestCheckStreamOlderKernel: a kernel that does not serve CheckStream is
// asked with Check, a call each, and its decisions stand.
func TestCheckStreamOlderKernel(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	safetyv1.RegisterSafetyKernelServer(srv, unaryOnly{h: handler{k: newDefaultKernel(t)}})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	c := dial(t, lis.Addr().String(), ClientConfig{})
	for range 3 {
		resp, err := c.Check(context.Background(), echoJob())
		if err != nil || resp.GetDecision() != safetyv1.Decision_DECISION_ALLOW {
			t.Fatalf("a check of a kernel without CheckStream: %v %v", resp.GetDecision(), err)
		}
	}
	if !c.streams.unary.Load() {
		t.Error("the client did not fall back to Check")
	}
}
