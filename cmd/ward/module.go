package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/sandbox"
)

func newModuleCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "module", Short: "Deploy, list, roll back and retire worker modules (registry in NATS JetStream)"}
	cmd.AddCommand(newModuleDeployCmd(g), newModuleLsCmd(g), newModuleRollbackCmd(g), newModuleActivateCmd(g),
		newModuleRmCmd(g), newModuleRmVersionCmd(g), newModuleSignCmd(), newModuleKeygenCmd())
	return cmd
}

// moduleSession is a module command's connection to the bus and the
// module registry, within its timeout.
type moduleSession struct {
	// ctx names who acts: the registry's record names who changed it; the
	// schedulers audit the change with that claim (module.deploy, ...).
	ctx    context.Context
	cancel context.CancelFunc
	c      *client.Client
	r      *modreg.Registry
}

// openModules connects to the bus and opens the module registry, for
// timeout.
func openModules(g *globals, timeout time.Duration) (_ *moduleSession, err error) {
	s := &moduleSession{}
	s.ctx, s.cancel = context.WithTimeout(context.Background(), timeout)
	defer func() {
		if err != nil {
			s.cancel()
		}
	}()
	s.ctx = modreg.WithActor(s.ctx, g.actor())
	if s.c, err = client.Dial(client.NATSURL(g.natsURL), g.clientOptions()); err != nil {
		return nil, err
	}
	if s.r, err = modreg.Open(s.ctx, s.c.Bus().NATS()); err != nil {
		s.c.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the connection and ends the timeout.
func (s *moduleSession) Close() {
	s.c.Close()
	s.cancel()
}

// rollout is a modreg.Rollout of the session's registry and hosts.
func (s *moduleSession) rollout() *modreg.Rollout {
	return &modreg.Rollout{Registry: s.r, Hosts: natsHosts{s.c}}
}

// moduleDeploy is `ward module deploy`'s flags.
type moduleDeploy struct {
	manifestPath, keyPath, sigPath, name, version string
	wait, stageTimeout                            time.Duration
	force                                         bool
}

func newModuleDeployCmd(g *globals) *cobra.Command {
	d := &moduleDeploy{}
	deploy := &cobra.Command{
		Use:   "deploy <module.wasm>",
		Short: "Upload a module and make it the active version on every host",
		Long: `deploy checks the module before it uploads anything: the file must be a
WebAssembly module (it starts with \0asm, binary format version 1), its
manifest (--manifest, else <module>.yaml beside it) must parse and
validate, and the name and version must be ones the registry stores.

It then checks the route the manifest declares (topic → pool) against the
pools.yaml the schedulers read (POOL_CONFIG_PATH on this machine, else the
embedded one, which ward dev uses) and the modules deployed: where
pools.yaml (or another module) sends the topic or runs the pool
elsewhere, pools.yaml wins and the declared route would never apply, so
deploy refuses, nothing uploaded, and says what holds the topic. --force
deploys anyway, with a warning: the module is stored and served, and its
topic goes where pools.yaml says. (--force also activates a version a
host refused while staging it.)`,
		Example: `  ward module deploy ./hello.wasm --manifest hello.yaml
  ward module deploy ./hello.wasm --manifest hello.yaml --sign-key ward.key`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return d.run(cmd, g, args[0]) },
	}
	deploy.Flags().StringVar(&d.manifestPath, "manifest", "", "module manifest (YAML); default: <module>.yaml beside the .wasm if present")
	deploy.Flags().StringVar(&d.name, "name", "", "module name (default: the manifest's, else the file name)")
	deploy.Flags().StringVar(&d.version, "version", "", "version (default: the manifest's, else sha-<digest prefix>)")
	deploy.Flags().StringVar(&d.keyPath, "sign-key", envOr("WARD_MODULE_KEY", defaultKeyFile(assembly.ModuleKeyFile)), "sign with this ed25519 private key (PEM) ($WARD_MODULE_KEY, else module.key of $WARD_AUTH_DIR or of ward dev's state)")
	deploy.Flags().DurationVar(&d.wait, "wait", 0, "wait up to this long until every live host holds the version (or refused it), and say how long it took")
	deploy.Flags().DurationVar(&d.stageTimeout, "stage-timeout", 30*time.Second, "before activating, wait up to this long for every live host to compile the version ahead (0: activate at once, hosts compile on activation)")
	deploy.Flags().BoolVar(&d.force, "force", false, "deploy even when pools.yaml overrides the declared route, and activate even when a host refused the version while staging it")
	deploy.Flags().StringVar(&d.sigPath, "signature", "", "signature `file` from ward module sign (default: <module>.wasm.sig if present)")
	return deploy
}

// run deploys the module in path.
func (d *moduleDeploy) run(cmd *cobra.Command, g *globals, path string) error {
	v, wasm, err := d.read(path)
	if err != nil {
		return err
	}
	s, err := openModules(g, time.Minute+d.stageTimeout)
	if err != nil {
		return err
	}
	defer s.Close()
	out := cmd.OutOrStdout()
	if conflicts, err := routeConflicts(s.ctx, s.r, v); err != nil {
		return err
	} else if len(conflicts) > 0 {
		for _, cf := range conflicts {
			fmt.Fprintf(cmd.ErrOrStderr(), "ward: %s declares route %s → pool %s, but %s: pools.yaml wins, the route would not apply\n",
				v.Name, cf.Topic, cf.Pool, cf.Why)
		}
		if !d.force {
			return fmt.Errorf("%s %s not deployed, nothing was uploaded: fix the manifest's topic/pool or pools.yaml, or --force deploys it anyway",
				v.Name, v.Version)
		}
		fmt.Fprintln(cmd.ErrOrStderr(), "ward: deploying anyway (--force)")
	}
	ro := s.rollout()
	a, err := d.activate(s.ctx, out, ro, v, wasm)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "deployed %s %s (%s, %d bytes%s)\n", a.Name, a.Version, a.Digest, len(wasm), signedNote(v.Signature))
	if a.Route.Topic != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "route: %s → pool %s\n", a.Route.Topic, orDefault(a.Route.Pool, a.Name))
	}
	return waitFor(d.wait, ro, a, out)
}

