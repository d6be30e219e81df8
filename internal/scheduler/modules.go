package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/scheduler/placement"
)

// modules is the scheduler's view of the module registry: the version in
// force of each deployed module, who refused it, and since when this
// replica has known it. Nothing modifies one once stored in settings.
type modules struct {
	state *modreg.State
	since map[string]time.Time // module → when this replica saw its active digest first
}

// active returns module name's active record, or nil for a module the
// registry does not hold (a built-in, served in whatever version a host
// has).
func (m *modules) active(name string) *modreg.Active {
	if m == nil {
		return nil
	}
	return m.state.Actives[name]
}

// versions returns, for each pool whose module the registry holds (and
// did not retire), its version in force as placement needs it.
func (m *modules) versions(pools *config.Pools, grace time.Duration) map[string]*placement.Module {
	out := make(map[string]*placement.Module)
	for pool, p := range pools.Pools {
		a := m.active(p.Module)
		if a == nil || a.Retired {
			continue
		}
		v := &placement.Module{Name: p.Module, Version: a.Version, Digest: a.Digest, Since: m.since[p.Module], Grace: grace}
		for worker, r := range m.state.Refused[p.Module] {
			if r.Digest == a.Digest {
				if v.Refused == nil {
					v.Refused = make(map[string]bool)
				}
				v.Refused[worker] = true
			}
		}
		out[pool] = v
	}
	return out
}

// retired drops the pools whose module is retired; when none is left it
// says why.
func (c *settings) retired(pools []string) ([]string, string) {
	if !slices.ContainsFunc(pools, func(p string) bool {
		a := c.mods.active(c.pools.Pools[p].Module)
		return a != nil && a.Retired
	}) {
		return pools, "" // none retired: the same pools, nothing copied
	}
	var live []string
	var gone []string
	for _, p := range pools {
		name := c.pools.Pools[p].Module
		if a := c.mods.active(name); a != nil && a.Retired {
			gone = append(gone, name)
			continue
		}
		live = append(live, p)
	}
	if len(live) == 0 && len(gone) > 0 {
		return nil, fmt.Sprintf("module %s was retired (`ward module rm`); deploy it again to serve this topic", strings.Join(gone, ", "))
	}
	return live, ""
}

// catchUpWithin bounds how long admission waits for the registry.
const catchUpWithin = 2 * time.Second

// caughtUp returns the settings once they include every registry change
// made before the call (one round trip to JetStream, then the time the
// watch takes to deliver it), or as they are after catchUpWithin.
func (s *Scheduler) caughtUp(ctx context.Context) *settings {
	ctx, cancel := context.WithTimeout(ctx, catchUpWithin)
	defer cancel()
	rev, err := s.cfg.Modules.Revision(ctx)
	if err != nil {
		s.log.Warn("module registry unreachable; routing on what this replica knows", "err", err)
		return s.conf.load()
	}
	for {
		c, seen := s.conf.next()
		if c.mods == nil || c.mods.state.Revision >= rev {
			return c
		}
		select {
		case <-seen:
		case <-ctx.Done():
			return c
		}
	}
}

// ModuleVersion is the version of module name in force as this replica
// has heard of it, and its digest; ok is false for a module the registry
// does not hold, or a retired one. A deploy reaches each replica a moment
// after it is stored.
func (s *Scheduler) ModuleVersion(name string) (version, digest string, ok bool) {
	a := s.conf.load().mods.active(name)
	if a == nil || a.Retired {
		return "", "", false
	}
	return a.Version, a.Digest, true
}
