package modreg

import (
	"maps"
	"slices"
	"strings"

	"github.com/ward-run/ward/internal/config"
)

// PoolOf returns the pool a's route names: its own, or the module's name.
func (a *Active) PoolOf() string {
	if a.Route.Pool != "" {
		return a.Route.Pool
	}
	return a.Name
}

// Conflict is a route a manifest declares that pools.yaml overrides.
type Conflict struct {
	Module, Topic, Pool string
	// Why says what pools.yaml holds instead.
	Why string
}

// Routes returns base with the routes that the active versions' manifests
// declare added: a topic that base does not map goes to the route's pool,
// and a pool that base does not declare serves the module with the
// route's requires. pools.yaml wins wherever the two disagree, since an
// operator wrote it; each such disagreement is returned. A retired
// module keeps its route, so that jobs for its topic learn it was retired
// instead of finding no pool. base is not modified.
func Routes(base *config.Pools, actives map[string]*Active) (*config.Pools, []Conflict) {
	if len(actives) == 0 {
		return base, nil
	}
	out := &config.Pools{Topics: maps.Clone(base.Topics), Pools: maps.Clone(base.Pools)}
	if out.Topics == nil {
		out.Topics = map[string][]string{}
	}
	if out.Pools == nil {
		out.Pools = map[string]config.Pool{}
	}
	var conflicts []Conflict
	for _, name := range slices.Sorted(maps.Keys(actives)) {
		a := actives[name]
		if a == nil || a.Route.Topic == "" {
			continue
		}
		pool := a.PoolOf()
		if p, ok := out.Pools[pool]; !ok {
			out.Pools[pool] = config.Pool{Module: name, Requires: slices.Clone(a.Route.Requires)}
		} else if p.Module != name {
			conflicts = append(conflicts, Conflict{Module: name, Topic: a.Route.Topic, Pool: pool,
				Why: "pool " + pool + " runs module " + p.Module})
			continue
		}
		if mapped, ok := out.Topics[a.Route.Topic]; !ok {
			out.Topics[a.Route.Topic] = []string{pool}
		} else if !slices.Contains(mapped, pool) {
			conflicts = append(conflicts, Conflict{Module: name, Topic: a.Route.Topic, Pool: pool,
				Why: "topic " + a.Route.Topic + " goes to " + strings.Join(mapped, ", ")})
		}
	}
	return out, conflicts
}
