package sandbox

import (
	"slices"
	"sync"
	"time"
)

// pool keeps idle instances of pooled modules by poolKey. get takes the
// most recently used instance of a key (its memory is the warmest); past
// MaxIdle the least recently used instance of any key goes; instances idle
// longer than IdleTimeout are closed by the janitor. Nothing here allocates
// in the steady state: the LRU list is threaded through the instances.
type pool struct {
	cfg PoolConfig

	mu    sync.Mutex // guards the 4 following fields
	byKey map[poolKey][]*instance
	lru   instance // sentinel of the ring of idle instances, most recent first
	n     int      // idle instances
	stop  chan struct{}

	janitor sync.WaitGroup
}

// poolLinks are an idle instance's place in the pool.
type poolLinks struct {
	prev, next *instance
	idleSince  time.Time
}

func newPool(cfg PoolConfig) *pool {
	p := &pool{cfg: cfg, byKey: make(map[poolKey][]*instance), stop: make(chan struct{})}
	p.lru.prev, p.lru.next = &p.lru, &p.lru
	p.janitor.Add(1)
	go p.sweepLoop(p.stop)
	return p
}

// get takes an idle instance for key, or returns nil.
func (p *pool) get(key poolKey) *instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	stack := p.byKey[key]
	if len(stack) == 0 {
		return nil
	}
	inst := stack[len(stack)-1]
	p.remove(inst)
	return inst
}

// put makes inst idle, closing what the limits push out.
func (p *pool) put(inst *instance) {
	var evicted []*instance
	p.mu.Lock()
	if p.stop == nil { // closed
		p.mu.Unlock()
		inst.close()
		return
	}
	stack := append(p.byKey[inst.key], inst)
	p.byKey[inst.key] = stack
	inst.idleSince = time.Now()
	inst.prev, inst.next = &p.lru, p.lru.next
	p.lru.next.prev = inst
	p.lru.next = inst
	p.n++
	if len(stack) > p.cfg.MaxIdlePerKey {
		evicted = append(evicted, stack[0])
		p.remove(stack[0])
	}
	for p.n > p.cfg.MaxIdle {
		oldest := p.lru.prev
		evicted = append(evicted, oldest)
		p.remove(oldest)
	}
	p.mu.Unlock()
	for _, inst := range evicted {
		inst.close()
	}
}

// remove takes inst out of the pool. p.mu is held.
func (p *pool) remove(inst *instance) {
	stack := p.byKey[inst.key]
	if i := slices.Index(stack, inst); i >= 0 {
		stack = slices.Delete(stack, i, i+1)
	}
	if len(stack) == 0 {
		delete(p.byKey, inst.key)
	} else {
		p.byKey[inst.key] = stack
	}
	inst.prev.next, inst.next.prev = inst.next, inst.prev
	inst.prev, inst.next = nil, nil
	p.n--
}

// drop closes the idle instances of m.
func (p *pool) drop(m *Module) {
	var closing []*instance
	p.mu.Lock()
	for key, stack := range p.byKey {
		if key.m == m {
			closing = append(closing, stack...)
		}
	}
	for _, inst := range closing {
		p.remove(inst)
	}
	p.mu.Unlock()
	for _, inst := range closing {
		inst.close()
	}
}

// idle returns the number of idle instances.
func (p *pool) idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func (p *pool) sweepLoop(stop <-chan struct{}) {
	defer p.janitor.Done()
	t := time.NewTicker(max(p.cfg.IdleTimeout/4, 50*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			p.sweep(now)
		}
	}
}

// sweep closes the instances idle since before now - IdleTimeout.
func (p *pool) sweep(now time.Time) {
	var expired []*instance
	p.mu.Lock()
	for p.n > 0 && now.Sub(p.lru.prev.idleSince) >= p.cfg.IdleTimeout {
		oldest := p.lru.prev
		expired = append(expired, oldest)
		p.remove(oldest)
	}
	p.mu.Unlock()
	for _, inst := range expired {
		inst.close()
	}
}

// close stops the janitor and closes every idle instance; instances put
// back later are closed at once.
func (p *pool) close() {
	var closing []*instance
	p.mu.Lock()
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	for p.n > 0 {
		inst := p.lru.next
		closing = append(closing, inst)
		p.remove(inst)
	}
	p.mu.Unlock()
	p.janitor.Wait()
	for _, inst := range closing {
		inst.close()
	}
}
