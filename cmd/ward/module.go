package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/bus"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/modreg"
	"github.com/ward-run/ward/sandbox"
)

func newModuleCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "module", Short: "Deploy, list, roll back and retire worker modules (registry in NATS JetStream)"}

	open := func(ctx context.Context) (*client.Client, *modreg.Registry, error) {
		c, err := client.Dial(client.NATSURL(g.natsURL))
		if err != nil {
			return nil, nil, err
		}
		r, err := modreg.Open(ctx, c.Bus().NATS())
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		return c, r, nil
	}

	var manifestPath, keyPath, sigPath, name, version string
	var wait, stageTimeout time.Duration
	var force bool
	deploy := &cobra.Command{
		Use:   "deploy <module.wasm>",
		Short: "Upload a module and make it the active version on every host",
		Example: `  ward module deploy ./hello.wasm --manifest hello.yaml
  ward module deploy ./hello.wasm --manifest hello.yaml --sign-key ward.key`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			wasm, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			m := &sandbox.Manifest{}
			var raw []byte
			if manifestPath == "" {
				if p := strings.TrimSuffix(args[0], ".wasm") + ".yaml"; fileExists(p) {
					manifestPath = p
				}
			}
			if manifestPath != "" {
				if raw, err = os.ReadFile(manifestPath); err != nil {
					return err
				}
				// Refuse a bad manifest here, not on every host.
				if m, err = sandbox.ParseManifest(raw); err != nil {
					return fmt.Errorf("manifest %s: %w", manifestPath, err)
				}
			}
			if name != "" {
				m.Name = name
			}
			if m.Name == "" {
				m.Name = strings.TrimSuffix(filepath.Base(args[0]), ".wasm")
			}
			if version != "" {
				m.Version = version
			}
			digest := modreg.Digest(wasm)
			if m.Version == "" {
				m.Version = "sha-" + strings.TrimPrefix(digest, "sha256:")[:12]
			}
			v := modreg.Version{Name: m.Name, Version: m.Version, Manifest: string(raw),
				Route: modreg.Route{Topic: m.Topic, Pool: m.Pool, Requires: m.Requires}}
			if raw != nil {
				// What the policy is asked to grant each of its jobs.
				c := m.Capabilities
				v.Requested = &modreg.Requested{HTTPHosts: c.HTTPHosts, ReadOnlyDirs: c.ReadOnlyDirs, EnvKeys: c.EnvKeys,
					MemoryLimitBytes: int64(m.Limits.Memory), TimeLimitMS: time.Duration(m.Limits.Time).Milliseconds()}
			}
			switch {
			case keyPath != "":
				kb, err := os.ReadFile(keyPath)
				if err != nil {
					return err
				}
				key, err := modreg.ParsePrivateKey(kb)
				if err != nil {
					return err
				}
				v.Signature = modreg.Sign(key, digest)
			case sigPath != "":
				if v.Signature, err = readSignature(sigPath); err != nil {
					return err
				}
			default:
				if p := args[0] + ".sig"; fileExists(p) {
					if v.Signature, err = readSignature(p); err != nil {
						return err
					}
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute+stageTimeout)
			defer cancel()
			c, r, err := open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			out := cmd.OutOrStdout()
			staged, err := r.Stage(ctx, v, wasm)
			if err != nil {
				return err
			}
			if stageTimeout > 0 {
				// Hosts compile it while the active version serves; the
				// activation then swaps it in at once.
				if err := waitStaged(ctx, c, r, staged, stageTimeout, out); err != nil {
					if !force {
						return fmt.Errorf("%w; %s %s is stored but not active (--force activates it anyway)", err, staged.Name, staged.Version)
					}
					fmt.Fprintf(out, "%v; activating anyway (--force)\n", err)
				}
			}
			a, err := r.Activate(ctx, staged.Name, staged.Version)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "deployed %s %s (%s, %d bytes%s)\n", a.Name, a.Version, a.Digest, len(wasm), signedNote(v.Signature))
			if a.Route.Topic != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "route: %s → pool %s\n", a.Route.Topic, orDefault(a.Route.Pool, a.Name))
			}
			return waitFor(wait, c, r, a, cmd.OutOrStdout())
		},
	}
	deploy.Flags().StringVar(&manifestPath, "manifest", "", "module manifest (YAML); default: <module>.yaml beside the .wasm if present")
	deploy.Flags().StringVar(&name, "name", "", "module name (default: the manifest's, else the file name)")
	deploy.Flags().StringVar(&version, "version", "", "version (default: the manifest's, else sha-<digest prefix>)")
	deploy.Flags().StringVar(&keyPath, "sign-key", "", "sign with this ed25519 private key (PEM)")
	deploy.Flags().DurationVar(&wait, "wait", 0, "wait up to this long until every live host holds the version (or refused it), and say how long it took")
	deploy.Flags().DurationVar(&stageTimeout, "stage-timeout", 30*time.Second, "before activating, wait up to this long for every live host to compile the version ahead (0: activate at once, hosts compile on activation)")
	deploy.Flags().BoolVar(&force, "force", false, "activate even when a host refused the version while staging it")
	deploy.Flags().StringVar(&sigPath, "signature", "", "signature file from `ward module sign` (default: <module>.wasm.sig if present)")

	ls := &cobra.Command{
		Use:   "ls",
		Short: "List modules: versions, digests, the active one, how many live hosts hold it, refusals",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, r, err := open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			mods, err := r.List(ctx)
			if err != nil {
				return err
			}
			hbs, err := c.Workers(ctx, 500*time.Millisecond)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "MODULE\tVERSION\tDIGEST\tACTIVE\tHOSTS\tROUTE\tDEPLOYED")
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
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", m.Name, v.Version, shortDigest(v.Digest), active, hosts, route,
						v.DeployedAt.Local().Format(time.DateTime))
				}
				if m.Active != nil && m.Active.Retired {
					fmt.Fprintf(tw, "%s\t(retired)\t\t\t\t\t%s\n", m.Name, m.Active.UpdatedAt.Local().Format(time.DateTime))
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
		},
	}

	rollback := &cobra.Command{
		Use:   "rollback <module>",
		Short: "Make the previous version of a module active again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, r, err := open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			a, err := r.Rollback(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s (%s) is active\n", a.Name, a.Version, a.Digest)
			return waitFor(wait, c, r, a, cmd.OutOrStdout())
		},
	}

	rm := &cobra.Command{
		Use:   "rm <module>",
		Short: "Retire a module: hosts stop serving it; new jobs for its topic go to the DLQ",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, r, err := open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			a, err := r.Remove(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s retired (`ward module rollback %s` brings it back)\n", args[0], args[0])
			return waitFor(wait, c, r, a, cmd.OutOrStdout())
		},
	}
	rollback.Flags().DurationVar(&wait, "wait", 0, "wait up to this long until every live host holds the version")
	rm.Flags().DurationVar(&wait, "wait", 0, "wait up to this long until no live host holds the module")

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
	sign.Flags().StringVar(&signKey, "key", "", "ed25519 private key (PEM), from `ward module keygen`")
	_ = sign.MarkFlagRequired("key")

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

	cmd.AddCommand(deploy, ls, rollback, rm, sign, keygen)
	return cmd
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

