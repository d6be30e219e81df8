package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
)

// TLS files in an authority's directory (`ward auth init`): a small CA,
// and certificates it signed for the NATS servers, the safety kernel and
// the parts as clients (mutual TLS). Keys are ECDSA P-256, written 0600.
const (
	FileCA             = "ca.pem"
	FileCAKey          = "ca-key.pem"
	FileNATSServerCert = "nats-server.pem"
	FileNATSServerKey  = "nats-server-key.pem"
	FileSafetyCert     = "safety.pem"
	FileSafetyKey      = "safety-key.pem"
	FileClientCert     = "client.pem"
	FileClientKey      = "client-key.pem"
)

const (
	caValidity      = 10 * 365 * 24 * time.Hour
	certValidity    = 2 * 365 * 24 * time.Hour
	certRenewBefore = 30 * 24 * time.Hour // EnsureTLS reissues a certificate this close to its end
)

// DefaultTLSHosts are in every server certificate IssueCert writes, beside
// the hosts it is given.
var DefaultTLSHosts = []string{"localhost", "127.0.0.1", "::1"}

// TLSFiles name the PEM files of one end of a TLS link. CA is the CA the
// peer's certificate must chain to: the server's, for a client (empty: the
// system's roots); the clients', for a server, which then requires and
// verifies a client certificate (mutual TLS). Cert and Key are this end's
// own certificate: a server's, or a client's for mutual TLS.
type TLSFiles struct {
	CA, Cert, Key string
}

// IsZero reports whether f names no file: the link is plaintext.
func (f TLSFiles) IsZero() bool { return f == TLSFiles{} }

// Client is f's client configuration (ClientTLS); nil, without error, when
// f is zero.
func (f TLSFiles) Client() (*tls.Config, error) {
	if f.IsZero() {
		return nil, nil
	}
	return ClientTLS(f.CA, f.Cert, f.Key)
}

// Server is f's server configuration (ServerTLS); nil, without error, when
// f is zero.
func (f TLSFiles) Server() (*tls.Config, error) {
	if f.IsZero() {
		return nil, nil
	}
	return ServerTLS(f.Cert, f.Key, f.CA)
}

// NATSOptions are the NATS connection options of f as a client's: TLS to
// the server, verified with f.CA, with f's certificate for a server that
// requires one. None when f is zero.
func (f TLSFiles) NATSOptions() ([]nats.Option, error) {
	c, err := f.Client()
	if err != nil || c == nil {
		return nil, err
	}
	return []nats.Option{nats.Secure(c)}, nil
}

// ClientTLS is a client's TLS configuration: the server's certificate must
// chain to caFile (the system's roots when empty); certFile and keyFile,
// when set, are the client's certificate, for servers that require one.
func ClientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := loadPool(caFile)
		if err != nil {
			return nil, err
		}
		c.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		cert, err := loadKeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// ServerTLS is a server's TLS configuration with the certificate in
// certFile and keyFile. With clientCAFile, it is mutual: a client must
// present a certificate that chains to it, or the handshake fails.
func ServerTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("auth: a TLS server needs a certificate and its key")
	}
	cert, err := loadKeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if clientCAFile != "" {
		if c.ClientCAs, err = loadPool(clientCAFile); err != nil {
			return nil, err
		}
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return c, nil
}

func loadPool(caFile string) (*x509.CertPool, error) {
	b, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("auth: CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("auth: CA %s: no PEM certificate in it", caFile)
	}
	return pool, nil
}

func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	if certFile == "" || keyFile == "" {
		return tls.Certificate{}, errors.New("auth: a TLS certificate needs both its file and its key's")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("auth: TLS certificate %s: %w", certFile, err)
	}
	return cert, nil
}

// IssueCA creates a CA in dir, replacing one that is there (every
// certificate it signed is then worthless): ca.pem, and its key
// ca-key.pem (0600), which only IssueCert reads.
func IssueCA(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"ward"}, CommonName: "ward CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("auth: CA: %w", err)
	}
	return writePair(filepath.Join(dir, FileCA), filepath.Join(dir, FileCAKey), der, key)
}

