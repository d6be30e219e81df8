package auth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	nstest "github.com/nats-io/nats-server/v2/test"
	"github.com/nats-io/nats.go"

	"github.com/ward-run/ward/internal/auth"
)

// TestEnsureTLS: ward auth init's TLS files are a CA and three
// certificates it signed, the keys 0600; a second run keeps them, and a
// new --tls-host reissues the servers' certificates only.
func TestEnsureTLS(t *testing.T) {
	dir := t.TempDir()
	p, err := auth.EnsureTLS(dir, []string{"nats.internal", "10.1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{auth.FileCAKey, auth.FileNATSServerKey, auth.FileSafetyKey, auth.FileClientKey} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	cert := readCert(t, p.NATSServer.Cert)
	for _, h := range []string{"nats.internal", "10.1.2.3", "localhost", "127.0.0.1", "::1"} {
		if err := cert.VerifyHostname(h); err != nil {
			t.Errorf("the NATS server's certificate: %v", err)
		}
	}
	if pub, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("the NATS server's key is %v, want ECDSA P-256", cert.PublicKeyAlgorithm)
	}
	if client := readCert(t, p.Client.Cert); len(client.DNSNames)+len(client.IPAddresses) != 0 ||
		len(client.ExtKeyUsage) != 1 || client.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
		t.Errorf("the client certificate names %v %v, usage %v", client.DNSNames, client.IPAddresses, client.ExtKeyUsage)
	}

	before := map[string]string{}
	for _, f := range []string{p.CA, p.NATSServer.Cert, p.Safety.Cert, p.Client.Cert} {
		before[f] = readFile(t, f)
	}
	if _, err := auth.EnsureTLS(dir, []string{"nats.internal"}); err != nil {
		t.Fatal(err)
	}
	for f, b := range before {
		if readFile(t, f) != b {
			t.Errorf("%s was rewritten though it was good", filepath.Base(f))
		}
	}
	if _, err := auth.EnsureTLS(dir, []string{"nats-2.internal"}); err != nil {
		t.Fatal(err)
	}
	for f, b := range before {
		changed := readFile(t, f) != b
		if want := f == p.NATSServer.Cert || f == p.Safety.Cert; changed != want {
			t.Errorf("%s rewritten: %t, want %t", filepath.Base(f), changed, want)
		}
	}
	if err := readCert(t, p.Safety.Cert).VerifyHostname("nats-2.internal"); err != nil {
		t.Errorf("the reissued kernel certificate: %v", err)
	}
}

// TestNATSServerTLS runs a nats-server on the configuration ward auth init
// writes with --tls and with --tls-verify (nats-server.conf, read as
// nats-server reads it), and connects as the parts do: with ca.pem it
// works; without it the server's certificate is not trusted; with
// --tls-verify a client needs a certificate from ca.pem as well as its
// credential.
func TestNATSServerTLS(t *testing.T) {
	dir := t.TempDir()
	a, err := auth.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := auth.EnsureTLS(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := auth.EnsureTLS(t.TempDir(), nil) // another installation's CA
	if err != nil {
		t.Fatal(err)
	}
	creds := writeTemp(t, must(a.Issue(auth.Admin, "admin", auth.IssueOptions{})))

	for _, verify := range []bool{false, true} {
		name := map[bool]string{false: "tls", true: "tls-verify"}[verify]
		t.Run(name, func(t *testing.T) {
			url := runConf(t, a, &auth.NATSServerTLS{Cert: p.NATSServer.Cert, Key: p.NATSServer.Key, CA: p.CA, Verify: verify})
			connect := func(f auth.TLSFiles) error {
				opts, err := auth.Options(creds)
				if err != nil {
					t.Fatal(err)
				}
				tlsOpts, err := f.NATSOptions()
				if err != nil {
					t.Fatal(err)
				}
				nc, err := nats.Connect(url, append(append(opts, tlsOpts...), nats.NoReconnect(), nats.Timeout(5*time.Second))...)
				if err != nil {
					return err
				}
				defer nc.Close()
				if !nc.TLSRequired() {
					t.Error("connected, but not over TLS")
				}
				if _, err := nc.TLSConnectionState(); err != nil {
					t.Errorf("connected, but: %v", err)
				}
				return nc.Flush()
			}
			// The parts' own: ca.pem and client.pem.
			if err := connect(p.Client); err != nil {
				t.Fatalf("with ca.pem and client.pem: %v", err)
			}
			// Without ca.pem: the system's roots do not know this CA.
			if err := connect(auth.TLSFiles{}); err == nil || !strings.Contains(err.Error(), "certificate") {
				t.Errorf("without ca.pem: %v, want a certificate error", err)
			}
			// A client certificate of another CA.
			foreign := auth.TLSFiles{CA: p.CA, Cert: stranger.Client.Cert, Key: stranger.Client.Key}
			noCert := auth.TLSFiles{CA: p.CA}
			if verify {
				// The server refuses the handshake; how the client learns
				// it (an alert, or a closed connection) is a matter of timing.
				if err := connect(noCert); err == nil {
					t.Error("--tls-verify: connected without a client certificate")
				}
				if err := connect(foreign); err == nil {
					t.Error("--tls-verify: connected with another CA's client certificate")
				}
			} else if err := connect(noCert); err != nil {
				t.Errorf("--tls: with ca.pem only: %v", err)
			}
		})
	}
}

// runConf runs a NATS server on the configuration a writes with tls, read
// back from its file, and returns its URL.
func runConf(t *testing.T, a *auth.Authority, tls *auth.NATSServerTLS) string {
	t.Helper()
	conf, err := a.ServerConfig("127.0.0.1:-1", t.TempDir(), tls)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(conf, "tls {") || !strings.Contains(conf, "verify: "+map[bool]string{false: "false", true: "true"}[tls.Verify]) {
		t.Fatalf("nats-server.conf without its tls block:\n%s", conf)
	}
	file := filepath.Join(t.TempDir(), auth.FileServerConfig)
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(file)
	if err != nil {
		t.Fatalf("nats-server.conf: %v\n%s", err, conf)
	}
	opts.NoSigs, opts.NoLog = true, true
	ns := nstest.RunServer(opts)
	t.Cleanup(ns.Shutdown)
	return ns.ClientURL()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode([]byte(readFile(t, path)))
	if block == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