// read reads and checks the module in path, its manifest and its
// signature, before anything is uploaded.
func (d *moduleDeploy) read(path string) (modreg.Version, []byte, error) {
	wasm, err := os.ReadFile(path)
	if err != nil {
		return modreg.Version{}, nil, err
	}
	if err := modreg.CheckWasm(wasm); err != nil {
		return modreg.Version{}, nil, fmt.Errorf("%s: %w; nothing was uploaded", path, err)
	}
	var raw []byte
	m := &sandbox.Manifest{}
	if d.manifestPath == "" {
		if p := strings.TrimSuffix(path, ".wasm") + ".yaml"; fileExists(p) {
			d.manifestPath = p
		}
	}
	if d.manifestPath != "" {
		if raw, err = os.ReadFile(d.manifestPath); err != nil {
			return modreg.Version{}, nil, err
		}
		// Refuse a bad manifest here, not on every host.
		if m, err = sandbox.ParseManifest(raw); err != nil {
			return modreg.Version{}, nil, fmt.Errorf("manifest %s: %w; nothing was uploaded", d.manifestPath, err)
		}
	}
	if d.name == "" && m.Name == "" {
		d.name = strings.TrimSuffix(filepath.Base(path), ".wasm")
	}
	// The same checks and Version as the gateway's deploy.
	v, err := modreg.NewVersion(wasm, raw, d.name, d.version)
	if err != nil {
		return modreg.Version{}, nil, fmt.Errorf("%s: %w; nothing was uploaded", path, err)
	}
	if v.Signature, err = d.signature(path, modreg.Digest(wasm)); err != nil {
		return modreg.Version{}, nil, err
	}
	return v, wasm, nil
}

