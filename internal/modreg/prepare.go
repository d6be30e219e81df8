package modreg

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/sandbox"
)

// NewVersion checks a module before anything is uploaded and returns the
// Version a deploy stores: wasm must be a WebAssembly module (CheckWasm);
// manifest, when given, must parse and validate (sandbox.ParseManifest),
// and gives the name, version, route and what the module asks the policy
// to grant; name and version, when set, win over the manifest's. A
// version left empty is sha-<12 hex digits of the digest>. The signature
// is the caller's to set.
func NewVersion(wasm, manifest []byte, name, version string) (Version, error) {
	if err := CheckWasm(wasm); err != nil {
		return Version{}, err
	}
	m := &sandbox.Manifest{}
	if len(manifest) > 0 {
		var err error
		if m, err = sandbox.ParseManifest(manifest); err != nil {
			return Version{}, fmt.Errorf("manifest: %w", err)
		}
	}
	if name != "" {
		m.Name = name
	}
	if version != "" {
		m.Version = version
	}
	if m.Name == "" {
		return Version{}, fmt.Errorf("the module has no name: give one, or a manifest that names it")
	}
	if m.Version == "" {
		m.Version = "sha-" + strings.TrimPrefix(Digest(wasm), "sha256:")[:12]
	}
	if err := CheckName(m.Name, m.Version); err != nil {
		return Version{}, err
	}
	v := Version{Name: m.Name, Version: m.Version, Manifest: string(manifest),
		Route: Route{Topic: m.Topic, Pool: m.Pool, Requires: m.Requires}}
	if len(manifest) > 0 {
		// What the policy is asked to grant each of its jobs.
		c := m.Capabilities
		v.Requested = &Requested{HTTPHosts: c.HTTPHosts, ReadOnlyDirs: c.ReadOnlyDirs, EnvKeys: c.EnvKeys, Services: c.Services,
			MemoryLimitBytes: int64(m.Limits.Memory), TimeLimitMS: time.Duration(m.Limits.Time).Milliseconds()}
	}
	return v, nil
}

// RouteConflicts returns where the route v declares would not apply: the
// pools the schedulers read (base) or another deployed module sends its
// topic, or runs its pool, elsewhere. Empty when v declares no route.
func (r *Registry) RouteConflicts(ctx context.Context, base *config.Pools, v Version) ([]Conflict, error) {
	if v.Route.Topic == "" {
		return nil, nil
	}
	mods, err := r.List(ctx)
	if err != nil {
		return nil, err
	}
	actives := map[string]*Active{}
	for _, m := range mods {
		if m.Active != nil && m.Name != v.Name {
			actives[m.Name] = m.Active
		}
	}
	routed, _ := Routes(base, actives)
	_, conflicts := Routes(routed, map[string]*Active{v.Name: {Name: v.Name, Version: v.Version, Route: v.Route}})
	return conflicts, nil
}