// waitStaged waits until every live host has compiled v ahead, holds it
// already, or refused it; it fails when one refused it. Hosts that have
// not staged it within timeout are named, and the deploy goes on: they
// load it on activation.
func waitStaged(ctx context.Context, c *client.Client, r *modreg.Registry, v *modreg.Version, timeout time.Duration, out io.Writer) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	view, err := followRegistry(ctx, r)
	if err != nil {
		return err
	}
	defer view.stop()
	live, err := c.Workers(ctx, 150*time.Millisecond)
	if err != nil {
		return err
	}
	for {
		st := view.state()
		var ready int
		var waiting, refused []string
		for _, hb := range live {
			id := hb.GetWorkerId()
			switch {
			case st.Staged[v.Name][id] == v.Digest, hb.GetModules()[v.Name] == v.Digest:
				ready++
			case st.Refused[v.Name][id].Digest == v.Digest:
				refused = append(refused, id)
			default:
				waiting = append(waiting, id)
			}
		}
		if len(refused) > 0 && len(waiting) == 0 {
			return fmt.Errorf("hosts %v refused %s %s (see `ward module ls`)", refused, v.Name, v.Version)
		}
		if len(waiting) == 0 {
			fmt.Fprintf(out, "staged: %s %s compiled ahead on %d/%d live hosts in %s\n", v.Name, v.Version, ready, len(live),
				time.Since(start).Round(time.Millisecond))
			return nil
		}
		select {
		case <-view.changed:
		case <-ctx.Done():
			fmt.Fprintf(out, "staging: hosts %v had not compiled %s %s after %s; they load it on activation\n",
				waiting, v.Name, v.Version, timeout)
			if len(refused) > 0 {
				return fmt.Errorf("hosts %v refused %s %s (see `ward module ls`)", refused, v.Name, v.Version)
			}
			return nil
		}
	}
}