// signature is the module's signature: --signature's, else made with
// --sign-key, else <module>.wasm.sig's when there is one.
func (d *moduleDeploy) signature(path, digest string) ([]byte, error) {
	switch {
	case d.sigPath != "":
		return readSignature(d.sigPath)
	case d.keyPath != "":
		kb, err := os.ReadFile(d.keyPath)
		if err != nil {
			return nil, err
		}
		key, err := modreg.ParsePrivateKey(kb)
		if err != nil {
			return nil, err
		}
		return modreg.Sign(key, digest), nil
	}
	if p := path + ".sig"; fileExists(p) {
		return readSignature(p)
	}
	return nil, nil
}

// activate uploads v and makes it the active version: at once, hosts
// compiling it on activation, or, with a stage timeout, once the hosts
// have compiled it while the active version serves.
func (d *moduleDeploy) activate(ctx context.Context, out io.Writer, ro *modreg.Rollout, v modreg.Version, wasm []byte) (*modreg.Active, error) {
	if d.stageTimeout <= 0 {
		// Hosts compile it on activation.
		return ro.Registry.Deploy(ctx, v, wasm)
	}
	// Hosts compile it while the active version serves; the activation
	// then swaps it in at once.
	staged, err := ro.Stage(ctx, v, wasm)
	if err != nil {
		return nil, err
	}
	st, err := ro.WaitStaged(ctx, staged, d.stageTimeout)
	if err = reportStaging(out, staged, st, d.stageTimeout, err); err != nil {
		if !d.force {
			return nil, fmt.Errorf("%w; %s %s is stored but not active (--force activates it anyway)", err, staged.Name, staged.Version)
		}
		fmt.Fprintf(out, "%v; activating anyway (--force)\n", err)
	}
	return ro.Activate(ctx, staged)
}

