package host

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/sandbox"
)

// table is what a host serves: the modules it holds and the routing table
// it serves them by. The registry changes both while the host runs
// (modwatch.go); the job path and heartbeats read one consistent snapshot.
type table struct {
	base *config.Pools // pools.yaml

	mu      sync.Mutex // serializes changes
	actives map[string]*modreg.Active
	snap    atomic.Pointer[serving]
}

// serving is one snapshot of the table. Nothing modifies it once stored.
type serving struct {
	modules map[string]*sandbox.Module // by module name
	routes  *config.Pools              // pools.yaml with the registry's routes
	pools   []string                   // the pools served: their module is held; sorted
	digests map[string]string          // module name → digest, for heartbeats
}

func newTable(base *config.Pools, modules map[string]*sandbox.Module) *table {
	t := &table{base: base, actives: map[string]*modreg.Active{}}
	t.publish(maps.Clone(modules))
	return t
}

// load returns the snapshot in force.
func (t *table) load() *serving { return t.snap.Load() }

// set makes m the module that serves name, or stops serving name when m is
// nil, with a's route; it returns the module it replaced, which the
// caller closes: jobs running on it finish on it.
func (t *table) set(name string, m *sandbox.Module, a *modreg.Active) (old *sandbox.Module) {
	t.mu.Lock()
	defer t.mu.Unlock()
	mods := maps.Clone(t.load().modules)
	old = mods[name]
	if m == nil {
		delete(mods, name)
	} else {
		mods[name] = m
	}
	if a != nil {
		t.actives[name] = a
	}
	t.publish(mods)
	return old
}

// publish derives routes, pools and digests from modules and the active
// records, and puts the snapshot in force. mu is held (or t is not shared
// yet).
func (t *table) publish(modules map[string]*sandbox.Module) {
	if modules == nil {
		modules = map[string]*sandbox.Module{}
	}
	routes, _ := modreg.Routes(t.base, t.actives)
	s := &serving{modules: modules, routes: routes, digests: make(map[string]string, len(modules))}
	for name, m := range modules {
		s.digests[name] = m.Digest()
	}
	for name, p := range routes.Pools {
		if _, ok := modules[p.Module]; ok {
			s.pools = append(s.pools, name)
		}
	}
	slices.Sort(s.pools)
	t.snap.Store(s)
}
