package scheduler

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ward-run/ward/modreg"
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

// eligible reports whether w may run module name, whose active version is
// a: it holds that version, or it refused it and keeps serving the one it
// had (the refusal is in `ward module ls`, and the old version is better
// than no service).
func (m *modules) eligible(w *Worker, name string, a *modreg.Active) bool {
	return w.Modules[name] == a.Digest || m.state.Refused[name][w.ID].Digest == a.Digest
}

// current removes from ws, in place, the workers of pool that do not hold
// the active version of the pool's module, and returns the rest and how
// many it removed.
func (c *settings) current(ws []Worker, pool string) ([]Worker, int) {
	name := c.pools.Pools[pool].Module
	a := c.mods.active(name)
	if a == nil || a.Retired {
		return ws, 0
	}
	kept := ws[:0]
	for i := range ws {
		if c.mods.eligible(&ws[i], name, a) {
			kept = append(kept, ws[i])
		}
	}
	return kept, len(ws) - len(kept)
}

// rollingOut explains why pool's jobs wait: no host holds the active
// version of its module yet, which became active less than modules.rollout_grace
// ago. It returns "" otherwise.
func (c *settings) rollingOut(pool string, stale int, now time.Time) string {
	name := c.pools.Pools[pool].Module
	a := c.mods.active(name)
	if a == nil || now.Sub(c.mods.since[name]) >= c.sched.Modules.RolloutGrace {
		return ""
	}
	if a.Retired {
		return ""
	}
	return fmt.Sprintf("module %s %s (%s) is rolling out: no live host of pool %s holds it yet (%d hold another version)",
		name, a.Version, short(a.Digest), pool, stale)
}

// staleWhy is why a pool's stale hosts cannot run a job once the grace is over.
func (c *settings) staleWhy(pool string, stale int) string {
	name := c.pools.Pools[pool].Module
	a := c.mods.active(name)
	return fmt.Sprintf("no live host of pool %q holds module %s %s (%s), active for over %s (modules.rollout_grace): %d host(s) hold another version (see `ward module ls`)",
		pool, name, a.Version, short(a.Digest), c.sched.Modules.RolloutGrace, stale)
}

// retired drops the pools whose module is retired; when none is left it
// says why.
func (c *settings) retired(pools []string) ([]string, string) {
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

func short(digest string) string {
	if len(digest) > 19 {
		return digest[:19]
	}
	return digest
}

// followModules installs the registry's new state: the routes its
// manifests declare join pools.yaml's, and placement follows the versions
// in force.
func (s *Scheduler) followModules(st *modreg.State) {
	s.confMu.Lock()
	defer s.confMu.Unlock()
	c := *s.conf.Load()
	now := time.Now()
	m := &modules{state: st, since: make(map[string]time.Time, len(st.Actives))}
	for name, a := range st.Actives {
		if old := c.mods.active(name); old != nil && old.Digest == a.Digest && old.Retired == a.Retired {
			m.since[name] = c.mods.since[name]
		} else {
			m.since[name] = now
			if !a.Retired {
				s.log.Info("module version in force", "module", name, "version", a.Version, "digest", a.Digest)
			} else {
				s.log.Info("module retired", "module", name)
			}
		}
	}
	c.mods = m
	s.storeConf(&c)
	close(s.modsSeen)
	s.modsSeen = make(chan struct{})
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
		return s.conf.Load()
	}
	for {
		s.confMu.Lock()
		c, seen := s.conf.Load(), s.modsSeen
		s.confMu.Unlock()
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

// storeConf derives the routing table from pools.yaml and the registry
// and puts c in force. confMu is held.
func (s *Scheduler) storeConf(c *settings) {
	c.pools = c.base
	if c.mods != nil {
		var conflicts []modreg.Conflict
		c.pools, conflicts = modreg.Routes(c.base, c.mods.state.Actives)
		// Each conflict is logged once, not at every registry change.
		seen := make(map[modreg.Conflict]bool, len(conflicts))
		for _, k := range conflicts {
			seen[k] = true
			if !s.conflicts[k] {
				s.log.Warn("a deployed module's route is overridden by pools.yaml", "module", k.Module, "topic", k.Topic, "pool", k.Pool, "why", k.Why)
			}
		}
		s.conflicts = seen
	}
	s.conf.Store(c)
	s.poke()
}

// ModuleVersion returns the version of module name this replica holds in
// force, and its digest; ok is false for a module the registry does not
// hold (or a retired one).
func (s *Scheduler) ModuleVersion(name string) (version, digest string, ok bool) {
	a := s.conf.Load().mods.active(name)
	if a == nil || a.Retired {
		return "", "", false
	}
	return a.Version, a.Digest, true
}