func newModuleLsCmd(g *globals) *cobra.Command {
	var lsOut *output
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List modules: versions, digests, the active one, how many live hosts hold it, refusals",
		Long: `ls lists every module of the registry with its versions, the active one,
how many live hosts serve each and the loads hosts refused, then the
modules live hosts serve of their own (their --modules directory: the
built-in ones), which the registry does not hold (SOURCE host). With -o
json or yaml: an array of modules, each {name, source (registry or
host), active, versions (each with hosts: how many live hosts serve it,
and active), refused}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := openModules(g, 30*time.Second)
			if err != nil {
				return err
			}
			defer s.Close()
			mods, err := s.r.List(s.ctx)
			if err != nil {
				return err
			}
			hbs, err := s.c.Workers(s.ctx, 500*time.Millisecond)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !lsOut.table() {
				return lsOut.print(out, moduleViews(mods, hbs))
			}
			return printModules(out, mods, hbs)
		},
	}
	lsOut = addOutput(ls)
	return ls
}

// printModules prints `ward module ls`'s table, then the refusals.
func printModules(out io.Writer, mods []modreg.Module, hbs []*wardv1.Heartbeat) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODULE\tSOURCE\tVERSION\tDIGEST\tACTIVE\tHOSTS\tROUTE\tDEPLOYED")
	for _, m := range mods {
		for _, v := range m.Versions {
			active, hosts := "", 0
			if m.Active != nil && !m.Active.Retired && m.Active.Version == v.Version {
				active = "*"
			}
			for _, hb := range hbs {
				if hb.GetModules()[m.Name] == v.Digest {
					hosts++
				}
			}
			route := "-"
			if v.Route.Topic != "" {
				route = v.Route.Topic + "→" + orDefault(v.Route.Pool, m.Name)
			}
			fmt.Fprintf(tw, "%s\tregistry\t%s\t%s\t%s\t%d\t%s\t%s\n", m.Name, v.Version, shortDigest(v.Digest), active, hosts, route,
				v.DeployedAt.Local().Format(time.DateTime))
		}
		if m.Active != nil && m.Active.Retired {
			fmt.Fprintf(tw, "%s\tregistry\t(retired)\t\t\t\t\t%s\n", m.Name, m.Active.UpdatedAt.Local().Format(time.DateTime))
		}
	}
	for _, hm := range hostModules(mods, hbs) {
		for _, v := range hm.Versions {
			fmt.Fprintf(tw, "%s\thost\t-\t%s\t-\t%d\t-\t-\n", hm.Name, shortDigest(v.Digest), v.Hosts)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range mods {
		for _, e := range m.Events {
			fmt.Fprintf(out, "refused: %s %s (%s) on host %s at %s: %s\n", e.Name, e.Version, shortDigest(e.Digest), e.Host,
				e.At.Local().Format(time.DateTime), e.Error)
		}
	}
	return nil
}

func newModuleRollbackCmd(g *globals) *cobra.Command {
	var wait time.Duration
	rollback := &cobra.Command{
		Use:   "rollback <module>",
		Short: "Make the previous version of a module active again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := openModules(g, 30*time.Second)
			if err != nil {
				return err
			}
			defer s.Close()
			a, err := s.r.Rollback(s.ctx, args[0])
			if errors.Is(err, modreg.ErrNotDeployed) {
				return notInRegistry(s.ctx, s.c, args[0], err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s (%s) is active\n", a.Name, a.Version, a.Digest)
			return waitFor(wait, s.rollout(), a, cmd.OutOrStdout())
		},
	}
	rollback.Flags().DurationVar(&wait, "wait", 0, "wait up to this long until every live host holds the version")
	return rollback
}

func newModuleRmCmd(g *globals) *cobra.Command {
	var wait time.Duration
	rm := &cobra.Command{
		Use:   "rm <module>",
		Short: "Retire a module: hosts stop serving it; new jobs for its topic go to the DLQ",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := openModules(g, 30*time.Second)
			if err != nil {
				return err
			}
			defer s.Close()
			a, err := s.r.Remove(s.ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s retired (`ward module rollback %s` brings it back)\n", args[0], args[0])
			return waitFor(wait, s.rollout(), a, cmd.OutOrStdout())
		},
	}
	rm.Flags().DurationVar(&wait, "wait", 0, "wait up to this long until no live host holds the module")
	return rm
}

func newModuleActivateCmd(g *globals) *cobra.Command {
	var (
		trustedKeys []string
		force       bool
		wait        time.Duration
	)
	activate := &cobra.Command{
		Use:   "activate <module> <version>",
		Short: "Make a kept version of a module active again (after a rollback, say)",
		Long: `activate makes a version the registry keeps the active one, as deploy does
after its upload: every host swaps to it. It refuses a version whose
signature does not verify against the trusted keys (--trusted-key, else
the module.pub of $WARD_AUTH_DIR or of ward dev's state, when there is
one), as hosts that require signatures would refuse it, and a version a
live host refused before, unless --force.`,
		Example: `  ward module rollback hello
  ward module activate hello 2.0.0`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			keys, err := readTrustedKeys(trustedKeys)
			if err != nil {
				return err
			}
			s, err := openModules(g, 30*time.Second)
			if err != nil {
				return err
			}
			defer s.Close()
			name, ver := args[0], args[1]
			if !force {
				if refused, err := refusals(s.ctx, s.r, name, ver); err != nil {
					return err
				} else if len(refused) > 0 {
					return fmt.Errorf("%s %s was refused by %s; not activated (--force activates it anyway)", name, ver, strings.Join(refused, "; "))
				}
			}
			a, err := s.r.ActivateVersion(s.ctx, name, ver, keys)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s (%s) is active\n", a.Name, a.Version, a.Digest)
			return waitFor(wait, s.rollout(), a, cmd.OutOrStdout())
		},
	}
	activate.Flags().StringSliceVar(&trustedKeys, "trusted-key", defaultTrustedKeys(), "ed25519 public key (PEM) the version's signature must verify against (repeatable; default: module.pub of $WARD_AUTH_DIR or of ward dev's state, if any)")
	activate.Flags().BoolVar(&force, "force", false, "activate a version a host refused before")
	activate.Flags().DurationVar(&wait, "wait", 0, "wait up to this long until every live host holds the version")
	return activate
}

func newModuleRmVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rm-version <module> <version>",
		Short: "Delete a version that is not the active one: its record, its place in the rollback history, its blob",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := openModules(g, 30*time.Second)
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.r.RemoveVersion(s.ctx, args[0], args[1]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s deleted\n", args[0], args[1])
			g.audit(audit.ModuleRm, args[0], map[string]string{"version": args[1]})
			return nil
		},
	}
}

func newModuleSignCmd() *cobra.Command {
	var signKey string
	sign := &cobra.Command{
		Use:   "sign <module.wasm>",
		Short: "Sign a module with an ed25519 key; writes <module>.wasm.sig, which deploy picks up",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			wasm, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			kb, err := os.ReadFile(signKey)
			if err != nil {
				return err
			}
			key, err := modreg.ParsePrivateKey(kb)
			if err != nil {
				return err
			}
			sig := modreg.Sign(key, modreg.Digest(wasm))
			out := args[0] + ".sig"
			if err := os.WriteFile(out, []byte(base64.StdEncoding.EncodeToString(sig)+"\n"), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", out)
			return nil
		},
	}
	sign.Flags().StringVar(&signKey, "key", "", "ed25519 private key `file` (PEM), from ward module keygen")
	_ = sign.MarkFlagRequired("key")
	return sign
}

func newModuleKeygenCmd() *cobra.Command {
	var keyOut string
	keygen := &cobra.Command{
		Use:   "keygen",
		Short: "Make an ed25519 signing key pair: <out>.key (keep it secret) and <out>.pub (give it to hosts)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			priv, pub, err := modreg.GenerateKey()
			if err != nil {
				return err
			}
			if err := os.WriteFile(keyOut+".key", priv, 0o600); err != nil {
				return err
			}
			if err := os.WriteFile(keyOut+".pub", pub, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s.key and %s.pub\n", keyOut, keyOut)
			return nil
		},
	}
	keygen.Flags().StringVar(&keyOut, "out", "ward-signing", "file name prefix")
	return keygen
}

// moduleView is a module as `ward module ls -o json` prints it.
type moduleView struct {
	Name string `json:"name"`
	// Source is registry for a module of the registry, host for one live
	// hosts serve of their own (--modules: the built-in ones).
	Source   string              `json:"source"`
	Active   *modreg.Active      `json:"active,omitempty"`
	Versions []moduleVersionView `json:"versions"`
	Refused  []modreg.Event      `json:"refused,omitempty"`
}

// moduleVersionView is a version with the live hosts that serve it.
type moduleVersionView struct {
	modreg.Version
	Active bool `json:"active,omitempty"`
	Hosts  int  `json:"hosts"`
}

func moduleViews(mods []modreg.Module, hbs []*wardv1.Heartbeat) []moduleView {
	out := make([]moduleView, 0, len(mods))
	for _, m := range mods {
		mv := moduleView{Name: m.Name, Source: "registry", Active: m.Active, Refused: m.Events, Versions: []moduleVersionView{}}
		for _, v := range m.Versions {
			vv := moduleVersionView{Version: v, Active: m.Active != nil && !m.Active.Retired && m.Active.Version == v.Version}
			for _, hb := range hbs {
				if hb.GetModules()[m.Name] == v.Digest {
					vv.Hosts++
				}
			}
			mv.Versions = append(mv.Versions, vv)
		}
		out = append(out, mv)
	}
	return append(out, hostModules(mods, hbs)...)
}

// hostModules are the modules live hosts serve of their own (their
// --modules directory: the built-in ones), with how many hosts serve
// each digest (modreg.HostModules).
func hostModules(mods []modreg.Module, hbs []*wardv1.Heartbeat) []moduleView {
	served := make([]map[string]string, len(hbs))
	for i, hb := range hbs {
		served[i] = hb.GetModules()
	}
	hms := modreg.HostModules(mods, served)
	out := make([]moduleView, 0, len(hms))
	for _, hm := range hms {
		mv := moduleView{Name: hm.Name, Source: "host", Versions: []moduleVersionView{}}
		for _, d := range hm.Digests {
			mv.Versions = append(mv.Versions, moduleVersionView{Version: modreg.Version{Name: hm.Name, Digest: d.Digest}, Hosts: d.Hosts})
		}
		out = append(out, mv)
	}
	return out
}

// notInRegistry is the error for a registry command on a module the
// registry does not hold: when live hosts serve one of that name of their
// own, it says so, and what a user does instead.
func notInRegistry(ctx context.Context, c *client.Client, name string, err error) error {
	hbs, werr := c.Workers(ctx, 500*time.Millisecond)
	if werr != nil {
		return err
	}
	n := 0
	for _, hb := range hbs {
		if _, ok := hb.GetModules()[name]; ok {
			n++
		}
	}
	if n == 0 {
		return err
	}
	return fmt.Errorf("%w: %d live host(s) serve their own %s (from their --modules directory), which the registry does not hold, so it has no version to go back to; "+
		"`ward module deploy %s.wasm` puts a version in the registry, which hosts then serve instead", err, n, name, name)
}

// defaultTrustedKeys is the module.pub beside the default signing key, if
// any: what ward dev's hosts trust.
func defaultTrustedKeys() []string {
	if p := defaultKeyFile(assembly.ModulePubFile); p != "" {
		return []string{p}
	}
	return nil
}

// refusals names the live hosts' refusals of name's version, each as
// "host h1: why".
func refusals(ctx context.Context, r *modreg.Registry, name, version string) ([]string, error) {
	v, err := r.Version(ctx, name, version)
	if err != nil {
		return nil, nil // ActivateVersion says it better
	}
	mods, err := r.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range mods {
		if m.Name != name {
			continue
		}
		for _, e := range m.Events {
			if e.Digest == v.Digest {
				out = append(out, fmt.Sprintf("host %s: %s", e.Host, e.Error))
			}
		}
	}
	return out, nil
}

// routeConflicts are the ways the pools.yaml the schedulers read (this
// machine's POOL_CONFIG_PATH, else the embedded one) and the modules
// deployed override the route v declares.
func routeConflicts(ctx context.Context, r *modreg.Registry, v modreg.Version) ([]modreg.Conflict, error) {
	if v.Route.Topic == "" {
		return nil, nil
	}
	conf, err := config.Load(config.FilesFromEnv())
	if err != nil {
		return nil, fmt.Errorf("reading pools.yaml to check the route: %w", err)
	}
	return r.RouteConflicts(ctx, conf.Pools, v)
}

func readSignature(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("signature %s: %w", path, err)
	}
	return sig, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func signedNote(sig []byte) string {
	if len(sig) > 0 {
		return ", signed"
	}
	return ", unsigned"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func shortDigest(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

// reportStaging says how staging v went (st, from WaitStaged) and returns
// the error that stops the deploy unless forced.
func reportStaging(out io.Writer, v *modreg.Version, st *modreg.Staging, timeout time.Duration, err error) error {
	if st == nil {
		return err
	}
	if st.TimedOut {
		fmt.Fprintf(out, "staging: hosts %v (and %d live host(s) the schedulers count that did not report) had not compiled %s %s after %s; they load it on activation\n",
			st.Waiting, st.Unseen, v.Name, v.Version, timeout)
	} else if len(st.Refused) == 0 {
		fmt.Fprintf(out, "staged: %s %s compiled ahead on %d/%d live hosts in %s\n", v.Name, v.Version, len(st.Ready), st.Live(),
			st.Took.Round(time.Millisecond))
	}
	if errors.Is(err, modreg.ErrRefused) {
		return fmt.Errorf("hosts %v refused %s %s (see `ward module ls`)", slices.Sorted(maps.Keys(st.Refused)), v.Name, v.Version)
	}
	return err
}

// waitFor waits up to wait until every live host serves a's version (or
// refused it), and says how long that took; with no wait it returns at
// once.
func waitFor(wait time.Duration, ro *modreg.Rollout, a *modreg.Active, out io.Writer) error {
	if wait <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := ro.WaitRolledOut(ctx, a)
	switch {
	case errors.Is(err, modreg.ErrNoLiveHosts):
		return errors.New("no live host to roll out to")
	case res == nil:
		return err
	case len(res.Waiting) == 0 && res.Unseen == 0:
		what := fmt.Sprintf("%s %s", a.Name, a.Version)
		if a.Retired {
			what = a.Name + " retired"
		}
		fmt.Fprintf(out, "rolled out: %s on %d/%d live hosts in %s\n", what, len(res.Held), res.Live(), res.Took.Round(time.Millisecond))
		if len(res.Refused) > 0 {
			for _, id := range slices.Sorted(maps.Keys(res.Refused)) {
				fmt.Fprintf(out, "refused on %s: %s\n", id, res.Refused[id])
			}
			return fmt.Errorf("%d host(s) refused %s %s; they keep serving the version they had", len(res.Refused), a.Name, a.Version)
		}
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("rollout of %s %s: hosts %v (and %d live host(s) the schedulers count that did not report) do not hold it after %s (a host started with --module-registry=false never will)",
			a.Name, a.Version, res.Waiting, res.Unseen, res.Took.Round(time.Millisecond))
	}
	return err
}

// natsHosts is a modreg.Rollout's view of the hosts: the hosts query of
// `ward workers` (client.Workers) and their heartbeats.
type natsHosts struct{ c *client.Client }

// Live asks every host; answers after 150 ms are left to the heartbeats.
func (h natsHosts) Live(ctx context.Context) ([]modreg.HostReport, error) {
	hbs, err := h.c.Workers(ctx, 150*time.Millisecond)
	if err != nil {
		return nil, err
	}
	out := make([]modreg.HostReport, len(hbs))
	for i, hb := range hbs {
		out[i] = hostReport(hb)
	}
	return out, nil
}

// LiveCount asks the scheduler replicas how many hosts they count live
// (modreg.Counter): the most any replica counts, so that a host slow to
// answer the hosts query is waited for, not left out of "every live
// host". ok is false when no replica answered within the window.
func (h natsHosts) LiveCount(ctx context.Context) (int, bool, error) {
	sts, err := h.c.Schedulers(ctx, 500*time.Millisecond)
	if err != nil || len(sts) == 0 {
		return 0, false, err
	}
	n := 0
	for _, st := range sts {
		n = max(n, int(st.GetLiveWorkers()))
	}
	return n, true, nil
}

// Watch passes every heartbeat to f until ctx ends.
func (h natsHosts) Watch(ctx context.Context, f func(modreg.HostReport)) error {
	sub, err := h.c.Bus().NATS().Subscribe(bus.SubjectHeartbeats, func(m *nats.Msg) {
		hb := &wardv1.Heartbeat{}
		if proto.Unmarshal(m.Data, hb) == nil {
			f(hostReport(hb))
		}
	})
	if err != nil {
		return err
	}
	context.AfterFunc(ctx, func() { _ = sub.Unsubscribe() })
	// The server has the subscription: no heartbeat sent from now on is missed.
	return h.c.Bus().Flush()
}

func hostReport(hb *wardv1.Heartbeat) modreg.HostReport {
	return modreg.HostReport{ID: hb.GetWorkerId(), Modules: hb.GetModules(), Draining: hb.GetStatus() == "draining"}
}
