package assembly

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/safety"
)

// DevCreds are the credentials of the parts that run on one machine, as
// .creds files in one directory (`ward dev`, the end-to-end tests).
type DevCreds struct {
	Dir string
	// Admin is the operator's credential, which the CLI uses by default;
	// Tenant is DefaultTenant's.
	Admin, Tenant           string
	Scheduler, Safety, Host string
	HostID                  string
	DispatchSecret, HostKey []byte
}

// DevTenant is the tenant `ward dev` issues a credential for.
const DevTenant = "default"

// IssueDevCreds writes into dir a credential for each part, for hostID
// (which may serve any pool and claim GPUs), for the admin and for
// DevTenant. A credential already there is kept, unless it carries other
// permissions than this version grants its role (a state directory of an
// older `ward dev`, before a subject was added): it is issued again.
func IssueDevCreds(a *auth.Authority, dir, hostID string) (DevCreds, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return DevCreds{}, fmt.Errorf("node: %w", err)
	}
	secret, _ := a.DispatchSecret()
	c := DevCreds{Dir: dir, HostID: hostID, DispatchSecret: secret, HostKey: auth.HostKey(secret, hostID)}
	for _, it := range []struct {
		path *string
		role auth.Role
		name string
		o    auth.IssueOptions
	}{
		{&c.Admin, auth.Admin, "admin", auth.IssueOptions{}},
		{&c.Tenant, auth.Tenant, DevTenant, auth.IssueOptions{}},
		{&c.Scheduler, auth.Scheduler, "scheduler", auth.IssueOptions{}},
		{&c.Safety, auth.Safety, "safety", auth.IssueOptions{}},
		{&c.Host, auth.Host, hostID, auth.IssueOptions{GPU: true}},
	} {
		*it.path = filepath.Join(dir, CredsFile(it.role, it.name))
		if _, _, err := auth.ReadIdentity(*it.path); err == nil {
			if auth.UpToDate(*it.path, it.role, it.name) {
				continue
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return DevCreds{}, err
		}
		b, err := a.Issue(it.role, it.name, it.o)
		if err != nil {
			return DevCreds{}, err
		}
		if err := os.WriteFile(*it.path, b, 0o600); err != nil {
			return DevCreds{}, fmt.Errorf("node: %w", err)
		}
	}
	return c, nil
}

// natsOptions are a part's NATS options: its credential and its TLS.
func natsOptions(creds string, tls auth.TLSFiles) ([]nats.Option, error) {
	opts, err := auth.Options(creds)
	if err != nil {
		return nil, err
	}
	t, err := tls.NATSOptions()
	return append(opts, t...), err
}

// tlsMode says how a server's TLS files secure it, for its log.
func tlsMode(f auth.TLSFiles) string {
	switch {
	case f.IsZero():
		return "off"
	case f.CA != "":
		return "mutual"
	}
	return "on"
}

// CredsFile is the file name of role name's credential: admin.creds,
// tenant-<name>.creds, host-<name>.creds, scheduler.creds, safety.creds.
func CredsFile(role auth.Role, name string) string {
	switch role {
	case auth.Tenant, auth.Host:
		return string(role) + "-" + name + ".creds"
	}
	return string(role) + ".creds"
}

// SigningKeys are the files of the keys that sign what admins push: module
// versions (ed25519, modreg) and policy bundles (OPA bundle signing).
// Hosts trust ModulePub, kernels PolicyPub.
type SigningKeys struct {
	ModuleKey, ModulePub string
	PolicyKey, PolicyPub string
}

// Names of the signing key files in an authority's directory.
const (
	ModuleKeyFile = "module.key"
	ModulePubFile = "module.pub"
	PolicyKeyFile = "policy.key"
	PolicyPubFile = "policy.pub"
)

// EnsureSigningKeys creates the signing keys in dir unless they are there.
func EnsureSigningKeys(dir string) (SigningKeys, error) {
	k := SigningKeys{
		ModuleKey: filepath.Join(dir, ModuleKeyFile), ModulePub: filepath.Join(dir, ModulePubFile),
		PolicyKey: filepath.Join(dir, PolicyKeyFile), PolicyPub: filepath.Join(dir, PolicyPubFile),
	}
	for _, pair := range []struct {
		priv, pub string
		gen       func() ([]byte, []byte, error)
	}{{k.ModuleKey, k.ModulePub, modreg.GenerateKey}, {k.PolicyKey, k.PolicyPub, safety.GeneratePolicyKey}} {
		if _, err := os.Stat(pair.priv); err == nil {
			continue
		}
		priv, pub, err := pair.gen()
		if err != nil {
			return k, err
		}
		if err := os.WriteFile(pair.priv, priv, 0o600); err != nil {
			return k, fmt.Errorf("node: %w", err)
		}
		if err := os.WriteFile(pair.pub, pub, 0o644); err != nil {
			return k, fmt.Errorf("node: %w", err)
		}
	}
	return k, nil
}

// auditLog is the audit log's JetStream for a part that records the admin
// actions it carries out (schedulers, kernels): it creates the stream
// when it is missing (audit.Create; a part may not update it). A log that
// cannot be reached now is logged, not fatal: each record that fails is
// logged again.
func auditLog(ctx context.Context, c *bus.Conn, log *slog.Logger) jetstream.JetStream {
	js, err := jetstream.New(c.NATS())
	if err != nil {
		log.Warn("no audit log: admin actions carried out here are not recorded", "err", err)
		return nil
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := audit.Create(actx, js); err != nil {
		log.Warn("the audit log could not be opened now; records will be tried as actions come", "err", err)
	}
	return js
}