// IssueCert signs a certificate with the CA in dir (IssueCA) and writes
// it as name.pem and name-key.pem (0600) there, replacing what is there.
// A server certificate is for hosts (names or IP addresses) and
// DefaultTLSHosts; a client certificate is for client authentication and
// names no host. It returns the two files.
func IssueCert(dir, name string, hosts []string, server bool) (certFile, keyFile string, err error) {
	caCert, caKey, err := loadCA(dir)
	if err != nil {
		return "", "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{Organization: []string{"ward"}, CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		for _, h := range tlsHosts(hosts) {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return "", "", fmt.Errorf("auth: certificate %s: %w", name, err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	return certFile, keyFile, writePair(certFile, keyFile, der, key)
}

// TLSPaths are the files EnsureTLS keeps in an authority's directory.
type TLSPaths struct {
	CA string
	// NATSServer is the NATS servers' (its CA: the clients', for mutual
	// TLS), Safety the safety kernel's (likewise), Client the parts'.
	NATSServer, Safety, Client TLSFiles
}

// EnsureTLS makes dir's TLS files (`ward auth init`): the CA unless it is
// there, and each certificate unless one is there that this CA signed,
// that does not expire within 30 days and, for the servers', that names
// every one of hosts.
func EnsureTLS(dir string, hosts []string) (TLSPaths, error) {
	p := TLSPathsIn(dir)
	if _, err := os.Stat(p.CA); errors.Is(err, os.ErrNotExist) {
		if err := IssueCA(dir); err != nil {
			return p, err
		}
	} else if err != nil {
		return p, fmt.Errorf("auth: %w", err)
	}
	pool, err := loadPool(p.CA)
	if err != nil {
		return p, err
	}
	for _, c := range []struct {
		name   string
		files  TLSFiles
		server bool
	}{{"nats-server", p.NATSServer, true}, {"safety", p.Safety, true}, {"client", p.Client, false}} {
		if certValid(c.files, pool, hosts, c.server) {
			continue
		}
		if _, _, err := IssueCert(dir, c.name, hosts, c.server); err != nil {
			return p, err
		}
	}
	return p, nil
}

// TLSPathsIn are the paths of the TLS files EnsureTLS writes in dir.
func TLSPathsIn(dir string) TLSPaths {
	f := func(name string) string { return filepath.Join(dir, name) }
	ca := f(FileCA)
	return TLSPaths{CA: ca,
		NATSServer: TLSFiles{CA: ca, Cert: f(FileNATSServerCert), Key: f(FileNATSServerKey)},
		Safety:     TLSFiles{CA: ca, Cert: f(FileSafetyCert), Key: f(FileSafetyKey)},
		Client:     TLSFiles{CA: ca, Cert: f(FileClientCert), Key: f(FileClientKey)},
	}
}

// certValid reports whether f holds a usable certificate signed by pool,
// good for 30 days more and, for a server's, naming every host.
func certValid(f TLSFiles, pool *x509.CertPool, hosts []string, server bool) bool {
	pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return false
	}
	cert := pair.Leaf
	if cert == nil {
		if cert, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return false
		}
	}
	usage := x509.ExtKeyUsageClientAuth
	if server {
		usage = x509.ExtKeyUsageServerAuth
	}
	at := time.Now().Add(certRenewBefore)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return false
	}
	if server {
		for _, h := range tlsHosts(hosts) {
			if cert.VerifyHostname(h) != nil {
				return false
			}
		}
	}
	return true
}

// tlsHosts is hosts and DefaultTLSHosts, without repeats or blanks.
func tlsHosts(hosts []string) []string {
	var out []string
	for _, h := range append(slices.Clone(hosts), DefaultTLSHosts...) {
		if h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

func loadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, FileCA), filepath.Join(dir, FileCAKey))
	if err != nil {
		return nil, nil, fmt.Errorf("auth: CA in %s (IssueCA, `ward auth init`): %w", dir, err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, fmt.Errorf("auth: CA: %w", err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok || !cert.IsCA {
		return nil, nil, fmt.Errorf("auth: %s is not an ECDSA CA", filepath.Join(dir, FileCA))
	}
	return cert, key, nil
}

// writePair writes a certificate (0644) and its key (0600) as PEM.
func writePair(certFile, keyFile string, der []byte, key *ecdsa.PrivateKey) error {
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := writeFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb})); err != nil {
		return err
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	return nil
}

// serial is a random 128-bit certificate serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}
