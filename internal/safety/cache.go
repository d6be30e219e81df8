package safety

import (
	"sync"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
)

// DefaultCacheSize is the number of decisions a Kernel caches when its
// Config leaves CacheSize zero.
const DefaultCacheSize = 10000

// decision is an evaluated decision. Every response made from it shares
// its reasons and constraints, which are never modified.
type decision struct {
	kind        safetyv1.Decision
	reasons     []string
	constraints *wardv1.Constraints
}

// decisionCache maps the encoding of the input fields a policy reads to
// the decision. One cache belongs to one loaded policy: a new revision
// comes with an empty cache, so no entry outlives the rules that made it.
type decisionCache struct {
	max int

	mu      sync.RWMutex // guards entries
	entries map[string]*decision
}

func newDecisionCache(max int) *decisionCache {
	return &decisionCache{max: max, entries: make(map[string]*decision, min(max, 1024))}
}

func (c *decisionCache) get(key []byte) *decision {
	c.mu.RLock()
	d := c.entries[string(key)]
	c.mu.RUnlock()
	return d
}

// put adds an entry. A full cache drops one entry first, chosen at random
// (map iteration order): cheap, and fair enough for a cache whose hot keys
// are re-added at once.
func (c *decisionCache) put(key []byte, d *decision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[string(key)] = d
}

func (c *decisionCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
