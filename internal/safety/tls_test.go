package safety

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	"github.com/ward-run/ward/internal/auth"
)

// TestServerMutualTLS: a kernel served with mutual TLS (ward auth init's
// safety.pem, and ca.pem for its clients) decides for a client with ca.pem
// and client.pem, and answers nobody else: not a client without a
// certificate, not one whose certificate another CA signed, not a
// plaintext one, and a client that does not trust the kernel's CA does not
// ask it. Served with TLS only, it answers a client without a certificate.
func TestServerMutualTLS(t *testing.T) {
	p, err := auth.EnsureTLS(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := auth.EnsureTLS(t.TempDir(), nil) // another installation's CA
	if err != nil {
		t.Fatal(err)
	}
	clientTLS := func(f auth.TLSFiles) *tls.Config {
		t.Helper()
		c, err := f.Client()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	check := func(addr string, c *tls.Config) (*safetyv1.CheckResponse, error) {
		// No breaker: each Check asks the kernel.
		cl := dial(t, addr, ClientConfig{TLS: c, Timeout: 2 * time.Second, BreakerFailures: -1})
		return cl.Check(context.Background(), echoJob())
	}

	mutual := startTLSServer(t, p.Safety) // Cert, Key and CA: mutual
	resp, err := check(mutual, clientTLS(p.Client))
	if err != nil {
		t.Fatalf("with ca.pem and client.pem: %v", err)
	}
	if resp.GetDecision() != safetyv1.Decision_DECISION_ALLOW || resp.GetDecisionId() == "" {
		t.Errorf("with ca.pem and client.pem: %v, want ALLOW", resp)
	}
	for _, tc := range []struct {
		name string
		tls  *tls.Config
	}{
		{"no client certificate", clientTLS(auth.TLSFiles{CA: p.CA})},
		{"another CA's client certificate", clientTLS(auth.TLSFiles{CA: p.CA, Cert: stranger.Client.Cert, Key: stranger.Client.Key})},
		{"plaintext", nil},
		{"not trusting the kernel's CA", clientTLS(auth.TLSFiles{CA: stranger.CA, Cert: p.Client.Cert, Key: p.Client.Key})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := check(mutual, tc.tls)
			if err == nil {
				t.Fatalf("answered: %v", resp)
			}
			if !errors.Is(err, ErrUnavailable) {
				t.Errorf("%v, want it to wrap ErrUnavailable (no decision was made)", err)
			}
		})
	}

	t.Run("TLS only", func(t *testing.T) {
		addr := startTLSServer(t, auth.TLSFiles{Cert: p.Safety.Cert, Key: p.Safety.Key})
		if _, err := check(addr, clientTLS(auth.TLSFiles{CA: p.CA})); err != nil {
			t.Errorf("with ca.pem: %v", err)
		}
		if resp, err := check(addr, nil); err == nil {
			t.Errorf("plaintext: answered %v", resp)
		}
	})
}

// startTLSServer serves the default bundle over TLS with f's server
// configuration on a free 127.0.0.1 port and returns its address.
func startTLSServer(t *testing.T, f auth.TLSFiles) string {
	t.Helper()
	cfg, err := f.Server()
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServerTLS(newDefaultKernel(t), cfg)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return lis.Addr().String()
}