// registryView is the registry's state as a waiting command follows it.
type registryView struct {
	mu      sync.Mutex
	st      *modreg.State
	changed chan struct{} // a change (of the state, or whatever else pokes it)
	done    <-chan struct{}
	cancel  context.CancelFunc
}

// followRegistry follows r until stop.
func followRegistry(ctx context.Context, r *modreg.Registry) (*registryView, error) {
	ctx, cancel := context.WithCancel(ctx)
	v := &registryView{changed: make(chan struct{}, 1), cancel: cancel}
	done, err := r.Follow(ctx, func(st *modreg.State) {
		v.mu.Lock()
		v.st = st
		v.mu.Unlock()
		v.poke()
	})
	if err != nil {
		cancel()
		return nil, err
	}
	v.done = done
	return v, nil
}

func (v *registryView) state() *modreg.State {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.st
}

func (v *registryView) poke() {
	select {
	case v.changed <- struct{}{}:
	default:
	}
}

func (v *registryView) stop() { v.cancel(); <-v.done }

// waitFor runs waitRollout for up to wait; with no wait it returns at once.
func waitFor(wait time.Duration, c *client.Client, r *modreg.Registry, a *modreg.Active, out io.Writer) error {
	if wait <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return waitRollout(ctx, c, r, a, out)
}

// waitRollout waits until every live host holds a's version, or refused
// it, and says how long that took from the deploy: hosts send a heartbeat
// the moment they swap, and the time is that of the last one to arrive.
// For a retired module it waits until no host holds it. It fails when a
// host refused the version or ctx ends.
func waitRollout(ctx context.Context, c *client.Client, r *modreg.Registry, a *modreg.Active, out io.Writer) error {
	start := time.Now()
	holds := func(hb *wardv1.Heartbeat) bool {
		d, ok := hb.GetModules()[a.Name]
		return a.Retired && !ok || !a.Retired && d == a.Digest
	}
	var (
		mu      sync.Mutex
		reached = map[string]time.Time{} // host → when it was first seen holding it
		gone    = map[string]bool{}      // hosts that drained since
	)
	note := func(hb *wardv1.Heartbeat, at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		if hb.GetStatus() == "draining" {
			gone[hb.GetWorkerId()] = true
		}
		if _, ok := reached[hb.GetWorkerId()]; !ok && holds(hb) {
			reached[hb.GetWorkerId()] = at
		}
	}
	beat := make(chan struct{}, 1)
	sub, err := c.Bus().NATS().Subscribe(bus.SubjectHeartbeats, func(m *nats.Msg) {
		hb := &wardv1.Heartbeat{}
		if proto.Unmarshal(m.Data, hb) == nil {
			note(hb, time.Now())
			select {
			case beat <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	live, err := c.Workers(ctx, 150*time.Millisecond) // the hosts to wait for
	if err != nil {
		return err
	}
	now := time.Now()
	for _, hb := range live {
		note(hb, now)
	}
	if len(live) == 0 {
		return errors.New("no live host to roll out to")
	}
	view, err := followRegistry(ctx, r)
	if err != nil {
		return err
	}
	defer view.stop()
	for {
		refusals := map[string]string{}
		for host, e := range view.state().Refused[a.Name] {
			if !a.Retired && e.Digest == a.Digest {
				refusals[host] = e.Error
			}
		}
		mu.Lock()
		var held, total int
		var last time.Time
		var waiting, refused []string
		for _, hb := range live {
			id := hb.GetWorkerId()
			if gone[id] {
				continue
			}
			total++
			switch at, ok := reached[id]; {
			case ok:
				held++
				if at.After(last) {
					last = at
				}
			case refusals[id] != "":
				refused = append(refused, id)
			default:
				waiting = append(waiting, id)
			}
		}
		mu.Unlock()
		if len(waiting) == 0 {
			what := fmt.Sprintf("%s %s", a.Name, a.Version)
			if a.Retired {
				what = a.Name + " retired"
			}
			if last.IsZero() {
				last = time.Now()
			}
			fmt.Fprintf(out, "rolled out: %s on %d/%d live hosts in %s\n", what, held, total, last.Sub(start).Round(time.Millisecond))
			if len(refused) > 0 {
				for _, id := range refused {
					fmt.Fprintf(out, "refused on %s: %s\n", id, refusals[id])
				}
				return fmt.Errorf("%d host(s) refused %s %s; they keep serving the version they had", len(refused), a.Name, a.Version)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rollout of %s %s: hosts %v do not hold it after %s (a host started with --module-registry=false never will)",
				a.Name, a.Version, waiting, time.Since(start).Round(time.Millisecond))
		case <-view.changed:
		case <-beat:
		}
	}
}
