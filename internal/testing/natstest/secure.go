package natstest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	nstest "github.com/nats-io/nats-server/v2/test"

	"github.com/ward-run/ward/internal/auth"
)

// Secure is a NATS server with JetStream that trusts a fresh authority,
// the way `ward dev` runs: every client needs a credential, and each role
// has its permissions.
type Secure struct {
	URL    string
	Server *server.Server
	Auth   *auth.Authority
	t      testing.TB
	dir    string
}

// StartSecure runs a NATS server with JetStream and auth on, its store and
// keys in t.TempDir().
func StartSecure(t testing.TB) *Secure {
	t.Helper()
	dir := t.TempDir()
	a, err := auth.Init(filepath.Join(dir, "auth"))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := a.ServerKeys()
	if err != nil {
		t.Fatal(err)
	}
	opts := nstest.DefaultTestOptions
	opts.Port = -1
	opts.JetStream = true
	opts.StoreDir = filepath.Join(dir, "js")
	if err := keys.Apply(&opts); err != nil {
		t.Fatal(err)
	}
	ns := nstest.RunServer(&opts)
	t.Cleanup(ns.Shutdown)
	return &Secure{URL: ns.ClientURL(), Server: ns, Auth: a, t: t, dir: dir}
}

// Creds issues a credential for role and name and returns the path of its
// .creds file.
func (s *Secure) Creds(role auth.Role, name string, o ...auth.IssueOptions) string {
	s.t.Helper()
	var opt auth.IssueOptions
	if len(o) > 0 {
		opt = o[0]
	}
	b, err := s.Auth.Issue(role, name, opt)
	if err != nil {
		s.t.Fatal(err)
	}
	f, err := os.CreateTemp(s.dir, string(role)+"-*.creds")
	if err != nil {
		s.t.Fatal(err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return f.Name()
}
