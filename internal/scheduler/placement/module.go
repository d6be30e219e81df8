package placement

import (
	"fmt"
	"time"
)

// Module is the version in force of a pool's module, as the module
// registry holds it. Only the workers that hold it are eligible, and the
// ones that refused it (they keep serving the version they had, and the
// refusal is in `ward module ls`: the old version is better than no
// service). A module the registry does not hold, or a retired one, is no
// Module: any worker of the pool serves it, in whatever version it has.
type Module struct {
	// Name, Version and Digest name the version in force.
	Name, Version, Digest string
	// Refused holds the workers that refused this digest.
	Refused map[string]bool
	// Since is when the scheduler learned of this version, and Grace
	// (modules.rollout_grace) how long after that a job no worker holding
	// it can run waits for the hosts to load it, rather than fail.
	Since time.Time
	Grace time.Duration
}

// holds reports whether w may run the module's version in force.
func (m *Module) holds(w *Worker) bool {
	return w.Modules[m.Name] == m.Digest || m.Refused[w.ID]
}

// new reports whether the version is within its rollout grace at now.
func (m *Module) new(now time.Time) bool { return now.Sub(m.Since) < m.Grace }

// rollingOut explains why a job of pool waits: no host holds the version
// in force yet; stale hold another.
func (m *Module) rollingOut(pool string, stale int) string {
	return fmt.Sprintf("module %s %s (%s) is rolling out: no live host of pool %s holds it yet (%d hold another version)",
		m.Name, m.Version, short(m.Digest), pool, stale)
}

// outdated explains why a job of pool cannot run once the grace is over.
func (m *Module) outdated(pool string, stale int) string {
	return fmt.Sprintf("no live host of pool %q holds module %s %s (%s), active for over %s (modules.rollout_grace): %d host(s) hold another version (see `ward module ls`)",
		pool, m.Name, m.Version, short(m.Digest), m.Grace, stale)
}

func short(digest string) string {
	if len(digest) > 19 {
		return digest[:19]
	}
	return digest
}
