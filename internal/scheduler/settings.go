package scheduler

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/modreg"
)

// settingsHolder holds the configuration in force and serializes its
// changes: the files reloaded, the registry's states followed, and the
// routes derived from both. Readers load the settings without a lock.
//
// Lock order: mu is taken alone; changed runs under it and must take no
// lock (it pokes the pump).
type settingsHolder struct {
	cur atomic.Pointer[settings]

	mu sync.Mutex // serializes changes of cur; guards the 2 following fields
	// modsSeen is closed, and replaced, at each registry change.
	modsSeen chan struct{}
	// conflicts are the route conflicts logged already.
	conflicts map[modreg.Conflict]bool

	log     *slog.Logger
	changed func() // called after each change, mu held
}

func newSettingsHolder(c *settings, log *slog.Logger, changed func()) *settingsHolder {
	h := &settingsHolder{modsSeen: make(chan struct{}), log: log, changed: changed}
	h.cur.Store(c)
	return h
}

// load returns the settings in force.
func (h *settingsHolder) load() *settings { return h.cur.Load() }

// reload puts the files' configuration in force, with the registry's
// state as it is.
func (h *settingsHolder) reload(b *config.Bundle) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.store(&settings{base: b.Pools, mods: h.cur.Load().mods, timeouts: b.Timeouts, sched: b.Scheduler})
}

// follow installs the registry's new state: the routes its manifests
// declare join pools.yaml's, and placement follows the versions in force.
func (h *settingsHolder) follow(st *modreg.State) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := *h.cur.Load()
	now := time.Now()
	m := &modules{state: st, since: make(map[string]time.Time, len(st.Actives))}
	for name, a := range st.Actives {
		if old := c.mods.active(name); old != nil && old.Digest == a.Digest && old.Retired == a.Retired {
			m.since[name] = c.mods.since[name]
		} else {
			m.since[name] = now
			if !a.Retired {
				h.log.Info("module version in force", "module", name, "version", a.Version, "digest", a.Digest)
			} else {
				h.log.Info("module retired", "module", name)
			}
		}
	}
	c.mods = m
	h.store(&c)
	close(h.modsSeen)
	h.modsSeen = make(chan struct{})
}

// next returns the settings in force and a channel closed at the next
// registry change.
func (h *settingsHolder) next() (*settings, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur.Load(), h.modsSeen
}

// store derives the routing table from pools.yaml and the registry, and
// the module version in force of each pool, and puts c in force. mu is
// held.
func (h *settingsHolder) store(c *settings) {
	c.pools, c.versions = c.base, nil
	if c.mods != nil {
		var conflicts []modreg.Conflict
		c.pools, conflicts = modreg.Routes(c.base, c.mods.state.Actives)
		// Each conflict is logged once, not at every registry change.
		seen := make(map[modreg.Conflict]bool, len(conflicts))
		for _, k := range conflicts {
			seen[k] = true
			if !h.conflicts[k] {
				h.log.Warn("a deployed module's route is overridden by pools.yaml", "module", k.Module, "topic", k.Topic, "pool", k.Pool, "why", k.Why)
			}
		}
		h.conflicts = seen
		c.versions = c.mods.versions(c.pools, c.sched.Modules.RolloutGrace)
	}
	h.cur.Store(c)
	h.changed()
}
