package scheduler

import "sync"

// capTable gives each capability name a bit, so that placement compares
// capability sets with one AND instead of string comparisons. The registry
// gives bits to the names workers announce; a name past the 64th gets none,
// and the workers and requests that use one are compared as strings. Bits
// are only an encoding: which name gets which bit changes no decision.
type capTable struct {
	mu   sync.RWMutex // guards bits
	bits map[string]uint64
}

var capabilities = &capTable{bits: make(map[string]uint64)}

// mask returns the mask of names, giving bits to new ones; ok is false
// when one finds no bit.
func (t *capTable) mask(names []string) (mask uint64, ok bool) {
	mask, ok, unknown := t.lookup(names, nil)
	if !unknown {
		return mask, ok
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	mask, ok = 0, true
	for _, n := range names {
		b, in := t.bits[n]
		if !in {
			if len(t.bits) == 64 {
				ok = false
				continue
			}
			b = 1 << len(t.bits)
			t.bits[n] = b
		}
		mask |= b
	}
	return mask, ok
}

// lookup returns the mask of a and b without giving out bits. ok is false
// when one of them may be a name past the 64th; unknown reports a name
// with no bit while bits remain, which no masked worker has.
func (t *capTable) lookup(a, b []string) (mask uint64, ok, unknown bool) {
	if len(a) == 0 && len(b) == 0 {
		return 0, true, false
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	ok = true
	for _, names := range [2][]string{a, b} {
		for _, n := range names {
			bit, in := t.bits[n]
			switch {
			case in:
				mask |= bit
			case len(t.bits) == 64:
				ok = false
			default:
				unknown = true
			}
		}
	}
	return mask, ok, unknown
}
