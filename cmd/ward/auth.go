package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/apikey"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
)

// defaultStateDir is where `ward dev` keeps its keys and credentials:
// $XDG_STATE_HOME/ward/dev, else ~/.local/state/ward/dev.
func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "ward", "dev")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "ward", "dev")
	}
	return filepath.Join(os.TempDir(), "ward-dev")
}

// credsFile is the credential a client command connects with: --creds,
// else $WARD_CREDS, else the admin credential in $WARD_AUTH_DIR (where
// `ward auth init` wrote it), else the one `ward dev` wrote (so that the
// tour works without flags), else none.
func (g *globals) credsFile() string {
	if g.creds != "" {
		return g.creds
	}
	// The installation's keys, where `ward auth init` wrote them, as the
	// signing keys are found (defaultKeyFile).
	if dir := os.Getenv("WARD_AUTH_DIR"); dir != "" {
		if p := filepath.Join(dir, assembly.CredsFile(auth.Admin, "admin")); fileExists(p) {
			return p
		}
	}
	dir := envOr("WARD_STATE_DIR", defaultStateDir())
	p := filepath.Join(dir, "creds", assembly.CredsFile(auth.Admin, "admin"))
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

// defaultKeyFile is name in $WARD_AUTH_DIR if it is there, else in the
// auth directory of `ward dev`'s state, else "".
func defaultKeyFile(name string) string {
	for _, dir := range []string{os.Getenv("WARD_AUTH_DIR"), filepath.Join(envOr("WARD_STATE_DIR", defaultStateDir()), "auth")} {
		if dir == "" {
			continue
		}
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	return ""
}

// connect dials NATS for a command that speaks to the bus directly, with
// the command's credential.
func (g *globals) connect(name string) (*bus.Conn, error) {
	opts, err := g.natsOptions(g.credsFile())
	if err != nil {
		return nil, err
	}
	return bus.Connect(client.NATSURL(g.natsURL), name, opts...)
}

// natsOptions are the NATS options of a connection with creds, over TLS
// as the global flags say.
func (g *globals) natsOptions(creds string) ([]nats.Option, error) {
	opts, err := auth.Options(creds)
	if err != nil {
		return nil, err
	}
	tls, err := g.tls.NATSOptions()
	return append(opts, tls...), err
}

// actor names who does an admin action, for the audit log: the
// credential's name.
func (g *globals) actor() string {
	if f := g.credsFile(); f != "" {
		if id, _, err := auth.ReadIdentity(f); err == nil {
			return string(id.Role) + ":" + id.Name
		}
	}
	if u := os.Getenv("USER"); u != "" {
		return "insecure:" + u
	}
	return "insecure"
}

func newAuthCmd(g *globals) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Keys and credentials: the operator, tenants, hosts, the gateway's API keys (see README, \"Security\")",
		Long: `auth manages Ward's trust on the bus: an operator and the WARD account
(NATS nkeys and JWTs), one credential per part and tenant with the subject
permissions of its role, and the schedulers' secret of signed dispatch;
and the HTTP gateway's API keys (ward auth key, in NATS: --dir does not
apply). Keys live in --dir (default $WARD_AUTH_DIR, else ./ward-auth; for
every command but init, when ./ward-auth holds none, the keys of ` + "`ward dev`" + `
in its state directory, so that a tenant or host added there is trusted by
the running ward dev).`,
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", envOr("WARD_AUTH_DIR", "ward-auth"), "directory of the keys ($WARD_AUTH_DIR)")
	load := func() (*auth.Authority, error) {
		a, err := auth.Load(dir)
		if !errors.Is(err, auth.ErrNoAuthority) || cmd.PersistentFlags().Changed("dir") || os.Getenv("WARD_AUTH_DIR") != "" {
			return a, err
		}
		dev := filepath.Join(envOr("WARD_STATE_DIR", defaultStateDir()), "auth")
		if a, derr := auth.Load(dev); derr == nil {
			fmt.Fprintf(os.Stderr, "ward: %s holds no keys: using ward dev's, in %s\n", dir, dev)
			return a, nil
		}
		return nil, fmt.Errorf("no keys in %s, nor ward dev's in %s: `ward auth init` makes them for a new installation; --dir or $WARD_AUTH_DIR names where they are",
			dir, dev)
	}
	cmd.AddCommand(newAuthInitCmd(&dir), newAuthTenantCmd(g, load), newAuthHostCmd(g, load), newAuthKeyCmd(g))
	return cmd
}

func newAuthInitCmd(dir *string) *cobra.Command {
	var (
		listen, storeDir  string
		tlsHosts          []string
		useTLS, tlsVerify bool
	)
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create the keys, a nats-server configuration and the credentials of the control plane",
		Long: `init creates (or, when they exist, keeps) the operator, the system and WARD
accounts with a signing key, the schedulers' dispatch secret, and writes:

  nats-server.conf   a configuration for a real nats-server that trusts them
  module.key/.pub    the key ward module deploy signs with; hosts trust module.pub
  policy.key/.pub    the key ward policy push signs with; kernels trust policy.pub
  admin.creds        the operator's credential (policy push, module deploy, every tenant)
  scheduler.creds    for ward scheduler, with dispatch.secret (--dispatch-secret)
  safety.creds       for ward safety
  ca.pem             a CA (its key ca-key.pem) that signed the TLS certificates:
  nats-server.pem    the NATS servers' (key nats-server-key.pem),
  safety.pem         the safety kernels' (key safety-key.pem), both for
                     localhost, 127.0.0.1, ::1 and every --tls-host,
  client.pem         and the parts' and the CLI's as clients (key client-key.pem)

nats-server.conf speaks TLS with --tls, and requires client certificates
from ca.pem (mutual TLS) with --tls-verify; every part and command then
connects with --tls-ca ca.pem (and --tls-cert client.pem --tls-key
client-key.pem). The kernel's gRPC speaks TLS as ward safety's --grpc-tls-*
flags say, whatever --tls is. Certificates are kept across runs unless they
lack a --tls-host, expire within 30 days or were not signed by ca.pem.

Give each tenant and host its own: ward auth tenant add, ward auth host add.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := auth.Init(*dir)
			if err != nil {
				return err
			}
			signing, err := assembly.EnsureSigningKeys(a.Dir())
			if err != nil {
				return err
			}
			paths, err := auth.EnsureTLS(a.Dir(), tlsHosts)
			if err != nil {
				return err
			}
			var serverTLS *auth.NATSServerTLS
			if useTLS || tlsVerify {
				abs, err := absTLS(paths.NATSServer)
				if err != nil {
					return err
				}
				serverTLS = &auth.NATSServerTLS{Cert: abs.Cert, Key: abs.Key, CA: abs.CA, Verify: tlsVerify}
			}
			conf, err := a.ServerConfig(listen, storeDir, serverTLS)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if err := os.WriteFile(filepath.Join(*dir, auth.FileServerConfig), []byte(conf), 0o600); err != nil {
				return err
			}
			for _, it := range []struct {
				role auth.Role
				name string
			}{{auth.Admin, "admin"}, {auth.Scheduler, "scheduler"}, {auth.Safety, "safety"}} {
				p := filepath.Join(*dir, assembly.CredsFile(it.role, it.name))
				if _, err := os.Stat(p); err == nil && auth.UpToDate(p, it.role, it.name) {
					continue // kept, unless an older version issued it with other permissions
				}
				b, err := a.Issue(it.role, it.name, auth.IssueOptions{})
				if err != nil {
					return err
				}
				if err := os.WriteFile(p, b, 0o600); err != nil {
					return err
				}
			}
			fmt.Fprintf(out, "keys in %s\n", *dir)
			fmt.Fprintf(out, "  nats-server -c %s\n", filepath.Join(*dir, auth.FileServerConfig))
			fmt.Fprintf(out, "  ward scheduler --creds %s --dispatch-secret %s\n", filepath.Join(*dir, "scheduler.creds"), filepath.Join(*dir, "dispatch.secret"))
			fmt.Fprintf(out, "  ward safety --creds %s\n", filepath.Join(*dir, "safety.creds"))
			fmt.Fprintf(out, "  ward host --creds host-NAME.creds --dispatch-key host-NAME.key --trusted-key %s   (ward auth host add NAME)\n", signing.ModulePub)
			fmt.Fprintf(out, "  ward safety --policy-pubkey %s\n", signing.PolicyPub)
			fmt.Fprintf(out, "  WARD_AUTH_DIR=%s WARD_CREDS=%s ward policy push | ward module deploy ...   (signed with %s, %s)\n",
				*dir, filepath.Join(*dir, "admin.creds"), assembly.PolicyKeyFile, assembly.ModuleKeyFile)
			c := paths.Client
			if serverTLS != nil {
				fmt.Fprintf(out, "NATS speaks TLS: every part and command with --tls-ca %s", c.CA)
				if tlsVerify {
					fmt.Fprintf(out, " --tls-cert %s --tls-key %s", c.Cert, c.Key)
				}
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "the kernel's gRPC over mutual TLS:\n")
			fmt.Fprintf(out, "  ward safety --grpc-tls-cert %s --grpc-tls-key %s --grpc-tls-client-ca %s\n", paths.Safety.Cert, paths.Safety.Key, paths.Safety.CA)
			fmt.Fprintf(out, "  ward scheduler --safety-tls-ca %s --safety-tls-cert %s --safety-tls-key %s\n", c.CA, c.Cert, c.Key)
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "0.0.0.0:4222", "client listen address written into nats-server.conf")
	cmd.Flags().StringVar(&storeDir, "store-dir", "/var/lib/nats", "JetStream store directory written into nats-server.conf")
	cmd.Flags().BoolVar(&useTLS, "tls", false, "nats-server.conf requires TLS, with nats-server.pem (clients: --tls-ca ca.pem)")
	cmd.Flags().BoolVar(&tlsVerify, "tls-verify", false, "nats-server.conf requires TLS and a client certificate from ca.pem (mutual TLS; clients: --tls-cert client.pem --tls-key client-key.pem too)")
	cmd.Flags().StringSliceVar(&tlsHosts, "tls-host", nil, "host names and addresses the NATS servers and safety kernels are reached by, put in their certificates beside localhost, 127.0.0.1 and ::1 (comma-separated, repeatable)")
	return cmd
}

func newAuthTenantCmd(g *globals, load func() (*auth.Authority, error)) *cobra.Command {
	cmd := &cobra.Command{Use: "tenant", Short: "Add, list and revoke tenants' credentials"}
	var out, reason string
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Write a tenant's .creds file; the servers accept it at once, without a restart",
		Long: `add writes a tenant's .creds file; the servers accept it at once, without a
restart. A tenant revoked before (ward auth tenant revoke) is reinstated:
the gateway's API keys may be added for it again (its old ones stay
revoked), which needs NATS and the admin credential.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := load()
			if err != nil {
				return err
			}
			_, wasRevoked, err := a.Issued(auth.Tenant)
			if err != nil {
				return err
			}
			b, err := a.Issue(auth.Tenant, args[0], auth.IssueOptions{})
			if err != nil {
				return err
			}
			if out == "" {
				out = assembly.CredsFile(auth.Tenant, args[0])
			}
			if err := os.WriteFile(out, b, 0o600); err != nil {
				return err
			}
			g.audit(audit.TenantAdd, args[0], nil)
			fmt.Fprintf(cmd.OutOrStdout(), "tenant %s: %s (give it to the tenant: WARD_CREDS=%s ward submit ...)\n", args[0], out, out)
			g.reinstateTenantKeys(cmd, args[0], wasRevoked[args[0]])
			return nil
		},
	}
	add.Flags().StringVarP(&out, "output", "o", "", "file to write (default tenant-NAME.creds)")
	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke everything a tenant holds: its credentials (its connections are cut) and its API keys, at once",
		Long: `revoke revokes everything tenant NAME holds, at once:

  - its NATS credentials: it adds their keys to the account's revocations
    and pushes the account to the running servers, which cut the tenant's
    connections (and rewrites nats-server.conf for a restart);
  - its API keys: it marks the tenant revoked in the gateway's key bucket
    (` + apikey.Bucket + `), so that every gateway replica refuses every key
    of the tenant as soon as its watch delivers the mark, and refuses new
    keys for it, then revokes each of its keys (who and why recorded, as
    ward auth key revoke does). This part needs NATS and the admin
    credential (--creds); run the command again if it could not be done.

ward auth tenant add NAME reinstates the tenant (its old keys stay revoked).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.revokeTenant(cmd, load, args[0], reason)
		},
	}
	revoke.Flags().StringVar(&reason, "reason", "", "why: kept with the revoked API keys and in the audit log")
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the tenants issued a credential here",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := load()
			if err != nil {
				return err
			}
			names, revoked, err := a.Issued(auth.Tenant)
			if err != nil {
				return err
			}
			for _, n := range names {
				state := "active"
				if revoked[n] {
					state = "revoked"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\n", n, state)
			}
			return nil
		},
	}
	cmd.AddCommand(add, revoke, ls)
	return cmd
}

func newAuthHostCmd(g *globals, load func() (*auth.Authority, error)) *cobra.Command {
	cmd := &cobra.Command{Use: "host", Short: "Admit hosts: a credential naming the host and its pools, and its dispatch key"}
	var (
		pools  []string
		gpu    bool
		outDir string
	)
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Write host-NAME.creds and host-NAME.key for `ward host --creds ... --dispatch-key ...`",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := load()
			if err != nil {
				return err
			}
			name := args[0]
			b, err := a.Issue(auth.Host, name, auth.IssueOptions{Pools: pools, GPU: gpu})
			if err != nil {
				return err
			}
			creds := filepath.Join(outDir, assembly.CredsFile(auth.Host, name))
			key := filepath.Join(outDir, "host-"+name+".key")
			secret, _ := a.DispatchSecret()
			if err := os.WriteFile(creds, b, 0o600); err != nil {
				return err
			}
			if err := os.WriteFile(key, []byte(hex.EncodeToString(auth.HostKey(secret, name))+"\n"), 0o600); err != nil {
				return err
			}
			g.audit(audit.HostAdd, name, map[string]string{"pools": strings.Join(pools, ","), "gpu": fmt.Sprint(gpu)})
			fmt.Fprintf(cmd.OutOrStdout(), "host %s: ward host --id %s --creds %s --dispatch-key %s\n", name, name, creds, key)
			return nil
		},
	}
	add.Flags().StringSliceVar(&pools, "pools", nil, "pools the host may serve (default: any)")
	add.Flags().BoolVar(&gpu, "gpu", false, "the host may claim GPU capabilities")
	add.Flags().StringVarP(&outDir, "output-dir", "o", ".", "directory to write the files to")
	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a host's credentials and cut its connections at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.revoke(cmd, load, auth.Host, args[0], audit.HostRevoke)
		},
	}
	cmd.AddCommand(add, revoke)
	return cmd
}

// revoke revokes role name's credentials, pushes the account to the
// running servers with the system account's credential, and rewrites
// nats-server.conf so that a restarted server keeps the revocation.
func (g *globals) revoke(cmd *cobra.Command, load func() (*auth.Authority, error), role auth.Role, name, action string) error {
	a, err := load()
	if err != nil {
		return err
	}
	pushed, err := g.revokeCreds(cmd, a, role, name)
	if err == nil && pushed {
		g.audit(action, string(role)+":"+name, nil)
	}
	return err
}

// revokeTenant is ward auth tenant revoke: the tenant's credentials, as
// revoke does, then its API keys. A tenant with API keys and no
// credential issued here (a tenant of the gateway alone) is revoked too.
func (g *globals) revokeTenant(cmd *cobra.Command, load func() (*auth.Authority, error), name, reason string) error {
	if err := auth.ValidName("tenant", name); err != nil {
		return err
	}
	a, err := load()
	if err != nil {
		return err
	}
	issued, _, err := a.Issued(auth.Tenant)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	hasCreds := slices.Contains(issued, name)
	var credsErr error
	pushed := false
	if hasCreds {
		pushed, credsErr = g.revokeCreds(cmd, a, auth.Tenant, name)
	} else {
		fmt.Fprintf(out, "no NATS credential of tenant %s was issued here (%s)\n", name, a.Dir())
	}
	keys, keysErr := g.revokeTenantKeys(cmd, name, reason, hasCreds)
	if keysErr != nil {
		keysErr = fmt.Errorf("the API keys of tenant %s: %w (run ward auth tenant revoke %s again, with NATS up and --creds an admin's)", name, keysErr, name)
	}
	if pushed || keys >= 0 {
		detail := map[string]string{}
		if reason != "" {
			detail["reason"] = reason
		}
		if keys >= 0 {
			detail["api_keys"] = strconv.Itoa(keys)
		}
		g.audit(audit.TenantRevoke, string(auth.Tenant)+":"+name, detail)
	}
	return errors.Join(credsErr, keysErr)
}

// revokeTenantKeys marks tenant revoked in the API key bucket and revokes
// its keys (apikey.Store.RevokeTenant), auditing each key. It returns how
// many it revoked now, -1 when it did nothing. A tenant that has neither
// credentials here (hasCreds) nor keys is refused: a typo is not marked.
func (g *globals) revokeTenantKeys(cmd *cobra.Command, tenant, reason string, hasCreds bool) (int, error) {
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	s, js, done, err := g.openKeysJS(ctx)
	if err != nil {
		return -1, err
	}
	defer done()
	recs, err := s.List(ctx, tenant)
	if err != nil {
		return -1, err
	}
	if _, marked := s.TenantRevoked(tenant); !hasCreds && !marked && len(recs) == 0 {
		return -1, fmt.Errorf("no tenant %q was issued here, and it has no API keys", tenant)
	}
	by := g.actor()
	tr, revoked, err := s.RevokeTenant(ctx, tenant, by, reason)
	out := cmd.OutOrStdout()
	if tr.Tenant != "" {
		fmt.Fprintf(out, "API keys of tenant %s: refused by every gateway (revoked at %s by %s); new keys refused until ward auth tenant add %s\n",
			tenant, tr.RevokedAt.Local().Format(time.DateTime), tr.RevokedBy, tenant)
	}
	ids := make([]string, len(revoked))
	if err := audit.Ensure(ctx, js); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "audit log not written: %v\n", err)
		js = nil
	}
	for i, rec := range revoked {
		ids[i] = rec.Prefix()
		if js == nil {
			continue
		}
		e := audit.Entry{Actor: by, Action: audit.APIKeyRevoke, Target: rec.Prefix(),
			Detail: map[string]string{"tenant": rec.Tenant, "reason": rec.RevokedReason}}
		if aerr := audit.Record(ctx, js, e); aerr != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "audit log not written: %v\n", aerr)
		}
	}
	fmt.Fprintf(out, "revoked %d API key(s) of tenant %s%s\n", len(revoked), tenant, listSuffix(ids))
	return len(revoked), err
}

// reinstateTenantKeys lifts tenant's mark in the API key bucket, if it
// has one (ward auth tenant add of a revoked tenant). Unreachable NATS is
// said only when the tenant was revoked here (wasRevoked): its new keys
// stay refused until this is done.
func (g *globals) reinstateTenantKeys(cmd *cobra.Command, tenant string, wasRevoked bool) {
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	s, done, err := g.openKeys(ctx)
	if err == nil {
		defer done()
		var ok bool
		var revoked []apikey.Record
		ok, revoked, err = s.ReinstateTenant(ctx, tenant, g.actor())
		if ok {
			fmt.Fprintf(cmd.OutOrStdout(), "API keys of tenant %s: reinstated, new keys may be added (its old keys stay revoked; %d more revoked now)\n", tenant, len(revoked))
		}
	}
	if err != nil && wasRevoked {
		fmt.Fprintf(cmd.ErrOrStderr(), "the API key bucket was not reached (%v): new API keys of tenant %s stay refused until ward auth tenant add %s reaches it\n", err, tenant, tenant)
	}
}

func listSuffix(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ": " + strings.Join(ids, ", ")
}

// revokeCreds revokes role name's credentials in a, pushes the account to
// the running servers and rewrites nats-server.conf. pushed: the servers
// took it.
func (g *globals) revokeCreds(cmd *cobra.Command, a *auth.Authority, role auth.Role, name string) (pushed bool, err error) {
	n, accountJWT, err := a.Revoke(role, name)
	if err != nil {
		return false, err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "revoked %d credential(s) of %s %s\n", n, role, name)
	if conf := filepath.Join(a.Dir(), auth.FileServerConfig); fileExists(conf) {
		if err := rewriteServerConfig(a, conf); err != nil {
			return false, err
		}
	}
	sys, err := a.SystemCreds()
	if err != nil {
		return false, err
	}
	f, err := os.CreateTemp("", "ward-sys-*.creds")
	if err != nil {
		return false, err
	}
	defer func() {
		// The file holds the system account's credential: say so if it
		// stays behind.
		if err := os.Remove(f.Name()); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "remove the system credential's temporary file: %v\n", err)
		}
	}()
	_, werr := f.Write(sys)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		fmt.Fprintf(out, "the servers were not told (writing the system credential: %v): push it when they are up, or restart them with %s\n", werr, auth.FileServerConfig)
		return false, nil
	}
	tlsOpts, err := g.tls.NATSOptions()
	if err != nil {
		return false, err
	}
	nc, err := nats.Connect(client.NATSURL(g.natsURL), append(tlsOpts, nats.UserCredentials(f.Name()), nats.Timeout(5*time.Second))...)
	if err != nil {
		fmt.Fprintf(out, "the servers were not told (%v): push it when they are up, or restart them with %s\n", err, auth.FileServerConfig)
		return false, nil
	}
	defer nc.Close()
	msg, err := nc.Request(auth.UpdateSubject(a.AccountKey()), []byte(accountJWT), 5*time.Second)
	if err != nil {
		return false, fmt.Errorf("push the revocation: %w", err)
	}
	fmt.Fprintf(out, "servers: %s\n", strings.TrimSpace(string(msg.Data)))
	return true, nil
}

// absTLS is f with absolute paths, for a configuration read from
// elsewhere.
func absTLS(f auth.TLSFiles) (auth.TLSFiles, error) {
	var err error
	for _, p := range []*string{&f.CA, &f.Cert, &f.Key} {
		if *p != "" && err == nil {
			*p, err = filepath.Abs(*p)
		}
	}
	return f, err
}

func rewriteServerConfig(a *auth.Authority, path string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	listen, store := "0.0.0.0:4222", "/var/lib/nats"
	var tls *auth.NATSServerTLS // kept as it was: the block ServerConfig writes
	inTLS := false
	for _, line := range strings.Split(string(old), "\n") {
		if v, ok := strings.CutPrefix(line, "listen: "); ok {
			listen = strings.Trim(v, `"`)
		}
		if v, ok := strings.CutPrefix(line, "jetstream { store_dir: "); ok {
			store = strings.Trim(strings.TrimSuffix(v, " }"), `"`)
		}
		switch {
		case line == "tls {":
			tls, inTLS = &auth.NATSServerTLS{}, true
		case line == "}":
			inTLS = false
		}
		if !inTLS {
			continue
		}
		key, v, _ := strings.Cut(strings.TrimSpace(line), ": ")
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		switch key {
		case "cert_file":
			tls.Cert = v
		case "key_file":
			tls.Key = v
		case "ca_file":
			tls.CA = v
		case "verify":
			tls.Verify = v == "true"
		}
	}
	conf, err := a.ServerConfig(listen, store, tls)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(conf), 0o600)
}

// audit records an admin action in the audit log, best effort: the action
// happened, and a log that cannot be reached is reported, not fatal.
func (g *globals) audit(action, target string, detail map[string]string) {
	conn, err := g.connect("ward-audit")
	if err != nil {
		fmt.Fprintf(os.Stderr, "audit log not written: %v\n", err)
		return
	}
	defer conn.Close()
	js, err := jetstreamOf(conn)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err = audit.Ensure(ctx, js); err == nil {
			err = audit.Record(ctx, js, audit.Entry{Actor: g.actor(), Action: action, Target: target, Detail: detail})
		}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "audit log not written: %v\n", err)
	}
}

func jetstreamOf(c *bus.Conn) (jetstream.JetStream, error) { return jetstream.New(c.NATS()) }
