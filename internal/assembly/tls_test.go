package assembly_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats-server/v2/server"
	nstest "github.com/nats-io/nats-server/v2/test"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/safety"
)

// TestTLSEveryLink runs the parts as production does with TLS on every
// link that may leave the machine: NATS on the nats-server.conf of `ward
// auth init --tls-verify` (mutual TLS, and a credential per part), and the
// kernel's gRPC over mutual TLS (safety.pem, client certificates from
// ca.pem). A job is decided through that link and runs; a scheduler
// without a client certificate gets no decision from the kernel, and its
// job is denied safety_unavailable (fail closed).
func TestTLSEveryLink(t *testing.T) {
	dir := t.TempDir()
	a, err := auth.Init(filepath.Join(dir, "auth"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := auth.EnsureTLS(a.Dir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := a.ServerConfig("127.0.0.1:-1", filepath.Join(dir, "js"),
		&auth.NATSServerTLS{Cert: p.NATSServer.Cert, Key: p.NATSServer.Key, CA: p.CA, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	confFile := filepath.Join(dir, auth.FileServerConfig)
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	nopts, err := server.ProcessConfigFile(confFile)
	if err != nil {
		t.Fatal(err)
	}
	nopts.NoSigs, nopts.NoLog = true, true
	ns := nstest.RunServer(nopts)
	t.Cleanup(ns.Shutdown)
	url := ns.ClientURL()

	creds, err := assembly.IssueDevCreds(a, filepath.Join(dir, "creds"), "tls-host")
	if err != nil {
		t.Fatal(err)
	}
	store := openRedis(t)
	ctx := context.Background()
	stop := func(name string, shutdown func(context.Context) error) {
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := shutdown(sctx); err != nil {
				t.Errorf("shutdown %s: %v", name, err)
			}
		})
	}

	kernel, err := assembly.StartSafety(ctx, assembly.SafetyConfig{NATSURL: url, Creds: creds.Safety, NATSTLS: p.Client,
		TLS: p.Safety}) // safety.pem, and ca.pem for the clients: mutual
	if err != nil {
		t.Fatal(err)
	}
	stop("safety", kernel.Shutdown)
	clientTLS, err := p.Client.Client()
	if err != nil {
		t.Fatal(err)
	}
	sched, err := assembly.StartScheduler(ctx, assembly.SchedulerConfig{NATSURL: url, Store: store, Creds: creds.Scheduler,
		NATSTLS: p.Client, DispatchSecret: creds.DispatchSecret,
		SafetyAddr: kernel.Addr(), SafetyClient: safety.ClientConfig{TLS: clientTLS}})
	if err != nil {
		t.Fatal(err)
	}
	schedStopped := false
	stop("scheduler", func(ctx context.Context) error {
		if schedStopped {
			return nil
		}
		return sched.Shutdown(ctx)
	})
	h, err := assembly.StartHost(ctx, assembly.HostConfig{ID: creds.HostID, NATSURL: url, Creds: creds.Host,
		NATSTLS: p.Client, DispatchKey: creds.HostKey, Modules: echoModules(t), CacheDir: cacheDir,
		MaxParallel: 2, HeartbeatInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stop("host", h.Shutdown)
	c, err := client.Dial(url, client.Options{Creds: creds.Admin, TLS: p.Client})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	checkFor(t, 10*time.Second, func() bool { return sched.Hosts().Len() >= 1 })

	rec := submitAndWait(t, c, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: []byte(`{"over":"tls"}`)})
	if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || string(rec.GetResult()) != `{"over":"tls"}` {
		t.Fatalf("job ended %s/%s with %q, want SUCCEEDED", rec.GetState(), rec.GetReason(), rec.GetResult())
	}
	if s := rec.GetSafety(); s.GetDecision() != "ALLOW" || s.GetDecisionId() == "" || s.GetPolicyRevision() != kernel.Kernel().Revision() {
		t.Errorf("safety decision %+v, want the kernel's ALLOW", s)
	}

	// A second replica that trusts the kernel but has no client
	// certificate: the kernel does not answer it, and it fails closed.
	// The first one stops taking work, so that the second gets the job.
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	schedStopped = true
	if err := sched.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	noCert, err := auth.TLSFiles{CA: p.CA}.Client()
	if err != nil {
		t.Fatal(err)
	}
	outsider, err := assembly.StartScheduler(ctx, assembly.SchedulerConfig{NATSURL: url, Store: store, Creds: creds.Scheduler,
		NATSTLS: p.Client, DispatchSecret: creds.DispatchSecret,
		SafetyAddr: kernel.Addr(), SafetyClient: safety.ClientConfig{TLS: noCert, Timeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	stop("scheduler without a client certificate", outsider.Shutdown)
	rec = submitAndWait(t, c, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: []byte(`{}`)})
	if rec.GetState() != wardv1.JobState_JOB_STATE_DENIED || rec.GetReason() != "safety_unavailable" {
		t.Errorf("job of the scheduler without a client certificate ended %s/%s, want DENIED/safety_unavailable",
			rec.GetState(), rec.GetReason())
	}
}

// submitAndWait submits req through c and returns the job once it ended.
func submitAndWait(t *testing.T, c *client.Client, req *wardv1.JobRequest) *wardv1.JobRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req.JobId = uuid.NewString()
	w, err := c.Watch(req.JobId)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := c.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(ctx, req.JobId, w, nil); err != nil {
		t.Fatal(err)
	}
	rec, err := c.Get(ctx, req.JobId, true)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestTLSRedisURL: a rediss:// URL makes the store speak TLS to Redis
// (go-redis's ParseURL, through jobstore.OpenRedis), verifying the
// server's name; redis:// speaks plaintext. The "server" here only reads
// what the client sends first: no TLS Redis is needed.
func TestTLSRedisURL(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	first := make(chan string, 16) // what each connection began with
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				r := bufio.NewReader(conn)
				b, err := r.Peek(1)
				if err != nil {
					return
				}
				if b[0] != 0x16 { // not a TLS handshake record
					report(first, fmt.Sprintf("plaintext %q", b))
					return
				}
				_ = tls.Server(peeked{conn, r}, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
					report(first, "TLS to "+h.ServerName)
					return nil, errors.New("no TLS Redis here")
				}}).Handshake()
			}()
		}
	}()
	port := lis.Addr().(*net.TCPAddr).Port

	for _, tc := range []struct{ url, want string }{
		{fmt.Sprintf("rediss://localhost:%d", port), "TLS to localhost"},
		{fmt.Sprintf("redis://localhost:%d", port), `plaintext "*"`}, // a RESP command
	} {
		if _, _, err := assembly.OpenStore(context.Background(), tc.url, false); err == nil {
			t.Fatalf("%s: opened a store on a server that is not Redis", tc.url)
		}
		select {
		case got := <-first:
			if got != tc.want {
				t.Errorf("%s began with %s, want %s", tc.url, got, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: nothing reached the server", tc.url)
		}
		for len(first) > 0 { // the client's retries
			<-first
		}
	}
}

func report(ch chan<- string, s string) {
	select {
	case ch <- s:
	default:
	}
}

// peeked is a connection whose first bytes were peeked at through r.
type peeked struct {
	net.Conn
	r *bufio.Reader
}

func (p peeked) Read(b []byte) (int, error) { return p.r.Read(b) }
